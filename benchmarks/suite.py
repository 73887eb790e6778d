"""One benchmark runner for the declared suites (benchmarks/suites.py): every cell is a CLI run
(`python -m experiments.AGENT --env TASK --seed S`), kept in its own directory; a finished cell is
never rerun, an interrupted one resumes from its checkpoint (`--resume`; one stopped before its
first checkpoint is set aside under `abandoned/` and rerun), cells run side by side
(`--jobs`), and the report (per-task curves with the seeds' band, aggregate IQM / median / mean
of normalised scores with 95% stratified-bootstrap intervals, a performance profile, each task
beside its reference and the reference's source) goes to BENCHMARKS.md and docs/benchmarks.md.

    python -m benchmarks.suite --list
    python -m benchmarks.suite memory [--jobs 1] [--seeds 0,1,2] [--agents ppo,impala] [--envs ENV,...]
                                      [--dir runs/suites] [--results DIR]
                                      [--report-only] [--no-write]

A finished cell's record (its result and its learning curve, a few KB) is kept apart from its run
directory, under `--results` (benchmarks/results/suites, in the repository): the runs (checkpoints,
logs) stay on the machine that made them, the records travel with the code, so a suite run over
several machines or sessions reports every cell it has finished anywhere.

A cell's score is its run's last `episode_return_mean` (the last 20 episodes); normalised, 0 is a
uniformly random policy's mean return (measured here over 32 episodes, seeded, cached in the
suite's directory) and 1 the task's reference.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks import aggregate  # noqa: E402
from benchmarks._report import BENCH_FILE, cli_env, write_section  # noqa: E402
from benchmarks.suites import SUITES, Cell, Suite, Task  # noqa: E402
from sebulba.loop.checkpoint import complete_steps  # noqa: E402

DOCS_PAGE = ROOT / "docs" / "benchmarks.md"
RESULTS = ROOT / "benchmarks" / "results" / "suites"
FIGURES = ROOT / "docs" / "assets"
RANDOM_EPISODES = 32
CURVE_POINTS = 200  # a record's learning curve: at most this many rows of the run's metrics.csv


# ---------------------------------------------------------------- running cells
def cell_dir(root: Path, suite: Suite, cell: Cell) -> Path:
    return root / suite.name / cell.key


def record_path(store: Path, suite: Suite, cell: Cell) -> Path:
    """Where the finished cell's record lives."""
    return store / suite.name / f"{cell.key}.json"


def finished(store: Path, suite: Suite, cell: Cell) -> dict | None:
    """The cell's record if it ran to its end, else None."""
    path = record_path(store, suite, cell)
    return json.loads(path.read_text()) if path.exists() else None


def thin(steps: np.ndarray, returns: np.ndarray, points: int = CURVE_POINTS) -> tuple[list[int], list[float]]:
    """At most `points` rows of a curve, evenly spread over its rows, the first and last kept."""
    keep = np.unique(np.linspace(0, len(steps) - 1, min(points, len(steps))).round().astype(int)) if len(steps) else []
    return [int(steps[i]) for i in keep], [float(returns[i]) for i in keep]


def run_cell(root: Path, store: Path, suite: Suite, cell: Cell) -> dict:
    """Run the cell (or resume its interrupted run, kept under `root`) in a fresh process and write
    its record under `store`; a finished cell is returned as it is. A failed run leaves error.txt
    in its directory and raises RuntimeError."""
    if (done := finished(store, suite, cell)) is not None:
        return done
    here = cell_dir(root, suite, cell)
    logdir = here / "runs"
    logdir.mkdir(parents=True, exist_ok=True)
    started = sorted(d for d in logdir.iterdir() if (d / "flags.json").exists())
    # one of ours stopped before its first checkpoint has nothing to resume: it is set aside (kept) and
    # rerun (a peer's cell writes flags.json only once it has finished)
    for stillborn in [d for d in started if cell.agent.peer_of is None and not complete_steps(d / "checkpoints")]:
        (here / "abandoned").mkdir(exist_ok=True)
        stillborn.rename(here / "abandoned" / stillborn.name)
        started.remove(stillborn)
    flags = [f"--resume={started[-1]}"] if started else [*cell.argv(), f"--logdir={logdir}"]
    command = [sys.executable, "-m", cell.agent.module, *flags, "--noprogress"]
    start = time.perf_counter()
    out = subprocess.run(command, cwd=ROOT, env=cli_env(), capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        (here / "error.txt").write_text(f"{' '.join(command)}\nexit {out.returncode}\n{out.stderr[-5000:]}")
        raise RuntimeError(f"{cell.key}: exit {out.returncode}: {out.stderr.strip().splitlines()[-1:]}")
    (run_dir,) = [d for d in logdir.iterdir() if (d / "flags.json").exists()]
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    steps, returns = thin(*curve(run_dir / "metrics.csv"))
    result = {"agent": cell.agent.label, "env": cell.task.env, "seed": cell.seed,
              "command": " ".join(["python", "-m", cell.agent.module, *cell.argv()]),
              "env_steps": int(rows[-1]["env_steps"]), "return": float(rows[-1]["episode_return_mean"]),
              "wall_s": float(rows[-1]["wall_time"]), "this_process_s": round(wall, 1), "resumed": bool(started),
              "finished": f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
              "machine": f"{platform.platform()}, {os.cpu_count()} cores",
              "curve": {"env_steps": steps, "episode_return_mean": returns}}
    (here / "error.txt").unlink(missing_ok=True)
    path = record_path(store, suite, cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")
    return result


def run_suite(root: Path, store: Path, suite: Suite, jobs: int, seeds: tuple[int, ...] | None = None,
              agents: tuple[str, ...] | None = None, envs: tuple[str, ...] | None = None) -> list[str]:
    """Every unfinished cell (of `agents` and `envs` only, if given), `jobs` at a time; returns the
    failures' messages (the other cells still run)."""
    cells = [c for c in suite.cells(seeds)
             if (agents is None or c.agent.label in agents) and (envs is None or c.task.env in envs)]
    todo = [c for c in cells if finished(store, suite, c) is None]
    print(f"{suite.name}: {len(cells) - len(todo)} of {len(cells)} cells finished; "
          f"running {len(todo)}, {jobs} at a time", flush=True)
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_cell, root, store, suite, c): c for c in todo}
        for future in concurrent.futures.as_completed(futures):
            try:
                r = future.result()
                print(f"  {futures[future].key}: {r['return']:.2f} at {r['env_steps']:,} env steps "
                      f"({r['wall_s']:.0f} s)", flush=True)
            except RuntimeError as e:
                failures.append(str(e))
                print(f"  failed: {e}", flush=True)
    return failures


# ---------------------------------------------------------------- random-policy scores
def random_return(env_id: str, episodes: int = RANDOM_EPISODES, seed: int = 0, num_envs: int = 8) -> float:
    """The mean return of `episodes` episodes of a uniformly random policy (actions drawn from the
    action space with a seeded generator), through the env pool as training sees the task."""
    import envs

    pool = envs.make(env_id, env_type="gymnasium", num_envs=num_envs, seed=seed)
    space = pool.action_space
    space.seed(seed)
    pool.reset()
    running, done = np.zeros(num_envs), []
    while len(done) < episodes:
        actions = np.stack([space.sample() for _ in range(num_envs)])
        _, reward, terminated, truncated, _ = pool.step(actions)
        running += reward
        for i in np.flatnonzero(np.logical_or(terminated, truncated)):
            done.append(running[i])
            running[i] = 0.0
    pool.close()
    return float(np.mean(done[:episodes]))


def random_returns(store: Path, suite: Suite) -> dict[str, float]:
    """Each task's random-policy return, measured once and kept in the suite's random.json."""
    path = store / suite.name / "random.json"
    known = json.loads(path.read_text()) if path.exists() else {}
    for task in suite.tasks:
        if task.env not in known:
            known[task.env] = random_return(task.env)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(known, indent=1))
    return {t.env: known[t.env] for t in suite.tasks}


# ---------------------------------------------------------------- the report
def score_matrices(suite: Suite, results: dict[str, dict], randoms: dict[str, float], seeds: tuple[int, ...]
                   ) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    """{agent: normalised scores [seeds, its tasks]} for the agents whose every cell finished, and
    {agent: its tasks}."""
    matrices, tasks_of = {}, {}
    for label in suite.agents():
        tasks = [t for t in suite.tasks if any(a.label == label for a in t.agents)]
        cells = [[next(Cell(a, t, s, suite.budget) for a in t.agents if a.label == label) for t in tasks] for s in seeds]
        if not all(c.key in results for row in cells for c in row):
            continue
        raw = np.array([[results[c.key]["return"] for c in row] for row in cells])
        matrices[label] = aggregate.normalise(raw, [randoms[t.env] for t in tasks],
                                              [t.reference_of(label)[0] for t in tasks])
        tasks_of[label] = [t.env for t in tasks]
    return matrices, tasks_of


def peer_ratio(mine: float, theirs: float, random: float) -> tuple[float | None, str]:
    """Ours over the peer's median return, and how it was taken: as returns while the peer's is
    above zero; where it is not (a task whose returns start below zero, e.g. Ant's at 300k), as
    each one's gain over a random policy, while the peer's is above random. Below that the peer
    learned nothing and no ratio says anything (None)."""
    if theirs > 0:
        return mine / theirs, ""
    if theirs > random:
        return (mine - random) / (theirs - random), " (over random)"
    return None, ""


def peer_lines(suite: Suite, results: dict[str, dict], seeds: tuple[int, ...],
               randoms: dict[str, float]) -> list[str]:
    """Each agent held against its peer (an agent whose `peer_of` names it) on each task: both
    medians of return over the seeds finished, their ratio (`peer_ratio`), and the suite's
    `peer_target`, met only once both have every seed."""
    lines, explain = [], False  # the note on gains over random, where a row needs it
    for task in suite.tasks:
        for peer in (a for a in task.agents if a.peer_of is not None):
            ours = next(a for a in task.agents if a.label == peer.peer_of)
            got = {a.label: [results[c.key]["return"] for c in suite.cells(seeds)
                             if c.task == task and c.agent == a and c.key in results] for a in (ours, peer)}
            if not got[ours.label] and not got[peer.label]:
                continue
            med = {k: float(np.median(v)) if v else None for k, v in got.items()}
            mine, theirs = med[ours.label], med[peer.label]
            ratio, how = (None, "") if mine is None or theirs is None else peer_ratio(mine, theirs, randoms[task.env])
            whole = all(len(v) == len(seeds) for v in got.values())
            if ratio is None or suite.peer_target is None:
                verdict = "n/a" if whole else "pending"
            elif not whole:
                verdict = "pending"
            else:
                verdict = "yes" if ratio >= suite.peer_target else f"missed ({ratio:.2f} of {suite.peer_target:.2f})"
            explain |= bool(how) or verdict == "n/a"
            show = {k: "-" if v is None else f"{v:.1f} ({len(got[k])})" for k, v in med.items()}
            lines.append(f"| {task.env} | {ours.label} | {show[ours.label]} | {peer.label} | {show[peer.label]} | "
                         f"{'-' if ratio is None else f'{ratio:.2f}x{how}'} | "
                         f"{'-' if suite.peer_target is None else f'>= {suite.peer_target:.2f}x'} | {verdict} |")
    if not lines:
        return []
    note = (" Where the peer's median is not above zero, the ratio is of each one's gain over a random "
            "policy's return (marked \"over random\"); where it is not above random either, there is none (n/a)."
            if explain else "")
    return ["", "Each agent beside its peer on the same host and budget: the median return over the seeds finished "
            "(their count in brackets), ours over theirs." + note, "",
            "| task | agent | median (seeds) | peer | peer's median (seeds) | ratio | target | met? |",
            "|---|---|---:|---|---:|---:|---|---|", *lines]


def curve(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A run's (env steps, episode_return_mean) where both are numbers."""
    from sebulba.experiment.curves import read_columns

    cols = read_columns(path, ["env_steps", "episode_return_mean"])
    ok = np.isfinite(cols["env_steps"]) & np.isfinite(cols["episode_return_mean"])
    return cols["env_steps"][ok], cols["episode_return_mean"][ok]


def task_figure(task: Task, runs: dict[str, list[tuple[np.ndarray, np.ndarray]]], out: Path) -> None:
    """Each agent's median return over its seeds against env steps, with the seeds' min-max band,
    and the reference as a dashed line."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for label, seeds_curves in runs.items():
        curves = [c for c in seeds_curves if len(c[0])]
        if not curves:
            continue
        # the env steps every seed's curve covers (from the latest first row to the earliest last one)
        grid = np.linspace(max(x[0] for x, _ in curves), min(x[-1] for x, _ in curves), 200)
        ys = np.array([np.interp(grid, x, y) for x, y in curves])
        (line,) = ax.plot(grid, np.median(ys, 0), label=f"{label} ({len(curves)} seeds)")
        ax.fill_between(grid, ys.min(0), ys.max(0), alpha=0.2, color=line.get_color(), linewidth=0)
    refs: dict[float, list[str]] = {}
    for label in runs:
        refs.setdefault(task.reference_of(label)[0], []).append(label)
    for value, labels in refs.items():  # one line per reference; named by its agents where they differ
        ax.axhline(value, linestyle="--", color="gray", linewidth=1,
                   label="reference" + (f" ({', '.join(labels)})" if len(refs) > 1 else ""))
    ax.set(xlabel="env steps", ylabel="episode return (last 20 episodes)", title=task.env)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)


def aggregate_figure(estimates: dict[str, dict[str, aggregate.Estimate]], profiles: dict[str, np.ndarray],
                     taus: np.ndarray, title: str, out: Path) -> None:
    """Left: each agent's IQM, median and mean with their 95% intervals; right: its performance
    profile (the share of runs above each normalised score)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 0.6 * len(estimates) + 2.5), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(aggregate.METRICS) + 1)
    labels = list(estimates)
    for ax, metric in zip(axes, aggregate.METRICS):
        e = [estimates[k][metric] for k in labels]
        ax.errorbar([x.value for x in e], range(len(labels)), fmt="o",
                    xerr=[[x.value - x.low for x in e], [x.high - x.value for x in e]])
        ax.set_yticks(range(len(labels)), labels if ax is axes[0] else [""] * len(labels))
        ax.set(xlabel=f"{metric} (normalised)")
        ax.grid(True, axis="x", alpha=0.3)
    for label in labels:
        axes[-1].plot(taus, profiles[label], label=label)
    axes[-1].set(xlabel="normalised score tau", ylabel="share of runs > tau")
    axes[-1].legend(fontsize="small")
    fig.suptitle(title)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)


def report(store: Path, suite: Suite, seeds: tuple[int, ...], randoms: dict[str, float], reps: int = 2000,
           figures: Path = FIGURES) -> str:
    """The suite's markdown section from the finished cells' records (writing its figures under
    `figures`)."""
    results = {c.key: r for c in suite.cells(seeds) if (r := finished(store, suite, c)) is not None}
    total = len(suite.cells(seeds))
    lines = [f"## Suite `{suite.name}` (`python -m benchmarks.suite {suite.name}`)", "",
             f"Report {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {len(results)} of {total} cells "
             f"finished (seeds {', '.join(map(str, seeds))}); machine {platform.platform()}, {os.cpu_count()} cores. "
             f"{suite.description} Cost: {suite.cost}.", "",
             "Score: a run's last `episode_return_mean` (last 20 episodes). Normalised: 0 is a uniformly random "
             f"policy's mean return ({RANDOM_EPISODES} episodes, measured here), 1 the task's reference.", "",
             "| task | agent | seeds | env steps | return, median (min to max) | random | reference | source |",
             "|---|---|---:|---:|---|---:|---:|---|"]
    for task in suite.tasks:
        runs = {}
        for a in task.agents:
            mine = [results[c.key] for c in suite.cells(seeds) if c.task == task and c.agent == a and c.key in results]
            runs[a.label] = [(np.array(r["curve"]["env_steps"]), np.array(r["curve"]["episode_return_mean"]))
                             for r in mine]
            if mine:
                ret = [r["return"] for r in mine]
                lines.append(f"| {task.env} | {a.label} | {len(mine)} | {max(r['env_steps'] for r in mine):,} | "
                             f"{np.median(ret):.2f} ({min(ret):.2f} to {max(ret):.2f}) | {randoms[task.env]:.2f} | "
                             f"{task.reference_of(a.label)[0]:g} | {task.reference_of(a.label)[1]} |")
        if any(runs.values()):
            name = f"suite-{suite.name}-{task.env.replace('/', '_')}.png"
            task_figure(task, runs, figures / name)
    lines += peer_lines(suite, results, seeds, randoms)
    matrices, tasks_of = score_matrices(suite, results, randoms, seeds)
    if matrices:
        estimates = aggregate.interval_estimates(matrices, reps=reps)
        taus = np.linspace(0.0, max(1.25, max(float(m.max()) for m in matrices.values())), 101)
        aggregate_figure(estimates, aggregate.performance_profile(matrices, taus), taus,
                         f"{suite.name}: normalised scores, 95% stratified-bootstrap intervals ({reps} resamples)",
                         figures / f"suite-{suite.name}-aggregate.png")
        lines += ["", "| agent | runs x tasks | IQM [95% CI] | median [95% CI] | mean [95% CI] | tasks |",
                  "|---|---|---|---|---|---|"]
        for label, e in estimates.items():
            cells = " | ".join(f"{e[m].value:.2f} [{e[m].low:.2f}, {e[m].high:.2f}]" for m in aggregate.METRICS)
            lines.append(f"| {label} | {matrices[label].shape[0]} x {matrices[label].shape[1]} | {cells} | "
                         f"{', '.join(tasks_of[label])} |")
        lines += ["", f"![{suite.name} aggregate](assets/suite-{suite.name}-aggregate.png)"]
    missing = sorted(set(suite.agents()) - set(matrices))
    if missing:
        lines += ["", f"Not aggregated (cells unfinished): {', '.join(missing)}."]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the command line
class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not the usage block
        self.exit(2, f"{self.prog}: error: {message}\n")


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = _Parser(prog="python -m benchmarks.suite", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", nargs="?", help="one of: " + ", ".join(SUITES))
    parser.add_argument("--list", action="store_true", help="name the suites, their grids and costs")
    parser.add_argument("--dir", type=Path, default=ROOT / "runs" / "suites", help="where the cells' runs are kept")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="where finished cells' records are kept (default: the repository's)")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2), help="cells side by side")
    parser.add_argument("--seeds", help="comma-separated; default: the suite's")
    parser.add_argument("--agents", help="comma-separated agent labels: run only their cells (the report has every finished cell)")
    parser.add_argument("--envs", help="comma-separated env ids: run only their cells (e.g. one Atari game a call)")
    parser.add_argument("--reps", type=int, default=2000, help="bootstrap resamples")
    parser.add_argument("--report-only", action="store_true", help="report the finished cells, run none")
    parser.add_argument("--no-write", action="store_true",
                        help="print the report (its figures under --dir); leave BENCHMARKS.md and the docs")
    args = parser.parse_args(argv)
    if not args.list and args.suite not in SUITES:
        parser.error(f"name a suite: {', '.join(SUITES)} (--list describes them)")
    if args.jobs < 1 or args.reps < 1:
        parser.error("--jobs and --reps must be at least 1")
    if args.seeds is not None:
        try:
            args.seeds = tuple(int(s) for s in args.seeds.split(","))
        except ValueError:
            parser.error(f"--seeds: comma-separated integers, got {args.seeds!r}")
    if args.agents is not None:
        args.agents = tuple(args.agents.split(","))
        known = SUITES[args.suite].agents() if args.suite in SUITES else []
        unknown = [a for a in args.agents if a not in known]
        if unknown:
            parser.error(f"--agents: {', '.join(unknown)} not in suite {args.suite}'s agents ({', '.join(known)})")
    if args.envs is not None:
        args.envs = tuple(args.envs.split(","))
        known = [t.env for t in SUITES[args.suite].tasks] if args.suite in SUITES else []
        unknown = [e for e in args.envs if e not in known]
        if unknown:
            parser.error(f"--envs: {', '.join(unknown)} not in suite {args.suite}'s tasks ({', '.join(known)})")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if args.list:
        for s in SUITES.values():
            cells = s.cells()
            print(f"{s.name}: {len(s.tasks)} tasks x {len(s.agents())} agents x {len(s.seeds)} seeds = {len(cells)} runs "
                  f"({'preset budgets' if s.budget is None else f'{s.budget:,} env steps each'}); {s.description} "
                  f"Cost: {s.cost}.")
        return 0
    suite = SUITES[args.suite]
    seeds = args.seeds or suite.seeds
    failures = [] if args.report_only else run_suite(args.dir, args.results, suite, args.jobs, seeds, args.agents,
                                                          args.envs)
    figures = args.dir / suite.name / "figures" if args.no_write else FIGURES  # --no-write leaves the docs alone
    body = report(args.results, suite, seeds, random_returns(args.results, suite), args.reps, figures=figures)
    print("\n" + body)
    if not args.no_write:
        for path in (BENCH_FILE, DOCS_PAGE):
            write_section(path, f"suite_{suite.name}", body.replace("](assets/", "](docs/assets/") if path == BENCH_FILE
                          else body)
    if failures:
        print(f"{len(failures)} cell(s) failed (their error.txt says why; a rerun retries them):", *failures, sep="\n  ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

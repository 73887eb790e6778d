"""What the benchmark scripts share: their section of BENCHMARKS.md and the met/missed verdict.

Each script owns one section, between `<!-- NAME:start -->` and `<!-- NAME:end -->`; writing it
leaves the rest of the file (other sections, hand-written analysis) as it was.
"""

from __future__ import annotations

import csv
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

BENCH_FILE = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"


def markers(section: str) -> tuple[str, str]:
    """The start and end markers of a section, e.g. `<!-- bench_envs:start -->`."""
    return f"<!-- {section}:start -->", f"<!-- {section}:end -->"


def write_section(path: Path, section: str, body: str) -> None:
    """Put body between the section's markers in path (appended at the end if they are absent)."""
    start_mark, end_mark = markers(section)
    block = f"{start_mark}\n{body}{end_mark}\n"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    start, end = text.find(start_mark), text.find(end_mark)
    if start != -1 and end > start:
        after = text[end + len(end_mark) :].removeprefix("\n")
        text = text[:start] + block + after
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text)


def publish(section: str, body: str, write: bool) -> None:
    """Print a benchmark's section and, unless `write` is False (--no-write), put it into BENCHMARKS.md."""
    print("\n" + body)
    if write:
        write_section(BENCH_FILE, section, body)
        print(f"wrote {BENCH_FILE}")


def cpu_seconds(path: str | Path) -> float:
    """User + system CPU seconds from a /proc stat file: a process's (`/proc/PID/stat`, its ended
    threads included) or one thread's (`/proc/PID/task/TID/stat`). Linux only."""
    fields = Path(path).read_text().rsplit(")", 1)[1].split()  # after the (name), which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu(pid: int | str = "self") -> dict[int, tuple[str, float]]:
    """Each live thread of a process: its id -> (name, CPU seconds)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[int(task.name)] = ((task / "comm").read_text().strip(), cpu_seconds(task / "stat"))
        except OSError:  # the thread ended
            continue
    return out


def gpu_schedule_note() -> str:
    """A line for a report run with `TF_CUDA_PLATFORM_GPU_DEVICE_SCHEDULE` set (how XLA's CUDA
    context waits for the GPU: spin, yield or blocking_sync), else ""."""
    schedule = os.environ.get("TF_CUDA_PLATFORM_GPU_DEVICE_SCHEDULE")
    return f"With `TF_CUDA_PLATFORM_GPU_DEVICE_SCHEDULE={schedule}`.\n\n" if schedule else ""


def device_run_line(script: str) -> str:
    """ "Run DATE UTC with `python benchmarks/SCRIPT ARGS` on DEVICE, N CPU cores; jax, platform."
    for the scripts run on a lent accelerator host."""
    import datetime
    import platform

    import jax

    d = jax.devices()[0]
    return (f"Run {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC with `python benchmarks/{script} "
            f"{' '.join(sys.argv[1:])}` on {d.device_kind} ({d.platform}), {os.cpu_count()} CPU cores; "
            f"jax {jax.__version__}, {platform.platform()}.")


def device_section(out: Path, script: str, title: str, text: str, header: str, rows: list[str]) -> str:
    """A device-host script's markdown section: title, run line, `text`, then the table (`header`:
    its two header lines); printed and written to out/<script>.md, for `write_section` here."""
    body = f"## {title} (`benchmarks/{script}`)\n\n{device_run_line(script)}\n\n{text}{header}\n" + "\n".join(rows) + "\n"
    print(body)
    (out / script.replace(".py", ".md")).write_text(body)
    return body


def verdict(value: float | None, target: float | None, fmt: str = "{:.2f}") -> str:
    """The "met?" cell: "yes", "missed (value of target)", or "—" (no target, or nothing measured)."""
    if target is None or value is None:
        return "—"
    if value >= target:
        return "yes"
    return f"missed ({fmt.format(value)} of {fmt.format(target)})"


def seed_args(description: str) -> tuple[list[int], bool]:
    """The learning-bar benchmarks' command line: `--seeds 0,1,2` and `--no-write`."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    return [int(s) for s in args.seeds.split(",")], args.no_write


def repeats_header(script: str, repeats: int) -> str:
    """A side-by-side section's first line: the command as run, the machine, the date, the repeats."""
    command = f"python benchmarks/{script} " + " ".join(sys.argv[1:])
    return (f"Command: `{command}`; {platform.node()} ({os.cpu_count()} CPUs, CPU only), "
            f"{datetime.date.today().isoformat()}; medians of {repeats} interleaved repeats, each run a fresh process.\n\n")


def bar_rows(runs, seeds: list[int], tmp: Path, bar: float) -> tuple[list[str], list[tuple[str, Path]]]:
    """Each (name, module, args) of `runs` at each seed through `run_cli`: the table's rows (run,
    seed, env steps, episodes, final return, bar met?, wall time) and the curves (label, metrics.csv)."""
    rows, curves = [], []
    for name, module, args in runs:
        for seed in seeds:
            wall, last, run_dir = run_cli(module, [*args, f"--seed={seed}"], Path(tmp) / f"{module}-{len(rows)}")
            ret = float(last["episode_return_mean"])
            rows.append(f"| {name} | {seed} | {int(last['env_steps']):,} | {int(last['episodes']):,} | {ret:.1f} | "
                        f"{verdict(ret, bar, '{:.1f}')} | {wall:.0f} |")
            print(rows[-1], flush=True)
            curves.append((f"{name}, seed {seed}", run_dir / "metrics.csv"))
    return rows, curves


def cli_env() -> dict[str, str]:
    """The environment of a benchmark's CLI run: this checkout on PYTHONPATH, one CPU device (no
    XLA_FLAGS from the caller)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    env.pop("XLA_FLAGS", None)
    return env


def run_cli(module: str, args: list[str], logdir: Path) -> tuple[float, dict, Path]:
    """Run `python -m module *args --logdir=logdir --noprogress` in a fresh process (1 CPU device),
    timed whole; returns (wall seconds, its last metrics row, its run directory)."""
    root = Path(__file__).resolve().parents[1]
    logdir.mkdir(parents=True, exist_ok=True)
    before = set(logdir.iterdir())
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", module, *args, f"--logdir={logdir}", "--noprogress"],
                   cwd=root, env=cli_env(), check=True, capture_output=True)
    wall = time.perf_counter() - start
    (run_dir,) = set(logdir.iterdir()) - before
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    return wall, rows[-1], run_dir


def learning_bar_benchmark(script: str, section: str, title: str, runs, bar: float, figure: str, plot_title: str,
                           note: str, description: str) -> None:
    """A learning-bar benchmark's whole run: `runs` (name, module, args) at the command line's seeds
    (`bar_rows`), their curves plotted to benchmarks/figures/`figure`, and BENCHMARKS.md's
    `section` (title, command, machine, `note`, the table, the figure) unless --no-write."""
    import tempfile

    from sebulba.experiment.curves import plot_curves

    seeds, no_write = seed_args(description)
    figures = Path(__file__).resolve().parent / "figures"
    with tempfile.TemporaryDirectory() as tmp:
        rows, curves = bar_rows(runs, seeds, Path(tmp), bar)
        if not no_write:
            figures.mkdir(parents=True, exist_ok=True)
            plot_curves(curves, figures / figure, plot_title)
    body = (
        f"## {title} (`benchmarks/{script}`)\n\n"
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC with "
        f"`python {' '.join([f'benchmarks/{script}', *sys.argv[1:]])}`  \n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, CPU only; {note}\n\n"
        f"| run | seed | env steps | episodes | final return (last 20 episodes) | bar met? (>= {bar:.0f}) | "
        "wall time (s) |\n|---|---|---:|---:|---:|---|---:|\n" + "\n".join(rows) + "\n\n"
        f"![{plot_title}](benchmarks/figures/{figure})\n"
    )
    print(body)
    if not no_write:
        write_section(BENCH_FILE, section, body)

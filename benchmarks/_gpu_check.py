"""The Python stages of `benchmarks/gpu_check.sh` (see its header): each writes a one-line
figures cell (FIG) and, for the measured runs, a markdown detail section (MD) for the summary.

    python benchmarks/_gpu_check.py env  --fig FIG
    python benchmarks/_gpu_check.py pong --fig FIG --md MD --work DIR [--frames 4000000] [--settings 64x2x2] ...
    python benchmarks/_gpu_check.py ppo  --fig FIG --md MD --work DIR [--total_env_steps N] [--timeout S]
    python benchmarks/_gpu_check.py anakin --fig FIG --md MD --work DIR --seconds S [--envs 2048] ...
    python benchmarks/_gpu_check.py offpolicy --fig FIG --md MD --work DIR --seconds S [--big_batch 4096] ...
    python benchmarks/_gpu_check.py paste SUMMARY.md          # into BENCHMARKS.md, between its section's markers

The IMPALA Pong stage reuses `bench_atari_gpu.py` (its raw-env measurement and its end-to-end run
of the CLI), with the run ended by a frame budget instead of a wall time. The Anakin stage reuses
`bench_anakin.training_sps` (env steps/s between the first and the last metrics row).
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

# The 2026-11-23 00:52 UTC call of bench_atari_gpu.py on the H100 host (BENCHMARKS.md, "Atari on a GPU
# host"): the preset (2 inferencers x 64 envs, 2 learner minibatches), jax 0.11.2, 16 cores.
REF_DATE = "2026-11-23"
REF_SETTING = "64x2x2"
REF_FPS = 54_336
REF_RAW_ALE = (94_252, 124_149)  # raw ALE frames/s over that night's four calls (one 3 s repeat each)
REF_RETURNS = {1e6: -20.1, 2e6: -19.0, 3e6: -16.4, 4e6: -13.6, 5e6: 8.4, 6e6: 15.3, 7.7e6: 17.2, 10e6: 16.6, 15e6: 18.9}
# The same night's other layouts at 4M frames ranged from -16.6 to 13.1: take-off varies by ~1M frames.
REF_SPREAD_4M = (-16.6, 13.1)
# PPO CartPole, `python -m experiments.ppo` (the preset, 200k env steps), bench_ppo 2026-11-25 on a
# 2-core CPU host: 500.0 in 12.3-12.7 s for seeds 0-2; the learning bar (tests/test_ppo.py) is 475.
PPO_BAR = 475.0
PPO_REF = "500.0 in 12.3-12.7 s (seeds 0-2, 2-core CPU host, bench_ppo 2026-11-25)"


def write(path: str | None, text: str) -> None:
    if path:
        Path(path).write_text(text)


def _env() -> dict[str, str]:
    """The child's environment: the repo root ahead of what PYTHONPATH already holds (the wheels)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p)}


# ---------------------------------------------------------------- env
def cmd_env(args: argparse.Namespace) -> None:
    import importlib.metadata

    import jax

    def version(name: str) -> str:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return "missing"

    devices = jax.devices()
    print(f"python {platform.python_version()} ({sys.executable}), {platform.platform()}, {os.cpu_count()} CPU cores")
    print(f"jax {jax.__version__}, default backend {jax.default_backend()}, devices: {devices}")
    for d in devices:
        stats = d.memory_stats() if d.platform != "cpu" else None
        limit = f", {stats['bytes_limit'] / 2**30:.1f} GiB for XLA" if stats and "bytes_limit" in stats else ""
        print(f"  {d.id}: {d.platform} {d.device_kind}{limit}")
    pkgs = ("jaxlib", "flax", "optax", "orbax-checkpoint", "numpy", "gymnasium", "ale-py", "dm-env", "dm-tree",
            "tensorboardX", "gymnax", "playground", "mujoco", "mujoco-mjx", "brax", "warp-lang", "pytest",
            "pytest-xdist")
    print("packages: " + ", ".join(f"{p} {version(p)}" for p in pkgs))
    for var in ("JAX_PLATFORMS", "XLA_FLAGS", "XLA_PYTHON_CLIENT_PREALLOCATE", "TF_CUDA_PLATFORM_GPU_DEVICE_SCHEDULE",
                "PYTHONPATH"):
        print(f"{var}={os.environ.get(var, '')}")
    kinds = sorted({f"{d.device_kind} ({d.platform})" for d in devices})
    write(args.backend, jax.default_backend() + "\n")
    write(args.fig, f"jax {jax.__version__}, backend {jax.default_backend()}: {len(devices)} x {', '.join(kinds)}; "
                    f"{os.cpu_count()} CPU cores; Python {platform.python_version()}")


# ---------------------------------------------------------------- IMPALA Pong
def returns_at(rows: list[dict[str, str]], frames: float) -> float | None:
    """The return (mean of the last 20 episodes) of the first metrics row at or past `frames`."""
    for r in rows:
        if float(r["env_steps"]) * 4 >= frames and r.get("episode_return_mean") not in (None, "", "nan"):
            return float(r["episode_return_mean"])
    return None


def fmt(x: float | None, spec: str = "{:.1f}") -> str:
    return "—" if x is None or x != x else spec.format(x)  # None or nan (no episode ended yet)


def cmd_pong(args: argparse.Namespace) -> None:
    import bench_atari_gpu

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    n, inferencers, minibatches = ([int(x) for x in args.settings.split("x")] + [0])[:3]
    raw = bench_atari_gpu.raw_env(1, args.raw_seconds) if args.raw_seconds > 0 else {}
    raw_ale = raw.get("ALE AtariVectorEnv (raw)")
    flags = [f"--total_env_steps={args.frames // bench_atari_gpu.FRAME_SKIP}"] + args.cli_flags.split()
    start = time.perf_counter()
    e2e = bench_atari_gpu.end_to_end(n, inferencers, minibatches or None, args.seconds, args.warmup,
                                     work / "pong", flags)
    wall = time.perf_counter() - start
    metrics = work / "pong.csv"  # end_to_end keeps the run's metrics beside its (removed) run directory
    if args.metrics_out:
        shutil.copyfile(metrics, args.metrics_out)
    rows = list(csv.DictReader(metrics.open()))
    frames = e2e["frames"]
    reached = frames >= 0.99 * args.frames
    ratio = e2e["fps"] / REF_FPS
    milestones = [m for m in REF_RETURNS if m <= max(frames, args.frames)]
    ref_at_budget = REF_RETURNS.get(max((m for m in REF_RETURNS if m <= frames), default=0.0))
    same = args.settings == REF_SETTING
    cmp = f"{ratio:.2f}x the {REF_DATE} preset's {REF_FPS:,}" if same else f"{REF_DATE}'s preset: {REF_FPS:,}, another layout"
    budget = "" if reached else f" (stopped at the stage's time limit, short of the {args.frames / 1e6:.2f}M budget)"
    write(args.fig, f"{e2e['fps']:,.0f} frames/s ({cmp}); return {fmt(e2e['return'])} at {frames / 1e6:.2f}M frames"
                    f"{budget} ({REF_DATE}: {fmt(ref_at_budget)}); whole run {wall:.0f} s")
    lines = [
        f"### IMPALA Pong at a fixed frame budget, against {REF_DATE}\n",
        f"`python -m experiments.impala --env Pong-v5` through `bench_atari_gpu.end_to_end`, setting {args.settings} "
        f"(envs per inferencer x inferencers x learner minibatches; the preset is {REF_SETTING}), "
        f"`--total_env_steps={args.frames // 4}` ({args.frames / 1e6:.2f}M frames); frames/s is the slope after the "
        f"first {args.warmup:.0f} s. {REF_DATE}: the preset on the H100 host (jax 0.11.2, 16 cores), 00:52 UTC call.\n",
        "| figure | this run | " + REF_DATE + " | ratio |",
        "|---|---:|---:|---:|",
        f"| end-to-end frames/s | {e2e['fps']:,.0f} | {REF_FPS:,} | {f'{ratio:.2f}x' if same else '—'} |",
    ] + ([
        f"| raw ALE frames/s (64 envs, one {args.raw_seconds:g} s repeat) | {fmt(raw_ale, '{:,.0f}')} | "
        f"{REF_RAW_ALE[0]:,}-{REF_RAW_ALE[1]:,} | {fmt(raw_ale / (sum(REF_RAW_ALE) / 2) if raw_ale else None, '{:.2f}x')} "
        "of their middle |"] if raw else []) + [
        f"| learner wait (median fraction) | {e2e['learner_wait']:.2f} | 0.66 | |",
        f"| frames seen, wall time of the run | {frames / 1e6:.2f}M in {e2e['wall']:.0f} s | 15.93M in 311 s | |",
    ]
    for m in milestones:
        got = returns_at(rows, m)
        note = f" (layouts {REF_SPREAD_4M[0]} to {REF_SPREAD_4M[1]})" if m == 4e6 else ""
        lines.append(f"| return at {m / 1e6:g}M frames (last 20 episodes) | {fmt(got)} | {REF_RETURNS[m]}{note} | |")
    lines.append(f"| return at the end (last 20 episodes) | {fmt(e2e['return'])} | {fmt(ref_at_budget)} | |")
    if not same:
        lines.append(f"\nNot the preset's layout ({args.settings}): the {REF_DATE} figures are for reading, not a ratio.")
    write(args.md, "\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


# ---------------------------------------------------------------- PPO CartPole
def cmd_ppo(args: argparse.Namespace) -> None:
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "experiments.ppo", f"--logdir={work}", "--noprogress"]
    cmd += [f"--total_env_steps={args.total_env_steps}"] if args.total_env_steps else []
    print("$ " + " ".join(cmd), flush=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=args.timeout)
    wall = time.perf_counter() - start
    print(proc.stdout[-6000:], flush=True)
    if proc.returncode != 0:
        raise SystemExit(f"experiments.ppo exited with {proc.returncode}")
    (run_dir,) = [p for p in work.iterdir() if p.is_dir()]
    if args.metrics_out:
        shutil.copyfile(run_dir / "metrics.csv", args.metrics_out)
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    last = rows[-1]
    ret, steps = float(last["episode_return_mean"]), int(float(last["env_steps"]))
    bar = "met" if ret >= PPO_BAR else f"missed ({ret:.1f} of {PPO_BAR:g})"
    budget = "the preset's budget" if not args.total_env_steps else f"--total_env_steps={args.total_env_steps}"
    write(args.fig, f"return {ret:.1f} at {steps:,} env steps ({budget}) in {wall:.1f} s whole "
                    f"({steps / wall:,.0f} env steps/s); bar {PPO_BAR:g}: {bar}; reference {PPO_REF}")
    write(args.md, "### PPO CartPole\n\n"
                   f"`python -m experiments.ppo` ({budget}), one process timed whole (imports, compilation, run, "
                   f"outputs): final return {ret:.1f} (last 20 episodes) at {steps:,} env steps in {wall:.1f} s; "
                   f"the learning bar is {PPO_BAR:g} ({bar}). Reference: {PPO_REF}.\n")


# ---------------------------------------------------------------- Anakin (issue 37)
# Figures to read beside the Anakin stage's (issue 37; other GPUs and other programs: not ratios).
ANAKIN_REFS = ("PureJaxRL's PPO on gymnax CartPole, ~20M env steps/s on an A100, and 2,048 CartPole agents in ~98 s "
               "there; MJX CartpoleBalance stepping at 25.8M env steps/s on an RTX 4090 (MuJoCo Playground's paper)")
GRACE_S = 15.0  # after SIGTERM, the seconds a run has to end (a call still compiling may need them) before SIGKILL


def cli_run(name: str, flags: list[str], work: Path, seconds: float, metrics_out: str | None,
            module: str = "experiments.ppo", prefix: str = "anakin") -> dict:
    """`python -m MODULE FLAGS` in a fresh process, sent SIGTERM after `seconds` if still
    running (the CLI then stops after the program's current call and writes its last metrics row;
    SIGKILL GRACE_S later): whole wall time, metrics rows, env steps (one replica's), training env
    steps/s (bench_anakin.training_sps: one replica's, between the first and the last row) and the
    last row; no rows if stopped before its first. RuntimeError if it failed by itself."""
    import bench_anakin

    logdir = work / name
    logdir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", module, *flags, f"--logdir={logdir}", "--noprogress",
           "--checkpoint_every=0", "--eval_every=0"]
    print(f"$ {' '.join(cmd)}   (SIGTERM after {seconds:.0f} s)", flush=True)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stopped = False
    try:
        out, _ = proc.communicate(timeout=max(seconds, 1.0))
    except subprocess.TimeoutExpired:
        stopped = True
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    wall = time.perf_counter() - start
    print(out[-3000:], flush=True)
    if proc.returncode != 0 and not stopped:
        raise RuntimeError(f"{module} exited with {proc.returncode}")
    runs = [p for p in logdir.iterdir() if (p / "metrics.csv").exists()]
    rows = list(csv.DictReader((runs[0] / "metrics.csv").open())) if runs else []
    if not rows:
        if not stopped:
            raise RuntimeError(f"{module} finished without a metrics row")
        return {"wall": wall, "rows": 0}
    if metrics_out:
        shutil.copyfile(runs[0] / "metrics.csv", Path(metrics_out) / f"{prefix}_{name}_metrics.csv")
    return {"wall": wall, "rows": len(rows), "last": rows[-1], "steps": int(float(rows[-1]["env_steps"])),
            "sps": bench_anakin.training_sps(runs[0]) if len(rows) > 1 else float("nan"), "all_rows": rows}


def attempt(label: str, shown: str, blanks: int, run: Callable[[], dict], cells: list[str], table: list[str],
            failed: list[str]) -> dict | None:
    """run() (a `cli_run`), its result; or None, with the failure (RuntimeError) or the run stopped
    before its first metrics row recorded in `cells`, `table` (a row of `label`, `shown`, `blanks`
    figure columns and a last one that says what happened) and `failed`."""
    try:
        r = run()
    except RuntimeError as e:
        print(f"{label}: FAILED: {e}", flush=True)
        failed.append(label)
        cells.append(f"{label}: **FAILED** ({e})")
        table.append(f"| {label} | {shown} | {' | '.join(['—'] * blanks)} | **FAILED**: {e} (the log has its output) |")
        return None
    if not r["rows"]:
        note = f"stopped at its time limit ({r['wall']:.0f} s) before its first metrics row: no figures"
        cells.append(f"{label}: {note}")
        table.append(f"| {label} | {shown} | — | {r['wall']:.1f} | {' | '.join(['—'] * (blanks - 2))} | {note} |")
        return None
    return r


def finish(args: argparse.Namespace, cells: list[str], text: str, failed: list[str]) -> None:
    """A stage's end: its one-line figures (`cells`) to --fig, its markdown (`text`) to --md and
    stdout; exit 1 naming the runs that failed, if any."""
    write(args.fig, "; ".join(cells))
    write(args.md, text)
    print(text, flush=True)
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")


def playground_impl(wanted: str) -> tuple[str | None, str]:
    """(the MJX pipeline to run, why) where mujoco_playground imports here, else (None, why not):
    its DM Control envs default to MuJoCo Warp (impl 'warp': the warp-lang package); without
    warp-lang, MJX's JAX pipeline (impl 'jax')."""
    probe = "import importlib.util, mujoco_playground; print('warp' if importlib.util.find_spec('warp') else 'no warp')"
    try:
        proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=_env(), capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired:
        return None, "importing mujoco_playground took over 120 s"
    if proc.returncode != 0:
        error = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        return None, f"mujoco_playground does not import here ({error[:160]})"
    if wanted != "auto":
        return wanted, f"--playground_impl {wanted}"
    if proc.stdout.strip().splitlines()[-1] == "warp":
        return "warp", "MuJoCo Warp, the env's default"
    return "jax", "MJX's JAX pipeline: warp-lang, for the env's default MuJoCo Warp, is not installed"


def _figures(r: dict, asked: int) -> tuple[str, str, str]:
    """A run's (training env steps/s, return, 'stopped short' note or '')."""
    short = "" if r["steps"] >= asked else f"stopped at its time limit, short of {asked:,}"
    return fmt(r["sps"], "{:,.0f}"), fmt(float(r["last"]["episode_return_mean"] or "nan")), short


def cmd_anakin(args: argparse.Namespace) -> None:
    """PPO in the Anakin loop: gymnax/CartPole-v1 at --envs; the same with --num_seeds --seeds at
    --seed_envs each; playground/CartpoleBalance where mujoco_playground imports. Each run is
    sent SIGTERM at its share of --seconds (35%, 25%, what is left less GRACE_S); one that fails
    is recorded and the next runs, and the command then exits 1."""
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    deadline = time.perf_counter() + args.seconds
    log = f"--log_every_s={args.log_every_s}"
    cartpole = ["--env=gymnax/CartPole-v1", f"--steps_per_cycle={args.steps_per_cycle}"]
    plan = [  # (label, run name, flags, env steps asked per replica, seconds or None: what is left, replicas)
        (f"gymnax/CartPole-v1, {args.envs:,} envs", "cartpole",
         cartpole + [f"--num_envs={args.envs}", f"--total_env_steps={args.total_env_steps}"],
         args.total_env_steps, 0.35 * args.seconds, 1),
        (f"gymnax/CartPole-v1, {args.seeds} seeds x {args.seed_envs:,} envs", "seeds",
         cartpole + [f"--num_envs={args.seed_envs}", f"--num_seeds={args.seeds}",
                     f"--total_env_steps={args.seed_steps}"],
         args.seed_steps, 0.25 * args.seconds, args.seeds),
    ]
    playground = f"playground/CartpoleBalance, {args.playground_envs:,} envs"
    impl, why = playground_impl(args.playground_impl)
    if impl is not None:
        plan.append((playground, "playground",
                     ["--env=playground/CartpoleBalance", f"--env_kwargs=impl='{impl}'",
                      f"--num_envs={args.playground_envs}", f"--steps_per_cycle={args.playground_steps_per_cycle}",
                      f"--total_env_steps={args.playground_steps}"], args.playground_steps, None, 1))
    cells, failed = [], []
    table = ["| run | flags (over the PPO preset's) | env steps (each replica) | whole s | training env steps/s "
             "(all replicas) | return (last 20 episodes) | note |", "|---|---|---:|---:|---:|---:|---|"]
    for label, name, flags, asked, seconds, replicas in plan:
        shown = "`" + " ".join(flags) + "`"
        left = deadline - GRACE_S - time.perf_counter()
        r = attempt(label, shown, 4, lambda: cli_run(name, flags + [log], work, left if seconds is None else seconds,
                                                     args.metrics_out), cells, table, failed)
        if r is None:
            continue
        r["sps"] *= replicas  # training_sps counts one replica's env steps (each replica's budget's)
        sps, ret, short = _figures(r, asked)
        notes = [short] if short else []
        if replicas > 1:
            lo, hi = (float(r["last"].get(f"episode_return_mean_{k}") or "nan") for k in ("min", "max"))
            notes.insert(0, f"returns {fmt(lo)} to {fmt(hi)} over the replicas")
            ret = f"{ret} (mean of {replicas})"
        if name == "playground":
            notes.insert(0, f"impl '{impl}': {why}")
        cells.append(f"{label}: {sps} env steps/s, return {ret} at {r['steps']:,} env steps"
                     f"{' (stopped at its time limit)' if short else ''}, {r['wall']:.0f} s whole")
        table.append(f"| {label} | {shown} | {r['steps']:,} of {asked:,} | {r['wall']:.1f} | {sps} | {ret} | "
                     f"{'; '.join(notes)} |")
    if impl is None:
        print(f"{playground}: skipped: {why}", flush=True)
        cells.append(f"{playground}: skipped, {why}")
        table.append(f"| {playground} | — | — | — | — | — | skipped: {why} |")
    text = ("### PPO in the Anakin loop (issue 37)\n\n"
            "`python -m experiments.ppo` on JAX-native envs, each run a fresh process timed whole (imports, "
            "compilation, run, outputs) and sent SIGTERM at its share of the stage's time (it then stops after the "
            "program's current call and writes its last metrics row). Training env steps/s is between the first and "
            "the last metrics row (`bench_anakin.training_sps`: compilation comes before the first), times the "
            "replicas for `--num_seeds`; returns are the mean of the last 20 episodes. To read beside, not as "
            f"ratios: {ANAKIN_REFS}.\n\n" + "\n".join(table) + "\n")
    finish(args, cells, text, failed)


# ---------------------------------------------------------------- off-policy (issue 38)
# The 2-core CPU figures to read beside (BENCHMARKS.md, bench_off_policy --mujoco, 2026-11-26):
# CleanRL's settings (256-256, batch 256, one optimizer step per env step) on HalfCheetah-v5.
OFF_POLICY_CPU = {"sac": 194, "td3": 234}


def learning_rates(rows: list[dict[str, str]], optims: int) -> tuple[float, float, int]:
    """(optimizer steps/s, env steps/s, rows) between the first and the last metrics row at which
    the learner was stepping (`learning` 1: past learning_starts); nan where under two such rows."""
    live = [r for r in rows if float(r.get("learning") or 0) >= 1.0]
    if len(live) < 2:
        return float("nan"), float("nan"), len(live)
    first, last = live[0], live[-1]
    dt = float(last["wall_time"]) - float(first["wall_time"])
    steps = (float(last["learner_steps"]) - float(first["learner_steps"])) * optims
    env = float(last["env_steps"]) - float(first["env_steps"])
    return steps / dt, env / dt, len(live)


def cmd_offpolicy(args: argparse.Namespace) -> None:
    """SAC and TD3 on HalfCheetah-v5 (the native MuJoCo pool, CleanRL's settings: 4 envs x 8 steps a
    cycle, 32 optimizer steps of batch 256 a learner step), then SAC at --big_batch: each a fresh
    process sent SIGTERM at its third of --seconds. The learner's optimizer steps/s once learning."""
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    deadline = time.perf_counter() + args.seconds
    common = ["--env=HalfCheetah-v5", f"--total_env_steps={args.total_env_steps}", f"--log_every_s={args.log_every_s}",
              f"--learning_starts={args.learning_starts}"]
    plan = [("SAC, CleanRL's settings", "experiments.sac", "sac", [], 256),
            ("TD3, CleanRL's settings", "experiments.td3", "td3", [], 256),
            (f"SAC, batch {args.big_batch:,}", "experiments.sac", "sac_big", [f"--batch_size={args.big_batch}"],
             args.big_batch)]
    table = ["| run | flags | env steps | whole s | optimizer steps/s (learning) | samples/s | env steps/s "
             "(learning) | return (last 20 episodes) | 2-core CPU, batch 256 |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    cells, failed = [], []
    for i, (label, module, name, flags, batch) in enumerate(plan):
        seconds = (deadline - GRACE_S - time.perf_counter()) / (len(plan) - i)
        shown = "`" + " ".join(common[:1] + flags + common[1:]) + "`"
        r = attempt(label, shown, 6, lambda: cli_run(name, common + flags, work, seconds, args.metrics_out,
                                                     module=module, prefix=module.split(".")[-1]), cells, table, failed)
        if r is None:
            continue
        cpu = OFF_POLICY_CPU.get(module.split(".")[-1]) if batch == 256 else None
        ups, eps, live = learning_rates(r["all_rows"], args.optims)
        ret = fmt(float(r["last"]["episode_return_mean"] or "nan"))
        cells.append(f"{label}: {fmt(ups, '{:,.0f}')} optimizer steps/s ({live} learning rows), "
                     f"{fmt(eps, '{:,.0f}')} env steps/s, return {ret} at {r['steps']:,} env steps")
        table.append(f"| {label} | {shown} | {r['steps']:,} | {r['wall']:.1f} | {fmt(ups, '{:,.0f}')} | "
                     f"{fmt(ups * batch, '{:,.0f}')} | {fmt(eps, '{:,.0f}')} | {ret} | {cpu or '—'} |")
    text = ("### SAC and TD3 on MuJoCo (issue 38)\n\n"
            "`python -m experiments.sac | td3 --env HalfCheetah-v5` (the native pool on the host's cores, the learner "
            "on the default device), each a fresh process sent SIGTERM at its share of the stage's time. Rates are "
            "between the first and the last metrics row past `--learning_starts` (the `learning` column); an optimizer "
            f"step is one batch ({args.optims} per learner step at 4 envs x 8 steps and replay ratio 1). The 2-core CPU "
            "column is bench_off_policy --mujoco's (2026-11-26): 300k env steps at one update each take "
            "300,000 / (optimizer steps/s) seconds of learner.\n\n" + "\n".join(table) + "\n")
    finish(args, cells, text, failed)


# ---------------------------------------------------------------- planning (issue 57)
def per_second(rows: list[dict[str, str]], key: str) -> float:
    """The rate of a count column (episodes, env_steps) between the first and the last metrics row
    (compilation comes before the first); NaN with fewer than two rows."""
    if len(rows) < 2:
        return float("nan")
    first, last = rows[0], rows[-1]
    seconds = float(last["wall_time"]) - float(first["wall_time"])
    return (float(last[key]) - float(first[key])) / seconds if seconds > 0 else float("nan")


def cmd_planning(args: argparse.Namespace) -> None:
    """MuZero on Pong-v5 through the Sebulba loop (its ATARI preset), then AlphaZero's self-play on
    pgx/go_9x9 in the Anakin loop, each a fresh process sent SIGTERM at its share of --seconds
    (60%, what is left): frames/s (env steps x frame skip 4) and the return; games/s."""
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    deadline = time.perf_counter() + args.seconds
    log = f"--log_every_s={args.log_every_s}"
    plan = [  # (label, module, run name, flags, share of the time or None: what is left)
        ("MuZero, Pong-v5", "experiments.muzero", "muzero_pong",
         ["--env=Pong-v5", f"--total_env_steps={args.pong_frames // 4}", *args.muzero_flags.split()], 0.6),
        ("AlphaZero, pgx/go_9x9", "experiments.alphazero", "alphazero_go",
         ["--env=pgx/go_9x9", f"--total_env_steps={args.go_steps}", *args.alphazero_flags.split()], None),
    ]
    table = ["| run | flags (over the preset's) | env steps | whole s | frames/s or games/s (training) | env steps/s "
             "| return (last 20 episodes) |", "|---|---|---:|---:|---:|---:|---:|"]
    cells, failed = [], []
    for label, module, name, flags, share in plan:
        shown = "`" + " ".join(flags) + "`"
        left = deadline - GRACE_S - time.perf_counter()
        r = attempt(label, shown, 4, lambda: cli_run(name, flags + [log], work, left if share is None else
                                                     share * args.seconds, args.metrics_out, module=module,
                                                     prefix="planning"), cells, table, failed)
        if r is None:
            continue
        steps_s = per_second(r["all_rows"], "env_steps")
        if name == "muzero_pong":
            rate = f"{fmt(4 * steps_s, '{:,.0f}')} frames/s"
            ret = fmt(float(r["last"]["episode_return_mean"] or "nan"))
        else:
            rate = f"{fmt(per_second(r['all_rows'], 'episodes'), '{:,.1f}')} games/s"
            ret = "— (self-play: 0)"
        cells.append(f"{label}: {rate}, {fmt(steps_s, '{:,.0f}')} env steps/s, return {ret} at {r['steps']:,} env "
                     f"steps, {r['wall']:.0f} s whole")
        table.append(f"| {label} | {shown} | {r['steps']:,} | {r['wall']:.1f} | {rate} | {fmt(steps_s, '{:,.0f}')} | "
                     f"{ret} |")
    text = ("### The planning agents (issue 57)\n\n"
            "`python -m experiments.muzero --env Pong-v5` (the ATARI preset: Gumbel MuZero's search in the "
            "inferencers' jitted step, the Sebulba loop, the ALE pool on the host's cores) and `python -m "
            "experiments.alphazero --env pgx/go_9x9` (self-play with the true model, the Anakin loop), each a fresh "
            "process timed whole and sent SIGTERM at its share of the stage's time. Rates are between the first and "
            "the last metrics row (compilation comes before the first); a frame is an env step x frame skip 4; a "
            "game is a finished episode of the batch.\n\n" + "\n".join(table) + "\n")
    finish(args, cells, text, failed)


# ---------------------------------------------------------------- paste
def cmd_paste(args: argparse.Namespace) -> None:
    """Put a summary into BENCHMARKS.md between its section's markers (the section name is the
    summary's first line's `<!-- NAME -->` comment), replacing an earlier run of the same kind."""
    import _report

    text = Path(args.summary).read_text()
    first, _, body = text.partition("\n")
    name = first.removeprefix("<!-- section: ").removesuffix(" -->").strip()
    _report.write_section(_report.BENCH_FILE, name, body)
    print(f"wrote section {name} of {_report.BENCH_FILE}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("env", "pong", "ppo", "anakin", "offpolicy", "planning"):
        p = sub.add_parser(name)
        p.add_argument("--fig", help="file for the stage's one-line figures")
        p.add_argument("--md", help="file for the stage's markdown details")
        p.add_argument("--work", default="/tmp/gpu_check_work")
        p.add_argument("--metrics_out", help="copy the run's metrics.csv here")
    sub.choices["env"].add_argument("--backend", help="file for jax's default backend (cpu, gpu, ...)")
    pong = sub.choices["pong"]
    pong.add_argument("--frames", type=int, default=4_000_000, help="frame budget (env steps x frame skip 4)")
    pong.add_argument("--settings", default=REF_SETTING, help="ENVSxINFERENCERSxMINIBATCHES, as bench_atari_gpu")
    pong.add_argument("--seconds", type=float, default=170.0, help="wall-time limit of the run")
    pong.add_argument("--warmup", type=float, default=30.0, help="seconds left out of frames/s")
    pong.add_argument("--raw_seconds", type=float, default=3.0, help="one raw-env repeat of this length (0: none)")
    pong.add_argument("--cli_flags", default="", help="more flags for the CLI")
    ppo = sub.choices["ppo"]
    ppo.add_argument("--total_env_steps", type=int, default=0, help="0: the preset's budget")
    ppo.add_argument("--timeout", type=float, default=120.0)
    anakin = sub.choices["anakin"]
    anakin.add_argument("--seconds", type=float, default=280.0, help="wall time of the three runs together")
    anakin.add_argument("--envs", type=int, default=2048, help="gymnax/CartPole-v1: envs of the one-seed run")
    anakin.add_argument("--steps_per_cycle", type=int, default=16)
    anakin.add_argument("--total_env_steps", type=int, default=2**28, help="its budget (8,192 updates of 2,048 x 16)")
    anakin.add_argument("--seeds", type=int, default=8, help="--num_seeds of the second run")
    anakin.add_argument("--seed_envs", type=int, default=256, help="its envs per replica")
    anakin.add_argument("--seed_steps", type=int, default=2**25, help="its budget per replica")
    anakin.add_argument("--playground_envs", type=int, default=2048)
    anakin.add_argument("--playground_steps_per_cycle", type=int, default=32)
    anakin.add_argument("--playground_steps", type=int, default=2**26)
    anakin.add_argument("--playground_impl", default="auto", choices=["auto", "jax", "warp"],
                        help="MJX pipeline of playground/CartpoleBalance (auto: warp where warp-lang imports)")
    anakin.add_argument("--log_every_s", type=float, default=2.0)
    off = sub.choices["offpolicy"]
    off.add_argument("--seconds", type=float, default=110.0, help="wall time of the three runs together")
    off.add_argument("--total_env_steps", type=int, default=300_000)
    off.add_argument("--learning_starts", type=int, default=5_000, help="for both agents (TD3's preset: 25,000)")
    off.add_argument("--big_batch", type=int, default=4096, help="SAC's batch in the third run")
    off.add_argument("--optims", type=int, default=32, help="optimizer steps per learner step (the presets')")
    off.add_argument("--log_every_s", type=float, default=2.0)
    planning = sub.choices["planning"]
    planning.add_argument("--seconds", type=float, default=280.0, help="wall time of the two runs together")
    planning.add_argument("--pong_frames", type=int, default=10_000_000, help="MuZero's Pong budget in frames")
    planning.add_argument("--muzero_flags", default="", help="more flags for MuZero's run")
    planning.add_argument("--go_steps", type=int, default=2**26, help="AlphaZero's go_9x9 budget in env steps (plies)")
    planning.add_argument("--alphazero_flags", default="", help="more flags for AlphaZero's run")
    planning.add_argument("--log_every_s", type=float, default=5.0)
    paste = sub.add_parser("paste")
    paste.add_argument("summary")
    args = ap.parse_args()
    commands = {"env": cmd_env, "pong": cmd_pong, "ppo": cmd_ppo, "anakin": cmd_anakin, "offpolicy": cmd_offpolicy,
                "planning": cmd_planning, "paste": cmd_paste}
    commands[args.cmd](args)


if __name__ == "__main__":
    main()

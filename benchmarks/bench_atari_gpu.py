"""Atari on a GPU host: raw env frames/s of the host's cores, and end-to-end IMPALA Pong frames/s
of `python -m experiments.impala --env Pong-v5`, measured in the same run (issue 6).

    python benchmarks/bench_atari_gpu.py --out DIR [--seconds 180] [--settings 64x2x1,64x2x2,64x2x2s]

Raw env: ALE's own AtariVectorEnv and our `envs` pool on top of it, 64 envs, async batch 32,
16 threads, random actions, interleaved repeats (median). End to end: the CLI in a fresh process
per setting (envs per inferencer x inferencers [x learner minibatches per trajectory,
default the preset's 2] [s: stacking frames on the device]), stopped after --seconds; frames/s is the
slope of env steps x frame_skip (4) over the metrics rows after --warmup seconds (compilation and
warm-up excluded); the run's CPU use over the same window (cores busy: CPU seconds per wall second,
from /proc) says whether the host's cores are saturated, and by which threads (grouped by name; ALE's
workers and Python's threads share the interpreter's name, JAX names its own). With `--cli_flags='--profile_after_s=90 --profile_seconds=2'` each run's trace
and its summary (busy fractions per thread and GPU stream) land in DIR too. The markdown section is
printed and written to DIR/bench_atari_gpu.md; `benchmarks/_report.write_section` puts it into
BENCHMARKS.md on the developer machine.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
import _report
import bench_envs

from sebulba.experiment import trace_summary

FRAME_SKIP = 4
TARGET_FPS = 63_000
PEER_FRAMES = 7_700_000  # issue 6's Cleanba-style peer: Pong from -21 to -2 within 7.7M frames


def raw_env(repeats: int, seconds: float) -> dict[str, float]:
    contestants = {
        "ALE AtariVectorEnv (raw)": lambda: bench_envs.ale_async("pong", 64, 32, 16),
        "ours (envs.make, atari backend)": lambda: bench_envs.ours_async("Pong-v5", 64, 32, num_threads=16),
    }
    rates: dict[str, list[float]] = {k: [] for k in contestants}
    calls: dict[str, int | None] = {k: None for k in contestants}
    for r in range(repeats):
        for name, build in contestants.items():
            rate, calls[name] = bench_envs.measure_once(bench_envs.Contestant(name, build), calls[name], seconds)
            rates[name].append(rate * FRAME_SKIP)
            print(f"raw repeat {r + 1} {name}: {rate * FRAME_SKIP:,.0f} frames/s", flush=True)
    return {k: statistics.median(v) for k, v in rates.items()}


def process_cpu(pid: int) -> tuple[float, Counter[str]]:
    """CPU seconds of a process (all its threads, ended ones too) and of its live threads by name."""
    by_name: Counter[str] = Counter()
    for name, seconds in _report.thread_cpu(pid).values():
        by_name[name] += seconds
    return _report.cpu_seconds(f"/proc/{pid}/stat"), by_name


def cpu_window(pid: int, start_s: float, end_s: float) -> dict[str, object]:
    """Cores busy in a process from start_s to end_s after now (run in a thread beside the run):
    the whole process, and the thread names that used the most."""
    t0 = time.perf_counter()
    out: dict[str, object] = {}
    try:
        time.sleep(start_s)
        (total_0, names_0), w0 = process_cpu(pid), time.perf_counter()
        time.sleep(max(0.0, end_s - (time.perf_counter() - t0)))
        (total_1, names_1), w1 = process_cpu(pid), time.perf_counter()
    except OSError:  # the run ended early
        return out
    wall = w1 - w0
    names = Counter({k: (v - names_0.get(k, 0.0)) / wall for k, v in names_1.items()})
    out["cores"] = (total_1 - total_0) / wall
    out["top"] = ", ".join(f"{k} {v:.1f}" for k, v in names.most_common(3))
    return out


def end_to_end(num_envs: int, inferencers: int, minibatches: int | None, seconds: float, warmup: float,
               logdir: Path, cli_flags: list[str]) -> dict[str, float]:
    logdir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "experiments.impala", "--env=Pong-v5", f"--num_envs={num_envs}",
           f"--inferencers_per_device={inferencers}", "--total_env_steps=1000000000", f"--logdir={logdir}", "--noprogress",
           "--log_every_s=5", "--checkpoint_every=0"] + ([f"--num_minibatches={minibatches}"] if minibatches else []) + cli_flags
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    cpu: dict[str, object] = {}
    sampler = threading.Thread(target=lambda: cpu.update(cpu_window(proc.pid, warmup, seconds - 2.0)), daemon=True)
    sampler.start()
    try:
        out, _ = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        sampler.join()
        proc.terminate()
        out, _ = proc.communicate(timeout=60)
    runs = list(logdir.iterdir())
    if len(runs) != 1 or not (runs[0] / "metrics.csv").exists():  # the CLI failed before its first metrics row
        print(out[-4000:])
        raise RuntimeError(f"end-to-end run with {num_envs} envs exited with {proc.returncode} and wrote no metrics")
    (run_dir,) = runs
    # keep only the metrics and a profile's summary and trace (a device host returns few files)
    metrics = logdir.with_suffix(".csv")
    shutil.copyfile(run_dir / "metrics.csv", metrics)
    if (run_dir / "profile").exists():
        trace = trace_summary.find_trace(run_dir / "profile")
        window_s, summary = trace_summary.summarize(trace, top=4)
        logdir.with_name(logdir.name + "_trace.md").write_text(trace_summary.markdown(trace, window_s, summary))
        shutil.copyfile(trace, logdir.with_name(logdir.name + "_trace.json.gz"))
    shutil.rmtree(logdir)
    rows = list(csv.DictReader(metrics.open()))
    if len(rows) < 3:
        print(out[-4000:])
        raise RuntimeError(f"end-to-end run with {num_envs} envs logged {len(rows)} rows")
    t = [float(r["wall_time"]) for r in rows]
    s = [float(r["env_steps"]) for r in rows]
    first = next((i for i, x in enumerate(t) if x >= warmup), 0)
    if first >= len(rows) - 1:
        first = 0
    fps = (s[-1] - s[first]) / (t[-1] - t[first]) * FRAME_SKIP
    ret = rows[-1].get("episode_return_mean", "nan")
    # learning per frame against the peer's: return -2 by 7.7M frames
    at_peer = next((r["episode_return_mean"] for r in rows if float(r["env_steps"]) * FRAME_SKIP >= PEER_FRAMES), "")
    steady = rows[first + 1:]
    learner_wait = statistics.median(float(r["learner_wait_frac"]) for r in steady)
    return {"fps": fps, "frames": s[-1] * FRAME_SKIP, "wall": t[-1], "return": float(ret) if ret else float("nan"),
            "return_at_peer": f"{float(at_peer):.1f}" if at_peer else "not reached",
            "learner_wait": learner_wait,
            "cpu": f"{cpu['cores']:.1f} of {os.cpu_count()} ({cpu['top']})" if cpu else "—"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seconds", type=float, default=180.0, help="wall time of each end-to-end run")
    ap.add_argument("--warmup", type=float, default=30.0, help="seconds of each run left out of its frames/s")
    ap.add_argument("--settings", default="64x2",
                    help="comma-separated ENVSxINFERENCERS[xMINIBATCHES][s] (envs per inferencer, "
                         "inferencers, learner minibatches per trajectory; s: --stack_on_device), one end-to-end run each")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cli_flags", default="", help="more flags for every end-to-end run, e.g. '--rmsprop_eps_in_sqrt=false'")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    raw = raw_env(args.repeats, 3.0)
    (args.out / "raw_env.txt").write_text(repr(raw) + "\n")
    rows = []
    for setting in args.settings.split(","):
        stacked = setting.endswith("s")
        n, inferencers, minibatches = ([int(x) for x in setting.removesuffix("s").split("x")] + [0])[:3]
        # metrics.csv is written as the run goes, so a run cut short still has it
        try:
            e2e = end_to_end(n, inferencers, minibatches or None, args.seconds, args.warmup, args.out / f"runs{setting}",
                             args.cli_flags.split() + ["--stack_on_device"] * stacked)
        except RuntimeError as e:  # one failed setting still leaves the others' figures
            print(f"setting {setting} failed: {e}", flush=True)
            continue
        ratio = e2e["fps"] / raw["ALE AtariVectorEnv (raw)"]
        rows.append(f"| {inferencers} x {n} envs, {minibatches or 'preset'}"
                    f"{', stacked on the device' * stacked} | "
                    f"{e2e['fps']:,.0f} | {ratio:.2f}x | "
                    f"{e2e['learner_wait']:.2f} | {e2e['frames'] / 1e6:.2f}M in {e2e['wall']:.0f} s | {e2e['return']:.1f} | {e2e['return_at_peer']} | "
                    f"{e2e['cpu']} | "
                    f"{bench_envs.verdict(e2e['fps'], TARGET_FPS, '{:,.0f}')} |")
        print(rows[-1], flush=True)
    text = (
        _report.gpu_schedule_note() +
        f"Raw env, Pong-v5, 64 envs, async batch 32, 16 threads (median of {args.repeats}): "
        + ", ".join(f"{k} {v:,.0f} frames/s" for k, v in raw.items()) + ".\n\n"
        f"End-to-end IMPALA (`python -m experiments.impala --env Pong-v5{' ' * bool(args.cli_flags)}{args.cli_flags}`, "
        "the Atari preset: IMPALA ResNet, "
        f"unroll 20; actors and learner share the one GPU), frames/s after the first {args.warmup:.0f} s; target >= {TARGET_FPS:,}:\n\n"
    )
    header = ("| inferencers x envs, learner minibatches | frames/s | of raw ALE | learner wait | frames seen | return (last 20 episodes) "
              "| return at 7.7M frames (peer: -2) | CPU cores busy (busiest thread names) | target met? |\n"
              "|---|---:|---:|---:|---|---:|---:|---|---|")
    _report.device_section(args.out, "bench_atari_gpu.py", "Atari on a GPU host", text, header, rows)


if __name__ == "__main__":
    main()

"""PQN against purejaxql's `pqn_minatar.py` at its MinAtar configuration (the issue's speed target:
training env steps/s >= 1.0x purejaxql's own on the same host): gymnax Breakout-MinAtar (or
--game), 128 envs x 32 steps, 2 epochs x 32 minibatches, RAdam 5e-4 decayed linearly, gradient
clip 10, gamma 0.99, lambda 0.65, epsilon 1 -> 0.05 over the first 10% of the run, MinAtar's CNN
with a LayerNorm after the conv and the dense layer. Each run a fresh process, interleaved over
repeats:

- purejaxql's `pqn_minatar.py` in its own venv, through `benchmarks/peers/purejaxql_pqn_minatar.py`
  (its `make_train` and yaml config unmodified but for the env, the budget and its test episodes
  off; compilation timed apart from training);
- ours, `python -m experiments.pqn --env gymnax/GAME-MinAtar --total_env_steps=N` (the Anakin
  loop, by the id): its MINATAR preset is purejaxql's configuration; with `--checkpoint_every=0
  --eval_every=0 --nocompilation_cache` (purejaxql saves nothing during training and its test
  episodes are off here; the compilation is a fresh one in both).

Training env steps/s leave compilation out, as benchmarks/bench_anakin.py measures them:
purejaxql's is its one call's; ours between the first and the last metrics row (the first comes
after the first, compiling, call of 4 updates, `sebulba.loop.anakin.ENV_STEPS_PER_CALL` 16,384 env
steps: a run needs more for two rows).

    python benchmarks/bench_pqn_speed.py [--total 500000] [--repeats 3] [--game Breakout]
        [--purejaxql_python /work/venv-pjrl/bin/python] [--purejaxql_dir /work/purejaxql] [--no-write]

purejaxql's venv and directory: as benchmarks/peers/purejaxql_pqn_minatar.py's docstring says
(PureJaxRL's venv plus hydra-core and omegaconf; pqn_minatar.py and its two yaml files from
github.com/mttga/purejaxql, unmodified, in the directory).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import publish, repeats_header, run_cli, verdict  # noqa: E402
from benchmarks.bench_anakin import ROOT, median, training_sps  # noqa: E402
from sebulba.loop.anakin import ENV_STEPS_PER_CALL  # noqa: E402

NUM_ENVS, STEPS = 128, 32  # purejaxql's pqn_minatar.yaml, our MINATAR preset
GAMES = ("Asterix", "Breakout", "Freeway", "SpaceInvaders")  # gymnax's MinAtar games
OUR_FLAGS = ["--checkpoint_every=0", "--eval_every=0", "--nocompilation_cache"]
PEER = "purejaxql pqn_minatar.py"
OURS = "ours, experiments.pqn (Anakin)"

NOTES = """
The networks, the same but for two things. purejaxql's QNetwork: x / 255 (its `norm_input` off;
a BatchNorm it computes for compatibility and drops), Conv 16 3x3/1 VALID (He normal),
LayerNorm, relu, flatten, Dense 128 (He normal), LayerNorm, relu, Dense(actions). Ours
(the MINATAR preset's `torso="minatar"`, `sebulba.networks.MinAtarCNN` with `layer_norm`): the
same layers and LayerNorms (CleanRL's orthogonal init, gain sqrt 2, every layer: initial values
only), with two documented differences: (1) we read MinAtar's 0/1
planes as they are, where purejaxql divides them by 255 (built for pixels: its network sees
0/0.0039); (2) our conv is written as its 9 shifted views times the kernel (an einsum), the
same function and parameters as `nn.Conv`, because XLA:CPU runs a convolution's gradient
10-15x slower inside a loop body (jax-ml/jax#12868), and both programs' learner epochs are loop
bodies: purejaxql's conv is `nn.Conv`. Both train on every transition of a rollout twice, in
minibatches of 128, reshuffled each epoch: purejaxql's 128 drawn from all 4,096, ours one step of
each of the 128 envs (each env's 32 steps in a random order).

Final return: ours, the mean of the last 20 episodes at the last metrics row; purejaxql's, the
mean over its last update's steps and envs of LogWrapper's `returned_episode_returns` (each
env's last finished episode). At a short budget neither has learned much: the return is there
to show that both ran, not to compare.
"""


def peer_env(env: dict | None = None) -> dict:
    env = dict(os.environ if env is None else env)
    env.pop("XLA_FLAGS", None)  # as run_cli runs ours
    return env


def purejaxql(python: str, directory: str, game: str, total: int) -> dict:
    start = time.perf_counter()
    out = subprocess.run([python, str(ROOT / "benchmarks/peers/purejaxql_pqn_minatar.py"), directory,
                          f"{game}-MinAtar", str(total)], capture_output=True, text=True, check=True,
                         timeout=600 + total / 100, env=peer_env())
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - start
    result["sps"] = result["env_steps"] / result["train_s"]
    return result


def ours(game: str, total: int, logdir: Path) -> dict:
    wall, last, run_dir = run_cli("experiments.pqn", [f"--env=gymnax/{game}-MinAtar", f"--total_env_steps={total}",
                                                      *OUR_FLAGS], logdir)
    return {"wall_s": wall, "sps": training_sps(run_dir), "final_return": float(last["episode_return_mean"]),
            "env_steps": int(float(last["env_steps"]))}


def compare(args: argparse.Namespace) -> str:
    per_update = NUM_ENVS * STEPS
    total = args.total // per_update * per_update  # whole updates, as pqn_minatar.py runs them
    if total < per_update:
        raise SystemExit(f"--total must be at least one update, {per_update:,} env steps")
    runs: dict[str, list[dict]] = {PEER: [], OURS: []}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            runs[PEER].append(purejaxql(args.purejaxql_python, args.purejaxql_dir, args.game, total))
            print(repeat, PEER, runs[PEER][-1], flush=True)
            runs[OURS].append(ours(args.game, total, Path(tmp) / f"r{repeat}"))
            print(repeat, OURS, runs[OURS][-1], flush=True)
    sps = {name: median([r["sps"] for r in rs]) for name, rs in runs.items()}
    peer = sps[PEER]
    lines = [f"gymnax {args.game}-MinAtar, {total:,} env steps a run (whole updates of {NUM_ENVS} envs x {STEPS} "
             "steps).\n",
             "| run | training env steps/s (compile apart) | each repeat | vs purejaxql | whole command s | "
             "final return |", "|---|---:|---|---:|---:|---:|"]
    for name, rs in runs.items():
        each = ", ".join(f"{r['sps']:,.0f}" for r in rs)
        extra = f" (compile {median([r['compile_s'] for r in rs]):.1f} s)" if name == PEER else ""
        lines.append(f"| {name} | {sps[name]:,.0f} | {each} | {sps[name] / peer:.2f}x | "
                     f"{median([r['wall_s'] for r in rs]):.1f}{extra} | {median([r['final_return'] for r in rs]):.1f} |")
    ratio = sps[OURS] / peer
    per_repeat = [o["sps"] / p["sps"] for o, p in zip(runs[OURS], runs[PEER])]
    if math.isnan(ratio):  # one metrics row: no interval to measure ours over
        lines += ["", f"**Target: ours / purejaxql pqn_minatar.py >= 1.0x training env steps/s: not measured** "
                  f"(ours wrote one metrics row: a run of {total:,} env steps is one call of the compiled program; "
                  f"more than {ENV_STEPS_PER_CALL:,} env steps give two).", ""]
    else:
        lines += ["", f"**Target: ours / purejaxql pqn_minatar.py >= 1.0x training env steps/s: "
                  f"{verdict(ratio, 1.0)}** ({ratio:.2f}x; per repeat {', '.join(f'{x:.2f}x' for x in per_repeat)}).",
                  ""]
    return "\n".join(lines) + NOTES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--total", type=int, default=500_000, help="env steps a run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--game", default="Breakout", choices=GAMES, help="a gymnax MinAtar game")
    parser.add_argument("--purejaxql_python", default=os.environ.get("PUREJAXQL_PYTHON", "/work/venv-pjrl/bin/python"))
    parser.add_argument("--purejaxql_dir", default=os.environ.get("PUREJAXQL_DIR", "/work/purejaxql"))
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    header = repeats_header("bench_pqn_speed.py", args.repeats)
    publish("bench_pqn_speed", "### PQN vs purejaxql's pqn_minatar.py at its MinAtar configuration "
            "(`benchmarks/bench_pqn_speed.py`)\n\n" + header + compare(args), not args.no_write)


if __name__ == "__main__":
    main()

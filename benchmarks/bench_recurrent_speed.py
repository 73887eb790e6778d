"""PPO with a GRU 128 core against PureJaxRL's `ppo_rnn.py` at its configuration (issue 53's speed
target): gymnax CartPole-v1, 4 envs x 128 steps, 4 epochs x 4 minibatches of whole env sequences
(1 env each), lr 2.5e-4 annealed, clip 0.2, entropy 0.01, value 0.5, gradient clip 0.5, gamma
0.99, GAE 0.95; and what a core costs against none at the same configuration in both loops.
Each run a fresh process, interleaved over repeats:

- PureJaxRL's `ppo_rnn.py` in its own venv, through `benchmarks/peers/purejaxrl_ppo_rnn.py`
  (compilation timed apart from training; two one-line patches for today's Flax GRU API);
- ours, `python -m experiments.ppo` with `--core gru --core_size 128` and with `--core none`, on
  `gymnax/CartPole-v1` (the Anakin loop, by the id) and on the built-in CartPole-v1 with
  `--loop sebulba --noasync_mode` (the Sebulba loop, sync);
- ours with PureJaxRL's network (`--noseparate_critic --activation relu --head_sizes 128`: one
  relu Dense(128) shared by the policy and the value, one core, and a relu Dense(128) in each
  head): the target's row, PureJaxRL's configuration in every part.

Training env steps/s leave compilation out, as benchmarks/bench_anakin.py measures them:
PureJaxRL's is its one call's; ours between the first and the last metrics row.

    python benchmarks/bench_recurrent_speed.py [--total 100000] [--repeats 3]
        [--purejaxrl_python /work/venv-pjrl/bin/python] [--purejaxrl_dir /work/pjrl] [--no-write]

PureJaxRL's venv and directory: as bench_anakin.py's docstring says, with ppo_rnn.py (and
wrappers.py) from github.com/luchris429/purejaxrl (purejaxrl/) in the directory.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._report import publish, repeats_header, run_cli, verdict  # noqa: E402
from benchmarks.bench_anakin import PPO_FLAGS, ROOT, median, training_sps  # noqa: E402

NUM_ENVS, STEPS = 4, 128
# bench_anakin's PureJaxRL ppo.py flags (the same PPO hyperparameters as ppo_rnn.py's) with
# ppo_rnn.py's 128-unit embedding for the MLP torso; with a core the 4 minibatches split the envs
RNN_FLAGS = [f for f in PPO_FLAGS if not f.startswith("--hidden_sizes")] + [f"--num_envs={NUM_ENVS}",
                                                                            "--hidden_sizes=128"]
GRU = ["--core=gru", "--core_size=128"]
SEBULBA = ["--loop=sebulba", "--noasync_mode"]
PEER = "PureJaxRL ppo_rnn.py (GRU 128)"
PUREJAXRL_NET = ["--noseparate_critic", "--activation=relu", "--head_sizes=128"]  # ppo_rnn.py's ActorCriticRNN
SAME = "ours Anakin, GRU 128, PureJaxRL's network"
RUNS = {  # name: (module, env, flags)
    "ours Anakin, GRU 128": ("experiments.ppo", "gymnax/CartPole-v1", GRU),
    "ours Anakin, no core": ("experiments.ppo", "gymnax/CartPole-v1", ["--core=none"]),
    SAME: ("experiments.ppo", "gymnax/CartPole-v1", [*GRU, *PUREJAXRL_NET]),
    "ours Sebulba sync, GRU 128": ("experiments.ppo", "CartPole-v1", [*SEBULBA, *GRU]),
    "ours Sebulba sync, no core": ("experiments.ppo", "CartPole-v1", [*SEBULBA, "--core=none"]),
}


NOTES = """
The networks. PureJaxRL's: Dense(128) relu -> GRU 128 -> a policy head (Dense(128) relu,
Dense(2)) and a value head (Dense(128) relu, Dense(1)), one core. Ours through the CLI
(`--hidden_sizes=128 --core gru --core_size 128`, the CartPole preset's `--separate_critic` and
tanh): a tanh torso of Dense(128) for the
policy and another for the value (`separate_critic=True`), each followed by a GRU 128 core of its
own, then linear heads (Dense(2), Dense(1)): two cores, so the learner re-unrolls two 128-step
scans, one after the other, for each of the 16 minibatches (and, before them, once more for the
values: PureJaxRL keeps the rollout's). The "PureJaxRL's network" row is ours with PureJaxRL's:
one relu torso shared by both heads, one core, a relu Dense(128) in each head (`--noseparate_critic
--activation relu --head_sizes 128`; the initialisations' gains differ: ours sqrt(2) in the hidden
layers, PureJaxRL's 2 in its heads'). Both anneal the learning rate linearly to 0 over the run,
normalise advantages per minibatch and clip the value loss.

PureJaxRL's patches (`benchmarks/peers/purejaxrl_ppo_rnn.py`), for today's Flax GRU API only
(flax 0.12.8 here; ppo_rnn.py was written for flax 0.7): `nn.GRUCell()` ->
`nn.GRUCell(features=ins.shape[1])`, and the static `nn.GRUCell.initialize_carry(key, (batch,),
size)` -> `nn.GRUCell(features=size, parent=None).initialize_carry(key, (batch, size))` (zeros, as
before); DEBUG off. Its venv: jax 0.10.2, flax 0.12.8, optax 0.2.8, distrax 0.1.9, gymnax 0.0.9.

Final return: ours, the mean of the last 20 episodes at the last metrics row; PureJaxRL's, the
mean over its last update's steps and envs of LogWrapper's `returned_episode_returns` (each
env's last finished episode).
"""


def purejaxrl_rnn(python: str, directory: str, total: int) -> dict:
    start = time.perf_counter()
    out = subprocess.run([python, str(ROOT / "benchmarks/peers/purejaxrl_ppo_rnn.py"), directory, str(total)],
                         capture_output=True, text=True, check=True, timeout=120 + 60 * total / 1e4)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - start
    result["sps"] = result["env_steps"] / result["train_s"]
    return result


def ours(module: str, env: str, flags: list[str], total: int, logdir: Path) -> dict:
    wall, last, run_dir = run_cli(module, [f"--env={env}", f"--total_env_steps={total}", *RNN_FLAGS, *flags], logdir)
    return {"wall_s": wall, "sps": training_sps(run_dir), "final_return": float(last["episode_return_mean"]),
            "env_steps": int(float(last["env_steps"]))}


def compare(args: argparse.Namespace) -> str:
    total = args.total // (NUM_ENVS * STEPS) * NUM_ENVS * STEPS  # whole updates, as ppo_rnn.py runs them
    runs: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            runs.setdefault(PEER, []).append(purejaxrl_rnn(args.purejaxrl_python, args.purejaxrl_dir, total))
            print(repeat, PEER, runs[PEER][-1], flush=True)
            for name, (module, env, flags) in RUNS.items():
                runs.setdefault(name, []).append(ours(module, env, flags, total, Path(tmp) / f"r{repeat}"))
                print(repeat, name, runs[name][-1], flush=True)
    sps = {name: median([r["sps"] for r in rs]) for name, rs in runs.items()}
    peer = sps[PEER]
    lines = [f"{total:,} env steps a run (PureJaxRL's whole updates of 4 x 128).\n",
             "| run | training env steps/s (compile apart) | each repeat | vs PureJaxRL | whole command s | "
             "final return |", "|---|---:|---|---:|---:|---:|"]
    for name, rs in runs.items():
        each = ", ".join(f"{r['sps']:,.0f}" for r in rs)
        extra = f" (compile {median([r['compile_s'] for r in rs]):.1f} s)" if name == PEER else ""
        lines.append(f"| {name} | {sps[name]:,.0f} | {each} | {sps[name] / peer:.2f}x | "
                     f"{median([r['wall_s'] for r in rs]):.1f}{extra} | {median([r['final_return'] for r in rs]):.1f} |")
    ratio = sps[SAME] / peer
    per_repeat = [o["sps"] / p["sps"] for o, p in zip(runs[SAME], runs[PEER])]
    two_cores = sps["ours Anakin, GRU 128"] / peer
    lines += ["", f"**Target: ours Anakin at PureJaxRL's configuration (its network, GRU 128) / PureJaxRL ppo_rnn.py "
              f">= 1.0x: {verdict(ratio, 1.0)}** ({ratio:.2f}x; per repeat {', '.join(f'{x:.2f}x' for x in per_repeat)}). "
              f"With the CartPole preset's network (a torso and a core for each of the policy and the value): "
              f"{two_cores:.2f}x.", ""]
    for loop in ("Anakin", "Sebulba sync"):
        gru, none = sps[f"ours {loop}, GRU 128"], sps[f"ours {loop}, no core"]
        lines.append(f"- Cost of the GRU 128 core, {loop}: {none / gru:.1f}x fewer env steps/s than no core "
                     f"({gru:,.0f} vs {none:,.0f}: the core run at {gru / none:.0%} of the speed).")
    return "\n".join(lines) + "\n" + NOTES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--total", type=int, default=500_000, help="env steps a run (ppo_rnn.py's: 5e5)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--purejaxrl_python", default=os.environ.get("PUREJAXRL_PYTHON", "/work/venv-pjrl/bin/python"))
    parser.add_argument("--purejaxrl_dir", default=os.environ.get("PUREJAXRL_DIR", "/work/pjrl"))
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    header = repeats_header("bench_recurrent_speed.py", args.repeats)
    publish("bench_recurrent_speed", "### PPO with a GRU 128 core vs PureJaxRL's ppo_rnn.py, and what a core costs "
            "(`benchmarks/bench_recurrent_speed.py`)\n\n" + header + compare(args), not args.no_write)


if __name__ == "__main__":
    main()

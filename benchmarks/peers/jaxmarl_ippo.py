"""Runs JaxMARL's IPPO baseline on MPE (`baselines/IPPO/ippo_ff_mpe.py`: its `make_train` and its
config file `config/ippo_ff_mpe.yaml`, unchanged but for TOTAL_TIMESTEPS, NUM_SEEDS and SEED) in
JaxMARL's own venv, seeds under `jax.vmap` as its `main` does, W&B disabled (its per-update
`wandb.log` becomes a no-op); prints one JSON line. Used by benchmarks/bench_ippo.py.

    python jaxmarl_ippo.py JAXMARL_DIR TOTAL_TIMESTEPS NUM_SEEDS [SEED]

JAXMARL_DIR is a checkout of github.com/FLAIROx/JaxMARL. Its MPE log wrapper multiplies every
reward by the number of agents ("as per the on-policy codebase", MAPPO's); `returns_per_player`
divides that back out: the mean episode return of one player, the unit our metrics and
PettingZoo's simple_spread_v3 use (JaxMARL's spread and mpe2's give each agent the same reward:
local_ratio 0.5, collisions with other agents only).
"""

import json
import sys
import time

started = time.perf_counter()
directory, total, num_seeds = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
sys.path.insert(0, f"{directory}/baselines/IPPO")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import wandb  # noqa: E402
import yaml  # noqa: E402

import ippo_ff_mpe  # noqa: E402  (JaxMARL's baseline, from the checkout)

config = yaml.safe_load(open(f"{directory}/baselines/IPPO/config/ippo_ff_mpe.yaml"))
config.update(TOTAL_TIMESTEPS=total, NUM_SEEDS=num_seeds, SEED=seed, WANDB_MODE="disabled")
wandb.init(mode="disabled")
train = jax.jit(jax.vmap(ippo_ff_mpe.make_train(config)))
keys = jax.random.split(jax.random.PRNGKey(seed), num_seeds)
compiled = train.lower(keys).compile()
compile_s = time.perf_counter() - started
start = time.perf_counter()
out = jax.block_until_ready(compiled(keys))
train_s = time.perf_counter() - start
returns = np.asarray(out["metrics"]["returned_episode_returns"])  # [seed, update]: each update's mean
agents = 3 if "spread" in config["ENV_NAME"] else None
last = returns[:, -10:].mean(axis=1)  # the last 10 updates', per seed
print(json.dumps({
    "env": config["ENV_NAME"], "total_timesteps": total, "num_seeds": num_seeds, "config": config,
    "returns_logged": [float(r) for r in last],
    "returns_per_player": [float(r) / agents for r in last] if agents else None,
    "compile_s": compile_s, "train_s": train_s,
}))

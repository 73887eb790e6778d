"""Runs purejaxql's `purejaxql/pqn_minatar.py` (its `make_train`, with the config its Hydra files
give `python purejaxql/pqn_minatar.py +alg=pqn_minatar`: 128 envs x 32 steps, 2 epochs x 32
minibatches, RAdam 5e-4 decayed linearly, gradient clip 10, gamma 0.99, lambda 0.65, epsilon
1 -> 0.05 over the first 10% of the updates, its CNN with LayerNorm) in its own venv, timing the
compilation apart from training; prints one JSON line, as the PureJaxRL drivers beside it. Used
by benchmarks/bench_pqn_speed.py.

    python purejaxql_pqn_minatar.py PUREJAXQL_DIR [ENV_NAME [TOTAL_TIMESTEPS]]

ENV_NAME: a gymnax id (default Breakout-MinAtar; the yaml's is Asterix-MinAtar). TOTAL_TIMESTEPS
(default the yaml's, 1e7) sets TOTAL_TIMESTEPS_DECAY too, so that epsilon and the learning rate
decay over the run, as ours do over theirs.

PUREJAXQL_DIR holds purejaxql's files unmodified, in their own layout, from github.com/mttga/purejaxql
(the mirror at /work/.mirror/mttga+purejaxql/repo, HEAD 47af6d7b, 2025-11-12):

    mkdir -p /work/purejaxql/config/alg
    git -C /work/.mirror/mttga+purejaxql/repo show HEAD:purejaxql/pqn_minatar.py > /work/purejaxql/pqn_minatar.py
    git -C ... show HEAD:purejaxql/config/config.yaml > /work/purejaxql/config/config.yaml
    git -C ... show HEAD:purejaxql/config/alg/pqn_minatar.yaml > /work/purejaxql/config/alg/pqn_minatar.yaml

(pqn_minatar.py's git blob: ead2838172c98c53b8444d9f831ab5db1784ee8b.) Its venv is PureJaxRL's
(benchmarks/bench_anakin.py's docstring: jax 0.10.2, flax 0.12.8, optax 0.2.8, chex 0.1.92,
gymnax 0.0.9, wandb) plus what pqn_minatar.py imports at its top and that venv lacked:
`V/bin/pip install hydra-core omegaconf` (hydra-core 1.3.8, omegaconf 2.3.1; safetensors is
imported only when saving, which this driver never does).

The config is composed as Hydra and pqn_minatar.py's `single_run` compose it (config.yaml, its
`alg` group overlaid with alg/pqn_minatar.yaml, then `{**config, **config["alg"]}`), read from
the files in PUREJAXQL_DIR, with these overrides: ENV_NAME; TOTAL_TIMESTEPS and
TOTAL_TIMESTEPS_DECAY; TEST_DURING_TRAINING False (its periodic greedy test episodes: our runs
evaluate nothing either); WANDB_MODE "disabled" (already the default: no logging callback). One
seed, the config's SEED (0): `jax.jit(make_train(config))` on one key, where `single_run` vmaps
`make_train` over NUM_SEEDS (1) keys; no parameters saved (SAVE_PATH is `single_run`'s).

Final return: the mean over the last update's steps and envs of LogWrapper's
`returned_episode_returns` (each env's last finished episode), the metrics' last row.
"""

import json
import sys
import time

started = time.perf_counter()
directory = sys.argv[1]
env_name = sys.argv[2] if len(sys.argv) > 2 else "Breakout-MinAtar"
total = int(float(sys.argv[3])) if len(sys.argv) > 3 else None
sys.path.insert(0, directory)
import jax  # noqa: E402
import pqn_minatar  # noqa: E402  (purejaxql's module, from PUREJAXQL_DIR)
from omegaconf import OmegaConf  # noqa: E402


def load(path: str) -> dict:
    return OmegaConf.to_container(OmegaConf.load(f"{directory}/{path}"))


# Hydra's composition for `+alg=pqn_minatar`, then single_run's flattening
config = load("config/config.yaml")
config["alg"] = {**config.get("alg", {}), **load("config/alg/pqn_minatar.yaml")}
config = {**config, **config["alg"]}
config.update(ENV_NAME=env_name, TEST_DURING_TRAINING=False, WANDB_MODE="disabled")
if total is not None:
    config.update(TOTAL_TIMESTEPS=total, TOTAL_TIMESTEPS_DECAY=total)
for key in ("TOTAL_TIMESTEPS", "TOTAL_TIMESTEPS_DECAY"):  # the yaml's 1e7 is a float: whole updates as ints
    config[key] = int(config[key])

rng = jax.random.PRNGKey(config["SEED"])
t0 = time.perf_counter()
train = jax.jit(pqn_minatar.make_train(config)).lower(rng).compile()
t1 = time.perf_counter()
out = jax.block_until_ready(train(rng))
t2 = time.perf_counter()
returns = out["metrics"]["returned_episode_returns"]  # [updates]: each update's mean over steps and envs
num_envs, num_steps = config["NUM_ENVS"], config["NUM_STEPS"]
steps = config["NUM_UPDATES"] * num_envs * num_steps
print(json.dumps({"num_envs": num_envs, "env_steps": int(steps), "compile_s": t1 - t0, "train_s": t2 - t1,
                  "process_s_before_exit": t2 - started, "final_return": float(returns[-1]),
                  "env_name": env_name, "jax": jax.__version__}))

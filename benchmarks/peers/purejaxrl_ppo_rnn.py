"""Runs PureJaxRL's `purejaxrl/ppo_rnn.py` (its `make_train` and `__main__` config: GRU 128, 4 envs
x 128 steps, 4 epochs x 4 minibatches of whole env sequences, lr 2.5e-4 annealed, CartPole-v1,
5e5 env steps) in PureJaxRL's own venv, timing the compilation apart from training; prints one
JSON line. Used by benchmarks/bench_recurrent_speed.py.

    python purejaxrl_ppo_rnn.py PUREJAXRL_DIR [TOTAL_TIMESTEPS]

PUREJAXRL_DIR holds ppo_rnn.py and wrappers.py (github.com/luchris429/purejaxrl, purejaxrl/).

ppo_rnn.py runs as it is but for DEBUG (its per-update print, off) and TOTAL_TIMESTEPS (when
given), and for two patches, both to Flax's GRU API of today (flax >= 0.8: ppo_rnn.py was written
for flax 0.7, where `nn.GRUCell` took no size and `initialize_carry` was a static method); each
replaces one line of its ScannedRNN and changes no value:

1. `nn.GRUCell()(rnn_state, ins)` -> `nn.GRUCell(features=ins.shape[1])(rnn_state, ins)`: the
   cell now needs its `features` (the carry's width: 128, the embedding's);
2. `nn.GRUCell.initialize_carry(jax.random.PRNGKey(0), (batch_size,), hidden_size)` ->
   `nn.GRUCell(features=hidden_size, parent=None).initialize_carry(jax.random.PRNGKey(0),
   (batch_size, hidden_size))`: `initialize_carry` is now a method of a cell that knows its
   `features`, given the input's shape [batch, features]; the carry is zeros, as before.
"""

import json
import sys
import time

started = time.perf_counter()
directory = sys.argv[1]
total = float(sys.argv[2]) if len(sys.argv) > 2 else None
sys.path.insert(0, directory)
source = open(f"{directory}/ppo_rnn.py").read()
PATCHES = [  # (ppo_rnn.py's line, today's Flax): see the docstring
    ("nn.GRUCell()(rnn_state, ins)", "nn.GRUCell(features=ins.shape[1])(rnn_state, ins)"),
    ("nn.GRUCell.initialize_carry(\n            jax.random.PRNGKey(0), (batch_size,), hidden_size\n        )",
     "nn.GRUCell(features=hidden_size, parent=None).initialize_carry(\n"
     "            jax.random.PRNGKey(0), (batch_size, hidden_size)\n        )"),
]
for old, new in PATCHES:
    if source.count(old) != 1:
        raise SystemExit(f"ppo_rnn.py has changed: {old!r} is not in it once")
    source = source.replace(old, new)
main_at = source.index('if __name__ == "__main__":')
namespace: dict = {"__name__": "purejaxrl_ppo_rnn"}
exec(compile(source[:main_at], f"{directory}/ppo_rnn.py", "exec"), namespace)
import jax  # noqa: E402

# ppo_rnn.py's own __main__ config, read from its source, with our overrides
config_src = source[main_at:].split("config = ", 1)[1]
config = eval(config_src[: config_src.index("}") + 1])  # noqa: S307 (a dict literal from ppo_rnn.py)
config.update(DEBUG=False)
if total is not None:
    config.update(TOTAL_TIMESTEPS=total)

rng = jax.random.PRNGKey(30)
t0 = time.perf_counter()
train = jax.jit(namespace["make_train"](config)).lower(rng).compile()
t1 = time.perf_counter()
out = jax.block_until_ready(train(rng))
t2 = time.perf_counter()
returns = out["metric"]["returned_episode_returns"]  # [updates, steps, envs]
num_envs, num_steps = config["NUM_ENVS"], config["NUM_STEPS"]
steps = int(config["TOTAL_TIMESTEPS"]) // (num_envs * num_steps) * num_envs * num_steps
print(json.dumps({"num_envs": num_envs, "env_steps": steps, "compile_s": t1 - t0, "train_s": t2 - t1,
                  "process_s_before_exit": t2 - started, "final_return": float(returns[-1].mean()),
                  "jax": jax.__version__}))

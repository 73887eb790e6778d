"""Runs PureJaxRL's `purejaxrl/ppo.py` (its `make_train` and `__main__` config, unchanged but
for NUM_ENVS and DEBUG, its per-update print, and its orthogonal init's QR run seed after seed
under vmap, below) in PureJaxRL's own venv, timing the compilation
apart from training; prints one JSON line. Used by benchmarks/bench_anakin.py. NUM_SEEDS > 1:
PureJaxRL's own way to train many seeds, `jax.jit(jax.vmap(make_train(config)))` over split keys
(env_steps then counts every seed's).

    python purejaxrl_ppo.py PUREJAXRL_DIR NUM_ENVS [TOTAL_TIMESTEPS [NUM_SEEDS]]

PUREJAXRL_DIR holds ppo.py and wrappers.py (github.com/luchris429/purejaxrl, purejaxrl/).
"""

import json
import sys
import time

started = time.perf_counter()
directory, num_envs = sys.argv[1], int(sys.argv[2])
total = float(sys.argv[3]) if len(sys.argv) > 3 else 5e5
num_seeds = int(sys.argv[4]) if len(sys.argv) > 4 else 1
sys.path.insert(0, directory)
source = open(f"{directory}/ppo.py").read()
main_at = source.index('if __name__ == "__main__":')
namespace: dict = {"__name__": "purejaxrl_ppo"}
exec(compile(source[:main_at], f"{directory}/ppo.py", "exec"), namespace)
import jax  # noqa: E402


def orthogonal(scale, *args, **kwargs):
    """ppo.py's `orthogonal` initializer, its QR run seed after seed under vmap: jaxlib 0.10.2's
    batched QR (LAPACK through ParallelBatchMap) deadlocks the CPU thread pool of this 2-core host
    (seen with gdb; PureJaxRL's 2-seed run hung every time). The values are the same."""
    base = namespace["_orthogonal"](scale, *args, **kwargs)

    def init(key, shape, dtype=jax.numpy.float32):
        return jax.custom_batching.sequential_vmap(lambda k: base(k, shape, dtype))(key)

    return init


namespace["_orthogonal"], namespace["orthogonal"] = namespace["orthogonal"], orthogonal
# ppo.py's own __main__ config, read from its source, with our overrides
config_src = source[main_at:].split("config = ", 1)[1]
config = eval(config_src[: config_src.index("}") + 1])  # noqa: S307 (a dict literal from ppo.py)
config.update(NUM_ENVS=num_envs, TOTAL_TIMESTEPS=total, DEBUG=False)

rng = jax.random.PRNGKey(30)
make_train = namespace["make_train"](config)
if num_seeds > 1:
    rng = jax.random.split(rng, num_seeds)
    make_train = jax.vmap(make_train)
t0 = time.perf_counter()
train = jax.jit(make_train).lower(rng).compile()
t1 = time.perf_counter()
out = jax.block_until_ready(train(rng))
t2 = time.perf_counter()
returns = out["metrics"]["returned_episode_returns"]  # [(seeds,) updates, steps, envs]
last = returns[:, -1] if num_seeds > 1 else returns[-1]
steps = int(config["TOTAL_TIMESTEPS"]) // (num_envs * config["NUM_STEPS"]) * num_envs * config["NUM_STEPS"]
print(json.dumps({"num_envs": num_envs, "num_seeds": num_seeds, "env_steps": steps * num_seeds,
                  "compile_s": t1 - t0, "train_s": t2 - t1, "process_s_before_exit": t2 - started,
                  "final_return": float(last.mean())}))

"""Env-pool demo: random actions on a built-in task, sync then async, with episode returns.

    python -m experiments.envs_demo --task CartPole-v1 --num_envs 64 --steps 2000
"""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
from absl import app, flags

import envs

flags.DEFINE_string("task", "CartPole-v1", "Task id (see envs.list_all_envs()).")
flags.DEFINE_integer("num_envs", 64, "Envs in the pool.")
flags.DEFINE_integer("steps", 2000, "Pool steps per mode.")
flags.DEFINE_integer("seed", 42, "Env i is seeded with seed + i.")
FLAGS = flags.FLAGS


def random_actions(space: gym.spaces.Space, n: int, rng: np.random.Generator) -> np.ndarray:
    if isinstance(space, gym.spaces.Discrete):
        return rng.integers(space.start, space.start + space.n, n)
    return rng.uniform(space.low, space.high, (n, *space.shape)).astype(space.dtype)


def run(pool: envs.EnvPool, steps: int, rng: np.random.Generator) -> tuple[float, list[float]]:
    """Random actions through the async API (sync is batch_size == num_envs); returns steps/s
    and finished episode returns."""
    returns, running = [], np.zeros(pool.num_envs)
    pool.async_reset()
    start, count = time.perf_counter(), 0
    for _ in range(steps):
        obs, rew, term, trunc, info = pool.recv()
        ids = info["env_id"]
        running[ids] += rew
        for i in ids[term | trunc]:
            returns.append(running[i])
            running[i] = 0.0
        pool.send(random_actions(pool.action_space, len(ids), rng), ids)
        count += len(ids)
    return count / (time.perf_counter() - start), returns


def main(argv: list[str]) -> None:
    del argv
    rng = np.random.default_rng(FLAGS.seed)
    print(f"{FLAGS.task}: {envs.make_spec(FLAGS.task)}")
    for name, batch in (("sync", FLAGS.num_envs), ("async", max(1, FLAGS.num_envs // 2))):
        with envs.make(FLAGS.task, num_envs=FLAGS.num_envs, batch_size=batch, seed=FLAGS.seed) as pool:
            sps, returns = run(pool, FLAGS.steps, rng)
        mean = f"{np.mean(returns):.1f}" if returns else "n/a"
        print(f"{name:>5} (num_envs={FLAGS.num_envs}, batch_size={batch}): {sps:,.0f} env steps/s, "
              f"{len(returns)} episodes, mean random-policy return {mean}")


if __name__ == "__main__":
    app.run(main)

"""A reference inference cycle, written plainly: the oracle the loop's donated, packed cycle is
checked against (and `benchmarks/bench_loop.py`'s "bookkeeping on the host" figure). One jitted
`Agent.step` per env step (typed keys as they are, no donation, no packing, no carried form), the
trajectory stacked with numpy on the host, episode returns summed with numpy."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

import envs
from sebulba.agent import Agent
from sebulba.types import EnvStep, Trajectory


class ReferenceCycle:
    """Cycles on a fresh pool of `num_envs` envs of `env_id` seeded `seed`, from the step state
    `agent.init_step_state(networks, num_envs, key)`."""

    def __init__(self, agent: Agent, networks: Any, env_id: str, num_envs: int, seed: int, key: jax.Array):
        self.agent, self.networks, self.num_envs = agent, networks, num_envs
        self._step = jax.jit(agent.step)
        self.pool = envs.make(env_id, num_envs=num_envs, seed=seed)
        obs, info = self.pool.reset()
        zeros = np.zeros(num_envs, bool)
        self.env_step = EnvStep(obs, np.zeros(num_envs, np.float32), zeros, zeros, info["elapsed_step"] == 0)
        self.step_state = agent.init_step_state(networks, num_envs, key)
        self.running, self.length = np.zeros(num_envs, np.float32), np.zeros(num_envs, np.int32)

    def run(self, steps: int, version: int = 0, actor: int = 0) -> Trajectory:
        env_steps, actions, extras = [self.env_step], [], []
        for _ in range(steps):
            output, self.step_state = self._step(self.networks, self.step_state, self.env_step)
            output = self.agent.as_actor_output(output)
            actions.append(np.asarray(output.action))
            extras.append(jax.tree.map(np.asarray, output.extras))
            obs, reward, terminated, truncated, info = self.pool.step(actions[-1])
            self.env_step = EnvStep(obs, np.asarray(reward, np.float32), terminated, truncated, info["elapsed_step"] == 0)
            env_steps.append(self.env_step)
        ep_ret = np.full((steps, self.num_envs), np.nan, np.float32)
        ep_len = np.zeros((steps, self.num_envs), np.int32)
        for t, es in enumerate(env_steps[1:]):
            self.running = np.where(es.first, 0.0, self.running + es.reward).astype(np.float32)
            self.length = np.where(es.first, 0, self.length + 1).astype(np.int32)
            done = es.terminated | es.truncated
            ep_ret[t], ep_len[t] = np.where(done, self.running, np.nan), np.where(done, self.length, 0)
        stack = lambda *xs: np.stack(xs)  # noqa: E731
        return Trajectory(jax.tree.map(stack, *env_steps), np.stack(actions), jax.tree.map(stack, *extras), ep_ret,
                          ep_len, np.int32(version), np.int32(actor))

    def close(self) -> None:
        self.pool.close()

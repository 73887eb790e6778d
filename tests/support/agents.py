"""Small agents for loop tests."""

from __future__ import annotations

import threading

import jax.numpy as jnp
import optax

from sebulba.agent import Agent
from sebulba.agents import RandomAgent, SimplePolicyGradient, SPGConfig
from sebulba.types import ActorOutput


class CountingAgent(Agent):
    """Step state: a per-env step counter. Experience records, per cycle, the counters at the
    cycle's start and end and the trajectory's first and last recorded counters (extras), so tests
    can check which step state reached the learner. Networks: one scalar, learned towards 1."""

    def init_networks(self, key):
        return {"w": jnp.zeros(())}

    def optimizer(self):
        return optax.sgd(0.1)

    def init_step_state(self, networks, num_envs, key):
        return jnp.zeros(num_envs, jnp.int32)

    def init_experience(self, networks, layout, key):
        z = jnp.zeros((), jnp.int32)
        return {"initial_min": z, "final_min": z, "first_extra": z, "last_extra": z, "cycles": z}

    def step(self, networks, step_state, env_step):
        action = jnp.zeros(step_state.shape, jnp.int32)
        return ActorOutput(action, extras=step_state), step_state + 1

    def update_experience(self, experience, initial_step_state, final_step_state, trajectory):
        return {
            "initial_min": initial_step_state.min(),
            "final_min": final_step_state.min(),
            "first_extra": trajectory.extras[0].min(),
            "last_extra": trajectory.extras[-1].min(),
            "cycles": experience["cycles"] + 1,
        }

    def loss(self, networks, experience, key):
        return (networks["w"] - 1.0) ** 2, {"w": networks["w"]}


class BrokenAgent(RandomAgent):
    """Its step raises while being traced (the loop traces it ahead, in its constructor)."""

    def step(self, networks, step_state, env_step):
        raise ZeroDivisionError("agent step blew up on purpose")


class FailsInThreadAgent(RandomAgent):
    """Its shard_step_state raises when an inferencer thread calls it at the end of a cycle (the
    cycle of zeros the loop's constructor runs to compile ahead, in its own thread, gets through)."""

    def shard_step_state(self, step_state, sharding):
        if threading.current_thread().name.startswith("inferencer-"):
            raise ZeroDivisionError("agent blew up on purpose in an inferencer thread")
        return super().shard_step_state(step_state, sharding)


class MinibatchSPG(SimplePolicyGradient):
    """A small SimplePolicyGradient that learns each trajectory as `minibatches` minibatches."""

    def __init__(self, spec, minibatches: int):
        super().__init__(spec, SPGConfig(hidden_sizes=(16,)))
        self.minibatches = minibatches

    def num_minibatches(self) -> int:
        return self.minibatches

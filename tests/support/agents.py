"""Small agents for loop tests."""

from __future__ import annotations

import dataclasses
import threading

import jax
import jax.numpy as jnp
import numpy as np
import optax

from sebulba import observations
from sebulba.agent import Agent
from sebulba.agents import RandomAgent, SimplePolicyGradient, SPGConfig
from sebulba.agents.simple_pg import returns_to_go
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


@dataclasses.dataclass(frozen=True)
class LinearPGConfig:
    """LinearPG's config: what config.json records, and what a reload rebuilds it with."""

    learning_rate: float = 0.05
    discount: float = 0.99
    init_bias: tuple[float, ...] = ()  # the logits' starting bias per action (empty: zeros)

    def __post_init__(self) -> None:
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")


class LinearPG(Agent):
    """A user's own agent, outside the package, in the form a run reloads by name,
    `LinearPG(env_spec, config=LinearPGConfig())`: a linear softmax policy learned by REINFORCE
    within each cycle (returns cut at its end), for discrete actions."""

    def __init__(self, env_spec, config: LinearPGConfig = LinearPGConfig()):
        super().__init__(env_spec)
        self.config = config
        self.num_actions = int(env_spec.action_space.n)
        self.obs_size = int(np.prod(env_spec.observation_space.shape))

    def init_networks(self, key):
        bias = jnp.asarray(self.config.init_bias or (0.0,) * self.num_actions, jnp.float32)
        return {"w": 0.01 * jax.random.normal(key, (self.obs_size, self.num_actions)), "b": bias}

    def optimizer(self):
        return optax.sgd(self.config.learning_rate)

    def logits(self, networks, obs):
        return obs.reshape(obs.shape[0], -1).astype(jnp.float32) @ networks["w"] + networks["b"]

    def init_step_state(self, networks, num_envs, key):
        return key

    def step(self, networks, step_state, env_step):
        key, sample = jax.random.split(step_state)
        return ActorOutput(jax.random.categorical(sample, self.logits(networks, env_step.obs))), key

    def evaluation_step(self, networks, step_state, env_step):
        return jnp.argmax(self.logits(networks, env_step.obs), -1).astype(jnp.int32), step_state

    def update_experience(self, experience, initial_step_state, final_step_state, trajectory):
        return trajectory

    def loss(self, networks, experience, key):
        es = experience.env_step
        T, B = experience.action.shape
        logits = self.logits(networks, observations.merge_leading(es.obs)).reshape(T + 1, B, -1)
        g = jax.vmap(returns_to_go, in_axes=(1, 1, 1, 1, None), out_axes=1)(
            es.reward, jnp.zeros_like(es.reward), es.terminated, es.truncated.at[-1].set(True), self.config.discount)
        valid = ~(es.terminated[:-1] | es.truncated[:-1])
        logp = jnp.take_along_axis(jax.nn.log_softmax(logits[:-1]), experience.action[..., None], -1)[..., 0]
        loss = -jnp.sum(valid * logp * (g - g.mean())) / jnp.maximum(valid.sum(), 1)
        return loss, {"pg_loss": loss}

"""SimplePolicyGradient: REINFORCE with a learned baseline, on-policy, for discrete actions.

Returns are computed within each trajectory and bootstrapped with the baseline where the
trajectory is cut (its end, or a truncated episode); terminated episodes contribute 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp
import optax

import envs
from sebulba import observations
from sebulba.agent import Agent
from sebulba.types import ActorOutput, EnvStep, Metrics, Trajectory


@dataclasses.dataclass(frozen=True)
class SPGConfig:
    hidden_sizes: Sequence[int] = (64, 64)
    learning_rate: float = 1e-3  # 3e-3 collapsed the policy at policy lag 2 (no off-policy correction)
    discount: float = 0.99
    baseline_cost: float = 0.5
    entropy_cost: float = 0.01
    max_grad_norm: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.discount <= 1.0:
            raise ValueError(f"discount must be in [0, 1], got {self.discount}")
        if self.learning_rate <= 0 or not self.hidden_sizes:
            raise ValueError("learning_rate must be > 0 and hidden_sizes non-empty")


class MLP(nn.Module):
    hidden_sizes: Sequence[int]
    out: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = x.reshape(x.shape[0], -1).astype(jnp.float32)
        for h in self.hidden_sizes:
            x = nn.relu(nn.Dense(h)(x))
        return nn.Dense(self.out)(x)


class PolicyValueMLP(nn.Module):
    """Separate policy and baseline MLPs: a shared torso lets large baseline gradients (returns
    are unscaled) wreck the policy, which was measured to collapse it under policy lag."""

    hidden_sizes: Sequence[int]
    num_actions: int

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        return MLP(self.hidden_sizes, self.num_actions)(obs), MLP(self.hidden_sizes, 1)(obs)[:, 0]


def returns_to_go(reward_t, value_t, terminated_t, cut_t, discount: float) -> jax.Array:
    """G_t for t in [0, T): r_{t+1} + discount * G_{t+1}, where G is the baseline at a cut
    (truncation, or the trajectory's end) and 0 at a termination. Inputs are [T + 1] and
    indexed by env step; transitions out of a final state are never mixed with the next episode."""
    boundary = jnp.where(terminated_t, 0.0, value_t)

    def back(g_next, x):
        r_next, stop, b = x
        g = jnp.where(stop, b, r_next + discount * g_next)
        return g, g

    last = boundary[-1]
    # G_t = boundary_t at final states (terminated/truncated), else r_{t+1} + discount * G_{t+1}.
    _, g = jax.lax.scan(back, last, (reward_t[1:], cut_t[:-1] | terminated_t[:-1], boundary[:-1]), reverse=True)
    return g


class SimplePolicyGradient(Agent[dict, optax.OptState, Trajectory, jax.Array]):
    """Step state: one RNG key for the inferencer's batch."""

    def __init__(self, env_spec: envs.EnvSpec, config: SPGConfig = SPGConfig()):
        super().__init__(env_spec)
        if not isinstance(env_spec.action_space, gym.spaces.Discrete):
            raise ValueError(f"SimplePolicyGradient needs a Discrete action space, got {env_spec.action_space}")
        self.config = config
        self.net = PolicyValueMLP(tuple(config.hidden_sizes), int(env_spec.action_space.n))

    def init_networks(self, key: jax.Array) -> dict:
        obs = observations.zeros(self.env_spec.observation_space)
        return self.net.init(key, obs)

    def optimizer(self) -> optax.GradientTransformation:
        return optax.chain(optax.clip_by_global_norm(self.config.max_grad_norm), optax.adam(self.config.learning_rate))

    def init_step_state(self, networks: dict, num_envs: int, key: jax.Array) -> jax.Array:
        return key

    def step(self, networks: dict, step_state: jax.Array, env_step: EnvStep) -> tuple[ActorOutput, jax.Array]:
        key, sample_key = jax.random.split(step_state)
        logits, _ = self.net.apply(networks, env_step.obs)
        return ActorOutput(jax.random.categorical(sample_key, logits)), key

    def evaluation_step(self, networks: dict, step_state: jax.Array, env_step: EnvStep) -> tuple[jax.Array, jax.Array]:
        logits, _ = self.net.apply(networks, env_step.obs)
        return jnp.argmax(logits, -1).astype(jnp.int32), step_state  # greedy

    def update_experience(self, experience, initial_step_state, final_step_state, trajectory: Trajectory) -> Trajectory:
        return trajectory  # on-policy: learn from this cycle's trajectory only

    def loss(self, networks: dict, experience: Trajectory, key: jax.Array) -> tuple[jax.Array, Metrics]:
        es, c = experience.env_step, self.config
        T, B = experience.action.shape
        logits, values = self.net.apply(networks, observations.merge_leading(es.obs))
        logits, values = logits.reshape(T + 1, B, -1), values.reshape(T + 1, B)
        g = jax.vmap(returns_to_go, in_axes=(1, 1, 1, 1, None), out_axes=1)(
            es.reward, jax.lax.stop_gradient(values), es.terminated, es.truncated.at[-1].set(True), c.discount
        )
        valid = ~(es.terminated[:-1] | es.truncated[:-1])  # an action after a final state is discarded
        n = jnp.maximum(valid.sum(), 1)
        logp = jax.nn.log_softmax(logits[:-1])
        logp_a = jnp.take_along_axis(logp, experience.action[..., None], -1)[..., 0]
        adv = g - values[:-1]
        pg = -jnp.sum(valid * logp_a * jax.lax.stop_gradient(adv)) / n
        baseline = 0.5 * jnp.sum(valid * adv**2) / n
        entropy = -jnp.sum(valid * jnp.sum(jnp.exp(logp) * logp, -1)) / n
        loss = pg + c.baseline_cost * baseline - c.entropy_cost * entropy
        return loss, {"pg_loss": pg, "baseline_loss": baseline, "entropy": entropy}

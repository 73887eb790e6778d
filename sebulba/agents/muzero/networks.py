"""MuZero's three functions (Schrittwieser et al. 2020): representation h (observation -> latent
state), dynamics g (latent, action -> next latent, reward) and prediction f (latent -> policy
logits, value), with the paper's details for state-based tasks:
- latent states min-max scaled to [0, 1] per sample, after h and after every g (Appendix G),
  which keeps the unrolled states in the range the first one is in;
- values and rewards predicted in the value-rescaled space h(x) = sign(x)(sqrt(|x| + 1) - 1) +
  eps x (Pohlen et al. 2018; as R2D2's targets here), so one scale fits CartPole's returns in
  the hundreds and MinAtar's in the tens; the search reads them back through h^-1; each head is
  a scalar, or categorical over the support -S..S of that space (`support.py`, the paper's);
- the gradient into each dynamics step is halved (`scale_gradient`), so the total gradient to the
  dynamics stays about constant however many steps are unrolled (Appendix G);
- with `projection_size` (EfficientZero's consistency loss, the agent's `consistency_weight`), a
  projection head (`project`) and a predictor head (`predict_projection`) on latents, each two
  dense layers of that width; none otherwise, so a run without the loss has no such parameters.

`unroll` is the learner's K-step unroll from an observation; `root` and `recurrent_fn` are what
`sebulba.search.search` expands: the search runs on the same functions the learner trains.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp

from sebulba.agents.muzero import support
from sebulba.agents.r2d2.returns import signed_hyperbolic, signed_parabolic
from sebulba.networks import MLPTorso, torso_for
from sebulba.search import model_output, root_output

Array = jax.Array


def scale_gradient(x: Array, scale: float) -> Array:
    """x in the forward pass; its gradient scaled by `scale` in the backward pass."""
    return x * scale + jax.lax.stop_gradient(x) * (1.0 - scale)


def min_max_scale(latent: Array, eps: float = 1e-5) -> Array:
    """Each sample's latent scaled to [0, 1] over its features (MuZero, Appendix G)."""
    low = latent.min(axis=-1, keepdims=True)
    high = latent.max(axis=-1, keepdims=True)
    return (latent - low) / jnp.maximum(high - low, eps)


class Prediction(NamedTuple):
    policy_logits: Array  # [..., A]
    value: Array  # [...], value-rescaled space (the head's expectation)
    value_out: Array  # [..., head width]: the value head's outputs (support.py)


class Unroll(NamedTuple):
    """A K-step unroll from one observation per sample: predictions at steps 0..K, rewards of
    the K transitions (rewards[:, k] is the reward of the move into step k + 1)."""

    policy_logits: Array  # [B, K + 1, A]
    values: Array  # [B, K + 1], value-rescaled
    rewards: Array  # [B, K], value-rescaled
    value_out: Array  # [B, K + 1, head width]: the heads' outputs (support.py)
    reward_out: Array  # [B, K, head width]
    latents: Array  # [B, K + 1, latent]: h(obs), then each g's


class MuZeroNet(nn.Module):
    torso: nn.Module  # the representation's encoder (MLP or CNN by observation space)
    num_actions: int
    latent_size: int = 64
    hidden_sizes: tuple[int, ...] = (64,)
    support_size: int = 0  # S: categorical value and reward heads over -S..S (support.py); 0: scalar heads
    projection_size: int = 0  # the consistency loss's projection and predictor heads' width (0: no heads)

    def setup(self) -> None:
        width = support.head_width(self.support_size)
        mlp = lambda name: [nn.Dense(h, name=f"{name}_{i}") for i, h in enumerate(self.hidden_sizes)]  # noqa: E731
        self.to_latent = nn.Dense(self.latent_size, name="to_latent")
        self.dynamics_layers = mlp("dynamics")
        self.next_latent = nn.Dense(self.latent_size, name="next_latent")
        self.reward_layers = mlp("reward")
        self.reward_out = nn.Dense(width, name="reward_out")
        self.prediction_layers = mlp("prediction")
        self.policy_out = nn.Dense(self.num_actions, name="policy_out")
        self.value_out = nn.Dense(width, name="value_out")
        if self.projection_size:
            two = lambda name: [nn.Dense(self.projection_size, name=f"{name}_{i}") for i in range(2)]  # noqa: E731
            self.projection_layers, self.predictor_layers = two("projection"), two("predictor")

    @staticmethod
    def _mlp(layers, x: Array) -> Array:
        for layer in layers:
            x = nn.relu(layer(x))
        return x

    def represent(self, obs: Any) -> Array:
        return min_max_scale(self.to_latent(self.torso(obs)))

    def transition(self, latent: Array, action: Array) -> tuple[Array, Array]:
        """(next latent [B, D], the reward head's outputs [B, head width]) of taking `action` [B] in `latent`."""
        x = jnp.concatenate([latent, jax.nn.one_hot(action, self.num_actions, dtype=latent.dtype)], -1)
        next_latent = min_max_scale(self.next_latent(self._mlp(self.dynamics_layers, x)))
        return next_latent, self.reward_out(self._mlp(self.reward_layers, x))

    def dynamics(self, latent: Array, action: Array) -> tuple[Array, Array]:
        """(next latent [B, D], reward [B], value-rescaled) of taking `action` [B] in `latent`."""
        next_latent, out = self.transition(latent, action)
        return next_latent, support.read(out, self.support_size)

    def predict(self, latent: Array) -> Prediction:
        x = self._mlp(self.prediction_layers, latent)
        out = self.value_out(x)
        return Prediction(self.policy_out(x), support.read(out, self.support_size), out)

    @staticmethod
    def _head(layers, x: Array) -> Array:
        first, second = layers
        return second(nn.relu(first(x)))

    def project(self, latent: Array) -> Array:
        """The consistency loss's projection of a latent [..., D] -> [..., projection_size]."""
        return self._head(self.projection_layers, latent)

    def predict_projection(self, projection: Array) -> Array:
        """The predictor head on an unrolled latent's projection (the online side only)."""
        return self._head(self.predictor_layers, projection)

    def __call__(self, obs: Any, action: Array) -> tuple[Prediction, Array]:
        """Every function once (what `init` traces): f(h(obs)) and g(h(obs), action)'s reward (and
        the projection heads on h(obs), where there are any)."""
        latent = self.represent(obs)
        _, reward = self.dynamics(latent, action)
        if self.projection_size:
            self.predict_projection(self.project(latent))
        return self.predict(latent), reward


def make_network(observation_space: gym.spaces.Space, num_actions: int, latent_size: int,
                 hidden_sizes: tuple[int, ...], torso: str = "auto", support_size: int = 0,
                 projection_size: int = 0) -> MuZeroNet:
    encoder = torso_for(observation_space, torso)
    if isinstance(encoder, MLPTorso):
        encoder = encoder.clone(hidden_sizes=hidden_sizes)
    return MuZeroNet(encoder, num_actions, latent_size, hidden_sizes, support_size, projection_size)


def unroll(net: MuZeroNet, params: Any, obs: Any, actions: Array, dynamics_gradient_scale: float = 0.5) -> Unroll:
    """The K-step unroll of the learner: h(obs), then K steps of g with actions [B, K], f at each
    of the K + 1 latents; the gradient into each latent is scaled at every dynamics step."""

    def body(latent, action):
        latent = scale_gradient(latent, dynamics_gradient_scale)
        next_latent, reward_out = net.apply(params, latent, action, method=MuZeroNet.transition)
        return next_latent, (net.apply(params, next_latent, method=MuZeroNet.predict), reward_out, next_latent)

    latent = net.apply(params, obs, method=MuZeroNet.represent)
    first = net.apply(params, latent, method=MuZeroNet.predict)
    _, (later, reward_out, latents) = jax.lax.scan(body, latent, jnp.swapaxes(actions, 0, 1))
    steps = lambda x0, xs: jnp.concatenate([x0[:, None], jnp.swapaxes(xs, 0, 1)], 1)  # noqa: E731
    reward_out = jnp.swapaxes(reward_out, 0, 1)
    return Unroll(steps(first.policy_logits, later.policy_logits), steps(first.value, later.value),
                  support.read(reward_out, net.support_size), steps(first.value_out, later.value_out), reward_out,
                  steps(latent, latents))


def root(net: MuZeroNet, params: Any, obs: Any, eps: float = 1e-3) -> Any:
    """The search's root (`sebulba.search.root_output`): f(h(obs)), its value back in the reward scale."""
    latent = net.apply(params, obs, method=MuZeroNet.represent)
    pred = net.apply(params, latent, method=MuZeroNet.predict)
    return root_output(pred.policy_logits, signed_parabolic(pred.value, eps), latent)


def recurrent_fn(net: MuZeroNet, discount: float, eps: float = 1e-3):
    """The search's model step (mctx's recurrent_fn): g then f, rewards and values back in the
    reward scale, the discount gamma (the model has no terminal states: past a terminated
    episode it learned the absorbing state's zero rewards and values)."""
    def fn(params, key, action, latent):
        next_latent, reward = net.apply(params, latent, action, method=MuZeroNet.dynamics)
        pred = net.apply(params, next_latent, method=MuZeroNet.predict)
        out = model_output(signed_parabolic(reward, eps), jnp.full_like(reward, discount), pred.policy_logits,
                           signed_parabolic(pred.value, eps))
        return out, next_latent

    return fn


def one_step_q(net: MuZeroNet, params, latent: Array, num_actions: int, discount: float, eps: float = 1e-3) -> Array:
    """The model's one-step lookahead Q(s, a) = r(s, a) + gamma v(g(s, a)) of every action, in the
    reward scale: latent [N, D] -> [N, num_actions] (the greedy values of MuZero's Q(lambda) targets)."""
    step = recurrent_fn(net, discount, eps)

    def q(action):
        out, _ = step(params, None, jnp.full(latent.shape[:1], action, jnp.int32), latent)
        return out.reward + out.discount * out.value

    return jax.vmap(q, out_axes=-1)(jnp.arange(num_actions))


def rescale(x: Array, eps: float = 1e-3) -> Array:
    """h: returns and rewards into the space the value and reward heads predict in."""
    return signed_hyperbolic(x, eps)

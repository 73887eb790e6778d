"""MuZero (Schrittwieser et al. 2020) as a Sebulba agent, with Gumbel MuZero's search (Danihelka
et al. 2022, `sebulba.search`): the actors plan in their jitted step, with the learned model, and
act on the search's action; the learner replays sequences with the search policies the actors
had, unrolls the model K steps from every position of them, and regresses the policy on the
search policy, the value on n-step returns bootstrapped from a target network (or from the
search's root values, `value_target="search"`, or Peng's Q(lambda) returns over the target
network's greedy one-step lookahead, `value_target="q_lambda"`), and the reward on the rewards seen.

As R2D2's here, a sequence is two consecutive loop cycles of one env (`sebulba.replay.sequences`),
replayed by priority (the value error of its starts); its action slot holds the action and the
search policy it was taken by (and the search's root value, with `value_target="search"`).
"""

from __future__ import annotations

from typing import NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp
import optax

import envs
from sebulba import observations
from sebulba.agent import Agent
from sebulba.agents.muzero import support
from sebulba.agents.muzero.config import MuZeroConfig
from sebulba.agents.muzero.networks import MuZeroNet, make_network, one_step_q, recurrent_fn, rescale, root, unroll
from sebulba.agents.muzero.targets import unroll_targets
from sebulba.agents.r2d2.returns import sequence_priority, signed_parabolic
from sebulba.agents.sequence_update import prioritized_sequence_step
from sebulba.exploration import apex_epsilons, epsilon_greedy
from sebulba.replay import sequences as rp
from sebulba.schedules import linear_decay
from sebulba.search import search
from sebulba.target_networks import TargetNetworks
from sebulba.types import ActorOutput, EnvStep, ExperienceLayout, Trajectory


class StepState(NamedTuple):
    key: jax.Array  # one typed key: the search's Gumbel noise (and the exploration floor's draws)
    epsilon: jax.Array  # [num_envs] each env's exploration floor (config.epsilon_base; 0: none)


Networks = TargetNetworks  # the online networks, the target copy the value targets bootstrap from


class Experience(NamedTuple):
    replay: rp.SequenceReplay


class MuZero(Agent[Networks, optax.OptState, Experience, StepState]):
    def __init__(self, env_spec: envs.EnvSpec, config: MuZeroConfig = MuZeroConfig()):
        super().__init__(env_spec)
        if not isinstance(env_spec.action_space, gym.spaces.Discrete):
            raise ValueError(f"MuZero needs a Discrete action space, got {env_spec.action_space}")
        self.config = config
        self.target_update_period = config.target_update_period
        self.num_actions = int(env_spec.action_space.n)
        self.net = make_network(env_spec.observation_space, self.num_actions, config.latent_size, config.hidden_sizes,
                                config.torso, config.support_size,
                                projection_size=config.latent_size if config.consistency_weight else 0)

    # ---------------------------------------------------------------- state
    def init_networks(self, key: jax.Array) -> Networks:
        params = self.net.init(key, observations.zeros(self.env_spec.observation_space), jnp.zeros(1, jnp.int32))
        return TargetNetworks.of(params)

    def optimizer(self) -> optax.GradientTransformation:
        c = self.config
        adam = optax.adam(linear_decay(c.learning_rate, c.lr_decay_steps))
        return adam if c.max_grad_norm is None else optax.chain(optax.clip_by_global_norm(c.max_grad_norm), adam)

    def init_step_state(self, networks: Networks, num_envs: int, key: jax.Array) -> StepState:
        return StepState(key, apex_epsilons(num_envs, self.config.epsilon_base, self.config.epsilon_alpha))

    def init_experience(self, networks: Networks, layout: ExperienceLayout, key: jax.Array) -> Experience:
        c = self.config
        if layout.steps_per_cycle != c.cycle_length:
            raise ValueError(
                f"MuZero needs cycles of sequence_length / 2 = {c.cycle_length} steps, the loop runs {layout.steps_per_cycle}")
        f32, b = jax.ShapeDtypeStruct((), jnp.float32), jax.ShapeDtypeStruct((), jnp.bool_)
        env_row = EnvStep(observations.shape_structs(self.env_spec.observation_space), f32, b, b, b)
        action_row = {"action": jax.ShapeDtypeStruct((), jnp.int32),
                      "policy": jax.ShapeDtypeStruct((self.num_actions,), jnp.float32)}
        if c.value_target == "search":
            action_row["value"] = f32
        replay = rp.init(c.replay_capacity, layout.num_envs, layout.steps_per_cycle, env_row, action_row, (),
                         num_sources=layout.num_actors)
        return Experience(replay)

    # ---------------------------------------------------------------- acting
    def _act(self, networks: Networks, step_state: StepState, env_step: EnvStep, evaluation: bool):
        c = self.config
        key, k_search = jax.random.split(step_state.key)
        params = networks.online
        out = search(c.search(evaluation), params, k_search, root(self.net, params, env_step.obs),
                     recurrent_fn(self.net, c.discount, c.rescaling_eps))
        action = out.action
        if c.epsilon_base > 0 and not evaluation:  # the floor; the policy target stays the search's policy
            key, k_explore, k_random = jax.random.split(key, 3)
            action = epsilon_greedy(jax.nn.one_hot(action, self.num_actions), step_state.epsilon, k_explore, k_random)
        extras = {"policy": out.policy}
        if c.value_target == "search":
            extras["value"] = out.value
        return ActorOutput(action, extras), step_state._replace(key=key)

    def step(self, networks: Networks, step_state: StepState, env_step: EnvStep):
        return self._act(networks, step_state, env_step, evaluation=False)

    def evaluation_step(self, networks: Networks, step_state: StepState, env_step: EnvStep):
        """The search without Gumbel noise: the improved policy's best action."""
        return self._act(networks, step_state, env_step, evaluation=True)

    # ---------------------------------------------------------------- learning
    def update_experience(self, experience: Experience, initial_step_state: StepState, final_step_state: StepState,
                          trajectory: Trajectory) -> Experience:
        taken = {"action": trajectory.action.astype(jnp.int32), **trajectory.extras}
        replay = rp.add_cycle(experience.replay, (), trajectory.env_step, taken, source=trajectory.actor)
        return experience._replace(replay=replay)

    def _sequence_loss(self, online, target, seqs: rp.Sequences, weights, updates=0):
        """Loss over a batch of sequences [b, L + 1, ...] after `updates` optimizer steps -> (loss,
        (metrics, priorities [b]))."""
        c = self.config
        es = seqs.env_step
        b, length = seqs.action["action"].shape
        flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731 - [b, n, ...] -> [b * n, ...]

        # the bootstrap value of every x_s, in the reward scale: the target network's, its greedy one-step
        # lookahead (q_lambda), or the searches' at x_0..x_{L-1} and the target network's at x_L (its search
        # belongs to the next sequence)
        boot_obs = jax.tree.map(lambda x: x[:, length:], es.obs) if c.value_target == "search" else es.obs
        latent = self.net.apply(target, jax.tree.map(flat, boot_obs), method=MuZeroNet.represent)
        if c.value_target == "q_lambda":
            boot = one_step_q(self.net, target, latent, self.num_actions, c.discount, c.rescaling_eps).max(-1)
        else:
            boot = signed_parabolic(self.net.apply(target, latent, method=MuZeroNet.predict).value, c.rescaling_eps)
        boot = boot.reshape(b, -1)
        if c.value_target == "search":
            boot = jnp.concatenate([seqs.action["value"], boot], axis=1)
        boot = jax.lax.stop_gradient(boot)
        q_lambda = c.value_lambda if c.value_target == "q_lambda" else None
        targets = jax.vmap(unroll_targets, in_axes=(0, 0, 0, 0, 0, 0, None, None, None, None))(
            boot, es.reward, es.terminated, es.truncated, seqs.action["action"], seqs.action["policy"], c.discount,
            c.td_steps, c.unroll_steps, q_lambda)  # [b, L, ...]

        starts = jax.tree.map(lambda x: flat(x[:, :length]), es.obs)  # every start t < L
        out = unroll(self.net, online, starts, flat(targets.actions))
        shaped = lambda x: x.reshape(b, length, *x.shape[1:])  # noqa: E731
        values, logits = shaped(out.values), shaped(out.policy_logits)

        def masked_mean(x, mask):
            return jnp.sum(jnp.where(mask, x, 0.0), (1, 2)) / jnp.maximum(mask.sum((1, 2)), 1)

        value_target = rescale(targets.values, c.rescaling_eps)
        value_err = values - value_target
        value_loss = masked_mean(support.loss(shaped(out.value_out), value_target, c.support_size), targets.value_mask)
        reward_loss = masked_mean(
            support.loss(shaped(out.reward_out), rescale(targets.rewards[..., 1:], c.rescaling_eps), c.support_size),
            targets.reward_mask[..., 1:])
        log_pi = jax.nn.log_softmax(logits)
        cross_entropy = -jnp.sum(targets.policies * log_pi, -1)
        policy_loss = masked_mean(cross_entropy, targets.policy_mask)
        entropy = masked_mean(-jnp.sum(jnp.exp(log_pi) * log_pi, -1), targets.policy_mask)
        per_seq = c.value_loss_weight * value_loss + reward_loss + policy_loss - self.entropy_cost(updates) * entropy
        extra = {}
        if c.consistency_weight:
            extra["consistency_loss"] = masked_mean(
                self._consistency(online, es.obs, out.latents, b, length), targets.observed[..., 1:])
            per_seq = per_seq + c.consistency_weight * extra["consistency_loss"]
        loss = jnp.mean(weights * per_seq)
        first = targets.value_mask[..., 0]
        priorities = jax.vmap(sequence_priority, in_axes=(0, 0, None))(
            jax.lax.stop_gradient(jnp.abs(value_err[..., 0])), first, c.priority_eta)
        metrics = {"value_loss": jnp.mean(value_loss), "reward_loss": jnp.mean(reward_loss),
                   "policy_loss": jnp.mean(policy_loss),
                   "entropy": jnp.mean(entropy),
                   "value_mean": jnp.sum(first * signed_parabolic(values[..., 0], c.rescaling_eps)) / jnp.maximum(first.sum(), 1),
                   **{k: jnp.mean(v) for k, v in extra.items()}}
        return loss, (metrics, priorities)

    def entropy_cost(self, updates):
        """The entropy bonus's weight after `updates` optimizer steps: config.entropy_cost, decayed
        linearly to 0 over config.entropy_decay_steps when set."""
        bonus = linear_decay(self.config.entropy_cost, self.config.entropy_decay_steps)
        return bonus(updates) if callable(bonus) else bonus

    def _consistency(self, online, obs, latents, b: int, length: int):
        """EfficientZero's consistency loss of every start t and step k = 1..K, [b, L, K]: the negative
        cosine similarity of the predictor's output on the projection of the unrolled latent
        (latents: [b L, K + 1, D], whose k = 0 are h(x_0..x_{L-1}) already) and the projection of
        h(x_{t+k}), gradients stopped there (the sequence's last observation stands in past x_L:
        masked by the caller)."""
        big_k = latents.shape[1] - 1
        last = self.net.apply(online, jax.tree.map(lambda x: x[:, length], obs), method=MuZeroNet.represent)
        seen = jnp.concatenate([latents[:, 0].reshape(b, length, -1), last[:, None]], 1)  # h(x_0..x_L)
        seen = jax.lax.stop_gradient(self.net.apply(online, seen, method=MuZeroNet.project))
        s = jnp.minimum(jnp.arange(length)[:, None] + jnp.arange(1, big_k + 1)[None, :], length)  # [L, K]
        want = seen[:, s]  # [b, L, K, P]
        got = self.net.apply(online, self.net.apply(online, latents[:, 1:], method=MuZeroNet.project),
                             method=MuZeroNet.predict_projection).reshape(want.shape)
        unit = lambda x: x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-8)  # noqa: E731
        return -jnp.sum(unit(got) * unit(want), -1)

    def num_off_policy_optims_per_cycle(self, layout: ExperienceLayout) -> int:
        return self.config.optims_per_cycle

    def optimize(self, networks: Networks, opt_state, experience: Experience, key: jax.Array):
        """One `gradient_step` on a prioritized batch of sequences; their new priorities go back to
        the replay. Nothing is computed (`when_ready`) until every learner device's replay holds
        min_replay_size sequences."""
        def loss(online, target, seqs, weights):
            return self._sequence_loss(online, target, seqs, weights, networks.updates)

        networks, opt_state, replay, metrics = prioritized_sequence_step(
            self, loss, networks, opt_state, experience.replay, key, self.config)
        return networks, opt_state, Experience(replay), metrics

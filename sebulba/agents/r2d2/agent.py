"""R2D2 (Kapturowski et al. 2019) as a Sebulba agent: a recurrent Q-network learning off-policy
from prioritized sequence replay, with stored recurrent state, burn-in, n-step double-Q targets
under value rescaling, and a periodically copied target network.

Each loop cycle is half a sequence: a sequence is two consecutive cycles of one env, and its
stored state is the step state the actor had at the start of the first of them (the
`initial_step_state` that came with that cycle). The replay lives on the learner devices,
sharded like the trajectories.
"""

from __future__ import annotations

from typing import NamedTuple

import gymnasium as gym
import jax
import jax.numpy as jnp
import optax

import envs
from sebulba import frames, observations
from sebulba.agent import Agent
from sebulba.exploration import apex_epsilons, epsilon_greedy
from sebulba.agents.r2d2.config import R2D2Config
from sebulba.agents.r2d2.networks import CoreState, make_network, unroll
from sebulba.agents.sequence_update import prioritized_sequence_step
from sebulba.replay import sequences as rp
from sebulba.agents.r2d2.returns import n_step_double_q_targets, sequence_priority
from sebulba.schedules import linear_decay
from sebulba.target_networks import TargetNetworks
from sebulba.types import EnvStep, ExperienceLayout, Trajectory



class StepState(NamedTuple):
    """Per env: the core state and previous action (what a stored sequence starts from), its
    epsilon, and the batch's RNG key."""

    core: CoreState
    prev_action: jax.Array  # int32 [B]
    epsilon: jax.Array  # float32 [B]
    key: jax.Array  # one typed key


Networks = TargetNetworks  # online Q-network, its periodically copied target, optimizer steps taken


class Experience(NamedTuple):
    replay: rp.SequenceReplay


class R2D2(Agent[Networks, optax.OptState, Experience, StepState]):
    accepts_frames = True  # with stacking on the device, the replay keeps single frames

    def __init__(self, env_spec: envs.EnvSpec, config: R2D2Config = R2D2Config()):
        super().__init__(env_spec)
        if not isinstance(env_spec.action_space, gym.spaces.Discrete):
            raise ValueError(f"R2D2 needs a Discrete action space, got {env_spec.action_space}")
        self.config = config
        self.target_update_period = config.target_update_period  # the default update_target's copies
        self.num_actions = int(env_spec.action_space.n)
        self.net = make_network(env_spec.observation_space, self.num_actions, config)

    # ---------------------------------------------------------------- state
    def init_networks(self, key: jax.Array) -> Networks:
        space = self.env_spec.observation_space
        params = self.net.init(key, observations.zeros(space), jnp.zeros(1, jnp.int32),
                               jnp.zeros(1), self.net.initial_state(1))
        return TargetNetworks.of(params)

    def optimizer(self) -> optax.GradientTransformation:
        c = self.config
        lr = linear_decay(c.learning_rate, c.lr_decay_steps)
        adam = optax.adam(lr, eps=c.adam_eps)
        return adam if c.max_grad_norm is None else optax.chain(optax.clip_by_global_norm(c.max_grad_norm), adam)

    def init_step_state(self, networks: Networks, num_envs: int, key: jax.Array) -> StepState:
        c = self.config
        return StepState(self.net.initial_state(num_envs), jnp.zeros(num_envs, jnp.int32),
                         apex_epsilons(num_envs, c.epsilon_base, c.epsilon_alpha), key)

    def _stored(self, step_state: StepState) -> tuple[CoreState, jax.Array]:
        """The per-env part of a step state that a sequence stores."""
        return step_state.core, step_state.prev_action

    def init_experience(self, networks: Networks, layout: ExperienceLayout, key: jax.Array) -> Experience:
        c, space = self.config, self.env_spec.observation_space
        if layout.steps_per_cycle != c.cycle_length:
            raise ValueError(
                f"R2D2 needs cycles of sequence_length / 2 = {c.cycle_length} steps, the loop runs {layout.steps_per_cycle}"
            )
        f32, b = jax.ShapeDtypeStruct((), jnp.float32), jax.ShapeDtypeStruct((), jnp.bool_)
        core = jax.ShapeDtypeStruct((c.core_size,), jnp.float32)
        state_row = (CoreState(core, core), jax.ShapeDtypeStruct((), jnp.int32))
        obs_row = observations.shape_structs(space)
        if layout.frame_stack > 1:  # single frames, and per sequence the frames before its first
            s = layout.frame_stack
            frame = (space.shape[0] // s, *space.shape[1:])
            obs_row = frames.Frames(jax.ShapeDtypeStruct(frame, space.dtype), b)
            state_row = (*state_row, jax.ShapeDtypeStruct((s - 1, *frame), space.dtype))
        env_row = EnvStep(obs_row, f32, b, b, b)
        replay = rp.init(c.replay_capacity, layout.num_envs, layout.steps_per_cycle, env_row,
                         jax.ShapeDtypeStruct((), jnp.int32), state_row, num_sources=layout.num_actors)
        return Experience(replay)

    # ---------------------------------------------------------------- acting
    def step(self, networks: Networks, step_state: StepState, env_step: EnvStep) -> tuple[jax.Array, StepState]:
        first = env_step.first
        keep = (~first)[:, None]
        core = CoreState(step_state.core.h * keep, step_state.core.c * keep)
        prev_action = jnp.where(first, 0, step_state.prev_action)
        q, core = self.net.apply(networks.online, env_step.obs, prev_action, jnp.where(first, 0.0, env_step.reward), core)
        key, k_explore, k_random = jax.random.split(step_state.key, 3)
        action = epsilon_greedy(q, step_state.epsilon, k_explore, k_random)
        return action, StepState(core, action, step_state.epsilon, key)

    def evaluation_step(self, networks: Networks, step_state: StepState, env_step: EnvStep) -> tuple[jax.Array, StepState]:
        """Epsilon-greedy with the paper's evaluation epsilon (config.eval_epsilon) in every env."""
        evaluating = step_state._replace(epsilon=jnp.full_like(step_state.epsilon, self.config.eval_epsilon))
        action, state = self.step(networks, evaluating, env_step)
        return action, state._replace(epsilon=step_state.epsilon)

    # ---------------------------------------------------------------- learning
    def update_experience(self, experience: Experience, initial_step_state: StepState, final_step_state: StepState,
                          trajectory: Trajectory) -> Experience:
        stored = self._stored(initial_step_state)
        if isinstance(trajectory.env_step.obs, frames.Frames):
            stored = (*stored, jnp.moveaxis(trajectory.obs_history, 0, 1))  # per env: [S - 1, c, H, W]
        replay = rp.add_cycle(experience.replay, stored, trajectory.env_step, trajectory.action, source=trajectory.actor)
        return experience._replace(replay=replay)

    def _sequence_loss(self, online, target, seqs: rp.Sequences, weights):
        """Loss over a batch of sequences [b, 2T(+1), ...] -> (loss, (metrics, priorities [b]))."""
        c = self.config
        es = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), seqs.env_step)  # time-major [m + 1, b, ...]
        action = jnp.swapaxes(seqs.action, 0, 1)  # [m, b]
        core, stored_prev_action = seqs.state[:2]
        if isinstance(es.obs, frames.Frames):  # single frames: rebuild the stacks
            es = es._replace(obs=frames.restack(jnp.moveaxis(seqs.state[2], 1, 0), es.obs))
        prev_action = jnp.concatenate([stored_prev_action[None], action], 0)  # the action before each env step
        l = c.burn_in
        burn = lambda x: jax.tree.map(lambda y: y[:l], x)  # obs may be a pytree (Dict spaces)
        rest = lambda x: jax.tree.map(lambda y: y[l:], x)
        inputs = (es.obs, prev_action, es.reward, es.first)

        def q_values(params):
            # Burn-in warms the stored state without gradients, then the rest is unrolled from it.
            _, state = unroll(self.net, params, *map(burn, inputs), core)
            state = jax.lax.stop_gradient(state)
            q, _ = unroll(self.net, params, *map(rest, inputs), state)
            return q  # [m + 1 - l, b, A]

        q_online = q_values(online)
        q_target = jax.lax.stop_gradient(q_values(target))
        final = es.terminated | es.truncated
        targets = jax.vmap(n_step_double_q_targets, in_axes=(1, 1, 1, 1, 1, None, None, None), out_axes=1)(
            jax.lax.stop_gradient(q_online), q_target, rest(es.reward), rest(es.terminated), rest(es.truncated),
            c.discount, c.n_step, c.rescaling_eps,
        )  # [m - l, b]
        q_taken = jnp.take_along_axis(q_online[:-1], rest(action)[..., None], -1)[..., 0]
        td = targets - q_taken
        mask = ~rest(final)[:-1]  # a transition out of a final state is the pool's reset step
        per_seq = 0.5 * jnp.sum(mask * td**2, 0)
        if c.td_reduction == "mean":
            per_seq = per_seq / jnp.maximum(mask.sum(0), 1)
        loss = jnp.mean(weights * per_seq)
        priorities = jax.vmap(sequence_priority, in_axes=(1, 1, None))(jnp.abs(td), mask, c.priority_eta)
        metrics = {"q_mean": jnp.sum(mask * q_taken) / jnp.maximum(mask.sum(), 1),
                   "td_abs_mean": jnp.sum(mask * jnp.abs(td)) / jnp.maximum(mask.sum(), 1)}
        return loss, (metrics, jax.lax.stop_gradient(priorities))

    def num_off_policy_optims_per_cycle(self, layout: ExperienceLayout) -> int:
        return self.config.optims_per_cycle

    def optimize(self, networks: Networks, opt_state, experience: Experience, key: jax.Array):
        """One `gradient_step` on a prioritized batch of sequences; new priorities go back to the
        replay, and the target network is copied every target_update_period steps. Nothing is
        computed (`when_ready`) until every learner device's replay holds min_replay_size sequences."""
        networks, opt_state, replay, metrics = prioritized_sequence_step(
            self, self._sequence_loss, networks, opt_state, experience.replay, key, self.config)
        return networks, opt_state, Experience(replay), metrics

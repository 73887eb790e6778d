"""AlphaZero (Silver et al. 2018) as an agent of the Anakin loop, with Gumbel AlphaZero's search
(Danihelka et al. 2022, `sebulba.search`) on the env's true model (`sebulba.game_model`): every
env step, each game's player to move searches from the game's real state (`env_step.state`,
`plans_with_env`) and plays the search's action; both seats are the same network (self-play).

The learner keeps a replay of positions (`sebulba.replay.positions`): each mover's observation
with the search's improved policy (the policy target) and the game's outcome for that player
(the value target, `targets.outcomes`), once its game has ended; it regresses the network's
policy on the search policy (cross-entropy) and its value on the outcome (squared error).

Why Gumbel's search and not PUCT: with the few simulations a 2-core host affords (16), Gumbel
AlphaZero's policy improvement (the completed Q-values) still improves the policy, where
visit counts of 16 simulations are a coarse target (Danihelka et al. 2022, Figure 2 on Go).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

import envs
from sebulba import observations
from sebulba.agent import Agent, gradient_step, when_ready
from sebulba.agents.alphazero.config import AlphaZeroConfig
from sebulba.agents.alphazero.networks import make_network, recurrent_fn, root
from sebulba.agents.alphazero.targets import outcomes
from sebulba.game_model import MASK_KEY, GameModel, legal_or_any
from sebulba.replay import positions as rp
from sebulba.schedules import linear_decay
from sebulba.search import search
from sebulba.sharding import LEARNER_AXIS
from sebulba.types import ActorOutput, EnvStep, ExperienceLayout, Trajectory


class StepState(NamedTuple):
    key: jax.Array  # one typed key: the search's Gumbel noise, the random openings
    ply: jax.Array  # int32 [rows]: the moves played so far in each row's game


class Experience(NamedTuple):
    replay: rp.Positions


class AlphaZero(Agent[dict, optax.OptState, Experience, StepState]):
    plans_with_env = True

    def __init__(self, env_spec: envs.EnvSpec, config: AlphaZeroConfig = AlphaZeroConfig()):
        super().__init__(env_spec)
        self.config = config
        self.model = GameModel.of(env_spec.config["task_id"])  # one line where the env is no turn-based JAX game
        self.num_players = self.model.num_players
        self.num_actions = self.model.num_actions
        self.net = make_network(env_spec.observation_space, self.num_actions, config.hidden_sizes, config.torso)
        self._recurrent = recurrent_fn(self.net, self.model)

    # ---------------------------------------------------------------- state
    def init_networks(self, key: jax.Array) -> dict:
        return self.net.init(key, observations.zeros(self.env_spec.observation_space))

    def optimizer(self) -> optax.GradientTransformation:
        c = self.config
        adam = optax.adam(linear_decay(c.learning_rate, c.lr_decay_steps))
        return adam if c.max_grad_norm is None else optax.chain(optax.clip_by_global_norm(c.max_grad_norm), adam)

    def init_step_state(self, networks: dict, num_envs: int, key: jax.Array) -> StepState:
        return StepState(key, jnp.zeros(num_envs, jnp.int32))

    def init_experience(self, networks: dict, layout: ExperienceLayout, key: jax.Array) -> Experience:
        candidates = layout.steps_per_cycle * layout.num_envs
        if self.config.replay_capacity < candidates:
            raise ValueError(f"replay_capacity={self.config.replay_capacity:,} positions cannot hold a cycle's "
                             f"{candidates:,} (steps_per_cycle x rows per learner device): raise it")
        item = {"obs": observations.shape_structs(self.env_spec.observation_space),
                "policy": jax.ShapeDtypeStruct((self.num_actions,), jnp.float32),
                "value": jax.ShapeDtypeStruct((), jnp.float32)}
        return Experience(rp.init(self.config.replay_capacity, item))

    # ---------------------------------------------------------------- acting
    def _act(self, networks: dict, step_state: StepState, env_step: EnvStep, evaluation: bool):
        """Each game's mover searches from the game's state; every row of the game gets the
        search's action (the env plays the mover's; in self-play's random opening, a random
        legal move instead) and policy, and whether it is the mover's."""
        key, k_search, k_open = jax.random.split(step_state.key, 3)
        states, P = env_step.state, self.num_players
        ply = jnp.where(env_step.first, 0, step_state.ply + 1)
        to_play = self.model.to_play(states)
        obs = self.model.mover_rows(env_step.obs, to_play)
        legal = legal_or_any(obs[MASK_KEY])
        out = search(self.config.search(evaluation), networks, k_search, root(self.net, networks, obs, states),
                     self._recurrent, invalid_actions=~legal)
        action = out.action
        if not evaluation and self.config.random_opening_plies:
            opening = ply[::P] < self.config.random_opening_plies
            action = jnp.where(opening, jax.random.categorical(k_open, jnp.where(legal, 0.0, -jnp.inf)), action)
        mover = (jnp.arange(P)[None, :] == to_play[:, None]).reshape(-1)
        rows = lambda x: jnp.repeat(x, P, axis=0)  # noqa: E731
        return (ActorOutput(rows(action.astype(jnp.int32)), {"policy": rows(out.policy), "mover": mover}),
                StepState(key, ply))

    def step(self, networks: dict, step_state: StepState, env_step: EnvStep):
        return self._act(networks, step_state, env_step, evaluation=False)

    def evaluation_step(self, networks: dict, step_state: StepState, env_step: EnvStep):
        """The search without Gumbel noise, with eval_simulations: its best action."""
        return self._act(networks, step_state, env_step, evaluation=True)

    # ---------------------------------------------------------------- learning
    def update_experience(self, experience: Experience, initial_step_state: StepState, final_step_state: StepState,
                          trajectory: Trajectory) -> Experience:
        es = trajectory.env_step
        value, known = outcomes(es.reward, es.terminated, es.truncated)
        keep = known & trajectory.extras["mover"]
        flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731 - [T, R, ...] -> [T x R, ...]
        obs = jax.tree.map(lambda x: flat(x[:-1]), es.obs)
        items = {"obs": obs, "policy": flat(trajectory.extras["policy"]), "value": flat(value)}
        return Experience(rp.add(experience.replay, items, flat(keep)))

    def _loss(self, params: dict, batch: dict, valid: jax.Array):
        logits, value = self.net.apply(params, batch["obs"])
        cross_entropy = -jnp.sum(batch["policy"] * jax.nn.log_softmax(logits), -1)
        value_err = (value - batch["value"]) ** 2
        weight = valid.astype(jnp.float32)
        n = jnp.maximum(weight.sum(), 1.0)
        policy_loss, value_loss = jnp.sum(weight * cross_entropy) / n, jnp.sum(weight * value_err) / n
        loss = policy_loss + self.config.value_loss_weight * value_loss
        return loss, {"policy_loss": policy_loss, "value_loss": value_loss,
                      "value_mean": jnp.sum(weight * value) / n}

    def num_off_policy_optims_per_cycle(self, layout: ExperienceLayout) -> int:
        return self.config.optims_per_cycle

    def optimize(self, networks: dict, opt_state, experience: Experience, key: jax.Array):
        """One `gradient_step` on a uniform batch of positions; nothing is computed (`when_ready`)
        until every learner device's replay holds min_replay_size of them."""
        replay = experience.replay
        ready = jax.lax.pmin(replay.count, LEARNER_AXIS) >= self.config.min_replay_size

        def learn(networks, opt_state):
            batch, valid = rp.sample(replay, key, self.config.batch_size)
            networks, opt_state, metrics, step_metrics = gradient_step(
                self.tx, lambda params: self._loss(params, batch, valid), networks, opt_state)
            return networks, opt_state, {**metrics, **step_metrics}

        networks, opt_state, metrics = when_ready(ready, learn, networks, opt_state)
        metrics = {**metrics, "replay_size": replay.count.astype(jnp.float32), "learning": ready.astype(jnp.float32)}
        return networks, opt_state, experience, metrics

"""Agent: the base class every algorithm subclasses.

An agent is generic over four pieces of state: networks (N), optimizer state (O), experience
state (E: a replay buffer, the latest trajectory, or nothing) and step state (S: per-env actor
state such as RNG keys and recurrent state). The user writes small pure hooks; the loop jits
them with buffer donation (`sebulba.loop`), so an agent never calls `jax.jit` itself, and no
hook knows which loop runs it.

Where each hook runs:
- actor device, once per env step, inside one jitted call: `step` (`evaluation_step` when
  evaluating or playing a trained agent).
- learner devices, once per learner step (one cycle learned), inside one jitted, sharded
  program (`shard_map` over the learner devices, the pmap semantics; `learner_step` in
  `sebulba.loop.learner`): `update_experience`, `begin_update`, then `optimize` as the
  agent's schedule says: by default `gradient_step` of `loss` (so `loss` is required only of
  an agent that keeps the default `optimize`); an `optimize` of its own takes the same
  `gradient_step`, gated by `when_ready` while a replay fills (`OffPolicyAgent`, R2D2). The
  schedule's knobs (`num_minibatches`, `num_epochs`, `minibatch_over`,
  `num_off_policy_optims_per_cycle`) and their rules are stated once, in
  `sebulba.loop.learner.Schedule`. Experience state is per learner device: hooks see the local
  shard, and `lax.pmean(..., LEARNER_AXIS)` averages.

The contract beyond the hooks:
- a run's agent can be rebuilt (`sebulba.load_policy`, `experiments.evaluate`) when its class is
  importable by name and has the form `__init__(self, env_spec, config=Config())` with `Config`
  a dataclass (`reload_problem` says what is missing); otherwise `load_policy(run_dir, agent=...)`
  takes the class or an agent object;
- a target network lives in the networks as `TargetNetworks` (`sebulba.target_networks`): the
  optimizer then sees `online` only and `update_target` moves the target;
- per-env step state is what follows `num_envs` in `init_step_state` (`step_state_env_axes`):
  that is split over the learner devices like the trajectory, the rest replicated.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import inspect
from typing import Any, Callable, Generic, TypeVar

import jax
import jax.numpy as jnp
import optax

import envs
from sebulba.sharding import LEARNER_AXIS, LearnerSharding, env_axes_of
from sebulba.target_networks import TargetNetworks, periodic_copy, polyak
from sebulba.types import ActorOutput, EnvStep, ExperienceLayout, Metrics, Trajectory

N = TypeVar("N")  # networks
O = TypeVar("O")  # optimizer state  # noqa: E741
E = TypeVar("E")  # experience state
S = TypeVar("S")  # step state


class Agent(abc.ABC, Generic[N, O, E, S]):
    """Subclass and implement the abstract hooks. `env_spec` gives the spaces of one env."""

    # With frame stacking on the actor device (LoopConfig.stack_on_device), False: the learner
    # rebuilds the stacked observations before any learner hook. True: `update_experience` gets
    # trajectories of single frames (`env_step.obs` is `sebulba.frames.Frames`, the
    # frames before them in `obs_history`; `ExperienceLayout.frame_stack` says how many make a
    # stack) and the agent rebuilds the stacks itself (`sebulba.frames.restack`), e.g. R2D2's replay
    # keeps single frames: 1/S of the memory.
    accepts_frames: bool = False
    # On-policy minibatches: of the trajectory's "envs", or of its "steps" (`sebulba.loop.learner.Schedule`).
    minibatch_over: str = "envs"
    # With `TargetNetworks` (sebulba.target_networks), how the default `update_target` moves the
    # target after each optimizer step: set one. Copy online every this many steps ...
    target_update_period: int | None = None
    # ... or average: target <- tau * online + (1 - tau) * target.
    target_update_tau: float | None = None
    # True: the agent plans with the env's true model (AlphaZero): its `step` and `evaluation_step`
    # read `env_step.state`, the JAX env's own states, which only a JAX env stepped beside it has
    # (the Anakin loop, evaluation on a JAX env); the Sebulba loop's host pools refuse it.
    plans_with_env: bool = False

    def __init__(self, env_spec: envs.EnvSpec):
        if missing_loss(type(self)):
            raise TypeError(missing_loss(type(self)))
        self.env_spec = env_spec

    # ---------------------------------------------------------------- state
    @abc.abstractmethod
    def init_networks(self, key: jax.Array) -> N:
        """Fresh network parameters (the learner calls it inside `jax.jit`)."""

    @abc.abstractmethod
    def optimizer(self) -> optax.GradientTransformation:
        """The optax transformation used by `optimize`; called once."""

    @functools.cached_property
    def tx(self) -> optax.GradientTransformation:
        return self.optimizer()

    def init_optimizer_state(self, networks: N) -> O:
        """The optimizer's state for the learned networks (`online` of `TargetNetworks`)."""
        return self.tx.init(networks.online if isinstance(networks, TargetNetworks) else networks)

    def init_experience(self, networks: N, layout: ExperienceLayout, key: jax.Array) -> E:
        """One learner device's experience state (e.g. its replay shard). Default: nothing."""
        return ()  # type: ignore[return-value]

    @abc.abstractmethod
    def init_step_state(self, networks: N, num_envs: int, key: jax.Array) -> S:
        """Actor state for num_envs envs."""

    # ---------------------------------------------------------------- acting
    @abc.abstractmethod
    def step(self, networks: N, step_state: S, env_step: EnvStep) -> tuple[jax.Array | ActorOutput, S]:
        """Choose actions for one env step; return (action or ActorOutput, new step state)."""

    def evaluation_step(self, networks: N, step_state: S, env_step: EnvStep) -> tuple[jax.Array | ActorOutput, S]:
        """The evaluation policy's actions (evaluation during training, `experiments.evaluate`,
        `sebulba.load_policy`), from the same step state as `step`. Default: `step` itself.
        IMPALA, PPO and SimplePolicyGradient act greedily (a Gaussian's mean); R2D2 with the
        paper's evaluation epsilon."""
        return self.step(networks, step_state, env_step)

    def shard_step_state(self, step_state: S, sharding: LearnerSharding) -> S:
        """Move a step state to the learner devices. Default: per-env leaves (those whose shape
        follows `num_envs` in `init_step_state`, `step_state_env_axes`) are split over the devices
        like the trajectory, along that axis; everything else (e.g. one RNG key) is replicated.
        Override when the state has another layout."""
        return sharding.put(step_state, self.step_state_env_axes(sharding.num_envs))

    def step_state_env_axes(self, num_envs: int) -> Any:
        """Per leaf of a step state for num_envs envs, its env axis (-1: not per env), read off
        `init_step_state` by tracing it for num_envs and num_envs + 1 envs (once per num_envs)."""
        cache = self.__dict__.setdefault("_step_state_env_axes", {})
        if num_envs not in cache:
            key = jax.eval_shape(jax.random.key, 0)
            networks = jax.eval_shape(self.init_networks, key)
            cache[num_envs] = env_axes_of(lambda n, nets, k: self.init_step_state(nets, n, k), num_envs, networks, key)
        return cache[num_envs]

    # ---------------------------------------------------------------- learning
    @abc.abstractmethod
    def update_experience(self, experience: E, initial_step_state: S, final_step_state: S, trajectory: Trajectory) -> E:
        """Fold one cycle's trajectory (this device's env shard) into the experience state."""

    def loss(self, networks: N, experience: E, key: jax.Array) -> tuple[jax.Array, Metrics]:
        """Scalar loss on this device's experience, and a flat dict of scalar metrics: what the
        default `optimize` learns, so required only of an agent that keeps it (`missing_loss`)."""
        raise NotImplementedError(missing_loss(type(self)))

    def num_off_policy_optims_per_cycle(self, layout: ExperienceLayout) -> int:
        """0: on-policy, one optimizer step on each trajectory, in the cycle it arrives. K > 0:
        K optimizer steps per cycle on the experience state (replay). `layout` says how many env
        steps a cycle brings (a replay ratio's denominator: `sebulba.off_policy`)."""
        return 0

    def num_minibatches(self) -> int:
        """On-policy agents: learn each trajectory as this many minibatches of its envs, one
        optimizer step each, in turn (Cleanba's and PPO's num_minibatches). Each device's share
        of the envs must divide evenly; per-env data is what is split over the learner devices
        (the trajectory, and step-state leaves as `shard_step_state` places them), the rest is
        passed whole. Off-policy agents sample their own batches: keep 1."""
        return 1

    def num_epochs(self) -> int:
        """On-policy agents with minibatch_over = "steps": passes over each cycle's samples, each in
        freshly shuffled minibatches (PPO's update_epochs)."""
        return 1

    def begin_update(self, networks: N, experience: E, key: jax.Array) -> tuple[N, E]:
        """Once per learner call, after `update_experience`, before the optimizer steps, with the
        networks as they are then. Returns the networks the steps start from (a part that is not
        learned by gradient may change here, e.g. observation statistics: keep it identical on
        every learner device, with `lax.psum` over LEARNER_AXIS) and the experience they learn from
        (e.g. PPO's samples with advantages from the current values). Default: both unchanged."""
        return networks, experience

    def optimize(self, networks: N, opt_state: O, experience: E, key: jax.Array) -> tuple[N, O, E, Metrics]:
        """One optimizer step: `gradient_step` of `loss` (of `online` with `TargetNetworks`, then
        `update_target`). Override to learn from something else or to also update the experience
        (e.g. replay priorities, `OffPolicyAgent`, R2D2): with `gradient_step`, and `when_ready`
        to wait for a replay."""
        networks, opt_state, metrics, step_metrics = gradient_step(
            self.tx, lambda nets: self.loss(nets, experience, key), networks, opt_state, self.update_target)
        return networks, opt_state, experience, {**metrics, **step_metrics}

    def update_target(self, networks: TargetNetworks) -> TargetNetworks:
        """After each `gradient_step` with `TargetNetworks` (`networks.updates` counts them):
        copy online into target every `target_update_period` steps, or average them with
        `target_update_tau`. Override for another rule."""
        period, tau = self.target_update_period, self.target_update_tau
        if (period is None) == (tau is None):
            raise ValueError(f"{type(self).__name__} has TargetNetworks: set one of target_update_period (copy every "
                             f"N optimizer steps) or target_update_tau (Polyak averaging), or override update_target; "
                             f"got target_update_period={period!r}, target_update_tau={tau!r}")
        return periodic_copy(networks, period) if period is not None else polyak(networks, tau)

    # ---------------------------------------------------------------- helpers
    def as_actor_output(self, out: Any) -> ActorOutput:
        return out if isinstance(out, ActorOutput) else ActorOutput(out)


def missing_loss(cls: type) -> str | None:
    """Why an agent of this class cannot learn (None: it can): it keeps the default `optimize`,
    which learns `loss`, and writes no `loss`."""
    if cls.optimize is Agent.optimize and cls.loss is Agent.loss:
        return (f"{cls.__qualname__} neither writes loss(networks, experience, key) nor overrides optimize: write "
                "loss for the default optimizer step, or override optimize")
    return None


def gradient_step(tx: optax.GradientTransformation, loss_of: Callable[[N], tuple[jax.Array, Any]], networks: N,
                  opt_state: O, update_target: Callable[[TargetNetworks], TargetNetworks] | None = None,
                  ) -> tuple[N, O, Any, Metrics]:
    """The one optimizer step every agent takes: the gradient of `loss_of(networks) -> (scalar loss,
    aux)`, averaged over the learner devices (`lax.pmean` over LEARNER_AXIS), through `tx` and
    applied. With `TargetNetworks` the gradient is of `online` only (`loss_of` gets the whole
    networks, `online` replaced), the step is counted in `updates` and `update_target` moves the
    target. Returns (networks, opt_state, aux, {"loss", "grad_norm"}): `Agent.optimize` with
    `Agent.loss`, `OffPolicyAgent` and R2D2 on their sampled batches."""
    with_target = isinstance(networks, TargetNetworks)
    learned = networks.online if with_target else networks
    of_learned = (lambda online: loss_of(networks._replace(online=online))) if with_target else loss_of
    (loss, aux), grads = jax.value_and_grad(of_learned, has_aux=True)(learned)
    grads = jax.lax.pmean(grads, LEARNER_AXIS)
    updates, opt_state = tx.update(grads, opt_state, learned)
    learned = optax.apply_updates(learned, updates)
    if with_target:
        if update_target is None:
            raise ValueError("gradient_step of TargetNetworks needs update_target (e.g. Agent.update_target)")
        learned = update_target(networks._replace(online=learned, updates=networks.updates + 1))
    return learned, opt_state, aux, {"loss": loss, "grad_norm": optax.tree.norm(grads)}


def when_ready(ready: jax.Array, step: Callable[..., tuple], *operands: Any) -> tuple:
    """`step(*operands) -> (*new operands, metrics)` where `ready` (a bool []; the same on every
    learner device), else the operands as they are and the step's metrics, zero: a `lax.cond`, so
    nothing of the step is computed (no optimizer step counted, no target moved, no priority set)
    while e.g. a replay fills. `OffPolicyAgent` and R2D2 gate their `optimize` with it."""

    def wait(*operands):  # the step's metrics, zero: no loss was computed
        shapes = jax.eval_shape(step, *operands)[-1]
        return (*operands, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes))

    return jax.lax.cond(ready, step, wait, *operands)


def name_problem(name: str) -> str | None:
    """Why the class a run records as `name` (`module.qualname`) cannot be imported by that name
    (None: it may be): defined in the script that ran (`__main__`) or in a function."""
    if name.startswith("__main__.") or "<locals>" in name:
        return (f"{name} cannot be imported by name (it is defined in a script or a function): move the class into "
                "a module that can be imported, or pass it to sebulba.load_policy(run_dir, agent=...)")
    return None


def reload_problem(cls: type, by_name: bool = True) -> str | None:
    """Why `sebulba.load_policy` and `experiments.evaluate` could not rebuild an agent of this
    class from a run's config.json (None: they can); the one place this rule is stated. By name
    (`by_name`), they import the class by its module and qualified name; with the class given
    (`load_policy(run_dir, agent=MyAgent)`), they skip that. Either way they call
    `cls(env_spec, config=config)` with `config` the default of `__init__`'s `config` parameter (a
    dataclass instance) with the run's values: the constructor form
    `__init__(self, env_spec, config=Config())`. An agent of another form reloads as an object:
    `load_policy(run_dir, agent=MyAgent(env_spec, ...))`."""
    where = f"{cls.__module__}.{cls.__qualname__}"
    if by_name and name_problem(where) is not None:
        return name_problem(where)
    config = inspect.signature(cls.__init__).parameters.get("config")
    default = None if config is None else config.default
    if not dataclasses.is_dataclass(default) or isinstance(default, type):
        return (f"{where} takes no config dataclass: it cannot be rebuilt from config.json (give it the form "
                "__init__(self, env_spec, config=Config()) with Config a dataclass, or pass the agent object to "
                "sebulba.load_policy(run_dir, agent=...))")
    return None

"""The learner: per cycle, two jitted calls replicated over the learner devices (`shard_map`,
the pmap semantics): one folds the trajectory into the experience state, one runs the optimizer
steps. Networks and optimizer state are replicated; experience state is one shard per device."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from sebulba import keys
from sebulba.agent import Agent
from sebulba.loop import framestack
from sebulba.loop.memory import check_fits_in_memory
from sebulba.sharding import LEARNER_AXIS, LearnerSharding
from sebulba.types import ExperienceLayout, Metrics, Trajectory


class NonFiniteError(FloatingPointError):
    """A learner update produced NaN or Inf; the learner still holds the last good state."""

    def __init__(self, message: str, step: int, metrics: list[str]):
        super().__init__(message)
        self.step = step
        self.metrics = metrics


def _specs(tree):
    """The PartitionSpecs of arrays already placed on the learner mesh."""
    return jax.tree.map(lambda x: x.sharding.spec, tree)


def _env_axes(specs):
    """Per PartitionSpec of `_specs`: the axis split over the learner devices (the env axis of
    per-env data), or -1 for a replicated leaf."""
    return jax.tree.map(lambda s: tuple(s).index(LEARNER_AXIS) if LEARNER_AXIS in tuple(s) else -1, specs,
                        is_leaf=lambda s: isinstance(s, P))


def _minibatch(tree, env_axes, index: jax.Array, count: int):
    """Minibatch `index` of `count` of this device's envs: per-env leaves sliced along their env
    axis, the rest as they are."""
    def take(x, axis):
        if axis < 0:
            return x
        size = x.shape[axis] // count
        return jax.lax.dynamic_slice_in_dim(x, index * size, size, axis)

    return jax.tree.map(take, tree, env_axes)


MINIBATCH_OVER = ("envs", "steps", "sequences")  # Agent.minibatch_over's values


@dataclasses.dataclass(frozen=True)
class Schedule:
    """How a learner step turns one cycle into optimizer steps: the agent's four knobs
    (`num_minibatches`, `num_epochs`, `minibatch_over`, `num_off_policy_optims_per_cycle`),
    checked once, against the rules below, each with its own error.

    - on-policy, minibatches of envs (the default, `minibatch_over="envs"`): the cycle is learned
      as `minibatches` slices of each device's envs, one learner call each (`calls`), each one
      `update_experience`, `begin_update` and one optimizer step;
    - on-policy, minibatches of steps (`minibatch_over="steps"`, PPO): one call, one
      `update_experience` and `begin_update`, then `epochs` passes of `minibatches` freshly
      shuffled minibatches of every env's steps, one optimizer step each;
    - on-policy, minibatches of sequences (`minibatch_over="sequences"`, PPO with a recurrent
      core): as "steps", but each minibatch is a shuffled share of the envs, each env's sequence
      whole and in order (what begin_update returns has the env axis first);
    - off-policy (`num_off_policy_optims_per_cycle(layout) = K > 0`): one call, `update_experience`,
      `begin_update`, then K optimizer steps on the experience state (the agent samples its own
      batches).

    Rules: (1) `num_minibatches()` and `num_epochs()` are positive ints and
    `num_off_policy_optims_per_cycle(layout)` a non-negative int; (2) `minibatch_over` is one of
    MINIBATCH_OVER; (3) an off-policy agent uses none of the on-policy knobs; (4) `num_epochs() > 1`
    needs one call a cycle ("steps" or "sequences"); (5) minibatches divide what they split: the
    cycle's steps, or each learner device's envs.
    """

    minibatches: int  # M: of envs (one call each), or of steps or sequences (all in one call)
    epochs: int
    over: str  # what a minibatch is a share of: one of MINIBATCH_OVER
    optims: int  # off-policy optimizer steps per call; 0 on-policy

    @staticmethod
    def of(agent: Agent, layout: ExperienceLayout) -> Schedule:
        name = type(agent).__name__
        m, epochs, optims = agent.num_minibatches(), agent.num_epochs(), agent.num_off_policy_optims_per_cycle(layout)
        for hook, value, least in (("num_minibatches", m, 1), ("num_epochs", epochs, 1),
                                   ("num_off_policy_optims_per_cycle", optims, 0)):
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                kind = "a positive" if least else "a non-negative"
                raise ValueError(f"{name}.{hook}() must be {kind} int, got {value!r}")
        over = agent.minibatch_over
        if over not in MINIBATCH_OVER:
            raise ValueError(f"{name}.minibatch_over must be one of {', '.join(map(repr, MINIBATCH_OVER))}, got {over!r}")
        on_policy_only = [what for what, used in (("num_minibatches() > 1", m > 1), ("num_epochs() > 1", epochs > 1),
                                                  (f"minibatch_over={over!r}", over != "envs")) if used]
        if on_policy_only and optims > 0:
            raise ValueError(f"{name}: {' and '.join(on_policy_only)} is for on-policy agents; an off-policy agent "
                             "samples its own batches from its experience state")
        if epochs > 1 and over == "envs":
            raise ValueError(f"{name}: num_epochs() > 1 needs minibatch_over='steps' or 'sequences' (one learner call "
                             "a cycle, its passes over freshly shuffled minibatches); 'envs' learns each minibatch in "
                             "a call of its own, once")
        if over == "steps" and layout.steps_per_cycle % m:
            raise ValueError(f"num_minibatches={m} must divide the {layout.steps_per_cycle} steps of a trajectory "
                             "(steps_per_cycle): each minibatch takes an equal share of every env's steps")
        if over != "steps" and layout.num_envs % m:
            raise ValueError(f"num_minibatches={m} must divide each learner device's {layout.num_envs} envs of a "
                             "trajectory (num_envs / learner devices)")
        return Schedule(m, epochs, over, optims)

    @property
    def one_call(self) -> bool:
        """Whether a cycle is learned in one learner call (its minibatches inside it)."""
        return self.over != "envs"

    @property
    def calls(self) -> int:
        """Learner calls per cycle: one per minibatch of envs, else one."""
        return 1 if self.one_call else self.minibatches

    @property
    def optimizer_steps(self) -> int:
        """Optimizer steps in one learner step (one cycle learned); an off-policy agent may skip
        some (R2D2 until its replay is ready)."""
        if self.optims:
            return self.optims
        return self.epochs * self.minibatches


def _shuffled_minibatches(samples, key: jax.Array, minibatches: int):
    """samples (leaves [T, B, ...], this device's envs) as [M, T / M, B, ...]: each env's T steps
    in a random order drawn from `key` and the env's index over all learner devices, so that any
    number of learner devices forms the same minibatches."""
    leaves = jax.tree.leaves(samples)
    T, B = leaves[0].shape[:2]
    for x in leaves:
        if x.shape[:2] != (T, B):
            raise ValueError(f"with minibatch_over='steps', every leaf of the experience that begin_update returns "
                             f"must be [T, B, ...] (steps, envs); got leaves of shapes {[x.shape for x in leaves]}")
    envs = jax.lax.axis_index(LEARNER_AXIS) * B + jnp.arange(B)
    order = jax.vmap(lambda e: jax.random.permutation(jax.random.fold_in(key, e), T))(envs)  # [B, T]
    rows = order.T  # [T, B]: the step each position takes, per env
    def take(x):
        x = x[rows, jnp.arange(B)[None, :]]
        return x.reshape(minibatches, T // minibatches, *x.shape[1:])

    return jax.tree.map(take, samples)


def _shuffled_sequences(samples, key: jax.Array, minibatches: int):
    """samples (leaves [B, ...], this device's envs first) as [M, B / M, ...]: each minibatch takes
    one env of every block of M consecutive envs, the blocks' orders drawn from `key` and the
    block's index over all learner devices, so that any number of learner devices (each holding
    whole blocks: M divides its envs) forms the same minibatches. Each env's leaves are kept
    whole: a sequence stays in order."""
    leaves = jax.tree.leaves(samples)
    B = leaves[0].shape[0]
    for x in leaves:
        if x.shape[0] != B:
            raise ValueError(f"with minibatch_over='sequences', every leaf of the experience that begin_update returns "
                             f"must have the envs first, [B, ...]; got leaves of shapes {[x.shape for x in leaves]}")
    blocks = B // minibatches
    block_ids = jax.lax.axis_index(LEARNER_AXIS) * blocks + jnp.arange(blocks)
    order = jax.vmap(lambda b: jax.random.permutation(jax.random.fold_in(key, b), minibatches))(block_ids)  # [blocks, M]
    rows = (jnp.arange(blocks)[:, None] * minibatches + order).T  # [M, blocks]: the env each minibatch takes
    return jax.tree.map(lambda x: x[rows], samples)


SHUFFLES = {"steps": _shuffled_minibatches, "sequences": _shuffled_sequences}


def _unroll_for_cpu(step: Callable, carry: Any, key: jax.Array) -> bool | int:
    """How far to unroll a scan of optimizer steps: fully on XLA:CPU when the step has a
    convolution, whose gradients run 10-15x slower inside a loop body (jax-ml/jax#12868: 1.3 s
    against 0.08 s a DQN step on an Atari batch, measured here), else not at all (an unrolled MLP
    step runs no faster and compiles K times)."""
    if jax.default_backend() != "cpu":
        return 1
    return True if "conv_general_dilated" in str(jax.make_jaxpr(step)(carry, key)) else 1


def fold_cycle(agent: Agent, schedule: Schedule, experience: Any, initial: Any, final: Any, traj: Trajectory,
               minibatch: jax.Array | int = 0, env_axes: Any = None) -> Any:
    """`update_experience`: fold (this device's share of) a cycle into its experience state, the
    first half of `learner_step`. `minibatch` and `env_axes` pick the minibatch of envs a call
    learns, when the schedule has minibatches of envs."""
    if schedule.minibatches > 1 and not schedule.one_call:
        initial, final, traj = _minibatch((initial, final, traj), env_axes, minibatch, schedule.minibatches)
    if not agent.accepts_frames:  # stacked on the actor device: the agent sees the stacks
        traj = framestack.restacked(traj)
    return agent.update_experience(experience, initial, final, traj)


def learner_step(agent: Agent, schedule: Schedule, networks: Any, opt_state: Any, experience: Any, initial: Any,
                 final: Any, traj: Trajectory, key: jax.Array, minibatch: jax.Array | int = 0,
                 env_axes: Any = None) -> tuple[Any, Any, Any, Metrics, jax.Array, jax.Array]:
    """One learner step on one learner device: fold a cycle (this device's envs) into the
    experience state (`fold_cycle`), then `learn` from it.

    Call it inside a program mapped over the learner devices with axis name LEARNER_AXIS
    (`jax.shard_map`; hooks `pmean` over it). Arguments are per device: replicated networks,
    optimizer state and key, the device's own experience state (no device axis), and its share of
    the cycle. `minibatch` and `env_axes` (the env axis of each leaf of (initial, final, traj),
    -1 for a whole leaf) pick the minibatch of envs this call learns, when the schedule has
    minibatches of envs. Returns (networks, opt_state, experience, metrics (averaged over the
    devices), finite, next key)."""
    experience = fold_cycle(agent, schedule, experience, initial, final, traj, minibatch, env_axes)
    return learn(agent, schedule, networks, opt_state, experience, key)


def learn(agent: Agent, schedule: Schedule, networks: Any, opt_state: Any, experience: Any, key: jax.Array,
          ) -> tuple[Any, Any, Any, Metrics, jax.Array, jax.Array]:
    """The second half of `learner_step`: `begin_update`, then the schedule's optimizer steps; with
    a non-finite metric or network on any device, the networks and optimizer state given."""
    next_key, key = jax.random.split(key)  # in the jitted call: no eager op per update
    # begin_update's key differs per device; the shuffle's is the same on every device
    begin_key, shuffle_key = jax.random.split(jax.random.fold_in(key, 1 << 30))
    device = jax.lax.axis_index(LEARNER_AXIS)
    key = jax.random.fold_in(key, device)
    begun, experience = agent.begin_update(networks, experience, jax.random.fold_in(begin_key, device))

    def optim_step(carry, k):
        networks, opt_state, experience, metrics = agent.optimize(*carry, k)
        return (networks, opt_state, experience), metrics

    if schedule.one_call:
        # Epochs of shuffled minibatches of steps or sequences; the experience state kept is what
        # begin_update returned (the optimizer steps see minibatches of it).
        shuffle = SHUFFLES[schedule.over]

        def epoch(carry, e):
            batches = shuffle(experience, jax.random.fold_in(shuffle_key, e), schedule.minibatches)

            def minibatch_step(carry, xs):
                batch, k = xs
                (networks, opt_state, _), metrics = optim_step((*carry, batch), k)
                return (networks, opt_state), metrics

            keys = jax.random.split(jax.random.fold_in(key, e), schedule.minibatches)
            return jax.lax.scan(minibatch_step, carry, (batches, keys))

        (new_networks, new_opt_state), metrics = jax.lax.scan(epoch, (begun, opt_state), jnp.arange(schedule.epochs))
        metrics = jax.tree.map(lambda m: jnp.mean(m, (0, 1)), metrics)
    elif schedule.optims <= 1:
        # No loop around a single step: XLA:CPU runs convolution gradients inside a loop body
        # 10-15x slower than outside one (jax-ml/jax#12868; benchmarks/bench_learner.py).
        (new_networks, new_opt_state, experience), metrics = optim_step((begun, opt_state, experience),
                                                                        jax.random.split(key, 1)[0])
    else:
        carry, keys = (begun, opt_state, experience), jax.random.split(key, schedule.optims)
        (new_networks, new_opt_state, experience), metrics = jax.lax.scan(
            optim_step, carry, keys, unroll=_unroll_for_cpu(optim_step, carry, keys[0]))
        metrics = jax.tree.map(lambda m: jnp.mean(m, 0), metrics)
    metrics = jax.tree.map(lambda m: jax.lax.pmean(m, LEARNER_AXIS), metrics)
    # A NaN or Inf in a metric (loss, gradient norm, ...) or in the new networks keeps the last
    # good networks and optimizer state.
    finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves((metrics, new_networks))
                                if jnp.issubdtype(x.dtype, jnp.inexact)] or [jnp.bool_(True)]))
    finite = jax.lax.pmin(finite.astype(jnp.int32), LEARNER_AXIS).astype(bool)
    keep = lambda new, old: jnp.where(finite, new, old)  # noqa: E731
    networks = jax.tree.map(keep, new_networks, networks)
    opt_state = jax.tree.map(keep, new_opt_state, opt_state)
    return networks, opt_state, experience, metrics, finite, next_key


class Learner:
    """Holds the learner state on the learner devices and updates it from trajectories."""

    def __init__(self, agent: Agent, sharding: LearnerSharding, layout: ExperienceLayout, key: jax.Array):
        self.agent = agent
        self.sharding = sharding
        k_net, k_exp, learner_key = jax.random.split(key, 3)
        self._key = keys.put(learner_key, sharding.replicated)
        networks = jax.jit(agent.init_networks)(k_net)  # one compiled program, not one per eager op
        host = (lambda t: jax.tree.map(np.asarray, t)) if jax.process_count() > 1 else (lambda t: t)
        # (several processes: every process passes the same host values, from the same key)
        self.networks = jax.device_put(host(networks), sharding.replicated)
        self.opt_state = jax.jit(agent.init_optimizer_state, out_shardings=sharding.replicated)(self.networks)
        self.experience = self._init_experience(layout, jax.random.split(k_exp, sharding.num_devices))
        self.version = 0  # learner updates so far; the policy version of `networks`
        self.schedule = Schedule.of(agent, layout)
        self._compiled: dict = {}
        self._mean_metrics = jax.jit(lambda ms: jax.tree.map(lambda *xs: sum(xs) / len(xs), *ms))

    @property
    def _experience_sharding(self) -> jax.sharding.NamedSharding:
        """Where an update leaves the experience state: one shard per learner device."""
        return self.sharding.envs(0)

    def _init_experience(self, layout: ExperienceLayout, device_keys: jax.Array):
        """Each learner device's experience state, built in place on that device (a replay of
        many GiB is never staged on the host or on one device), with a leading device axis.
        Raises ValueError, before allocating, if it cannot fit in the devices' free memory."""
        agent = self.agent
        init = lambda networks, key: agent.init_experience(networks, layout, key)  # noqa: E731
        check_fits_in_memory(jax.eval_shape(init, self.networks, device_keys[0]), self.sharding.local_devices)
        carried = keys.KeyData.of(device_keys)

        def one_device(networks, key_data):
            return jax.tree.map(lambda x: x[None], init(networks, carried.typed(key_data[0])))

        build = jax.shard_map(one_device, mesh=self.sharding.mesh, in_specs=(P(), P(LEARNER_AXIS)),
                              out_specs=P(LEARNER_AXIS), check_vma=False)
        # through the host: the same value on every process
        return jax.jit(build)(self.networks, keys.put(keys.raw(device_keys), self.sharding.envs(0)))

    def _update_fns(self, experience, inputs, specs):
        """The jitted calls of a learner step, mapped over the learner devices and built per
        layout (the experience pytree's, which changes once from its initial value, and that of the
        cycle's inputs (initial, final, traj): their structure and `specs`): `fold_cycle`, then
        `learn`. Two programs, not one: a program that writes a replay and then samples from it
        is lowered by XLA:CPU with the writes duplicated for each reader, each copying the whole
        replay (~0.15 s a call at 1M transitions; two programs: ~3 ms)."""
        layout = (jax.tree.structure(experience), jax.tree.structure(inputs), str(specs))
        fns = self._compiled.get(layout)
        if fns is not None:
            return fns
        agent, schedule, env_axes = self.agent, self.schedule, _env_axes(specs)
        mine = lambda tree: jax.tree.map(lambda x: x[0], tree)  # noqa: E731 - this device's: no device axis
        stacked = lambda tree: jax.tree.map(lambda x: x[None], tree)  # noqa: E731

        def fold(experience, initial, final, traj, minibatch):
            return stacked(fold_cycle(agent, schedule, mine(experience), initial, final, traj, minibatch, env_axes))

        def learn_body(networks, opt_state, experience, key):
            networks, opt_state, experience, metrics, finite, next_key = learn(
                agent, schedule, networks, opt_state, mine(experience), key)
            return networks, opt_state, stacked(experience), metrics, finite, next_key

        # Agents' hooks are plain JAX: a scan whose carry starts from a constant must not need
        # `pcast` (check_vma=False). The replication of networks and metrics comes from `pmean`.
        mesh = self.sharding.mesh
        fold_mapped = jax.shard_map(fold, mesh=mesh, in_specs=(P(LEARNER_AXIS), *specs, P()),
                                    out_specs=P(LEARNER_AXIS), check_vma=False)
        learn_mapped = jax.shard_map(learn_body, mesh=mesh, in_specs=(P(), P(), P(LEARNER_AXIS), P()),
                                     out_specs=(P(), P(), P(LEARNER_AXIS), P(), P(), P()), check_vma=False)
        # Networks are not donated: the published copy is read by inferencers concurrently.
        # Explicit output shardings: an update's outputs, its next inputs, are placed alike in
        # every call, so one compiled function serves them all (and `lower_updates` knows them).
        replicated = self.sharding.replicated
        fns = (jax.jit(fold_mapped, donate_argnums=(0,), out_shardings=self._experience_sharding),
               jax.jit(learn_mapped, donate_argnums=(1, 2), out_shardings=(
                   replicated, replicated, self._experience_sharding, replicated, replicated, replicated)))
        self._compiled[layout] = fns
        return fns

    def lower_updates(self, initial, final, traj: Trajectory) -> list[jax.stages.Lowered]:
        """`update`'s calls lowered for these inputs (placed on the learner devices as `update`
        receives them), to compile them ahead of the first cycle (`sebulba/loop/precompile.py`):
        with the initial experience state, and with the one the first call leaves where that has
        another structure (IMPALA's keeps the trajectory)."""
        inputs = (initial, final, traj)
        specs = _specs(inputs)

        def lower(experience):
            fold, learn_fn = self._update_fns(experience, inputs, specs)
            lowered_fold = fold.lower(experience, *inputs, np.int32(0))
            folded = self._as_placed(lowered_fold.out_info)
            lowered_learn = learn_fn.lower(self.networks, self.opt_state, folded, self._key)
            return [lowered_fold, lowered_learn], self._as_placed(lowered_learn.out_info[2])

        lowered, after = lower(self.experience)
        if jax.tree.structure(after) != jax.tree.structure(self.experience):
            lowered += lower(after)[0]
        return lowered

    def _as_placed(self, info):
        """Shape structs of an experience state as an update leaves it (one shard per device)."""
        return jax.tree.map(lambda o: jax.ShapeDtypeStruct(o.shape, o.dtype, sharding=self._experience_sharding), info)

    def update(self, initial, final, traj: Trajectory) -> Metrics:
        """One cycle's learning: update_experience, begin_update, then the optimizer step(s); with
        minibatches of envs, that once per minibatch, each its own call (metrics: their mean);
        with minibatches of steps, every epoch's minibatches in one call."""
        metrics = []
        inputs = (initial, final, traj)
        specs = _specs(inputs)
        calls = self.schedule.calls
        for i in range(calls):
            fold, learn_fn = self._update_fns(self.experience, inputs, specs)
            # Each call is awaited (the finite flag) before the next is dispatched: on an
            # accelerator shared with inferencers, their calls run between the minibatches.
            self.experience = fold(self.experience, initial, final, traj, np.int32(i))
            self.networks, self.opt_state, self.experience, m, finite, self._key = learn_fn(
                self.networks, self.opt_state, self.experience, self._key)
            if not bool(finite):
                bad = sorted(k for k, v in m.items() if not np.all(np.isfinite(np.asarray(v))))
                what = f"metric(s) {bad}" if bad else "the networks (a gradient or update)"
                where = f" (minibatch {i + 1} of {calls})" if calls > 1 else ""
                kept = f", plus {i} of its minibatches" if i else ""
                raise NonFiniteError(
                    f"learner step {self.version + 1}{where}: {what} became NaN or Inf; the networks and optimizer "
                    f"state are kept as of learner step {self.version}{kept}", step=self.version + 1, metrics=bad)
            metrics.append(m)
        self.version += 1
        return metrics[0] if len(metrics) == 1 else self._mean_metrics(metrics)

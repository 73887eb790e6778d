"""The learner: one jitted call per cycle, replicated over the learner devices (`shard_map`,
the pmap semantics), that folds a trajectory into the experience state and runs the optimizer
steps. Networks and optimizer state are replicated; experience state is one shard per device."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from sebulba.agent import Agent
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


class Learner:
    """Holds the learner state on the learner devices and updates it from trajectories."""

    def __init__(self, agent: Agent, sharding: LearnerSharding, layout: ExperienceLayout, key: jax.Array):
        self.agent = agent
        self.sharding = sharding
        k_net, k_exp, self._key = jax.random.split(key, 3)
        networks = agent.init_networks(k_net)
        host = (lambda t: jax.tree.map(np.asarray, t)) if jax.process_count() > 1 else (lambda t: t)
        # (several processes: every process passes the same host values, from the same key)
        self.networks = jax.device_put(host(networks), sharding.replicated)
        self.opt_state = jax.jit(agent.init_optimizer_state, out_shardings=sharding.replicated)(self.networks)
        exp_keys = jax.random.split(k_exp, sharding.num_devices)
        per_device = [agent.init_experience(networks, layout, k) for k in exp_keys]
        stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *per_device)  # leading device axis
        self.experience = jax.device_put(host(stacked), sharding.envs(0))
        self.version = 0  # learner updates so far; the policy version of `networks`
        self.num_optims = max(1, agent.num_off_policy_optims_per_cycle())
        self._compiled: dict = {}

    def _update_fn(self, experience, initial, final, traj):
        """Built per input layout (the experience pytree changes once, from its initial value)."""
        layout = (jax.tree.structure((experience, initial, final, traj)), str(_specs((initial, final, traj))))
        fn = self._compiled.get(layout)
        if fn is not None:
            return fn
        agent, num_optims = self.agent, self.num_optims

        def body(networks, opt_state, experience, initial, final, traj, learner_key):
            next_key, key = jax.random.split(learner_key)  # in the jitted call: no eager op per update
            experience = jax.tree.map(lambda x: x[0], experience)  # drop the device axis
            experience = agent.update_experience(experience, initial, final, traj)
            key = jax.random.fold_in(key, jax.lax.axis_index(LEARNER_AXIS))

            def optim_step(carry, k):
                networks, opt_state, experience, metrics = agent.optimize(*carry, k)
                return (networks, opt_state, experience), metrics

            carry = (networks, opt_state, experience)
            if num_optims == 1:
                # No loop around a single step: XLA:CPU runs convolution gradients inside a loop
                # body 10-15x slower than outside one (jax-ml/jax#12868; measured in DESIGN.md).
                (new_networks, new_opt_state, experience), metrics = optim_step(carry, jax.random.split(key, 1)[0])
            else:
                (new_networks, new_opt_state, experience), metrics = jax.lax.scan(
                    optim_step, carry, jax.random.split(key, num_optims))
                metrics = jax.tree.map(lambda m: jnp.mean(m, 0), metrics)
            metrics = jax.tree.map(lambda m: jax.lax.pmean(m, LEARNER_AXIS), metrics)
            # A NaN or Inf in a metric (loss, gradient norm, ...) or in the new networks keeps the
            # last good networks and optimizer state; the host raises NonFiniteError.
            finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves((metrics, new_networks))
                                        if jnp.issubdtype(x.dtype, jnp.inexact)] or [jnp.bool_(True)]))
            finite = jax.lax.pmin(finite.astype(jnp.int32), LEARNER_AXIS).astype(bool)
            keep = lambda new, old: jnp.where(finite, new, old)
            networks = jax.tree.map(keep, new_networks, networks)
            opt_state = jax.tree.map(keep, new_opt_state, opt_state)
            return networks, opt_state, jax.tree.map(lambda x: x[None], experience), metrics, finite, next_key

        mapped = jax.shard_map(
            body,
            mesh=self.sharding.mesh,
            in_specs=(P(), P(), P(LEARNER_AXIS), _specs(initial), _specs(final), _specs(traj), P()),
            out_specs=(P(), P(), P(LEARNER_AXIS), P(), P(), P()),
            # Agents' hooks are plain JAX: a scan whose carry starts from a constant must not need
            # `pcast`. The replication of networks and metrics comes from `pmean` instead.
            check_vma=False,
        )
        # Networks are not donated: the published copy is read by inferencers concurrently.
        fn = jax.jit(mapped, donate_argnums=(1, 2))
        self._compiled[layout] = fn
        return fn

    def update(self, initial, final, traj: Trajectory) -> Metrics:
        """One cycle's learning: update_experience, then the optimizer step(s)."""
        fn = self._update_fn(self.experience, initial, final, traj)
        self.networks, self.opt_state, self.experience, metrics, finite, self._key = fn(
            self.networks, self.opt_state, self.experience, initial, final, traj, self._key
        )
        if not bool(finite):
            bad = sorted(k for k, v in metrics.items() if not np.all(np.isfinite(np.asarray(v))))
            what = f"metric(s) {bad}" if bad else "the networks (a gradient or update)"
            raise NonFiniteError(
                f"learner step {self.version + 1}: {what} became NaN or Inf; the networks and optimizer state "
                f"are kept as of learner step {self.version}", step=self.version + 1, metrics=bad)
        self.version += 1
        return metrics

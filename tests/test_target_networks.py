"""Target networks (`sebulba.target_networks`): the documented place an agent keeps one. The
optimizer state covers `online` only, the default `optimize` learns `online` only and counts its
steps, and `update_target` copies (every N steps) or averages (Polyak) as the agent sets."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import envs
import sebulba
from sebulba.target_networks import TargetNetworks, periodic_copy, polyak
from tests.support.agents import CountingAgent

CARTPOLE = envs.make_spec("CartPole-v1")


class TargetAgent(CountingAgent):
    """A scalar pulled towards 1 + its target's value: the target decides where online goes."""

    def init_networks(self, key):
        return TargetNetworks.of({"w": jnp.zeros(())})

    def optimizer(self):
        return optax.sgd(0.25)

    def loss(self, networks, experience, key):
        goal = jax.lax.stop_gradient(networks.target["w"]) + 1.0
        return (networks.online["w"] - goal) ** 2, {"w": networks.online["w"]}


class EveryThird(TargetAgent):
    target_update_period = 3


class Averaged(TargetAgent):
    target_update_tau = 0.5


def learn(agent, cycles: int):
    cfg = sebulba.LoopConfig(num_envs=4, steps_per_cycle=2, async_mode=False, inferencers_per_device=1,
                             learner_devices=(1, 2), log_every_s=1e3)
    with sebulba.GymnasiumLoop(agent, cfg) as loop:
        opt_state = loop.learner.opt_state
        loop.run(max_cycles=cycles)
        return jax.device_get(loop.learner.networks), opt_state


def by_hand(cycles: int, update):
    """sgd(0.25) on (w - (target + 1))^2: w <- w - 0.5 (w - target - 1), then the target rule."""
    w, target = 0.0, 0.0
    for step in range(1, cycles + 1):
        w -= 0.5 * (w - target - 1.0)
        target = update(step, w, target)
    return w, target


def test_a_periodic_copy_follows_online_every_n_optimizer_steps():
    nets, opt_state = learn(EveryThird(CARTPOLE), 7)
    assert jax.tree.structure(opt_state) == jax.tree.structure(optax.sgd(0.25).init({"w": jnp.zeros(())}))
    w, target = by_hand(7, lambda step, w, t: w if step % 3 == 0 else t)
    assert int(nets.updates) == 7
    np.testing.assert_allclose([float(nets.online["w"]), float(nets.target["w"])], [w, target], rtol=1e-6)
    assert target != w  # the last copy was at step 6


def test_polyak_averaging_moves_the_target_every_step():
    nets, _ = learn(Averaged(CARTPOLE), 5)
    w, target = by_hand(5, lambda step, w, t: 0.5 * w + 0.5 * t)
    np.testing.assert_allclose([float(nets.online["w"]), float(nets.target["w"])], [w, target], rtol=1e-6)


def test_an_agent_with_target_networks_must_say_how_the_target_moves():
    with pytest.raises(ValueError, match="TargetAgent has TargetNetworks: set one of target_update_period"):
        learn(TargetAgent(CARTPOLE), 1)


def test_the_helpers_by_hand():
    nets = TargetNetworks({"w": jnp.array(4.0)}, {"w": jnp.array(0.0)}, jnp.array(6, jnp.int32))
    assert float(periodic_copy(nets, 3).target["w"]) == 4.0
    assert float(periodic_copy(nets, 4).target["w"]) == 0.0
    assert float(polyak(nets, 0.25).target["w"]) == 1.0
    fresh = TargetNetworks.of({"w": jnp.ones(2)})
    assert int(fresh.updates) == 0 and fresh.target["w"] is not fresh.online["w"]

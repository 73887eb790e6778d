"""The learner's two calls per cycle (sebulba/loop/learner.py): `fold_cycle` writes the cycle into
the replay in place (its compiled programs copy none of the replay's arrays: a copy of a
1M-transition store per cycle made TD3 on HalfCheetah at one env and one update per env step ~30x slower; one of
its priorities or flags, a fold ~30x slower), a prioritized replay is updated in place too, and
the two calls learn exactly what `learner_step` learns in one program (the Anakin loop's)."""

from __future__ import annotations

import re

import jax
import numpy as np

import pytest

import envs
from sebulba.agents.dqn import DQN, DQNConfig
from sebulba.agents.td3 import TD3, TD3Config
from sebulba.loop.learner import Learner, Schedule, learner_step
from sebulba.sharding import LEARNER_AXIS, LearnerSharding
from sebulba.types import ExperienceLayout
from tests.support.learner_runs import one_cycle

pytest.importorskip("mujoco", reason="the mujoco extra is not installed: pip install -e '.[mujoco]'")
CAPACITY = 50_000


def setup(num_envs: int, steps: int, agent=None):
    agent = agent or TD3(envs.make_spec("HalfCheetah-v5"), TD3Config(hidden_sizes=(16,), batch_size=8, learning_starts=1,
                                                                      replay_capacity=CAPACITY))
    cycle = one_cycle(agent, num_envs=num_envs, steps=steps)
    sharding = LearnerSharding.create(jax.devices()[:1], num_envs)
    learner = Learner(agent, sharding, ExperienceLayout(1, num_envs, steps), jax.random.key(0))
    initial, final, traj = cycle
    placed = (agent.shard_step_state(initial, sharding), agent.shard_step_state(final, sharding),
              sharding.trajectory(traj))
    return agent, learner, placed


def replay_copies(num_envs: int, steps: int, agent=None) -> dict[str, list[str]]:
    """The copies of replay arrays (any of the replay's rows: stores, rewards and flags, priorities)
    in the learner's two compiled programs, fold and learn."""
    agent, learner, placed = setup(num_envs, steps, agent)
    fold, learn = (lowered.compile().as_text() for lowered in learner.lower_updates(*placed)[:2])
    rows = -(-CAPACITY // num_envs)
    store = rf"[a-z0-9]+\[1,1,{rows},{num_envs}[\],]"
    for program in (fold, learn):
        assert re.search(rf"= {store}", program), "no replay array in the program: the test looks at the wrong shape"
    return {name: re.findall(rf"= ({store}\S*) copy\(", program) for name, program in (("fold", fold), ("learn", learn))}


def test_folding_a_cycle_into_the_replay_copies_none_of_its_arrays():
    for num_envs, steps in ((1, 1), (4, 8)):
        assert replay_copies(num_envs, steps) == {"fold": [], "learn": []}, f"{num_envs} envs x {steps} steps"


def test_a_prioritized_replay_is_updated_in_place():
    dqn = DQN(envs.make_spec("CartPole-v1"), DQNConfig(hidden_sizes=(16,), batch_size=8, learning_starts=1,
                                                       replay_capacity=CAPACITY, priority_exponent=0.6))
    assert replay_copies(4, 1, dqn) == {"fold": [], "learn": []}


def test_two_calls_learn_what_learner_step_learns_in_one_program():
    agent, learner, placed = setup(4, 8)
    before = jax.tree.map(np.asarray, (learner.networks, learner.opt_state, learner.experience,
                                       jax.random.key_data(learner._key)))
    metrics = learner.update(*placed)
    got = jax.tree.map(np.asarray, (learner.networks, learner.opt_state, learner.experience))

    schedule = Schedule.of(agent, ExperienceLayout(1, 4, 8))
    networks, opt_state, experience, key = before

    def one_program(networks, opt_state, experience, initial, final, traj, key):
        experience = jax.tree.map(lambda x: x[0], experience)
        n, o, e, m, finite, _ = learner_step(agent, schedule, networks, opt_state, experience, initial, final, traj, key)
        return n, o, jax.tree.map(lambda x: x[None], e), m

    mapped = jax.shard_map(one_program, mesh=learner.sharding.mesh, in_specs=(
        jax.sharding.PartitionSpec(), jax.sharding.PartitionSpec(), jax.sharding.PartitionSpec(LEARNER_AXIS),
        *jax.tree.map(lambda x: x.sharding.spec, placed), jax.sharding.PartitionSpec()),
        out_specs=(jax.sharding.PartitionSpec(),) * 2 + (jax.sharding.PartitionSpec(LEARNER_AXIS),
                                                          jax.sharding.PartitionSpec()), check_vma=False)
    place = lambda tree, sharding: jax.device_put(tree, sharding)  # noqa: E731
    want = jax.jit(mapped)(place(networks, learner.sharding.replicated), place(opt_state, learner.sharding.replicated),
                           place(experience, learner.sharding.envs(0)), *placed,
                           jax.device_put(jax.random.wrap_key_data(key), learner.sharding.replicated))
    jax.tree.map(np.testing.assert_array_equal, got, jax.tree.map(np.asarray, want[:3]))
    for k, v in want[3].items():
        assert float(metrics[k]) == float(v), k

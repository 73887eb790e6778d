"""The Sebulba loop on multi-player pools (envs/players.py): the agent acts on a row per (env,
player), the rows' actions reach their players in sync and async mode, dead players' rows are
never learned from, and episode statistics count one episode per player per env episode."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import sebulba
from sebulba.agents import RandomAgent
from sebulba.agents.ppo import PPO, PPOConfig
from sebulba.types import Rollout, Trajectory

SPREAD = "pettingzoo/mpe2/simple_spread_v3"
DYING = "pettingzoo/tests.support/dying_agents"  # agent i leaves on step i + 1; reward of agent i on step t: 10 i + t


def config(env_id, **kw):
    kw.setdefault("num_envs", 2)
    kw.setdefault("log_every_s", 1000.0)
    kw.setdefault("env_kwargs", {"num_threads": 1})
    return sebulba.LoopConfig(env_id=env_id, **kw)


ECHO = "pettingzoo/tests.support/echo_players"  # every player sees the action it took: obs [action, player, t]


class RowActionsAgent(RandomAgent):
    """Acts row % 5 on every row and counts, over every trajectory learned, the steps whose next
    observation does not echo the row's own action and player: a row's action that reached
    another player shows."""

    def init_experience(self, networks, layout, key):
        self.layout = layout
        return jnp.zeros(2, jnp.int32)  # (misrouted, checked)

    def step(self, networks, step_state, env_step):
        return (jnp.arange(env_step.reward.shape[0]) % 5).astype(jnp.int32), step_state

    def update_experience(self, experience, initial_step_state, final_step_state, trajectory: Trajectory):
        es, action = trajectory.env_step, trajectory.action
        rows = es.obs.shape[1]
        checked = ~es.first[1:]  # a reset's observation was not made by the action
        wrong = (es.obs[1:, :, 0] != action) | (es.obs[1:, :, 1] != jnp.arange(rows) % 3)
        return experience + jnp.stack([(checked & wrong).sum(), checked.sum()]).astype(jnp.int32)


@pytest.mark.parametrize("async_mode", [False, True])
def test_rows_actions_reach_their_players(async_mode):
    agent = RowActionsAgent(envs.make_spec(ECHO))
    with sebulba.GymnasiumLoop(agent, config(ECHO, num_envs=4, steps_per_cycle=6, async_mode=async_mode)) as loop:
        assert loop.num_players == 3 and [inf.num_rows for inf in loop.inferencers] == [12, 12]
        assert agent.layout.num_envs == 12 and agent.layout.num_players == 3
        ctx = loop.run(max_cycles=6)
        assert ctx.env_steps == 6 * 4 * 6  # env steps, not rows
        misrouted, checked = np.asarray(loop.learner.experience).reshape(-1)
        assert checked == 6 * 12 * 5  # every row's step but one reset in 6 (5-step episodes) was checked ...
        assert misrouted == 0  # ... and echoes its own row's action


EPISODE = {0: (1.0, 1), 1: (23.0, 2), 2: (66.0, 3)}  # per player of DYING: (return, length); 4 pool steps per episode


@pytest.mark.parametrize("async_mode", [False, True])
def test_dead_players_episodes_counted_once_per_env_episode(async_mode):
    """8 steps per cycle = 2 env episodes: each player's episode counted once in each, although a
    dead player's done flag stays up until its env resets."""
    with sebulba.GymnasiumLoop(RandomAgent(envs.make_spec(DYING)), config(DYING, steps_per_cycle=8,
                                                                           async_mode=async_mode)) as loop:
        ctx = loop.run(max_cycles=5)
        w = loop.window
        assert w.episodes == 5 * 2 * 3 * 2  # cycles x envs x players x env episodes per cycle
        for p, (ret, length) in EPISODE.items():
            assert set(w.player_returns[p]) == {ret} and set(w.player_lengths[p]) == {length}
        report = loop.reports[-1]
        assert report["episode_return_mean_player2"] == 66.0 and report["episode_length_mean_player1"] == 2.0
        assert ctx.env_steps == 5 * 2 * 8


def test_cycle_result_names_each_episodes_player():
    with sebulba.GymnasiumLoop(RandomAgent(envs.make_spec(DYING)), config(DYING, steps_per_cycle=8)) as loop:
        inf = loop.inferencers[0]
        r = inf.run_cycle(loop.learner.version, loop.learner.networks)
        assert r.env_steps == 16 and len(r.episode_returns) == 12
        np.testing.assert_array_equal(r.episode_returns, [EPISODE[p][0] for p in r.episode_players])
        np.testing.assert_array_equal(r.episode_lengths, [EPISODE[p][1] for p in r.episode_players])
        assert sorted(r.episode_players.tolist()) == [0] * 4 + [1] * 4 + [2] * 4


def test_dead_players_rows_are_masked_from_ppo_loss():
    """PPO learns nothing from a row whose player has left (its done flag stays up: the step after
    a final one is masked, the auto-reset rule), and its last live step is terminal (no bootstrap)."""
    spec = envs.make_spec(DYING)
    agent = PPO(spec, PPOConfig(num_minibatches=1, num_epochs=1))
    with sebulba.GymnasiumLoop(agent, config(DYING, steps_per_cycle=8, async_mode=False)) as loop:
        inf = loop.inferencers[0]
        inf.run_cycle(loop.learner.version, loop.learner.networks)  # starts mid-stream: step 8 onward
        r = inf.run_cycle(loop.learner.version, loop.learner.networks)
        traj = jax.device_get(r.trajectory)
        _, samples = jax.jit(agent.begin_update)(jax.device_get(loop.learner.networks), Rollout(traj, ()),
                                                  jax.random.key(0))
        valid = np.asarray(samples.valid)  # [T, rows]
        elapsed = (np.arange(8, 16) % 4)  # env step t's elapsed count: 0 is the reset
        player = np.arange(6) % 3
        # the player acts at env step t iff it is in the episode then: elapsed <= its own index
        live = elapsed[:, None] <= player[None, :]
        np.testing.assert_array_equal(valid, live)
        assert np.all(np.asarray(samples.advantage)[~live] == 0)


def test_evaluator_plays_each_players_episodes_once():
    """Evaluation on a multi-player pool: episodes count the env's (2 here), each an episode of
    every player, read once although a dead player's done flag stays up."""
    from sebulba.loop.evaluator import Evaluator

    agent = RandomAgent(envs.make_spec(DYING))
    with Evaluator(agent, DYING, {"num_threads": 1}, num_envs=1) as ev:
        result = ev.run(agent.init_networks(jax.random.key(0)), 2, jax.random.key(1))
    assert sorted(result.returns.tolist()) == [1.0, 1.0, 23.0, 23.0, 66.0, 66.0]
    np.testing.assert_array_equal(result.episode_returns, [[1.0, 23.0, 66.0]] * 2)
    assert sorted(result.lengths.tolist()) == [1, 1, 2, 2, 3, 3]


@pytest.mark.slow(seconds=7)
def test_a_multi_player_run_checkpoints_and_resumes(tmp_path):
    """The rows' cycle state (step states, last env step, running sums) is saved and restored:
    a resumed run goes on at its counts (the process backend's envs start fresh episodes)."""
    from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer

    ckpt = CheckpointConfig(str(tmp_path / "ckpt"), every_learner_steps=2, keep=1)
    cfg = config(ECHO, num_envs=2, steps_per_cycle=6, async_mode=False, inferencers_per_device=1)
    with sebulba.GymnasiumLoop(RowActionsAgent(envs.make_spec(ECHO)), cfg) as loop:
        loop.run(max_cycles=4, checkpointer=Checkpointer(ckpt))
    with sebulba.GymnasiumLoop(RowActionsAgent(envs.make_spec(ECHO)), cfg) as loop:
        ctx = loop.run(max_cycles=6, checkpointer=Checkpointer(ckpt), resume=True)
        assert ctx.learner_steps == 6 and ctx.env_steps == 6 * 2 * 6
        assert loop.window.episodes == 6 * 2 * 3  # one env episode per 6-step cycle, each of 3 players
        misrouted, checked = np.asarray(loop.learner.experience).reshape(-1)
        assert misrouted == 0 and checked > 0

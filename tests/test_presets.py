"""Every entry point picks its preset from the env's kind (Atari / image / tabular / vector
observations; discrete or continuous actions), so any id the pool serves runs with defaults that
suit it, and an agent that cannot take the env's actions says so in one line. The learning bars
of the no-flag presets on tasks beyond CartPole, through the real CLI. A preset is typed
(sebulba.experiment.presets.Preset): a misspelled key is an error naming the right one."""

import dataclasses
import json
import re
import subprocess
import sys

import pytest

from sebulba.agents.ppo import PPOConfig
from sebulba.experiment.presets import Preset
from tests.support.cli import ROOT, child_env, last_metrics, run_experiment

KINDS = [  # env, its kwargs, IMPALA's preset, R2D2's preset, PPO's preset
    ("CartPole-v1", None, "CARTPOLE", "CARTPOLE", "CARTPOLE"),
    ("Acrobot-v1", None, "ACROBOT", "CARTPOLE", "CARTPOLE"),  # IMPALA's tuned for the task
    ("gymnax/Acrobot-v1", None, "ACROBOT", "CARTPOLE", "CARTPOLE"),  # and for its twin
    ("MountainCar-v0", None, "CARTPOLE", "MOUNTAIN_CAR", "MOUNTAIN_CAR"),  # R2D2's and PPO's tuned for the task
    ("gymnax/MountainCar-v0", None, "CARTPOLE", "MOUNTAIN_CAR", "MOUNTAIN_CAR"),  # and for its twin
    ("FrozenLake-v1", {"is_slippery": False}, "TABULAR", "CARTPOLE", "CARTPOLE"),
    ("CliffWalking-v1", None, "TABULAR", "CARTPOLE", "CARTPOLE"),
    ("CartPoleNoVelocity-v1", None, "MEMORY", "MEMORY", "MEMORY"),  # each agent's memory preset
    ("SignalCorridor-v0", None, "TABULAR", "CARTPOLE", "CARTPOLE"),  # Dict observations: sparse rewards
    ("MiniGrid-Empty-5x5-v0", {"drop_observation_keys": ["mission"]}, "TABULAR", "CARTPOLE", "CARTPOLE"),
    ("Pong-v5", None, "ATARI", "ATARI", "ATARI"),
    ("Pendulum-v1", None, "CONTROL", None, "CONTROL"),
    ("MountainCarContinuous-v0", None, "CONTROL", None, "CONTROL"),
    ("Pendulum-v1", {"backend": "process"}, "CONTROL", None, "MUJOCO"),  # a Gymnasium env in worker processes
    ("pettingzoo/mpe2/simple_spread_v3", None, "CARTPOLE", "CARTPOLE", "MULTIPLAYER"),  # 3 players: PPO is IPPO
    ("pettingzoo/mpe2/simple_spread_v3", {"global_state": True}, "TABULAR", "CARTPOLE", "MULTIPLAYER_MAPPO"),
    ("pettingzoo/classic/connect_four_v3", None, "TABULAR", "CARTPOLE", "BOARD_GAME"),  # an action mask: self-play
    ("Combat-v5", None, "MULTIPLAYER_ATARI", "ATARI", "MULTIPLAYER_ATARI"),  # one screen: each row marked by player
    ("gymnax/Breakout-MinAtar", None, "MINATAR", "CARTPOLE", "MINATAR"),  # MinAtar: each its own
]
LOOP = dict(total_env_steps=1000, num_envs=4, steps_per_cycle=8, async_mode=False, inferencers_per_device=1,
            log_every_s=1.0)


@pytest.mark.parametrize("make", [lambda: Preset(**LOOP, num_env=8, agent=PPOConfig()),
                                  lambda: Preset(**LOOP, agent=PPOConfig()).replace(num_env=8),
                                  lambda: dataclasses.replace(Preset(**LOOP, agent=PPOConfig()), num_env=8)],
                         ids=["constructor", "replace", "dataclasses.replace"])
def test_a_misspelled_preset_key_is_an_error_naming_the_right_one(make):
    with pytest.raises(TypeError, match=r"^Preset has no field 'num_env'; did you mean 'num_envs'\?$"):
        make()


def test_a_preset_key_like_no_field_lists_the_fields():
    with pytest.raises(TypeError, match=r"^Preset has no field 'frames'; its fields: total_env_steps, .*, agent$"):
        Preset(**LOOP, frames=8, agent=PPOConfig())


@pytest.mark.parametrize("change, error", [
    ({"num_envs": 0}, "num_envs must be a positive int, got 0"),
    ({"total_env_steps": 1.5}, "total_env_steps must be a positive int, got 1.5"),
    ({"steps_per_cycle": 0}, "steps_per_cycle must be a positive int or None"),
    ({"async_mode": "yes"}, "async_mode must be a bool, got 'yes'"),
    ({"log_every_s": 0}, "log_every_s must be a number > 0"),
    ({"env_threads": -1}, "env_threads must be an int >= 0 or None"),
    ({"agent": PPOConfig}, "agent must be an agent's config"),
])
def test_a_preset_value_out_of_its_range_is_refused(change, error):
    with pytest.raises(ValueError, match=re.escape(f"Preset: {error}")):
        Preset(**{**LOOP, "agent": PPOConfig(), **change})


def test_a_preset_says_which_loop_values_it_sets():
    """What --help lists as the presets' values: a loop value other than Preset's default."""
    p = Preset(**LOOP, agent=PPOConfig(), stack_on_device=True)
    assert p.sets("num_envs") and p.sets("stack_on_device")
    assert not any(p.sets(f) for f in ("env_threads", "lr_decay", "env_kwargs", "agent", "learning_rate"))
    assert not p.replace(stack_on_device=False).sets("stack_on_device")


# The entry points define their flags on import, so each is imported in a process of its own.
SCRIPT = """
import json, sys
import envs
from sebulba.experiment.presets import Preset
module = __import__("experiments." + sys.argv[1], fromlist=["preset"])
names = {id(v): k for k, v in vars(module).items() if k.isupper() and isinstance(v, Preset)}
out = []
for env, kwargs in json.loads(sys.argv[2]):
    try:
        picked = module.preset(env, kwargs)
    except ValueError as e:
        out.append("ValueError: " + str(e))
        continue
    try:  # the preset's env kwargs, under the user's, make a pool of this task
        envs.make_spec(env, **{**picked.env_kwargs, **(kwargs or {})})
        out.append(names[id(picked)])
    except Exception as e:
        out.append(f"{names[id(picked)]} builds no pool: {type(e).__name__}: {e}")
print(json.dumps(out))
"""


def presets(agent: str, cases: list) -> list:
    """The preset name (or the error) of each [env, kwargs] case, in order, from one process."""
    env = child_env()
    out = subprocess.run([sys.executable, "-c", SCRIPT, agent, json.dumps(cases)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.mark.slow(seconds=5)
@pytest.mark.parametrize("agent, column", [("impala", 2), ("r2d2", 3), ("ppo", 4)])
def test_the_preset_follows_the_envs_kind(agent, column):
    cases = [case for case in KINDS if case[column] is not None]
    assert presets(agent, [[env, kwargs] for env, kwargs, *_ in cases]) == [case[column] for case in cases]


MINATAR_GAMES = [f"gymnax/{game}-MinAtar" for game in ("Breakout", "Asterix", "Freeway", "SpaceInvaders")]


@pytest.mark.slow(seconds=4)
@pytest.mark.parametrize("agent", ["dqn", "pqn", "ppo", "impala", "muzero"])
def test_the_four_minatar_games_take_the_minatar_presets(agent):
    cases = [[game, None] for game in MINATAR_GAMES] + [["gymnax/CartPole-v1", None], ["Pong-v5", None]]
    assert presets(agent, cases) == ["MINATAR"] * 4 + ["CARTPOLE", "ATARI"]


@pytest.mark.slow(seconds=4)
@pytest.mark.parametrize("agent", ["dqn", "pqn"])  # PPO's and R2D2's: KINDS
def test_mountain_car_takes_its_own_preset(agent):
    """Tuned for the task (CartPole's presets leave it short of -110): the built-in id and gymnax's twin."""
    assert presets(agent, [["MountainCar-v0", None], ["gymnax/MountainCar-v0", None], ["Acrobot-v1", None]]) == [
        "MOUNTAIN_CAR", "MOUNTAIN_CAR", "CARTPOLE"]


@pytest.mark.slow(seconds=4)
@pytest.mark.parametrize("agent", ["ppo", "sac", "td3"])
def test_dm_controls_suite_and_envpools_older_gym_ids_take_the_mujoco_presets(agent):
    """EnvPool's DMC ids (Dict observations, Box actions) and its v4/v3 gym MuJoCo ids (CleanRL's
    EnvPool scripts use HalfCheetah-v4) train with the MuJoCo presets (CleanRL's settings)."""
    assert presets(agent, [["CheetahRun-v1", None], ["WalkerWalk-v1", None], ["HalfCheetah-v4", None],
                           ["Hopper-v3", None]]) == ["MUJOCO"] * 4


@pytest.mark.slow(seconds=3)
def test_continuous_actions_are_refused_by_name_by_a_discrete_only_agent():
    (got,) = presets("r2d2", [["Pendulum-v1", None]])
    assert got.startswith("ValueError: R2D2 needs a Discrete action space; Pendulum-v1 has Box(-2.0, 2.0, (1,)"), got


@pytest.mark.slow(seconds=14)
def test_r2d2_runs_mountain_car_with_its_preset(tmp_path):
    """Before presets followed the env's kind, R2D2 sent every id but CartPole to the Atari preset."""
    out = run_experiment("experiments.r2d2", "--env=MountainCar-v0", "--total_env_steps=3000", f"--logdir={tmp_path}",
                         "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    assert int(last_metrics(tmp_path)[1]["env_steps"]) >= 3000


@pytest.mark.slow(seconds=15)
@pytest.mark.timeout(900)
@pytest.mark.parametrize("module", ["experiments.impala"])
def test_learning_bar_acrobot(module, tmp_path):
    """`python -m experiments.impala --env Acrobot-v1`, no other flag: mean return >= -100 over the
    last 20 episodes within 500k env steps (seed 0), with the preset the id gets (ACROBOT: CartPole's
    with an entropy bonus of 0.03; seeds 0-4 ended at -82 to -96 at 400k, gymnax's twin's at -80 to
    -88). R2D2's run of the same (its CARTPOLE
    preset, whose learning tests/test_r2d2.py's bar proves; seeds 0-3 ended at -92, -94, -84, -99
    at 500k) takes two minutes and is left to a benchmark run, to keep the suite under 20 minutes
    on 2 cores."""
    out = run_experiment(module, "--env=Acrobot-v1", f"--logdir={tmp_path}", "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    _, last = last_metrics(tmp_path)
    assert int(last["env_steps"]) <= 500_000 + 20_000  # the budget (the last cycle may overshoot it)
    assert float(last["episode_return_mean"]) >= -100, last


@pytest.mark.slow(seconds=18)
@pytest.mark.timeout(600)
def test_learning_bar_frozen_lake(tmp_path):
    """`python -m experiments.impala --env FrozenLake-v1 --env_kwargs is_slippery=False`: mean
    return >= 0.9 within 500k env steps (the tabular preset: 200k)."""
    out = run_experiment("experiments.impala", "--env=FrozenLake-v1", "--env_kwargs=is_slippery=False",
                         f"--logdir={tmp_path}", "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    _, last = last_metrics(tmp_path)
    assert int(last["env_steps"]) <= 500_000 and float(last["episode_return_mean"]) >= 0.9, last

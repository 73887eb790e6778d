import os
import sys

# Multi-device tests on CPU: fake devices must be configured before jax is imported.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# The learning-bar runs and other long tests go first, longest first: with one pytest worker per
# core (pytest-xdist, tests sent one at a time: --maxschedchunk=1) they then run side by side while
# the short tests fill the gaps, instead of arriving last, one after another. Seconds on 2 cores.
LONG_TESTS = {  # per test item, from `pytest --durations` on 2 cores (2026-11-26)
    "test_r2d2.py::test_learning_bar_memory": 240,
    "test_presets.py::test_learning_bar_acrobot[experiments.r2d2]": 115,
    "test_r2d2.py::test_learning_bar_cartpole": 110,
    "test_multihost_recovery.py::": 45,  # one xdist group: its jobs take both cores
    "test_impala.py::test_learning_bar_pendulum": 43,
    "test_atari.py::test_impala_cli_on_pong": 41,
    "test_framestack.py::test_a_loop_stacking_on_device": 35,
    "test_framestack.py::test_a_replay_of_single_frames": 36,
    "test_atari.py::test_r2d2_cli_on_pong": 35,
    "test_ppo.py::test_an_interrupted_run": 33,
    "test_structured_learning.py::test_impala_learns_minigrid": 32,
    "test_evaluate.py::test_load_policy": 32,
    "test_ppo.py::test_learning_bar_pendulum": 31,
    "test_atari_roms.py::": 30,
    "test_resume_drills.py::": 28,
    "test_impala.py::test_sum_reduction": 26,
    "test_r2d2.py::test_burn_in_passes_no_gradient": 24,
    "test_ppo.py::test_one_and_two_learner_devices": 24,
    "test_r2d2.py::test_td_reduction": 23,
    "test_checkpoint.py::test_interrupted": 22,
    "test_structured_learning.py::test_agents_learn_a_dict": 21,
    "test_evaluate.py::test_evaluation_during_training": 21,
    "test_ppo.py::test_learning_bar_cartpole": 20,
    "test_checkpoint.py::test_replay_is_saved": 19,
    "test_precompile.py::test_first_cycles": 19,
    "test_atari.py::test_env_threads_flag": 18,
    "test_ppo.py::test_epochs_are_plain": 17,
    "test_multihost.py::": 12,
    "test_loop.py::test_simple_policy_gradient_learns_cartpole": 12,
    "test_r2d2.py::test_cli_writes_a_run_directory": 12,
    "test_impala.py::test_cli_run_writes_a_run_directory": 12,
}


def _estimate(item) -> int:
    return next((s for key, s in LONG_TESTS.items() if key in item.nodeid), 0)


def pytest_collection_modifyitems(config, items):
    items.sort(key=_estimate, reverse=True)  # stable: the rest keep their order

import os
import sys

# Multi-device tests on CPU: fake devices must be configured before jax is imported.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# The learning-bar runs and other long tests go first, longest first: with one pytest worker per
# core (pytest-xdist, tests sent one at a time: --maxschedchunk=1) they then run side by side while
# the short tests fill the gaps, instead of arriving last, one after another. Seconds on 2 cores.
LONG_TESTS = {
    "test_r2d2.py::test_learning_bar_memory": 290,
    "test_r2d2.py::test_learning_bar_cartpole": 170,
    "test_checkpoint.py::test_replay_is_saved": 40,
    "test_impala.py::test_learning_bar_cartpole": 36,
    "test_impala.py::test_learning_bar_pendulum": 40,
    "test_evaluate.py::test_load_policy": 45,
    "test_evaluate.py::test_evaluation_during_training": 25,
    "test_ppo.py::test_learning_bar_pendulum": 30,
    "test_ppo.py::test_an_interrupted_run": 28,
    "test_ppo.py::test_learning_bar_cartpole": 22,
    "test_ppo.py::test_one_and_two_learner_devices": 20,
    "test_resume_drills.py::": 35,
    "test_checkpoint.py::test_interrupted": 34,
    "test_r2d2.py::test_burn_in_passes_no_gradient": 28,
    "test_loop.py::test_simple_policy_gradient_learns_cartpole": 20,
    "test_multihost.py::": 19,
    "test_r2d2.py::test_cli_writes_a_run_directory": 19,
    "test_impala.py::test_cli_run_writes_a_run_directory": 19,
}


def _estimate(item) -> int:
    return next((s for key, s in LONG_TESTS.items() if key in item.nodeid), 0)


def pytest_collection_modifyitems(config, items):
    items.sort(key=_estimate, reverse=True)  # stable: the rest keep their order

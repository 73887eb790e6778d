import compileall
import importlib.util
import os
import sys
from pathlib import Path

import pytest

# Multi-device tests on CPU: fake devices must be configured before jax is imported.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# The project's bytecode, written once by the process that starts the suite (not by each worker):
# where PYTHONDONTWRITEBYTECODE is set (as on the CI host), no process writes it, and each of the
# suite's hundreds of child processes (CLI runs, jobs, workers) compiled the sources again (about
# 0.7 s of a CLI run's start, measured). Reading bytecode is unaffected by that variable.
if "PYTEST_XDIST_WORKER" not in os.environ:
    for package in ("sebulba", "envs", "experiments", "benchmarks", os.path.join("tests", "support")):
        compileall.compile_dir(os.path.join(ROOT, package), quiet=1)

import jax  # noqa: E402  (after XLA_FLAGS)

from tests.support.cli import JAX_CACHE  # noqa: E402
from tests.support.docs_site import build_site  # noqa: E402

# The tests' own processes keep their compiled programs in JAX's persistent compilation cache too,
# the folder the CLI runs they start share (tests.support.cli): many tests build the same loop more
# than once (a straight run, an interrupted one, its resume) or build the loop another test built,
# and a cache hit loads the executable XLA compiled before (the same program: results unchanged;
# a PPO resume drill: 47 s -> 20 s of CPU). Compile logs still name every function compiled.
jax.config.update("jax_compilation_cache_dir", str(JAX_CACHE))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)

# Gymnasium's own MuJoCo envs (the references the native pool is checked against) warn on load; the
# pool's handler keeps MuJoCo from appending them to MUJOCO_LOG.TXT in the repository root.
if importlib.util.find_spec("mujoco") is not None:
    from envs.mujoco.log import route_warnings  # noqa: E402

    route_warnings()


# Tiers (markers registered in pyproject.toml): `slow` marks learning bars, long drills and
# end-to-end runs, `python -m pytest -m "not slow"` is the fast tier; `multiprocess` marks jobs of
# several processes, which are slow too. `slow(seconds=N)` says how long a test takes on 2 cores:
# the longest go first, so that with one pytest worker per core (pytest-xdist, tests sent one at a
# time: --maxschedchunk=1) they run side by side while the short tests fill the gaps, instead of
# arriving last, one after another.
def _estimate(item) -> float:
    marker = item.get_closest_marker("slow")
    return marker.kwargs.get("seconds", 1) if marker is not None else 0


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("multiprocess") is not None and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
    items.sort(key=_estimate, reverse=True)  # stable: the rest keep their order


@pytest.fixture(scope="session")
def docs_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The docs site, built once by `mkdocs build --strict` (a warning fails it); its tests share an
    xdist_group("docs_site"), so one worker builds it."""
    return build_site(tmp_path_factory.mktemp("docs") / "site")

import os
import sys

import pytest

# Multi-device tests on CPU: fake devices must be configured before jax is imported.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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

"""What a user meets when a JAX suite is missing, or installed without a module it imports (gymnax
without six, as `pip install gymnax` leaves it), and what `envs.list_all_envs()` lists: every id
`make` takes, the JAX suites' and PettingZoo's included, without `import envs` importing them.

The missing modules are simulated for real in a fresh process: a meta path finder that answers
"No module named ..." for them, as Python does when a package is absent."""

import json
import subprocess
import sys

import pytest

from envs.jax.registry import SUITES, installed_suites
from tests.support.cli import JAX_CACHE, ROOT, child_env

# Run first in the child: the packages named in argv[1] (comma-separated) are absent, as Python
# sees an uninstalled package: `import` raises "No module named ..." and importlib.util.find_spec
# finds nothing. The rest of argv is the script's.
BLOCK = """
import importlib.abc, importlib.util, sys
absent = sys.argv.pop(1).split(",")
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in absent:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Absent())
found = importlib.util.find_spec
importlib.util.find_spec = lambda name, package=None: None if name.partition(".")[0] in absent else found(name, package)
"""

CLI = BLOCK + """
import runpy
sys.argv = ["ppo", *sys.argv[1:]]
runpy.run_module("experiments.ppo", run_name="__main__", alter_sys=True)
"""

LISTING = BLOCK + """
import json
from envs.registry import jax_envs_here
ids = jax_envs_here()
suites = ("gymnax", "jumanji", "jaxmarl", "xminigrid")
print(json.dumps({s: sum(i.startswith(s + "/") for i in ids) for s in suites}))
"""


def child(script, *args):
    env = child_env(XLA_FLAGS="", JAX_COMPILATION_CACHE_DIR=str(JAX_CACHE), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    return subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def one_line_error(out, tmp_path):
    assert out.returncode == 2, (out.returncode, out.stderr[-3000:])
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr[-3000:]
    assert not tmp_path.exists() or not any(tmp_path.iterdir()), "a run that cannot start leaves no run directory"
    return lines[0]


@pytest.mark.slow(seconds=3)
def test_gymnax_without_six_is_one_line_naming_six_and_the_extra(tmp_path):
    pytest.importorskip("gymnax")
    out = child(CLI, "six", "--env=gymnax/CartPole-v1", f"--logdir={tmp_path}")
    line = one_line_error(out, tmp_path)
    assert line.startswith('error: gymnax/... envs need gymnax, which imports six, not installed here: '
                           'pip install -e ".[gymnax]" installs gymnax with what it needs'), line


@pytest.mark.slow(seconds=3)
def test_a_missing_suite_names_its_extra_as_the_docs_install_it(tmp_path):
    """The docs install from a clone (`pip install -e ".[xminigrid]"`, docs/envs/jax.md): the error
    gives the same command."""
    pytest.importorskip("xminigrid")
    out = child(CLI, "xminigrid", "--env=xminigrid/MiniGrid-Empty-8x8", f"--logdir={tmp_path}")
    line = one_line_error(out, tmp_path)
    assert 'pip install -e ".[xminigrid]"' in line and "sebulba[" not in line, line
    for suite in SUITES.values():
        assert suite.install == f'pip install -e ".[{suite.extra}]"'


@pytest.mark.slow(seconds=12)
def test_list_all_envs_has_every_installed_suites_ids_and_pettingzoos():
    import envs
    from envs import registry
    from envs.jax.registry import served_ids

    ids = envs.list_all_envs()
    assert len(ids) == len(set(ids))
    installed = installed_suites()
    assert {"gymnax", "jumanji", "jaxmarl", "xminigrid", "playground", "brax"} <= set(installed)  # the dev extra's
    for suite in installed:
        served = served_ids(suite)
        assert served and set(served) <= set(ids), suite
    assert "gymnax/CartPole-v1" in ids and "jaxmarl/MPE_simple_spread_v3" in ids
    assert json.loads(registry._jax_ids_cache().read_text()) == registry.jax_envs()  # kept for the next process
    assert "gymnax/MNISTBandit-bsuite" not in ids and "jumanji/Sokoban-v0" not in ids  # refused by make
    assert {"CartPole-v1", "pettingzoo/mpe2/simple_spread_v3", "pettingzoo/classic/tictactoe_v3"} <= set(ids)
    assert "pettingzoo/mpe2/simple_tag_v3" in ids  # with pad_observations=True
    assert "pettingzoo/mpe2/simple_speaker_listener_v4" not in ids  # its players' actions differ: refused
    for task_id in (t for t in ids if t.startswith("pettingzoo/")):
        try:
            spec = envs.make_spec(task_id)
        except ValueError:
            spec = envs.make_spec(task_id, pad_observations=True)
        assert spec.config["max_num_players"] >= 1, task_id


@pytest.mark.slow(seconds=15)
def test_listing_imports_no_suite_here_and_a_broken_suite_is_left_out():
    """`import envs` imports no suite; list_all_envs reads the JAX suites' ids in a child process:
    this one imports none and its JAX backends stay unstarted (XLA_FLAGS, jax.distributed still
    apply). A suite installed without a module it imports is left out."""
    out = child("import sys, envs; from jax._src import xla_bridge\n"
                "suites = lambda: sorted(m for m in ('gymnax', 'jumanji', 'jaxmarl', 'xminigrid') if m in sys.modules)\n"
                "print(suites())\n"
                "ids = envs.list_all_envs()\n"
                "print(suites(), xla_bridge.backends_are_initialized(), 'gymnax/CartPole-v1' in ids)")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines()[-2:] == ["[]", "[] False True"], out.stdout
    out = child(LISTING, "six")  # gymnax imports six (and dateutil, under jumanji and jaxmarl, does too)
    assert out.returncode == 0, out.stderr[-3000:]
    counts = json.loads(out.stdout.splitlines()[-1])
    assert counts["gymnax"] == 0 and counts["xminigrid"] > 0, counts  # listed with six: the test above


def test_the_jax_ids_are_read_from_the_cache_an_earlier_listing_left(tmp_path, monkeypatch):
    """A process lists the JAX suites' ids from the file an earlier process left under
    $SEBULBA_CACHE_DIR (keyed by the Python, the installed suites and our adapters): no child
    process, no suite imported."""
    from envs import registry

    monkeypatch.setenv("SEBULBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(registry, "_JAX_IDS", {})
    cache = registry._jax_ids_cache()
    assert cache.parent.parent == tmp_path and cache.name == registry._jax_ids_key() + ".json"
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps(["gymnax/Kept-v0"]))
    assert registry.jax_envs() == ["gymnax/Kept-v0"]
    assert registry.jax_envs() == ["gymnax/Kept-v0"]  # then from this process's memory

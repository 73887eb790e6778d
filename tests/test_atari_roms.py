"""Every listed task builds, and no id ends the process: ALE exits (code 1, no exception) on its
multi-player ROMs, so Gymnasium's ids of them are refused with a ValueError before ALE sees them
(ours, `Combat-v5` ..., play them through multi_agent_ale_py: tests/test_atari_multiplayer.py).
Every probe that could end a process runs in a subprocess."""

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym
import pytest

import envs
from envs.atari.games import ATARI_TASKS, ROM_IDS, UNSUPPORTED_ROMS
from envs.registry import host_envs
from tests.support import toy_envs

pytest.importorskip("ale_py", reason="the atari extra is not installed: pip install -e '.[atari]'")
toy_envs.register_structured_envs()

ROOT = Path(__file__).resolve().parents[1]
SMALL = dict(img_height=8, img_width=8, stack_num=1, noop_max=0)  # ALE's work per step, not ours, is tested

# Loads each ROM given: a listed task through envs.make (build, reset, one step), any other ROM
# straight into ALE. Prints TRY before and OK/ERR after each; a ROM that ends the process leaves TRY last.
SWEEP_CHILD = """
import json, sys
import numpy as np
import ale_py
import envs
from tests.support import toy_envs

toy_envs.register_structured_envs()
roms, tasks, small = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
for rom in roms:
    print("TRY", rom, flush=True)
    try:
        if rom in tasks:
            with envs.make(tasks[rom], num_envs=1, num_threads=1, seed=0, **small) as pool:
                first = pool.reset()[0]
                obs, rew, term, trunc, info = pool.step(np.zeros(1, int))
            print("OK", rom, "ran", first.shape, obs.shape, info["elapsed_step"].tolist(), flush=True)
        else:
            ale_py.ALEInterface().loadROM(ale_py.roms.get_rom_path(rom))
            print("OK", rom, "loaded", flush=True)
    except Exception as e:
        print("ERR", rom, repr(e), flush=True)
"""


def _run_chain(roms: list[str], tasks: dict[str, str]) -> dict[str, str]:
    """rom -> outcome line ("ran ...", "loaded", an error, or "died ..."), restarting after each death."""
    results: dict[str, str] = {}
    todo = list(roms)
    while todo:
        out = subprocess.run(
            [sys.executable, "-c", SWEEP_CHILD, json.dumps(todo), json.dumps(tasks), json.dumps(SMALL)],
            capture_output=True, text=True, timeout=400, cwd=ROOT,
        )
        tried = None
        for line in out.stdout.splitlines():
            kind, _, rest = line.partition(" ")
            rom, _, detail = rest.partition(" ")
            if kind == "TRY":
                tried = rom
            elif kind in ("OK", "ERR"):
                results[rom], tried = f"{kind} {detail}", None
        if out.returncode == 0:
            return results
        assert tried is not None, f"the sweep failed outside a ROM (exit {out.returncode}): {out.stderr[-2000:]}"
        results[tried] = f"died with exit code {out.returncode}: {out.stderr.strip()[-600:]}"
        todo = todo[todo.index(tried) + 1:]
    return results


@pytest.fixture(scope="session")  # with its tests on one worker (xdist_group): swept once
def sweep() -> dict[str, str]:
    """Every ROM of ROM_IDS, in two subprocess chains side by side (one per core)."""
    listed = [t for t in envs.list_all_envs() if envs.is_atari(t)]
    tasks = {ATARI_TASKS[t]: t for t in listed}
    roms = list(ROM_IDS)
    with ThreadPoolExecutor(2) as ex:
        parts = list(ex.map(_run_chain, (roms[0::2], roms[1::2]), (tasks, tasks)))
    results = {**parts[0], **parts[1]}
    assert set(results) == set(ROM_IDS)
    return results


def test_make_of_a_multi_player_rom_raises_and_the_process_goes_on():
    """The issue's check: a ValueError, caught, and a zero exit of the process that called make."""
    code = (
        "import envs\n"
        "try:\n"
        "    envs.make_gym('ALE/Combat-v5')\n"
        "except ValueError as e:\n"
        "    print('caught:', e)\n"
        "else:\n"
        "    raise SystemExit('no error')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "caught: 'ALE/Combat-v5' cannot run: ROM 'combat' is a multi-player ROM" in out.stdout, out.stdout
    assert "single-agent interface" in out.stdout and "Combat-v5 plays it" in out.stdout


def test_every_id_form_of_an_unsupported_rom_raises_before_ale():
    """Gymnasium's ids (which ALE does not register for these ROMs), make and make_spec, and an ALE
    id told to load such a ROM: each a ValueError naming the reason, in a process that lives."""
    code = (
        "import json, envs\n"
        "calls = [(f, t, {}) for t in json.loads(input()) for f in ('make', 'make_spec')]\n"
        "calls += [('make_spec', 'ALE/Pong-v5', {'game': 'warlords'}), ('make', 'Pong-v4', {'game': 'joust'})]\n"
        "for f, task, kw in calls:\n"
        "    try:\n"
        "        getattr(envs, f)(task, **kw)\n"
        "        print(json.dumps([f, task, 'built']))\n"
        "    except ValueError as e:\n"
        "        print(json.dumps([f, task, str(e)]))\n"
    )
    ids = ["ALE/Joust-v5", "ALE/Warlords-v5", "ALE/Combat-v5", "CombatNoFrameskip-v4",
           "Combat-v0", "ALE/MazeCraze-v5", "JoustNoFrameskip-v0", "Warlords-v4"]
    out = subprocess.run([sys.executable, "-c", code], input=json.dumps(ids), capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == 2 * len(ids) + 2
    for f, task, message in rows:
        assert f"{task!r} cannot run: ROM '" in message and "multi-player ROM" in message, (f, task, message)


@pytest.mark.slow(seconds=28)
@pytest.mark.xdist_group("atari_rom_sweep")
def test_the_roms_that_end_the_process_are_exactly_the_unsupported_set(sweep):
    died = {rom for rom, outcome in sweep.items() if outcome.startswith("died")}
    assert died == set(UNSUPPORTED_ROMS), {rom: sweep[rom] for rom in died ^ set(UNSUPPORTED_ROMS)}
    for rom in died:  # ALE's exit on a ROM it cannot wrap, no Python exception
        assert "exit code 1" in sweep[rom] and "Attempt to wrap ROM" in sweep[rom], sweep[rom]


@pytest.mark.slow(seconds=40)  # the sweep, shared with the test above
@pytest.mark.xdist_group("atari_rom_sweep")
def test_every_listed_atari_task_builds_resets_and_steps(sweep):
    listed = [t for t in envs.list_all_envs() if envs.is_atari(t)]
    assert sorted(listed) == sorted(ATARI_TASKS) and len(listed) == len(ROM_IDS) - len(UNSUPPORTED_ROMS)
    assert not {ATARI_TASKS[t] for t in listed} & set(UNSUPPORTED_ROMS)
    bad = {t: sweep[ATARI_TASKS[t]] for t in listed if sweep[ATARI_TASKS[t]] != "OK ran (1, 1, 8, 8) (1, 1, 8, 8) [1]"}
    assert not bad, bad


def _non_atari_sample(ids: list[str]) -> list[str]:
    """Every listed Gymnasium id that is not ALE's, and every 25th of ALE's (sorted, so fixed):
    ale-py registers hundreds, each a ROM load to build."""
    ale = [t for t in ids if t in gym.registry and gym.registry[t].entry_point == "ale_py.env:AtariEnv"]
    rest = [t for t in ids if not envs.is_atari(t) and t not in ale]
    return rest + sorted(ale)[::25]


@pytest.mark.slow(seconds=3)
def test_every_listed_non_atari_id_builds():
    """The host ids (PettingZoo's and the JAX suites': tests/test_suite_install.py)."""
    ids = host_envs()
    sample = _non_atari_sample(ids)
    assert {"CartPole-v1", "FrozenLake-v1", "Taxi-v4", "phys2d/CartPole-v1"} <= set(sample)
    assert sum(gym.registry[t].entry_point == "ale_py.env:AtariEnv" for t in sample if t in gym.registry) >= 10
    for task_id in sample:
        spec = envs.make_spec(task_id, num_envs=1)
        assert spec.config["task_id"] == task_id


def test_ids_that_cannot_build_here_are_not_listed_and_make_says_why():
    ids = set(envs.list_all_envs())
    assert len(ids) == len(envs.list_all_envs())  # no duplicates
    assert "Blackjack-v1" in ids  # served as EnvPool serves it (one int32 array)
    # a Text leaf in a Dict observation: registered, builds in Gymnasium, but the pool cannot batch it
    assert "ToyTextObs-v0" in gym.registry and "ToyTextObs-v0" not in ids
    with pytest.raises(ValueError, match="'ToyTextObs-v0' has an observation space leaf 'note' Text"):
        envs.make_spec("ToyTextObs-v0")
    # an entry point that only raises (MuJoCo v2 ids moved to gymnasium-robotics)
    assert "Hopper-v2" in gym.registry and "Hopper-v2" not in ids
    with pytest.raises(ImportError, match="'Hopper-v2' cannot be built on this install"):
        envs.make_spec("Hopper-v2")
    try:
        import Box2D  # noqa: F401
    except ImportError:
        assert "LunarLander-v3" not in ids
        with pytest.raises(ImportError, match="'LunarLander-v3' cannot be built on this install.*box2d"):
            envs.make("LunarLander-v3")
    assert not {"ALE/Combat-v5", "CombatNoFrameskip-v4", "Warlords-v4"} & ids


def test_listing_reprobes_a_re_registered_id():
    task_id = "ListingTest/Reregistered-v0"
    gym.register(task_id, entry_point="gymnasium.envs.toy_text.blackjack:BlackjackEnv")
    try:
        assert task_id in envs.list_all_envs()  # Tuple observations
        gym.registry.pop(task_id)
        gym.register(task_id, entry_point="tests.support.toy_envs:TextObsEnv")
        assert task_id not in envs.list_all_envs()
    finally:
        gym.registry.pop(task_id, None)


def test_listing_does_not_start_jax():
    """Gymnasium's JAX envs are listed without importing them: that would start JAX's backends,
    after which XLA_FLAGS and jax.distributed.initialize no longer apply."""
    code = (
        "import envs\n"
        "ids = envs.list_all_envs()\n"
        "from jax._src import xla_bridge\n"
        "print('phys2d/CartPole-v1' in ids, xla_bridge.backends_are_initialized())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"], out.stdout


def test_gymnasium_ale_ids_resolve_without_importing_ale_py_first():
    """ale-py registers Gymnasium's ALE ids when imported: resolving one imports it on demand."""
    code = (
        "import sys, envs\n"
        "before = 'ale_py' in sys.modules\n"
        "print(before, envs.make_spec('ALE/Pong-v5').observation_space.shape)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "False (3, 210, 160)", out.stdout
    with pytest.raises(ValueError, match=r"unknown task id 'Pongg-v5'.*Pong-v5"):
        envs.make_spec("Pongg-v5")

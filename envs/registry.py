"""Which backend serves a task id: built-in native tasks first, then any Gymnasium id."""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import importlib.util
import io
import json
import os
import pkgutil
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym

from envs.atari.games import (
    ATARI_PLAYER_TASKS,
    ATARI_TASKS,
    UNSUPPORTED_ROMS,
    check_rom,
    is_ale_entry_point,
    unsupported_rom_error,
    unsupported_rom_of_id,
)
from envs.ids import find_spec, import_registering_packages, is_pettingzoo_id
from envs.jax.registry import close_suite, installed_suites, is_jax_id, served_ids
from envs.mujoco import LEGACY_MUJOCO_TASKS, MUJOCO_TASKS
from envs.mujoco.dmc.ids import DMC_IDS
from envs.mujoco.dmc.tasks import served as dmc_served
from envs.native.base import NativeTask
from envs.native.tasks import NATIVE_TASKS
from envs.native_stderr import captured_stderr
from envs.toy_text import register as register_toy_text

register_toy_text()  # EnvPool's toy-text ids that Gymnasium lacks (Catch-v0, NChain-v0, Taxi-v3, CliffWalking-v0)

# Gymnasium id -> (the EnvSpec probed, whether it builds); re-probed when the id is re-registered.
_BUILDS: dict[str, tuple[gym.envs.registration.EnvSpec, bool]] = {}
# Gymnasium's functional JAX envs: importing their modules starts JAX's backends, which listing the
# host ids must not do (XLA_FLAGS and jax.distributed.initialize must come first), so they are not
# probed (their spaces are Box and Discrete: listed where jax is installed).
_JAX_ENV_PACKAGES = ("gymnasium.envs.phys2d", "gymnasium.envs.tabular")


def multi_agent_ale_available() -> bool:
    """Whether the multi-player Atari games run here: multi_agent_ale_py imports (ale-py has the ROMs)."""
    try:
        import multi_agent_ale_py  # noqa: F401
    except ImportError:
        return False
    return ale_available()


def gymnasium_ids() -> list[str]:
    return sorted(gym.registry.keys())


def ale_available() -> bool:
    """Whether ale-py imports; importing it registers Gymnasium's ALE ids (ALE/Pong-v5, Pong-v4, ...)."""
    try:
        import ale_py  # noqa: F401
    except ImportError:
        return False
    return True


def _ale_id_builds(spec: gym.envs.registration.EnvSpec) -> bool:
    """An id of ALE's AtariEnv builds when ALE has its ROM and can run it. Not built to check: ALE
    registers hundreds of them, all with Box observations and Discrete actions, which the pool takes."""
    game = spec.kwargs.get("game")
    if not ale_available() or not isinstance(game, str) or game in UNSUPPORTED_ROMS:
        return False
    import ale_py.roms

    return game in ale_py.roms.get_all_rom_ids()


def _needs_jax(entry_point: Any) -> bool:
    """Whether an entry point is one of Gymnasium's functional JAX envs, read without importing it."""
    module = entry_point.split(":")[0] if isinstance(entry_point, str) else getattr(entry_point, "__module__", None)
    return isinstance(module, str) and module.startswith(_JAX_ENV_PACKAGES)


def _probe_builds(task_id: str) -> bool:
    """Whether `make_spec(task_id)` succeeds with default kwargs (it builds one env in this process)."""
    from envs.process import gym_task

    with warnings.catch_warnings(), captured_stderr():
        warnings.simplefilter("ignore")  # deprecation warnings of old versions, env checker notes
        try:
            gym_task.configure(task_id, "gymnasium", {})
        except Exception:
            return False
    return True


def gymnasium_id_builds(task_id: str) -> bool:
    """Whether a registered Gymnasium id builds on this install (its packages are there, the pool
    can batch its spaces, ALE can run its ROM), probed once per registration."""
    spec = gym.registry[task_id]
    cached = _BUILDS.get(task_id)
    if cached is not None and cached[0] is spec:
        return cached[1]
    if is_ale_entry_point(spec.entry_point):
        builds = _ale_id_builds(spec)
    elif _needs_jax(spec.entry_point):
        builds = importlib.util.find_spec("jax") is not None  # their spaces are Box and Discrete
    else:
        builds = _probe_builds(task_id)
    _BUILDS[task_id] = (spec, builds)
    return builds


def host_envs() -> list[str]:
    """The host ids `make` builds here with default kwargs: the built-in tasks, the Atari games
    (with ale-py installed; the multi-player ones with multi_agent_ale_py too), the DMC ids served
    (with mujoco and dm_control installed), the gym MuJoCo ids served natively, then the registered
    Gymnasium ids that build on this install (ids whose packages are missing, e.g. Box2D or MuJoCo
    ones, or whose spaces the pool cannot batch are left out; `make` of them raises). The first
    call builds one env of each non-ALE Gymnasium id. Imports no JAX suite and no PettingZoo env;
    imports the installed packages that register Gymnasium ids (envs.ids.REGISTERING_PACKAGES:
    ale_py, minigrid, ...), so their ids are listed as EnvPool lists its MiniGrid and BabyAI ids."""
    import_registering_packages()
    native = sorted(NATIVE_TASKS)
    atari = sorted(ATARI_TASKS) if ale_available() else []
    atari = sorted(atari + (list(ATARI_PLAYER_TASKS) if multi_agent_ale_available() else []))
    dmc = sorted(dmc_served()) if dmc_ready() else []
    mujoco = sorted(MUJOCO_TASKS + LEGACY_MUJOCO_TASKS) if mujoco_ready() else []
    return native + atari + dmc + mujoco + [t for t in gymnasium_ids() if t not in NATIVE_TASKS and t not in mujoco
                                            and gymnasium_id_builds(t)]


def mujoco_ready() -> bool:
    """Whether the gym MuJoCo ids (v5, and EnvPool's v4/v3/v2) run natively here: mujoco installed,
    the kernel built."""
    from envs.mujoco.backend import mujoco_available
    from envs.mujoco.build import library

    return mujoco_available() and library() is not None


def dmc_ready() -> bool:
    """Whether the DMC ids run here: mujoco and dm_control (its models) installed, the kernel built."""
    from envs.mujoco.dmc.assets import dm_control_available

    return dm_control_available() and mujoco_ready()


# PettingZoo id -> whether it builds with default kwargs (probed once per process).
_PETTINGZOO_BUILDS: dict[str, bool] = {}
_VERSIONED = re.compile(r".+_v\d+")  # PettingZoo's env modules: tictactoe_v3, simple_spread_v3, ...


def _pettingzoo_candidates() -> list[str]:
    """`pettingzoo/<module>/<env>` for every versioned env module of PettingZoo's own families and of
    mpe2 (PettingZoo's MPE), read from their directories (nothing imported)."""
    ids = []
    families = importlib.util.find_spec("pettingzoo")
    for family in pkgutil.iter_modules(families.submodule_search_locations):
        if family.ispkg:
            where = [os.path.join(p, family.name) for p in families.submodule_search_locations]
            ids += [f"pettingzoo/{family.name}/{m.name}" for m in pkgutil.iter_modules(where)
                    if _VERSIONED.fullmatch(m.name)]
    mpe2 = importlib.util.find_spec("mpe2")
    if mpe2 is not None and mpe2.submodule_search_locations:
        ids += [f"pettingzoo/mpe2/{m.name}" for m in pkgutil.iter_modules(mpe2.submodule_search_locations)
                if _VERSIONED.fullmatch(m.name)]
    return sorted(ids)


def _pettingzoo_builds(pettingzoo_task: Any, task_id: str, kwargs: dict[str, Any]) -> bool:
    try:
        pettingzoo_task.configure(task_id, "gymnasium", dict(kwargs))
    except Exception:  # noqa: BLE001 - an env that does not build here is not listed
        return False
    return True


def pettingzoo_envs() -> list[str]:
    """The PettingZoo ids `make` builds here (none without pettingzoo): each versioned env of
    PettingZoo's families and of mpe2, probed once by building one env in this process with default
    kwargs, or with `pad_observations=True` where its players' observations differ (simple_tag_v3).
    Left out: those whose packages or ROMs are missing (chess_v6 without chess) and those refused
    either way (simple_speaker_listener_v4: its players' actions differ)."""
    if importlib.util.find_spec("pettingzoo") is None:
        return []
    from envs.process import pettingzoo_task

    for task_id in _pettingzoo_candidates():
        if task_id not in _PETTINGZOO_BUILDS:
            with warnings.catch_warnings(), captured_stderr():
                warnings.simplefilter("ignore")
                _PETTINGZOO_BUILDS[task_id] = any(_pettingzoo_builds(pettingzoo_task, task_id, kwargs)
                                                  for kwargs in ({}, {"pad_observations": True}))
    return [t for t, builds in sorted(_PETTINGZOO_BUILDS.items()) if builds]


def jax_envs_here() -> list[str]:
    """The `SUITE/ID`s of every JAX suite installed here that imports (`envs.jax.registry.served_ids`:
    its registered ids less those its adapter refuses by name; not built), read in this process:
    it imports those suites, which starts JAX's backends."""
    ids = []
    for suite in installed_suites():
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # what a suite prints on import (jaxmarl's lines)
                ids += served_ids(suite)
        except Exception:  # noqa: BLE001 - e.g. installed without a module it needs: make says which
            continue
    return ids


_JAX_IDS: dict[str, list[str]] = {}  # jax_envs' answer, read once per process


def _jax_ids_key() -> str:
    """What the JAX suites' ids depend on here, as a digest: the Python, each installed suite's
    package (where it is found, and when its entry file last changed: an upgrade rewrites it) and
    our adapters' sources (the ids each refuses)."""
    from envs.jax.registry import SUITES

    digest = hashlib.sha256(f"{sys.executable}\n{sys.version}".encode())
    for suite in installed_suites():
        spec = importlib.util.find_spec(SUITES[suite].module)
        origin = (spec.origin if spec is not None else None) or ""
        stamp = os.stat(origin).st_mtime_ns if origin and os.path.exists(origin) else 0
        digest.update(f"\n{suite}\n{origin}\n{stamp}".encode())
    for source in sorted(Path(__file__).parent.joinpath("jax").glob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()[:32]


def _jax_ids_cache() -> Path:
    """Where `jax_envs` keeps its answer between processes: `$SEBULBA_CACHE_DIR`, else
    `~/.cache/sebulba` (the compiled kernels' cache), under jax_ids/, one file per `_jax_ids_key`."""
    root = os.environ.get("SEBULBA_CACHE_DIR") or Path.home() / ".cache" / "sebulba"
    return Path(root) / "jax_ids" / f"{_jax_ids_key()}.json"


def jax_envs() -> list[str]:
    """`jax_envs_here()`, read in a child process on the CPU, so that listing ids neither starts
    this process's JAX backends (after which XLA_FLAGS and jax.distributed.initialize no longer
    apply) nor imports the suites into it; kept once per process, and on disk for the next ones
    while the installed suites and our adapters are the same (`_jax_ids_cache`: the child imports
    every suite, about 12 s on 2 cores). Nothing is started where no suite is installed."""
    if not installed_suites():
        return []
    if "ids" in _JAX_IDS:
        return list(_JAX_IDS["ids"])
    cache = _jax_ids_cache()
    try:
        _JAX_IDS["ids"] = json.loads(cache.read_text())
        return list(_JAX_IDS["ids"])
    except (OSError, ValueError):
        pass
    code = "import json; from envs.registry import jax_envs_here; print(json.dumps(jax_envs_here()))"
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": os.pathsep.join(p or os.getcwd() for p in sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False, timeout=600)
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"listing the JAX suites' ids failed in a child process: {tail}")
    _JAX_IDS["ids"] = json.loads(lines[-1])
    try:  # written whole, then renamed: a concurrent reader sees the old answer or the new one
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(_JAX_IDS["ids"]))
        os.replace(partial, cache)
    except OSError:  # a read-only home: the next process asks its own child
        pass
    return list(_JAX_IDS["ids"])


def list_all_envs() -> list[str]:
    """Every task id `make` takes here, as EnvPool's list_all_envs: the host ids (`host_envs`: the
    built-in tasks, Atari, the Gymnasium ids that build), the PettingZoo ids that build
    (`pettingzoo_envs`, with pettingzoo installed) and the ids of every JAX suite installed
    (`jax_envs`: each suite's ids less those its adapter refuses by name; not built, so an id that
    needs env kwargs, as jaxmarl's simple_tag needs pad_observations=True, is listed and `make`
    says what it needs). The first call builds one env of each non-ALE Gymnasium id and PettingZoo
    env here and reads the JAX suites' ids in a child process (this process's JAX backends are not
    started); importing `envs` does none of this."""
    return host_envs() + pettingzoo_envs() + jax_envs()


def _unknown(task_id: str, hint: str = "") -> ValueError:
    suite_id = close_suite(task_id)
    if suite_id is not None:  # "gymanx/CartPole-v1"
        return ValueError(f"unknown task id {task_id!r}{hint}; did you mean {suite_id}?")
    close = difflib.get_close_matches(task_id, host_envs(), n=5, cutoff=0.6)  # no suite imported for a hint
    suggestion = f"; did you mean {', '.join(close[:-1])} or {close[-1]}?" if len(close) > 1 else \
        f"; did you mean {close[0]}?" if close else ""
    return ValueError(f"unknown task id {task_id!r}{hint}{suggestion} (see envs.list_all_envs())")


def native_mujoco_ready(task_id: str) -> bool:
    """Whether a gym MuJoCo id runs natively here: mujoco imports and its kernel builds (if not,
    with mujoco installed, one warning says why and Gymnasium's env serves it)."""
    from envs.mujoco.backend import mujoco_available
    from envs.mujoco.build import library, warn_unavailable

    if not mujoco_available():
        return False

    if library() is None:
        warn_unavailable(task_id)
        return False
    return True


def check_runnable_rom(task_id: str) -> None:
    """Raises a ValueError, before ALE is touched, for an id of a ROM that ALE would exit the process
    on: Gymnasium's forms (`ALE/Combat-v5`, `CombatNoFrameskip-v4`, ...), or any
    registered id of ALE's AtariEnv whose `game` is such a ROM."""
    spec = find_spec(task_id)
    if spec is None:
        rom = unsupported_rom_of_id(task_id)
        if rom is not None:
            raise unsupported_rom_error(rom, task_id)
    elif is_ale_entry_point(spec.entry_point):
        check_rom(spec.kwargs.get("game"), task_id)


def resolve(task_id: Any, backend: str | None) -> tuple[str, type[NativeTask] | None]:
    """Returns (backend name, native task class or None for the process and Atari backends)."""
    if not isinstance(task_id, str):
        raise ValueError(f"task_id must be a str, got {task_id!r}")
    if backend not in (None, "native", "process", "atari", "mujoco", "jax"):
        raise ValueError(
            f"backend must be 'native', 'process', 'atari', 'mujoco', 'jax' or None (automatic), got {backend!r}"
        )
    if is_jax_id(task_id):  # SUITE/ID: the suite names are reserved, never Gymnasium namespaces
        if backend not in (None, "jax"):
            raise ValueError(f"{task_id!r} is a JAX-native env: it runs on backend='jax' only")
        return "jax", None
    if is_pettingzoo_id(task_id):
        if backend not in (None, "process"):
            raise ValueError(f"{task_id!r} is a PettingZoo env: it runs on backend='process' (worker processes) only")
        return "process", None
    if backend == "jax":
        raise ValueError(f"backend='jax' runs JAX-native envs, named SUITE/ID (e.g. 'gymnax/CartPole-v1'), got {task_id!r}")
    if task_id in ATARI_PLAYER_TASKS:  # multi_agent_ale_py in worker processes (envs/atari/multiplayer.py)
        if backend not in (None, "process"):
            raise ValueError(
                f"{task_id!r} is a multi-player Atari game: ALE's vector env cannot run it, so it runs on "
                "backend='process' (multi_agent_ale_py in worker processes) only"
            )
        return "process", None
    if task_id in ATARI_TASKS:
        if backend not in (None, "atari"):
            raise ValueError(f"{task_id!r} is an Atari task: it runs on backend='atari' (ALE's vector env) only")
        return "atari", None
    if task_id in DMC_IDS:  # dm_control's suite: the native MuJoCo pool only (envs/mujoco/dmc)
        if backend not in (None, "mujoco"):
            raise ValueError(f"{task_id!r} is a dm_control suite task: it runs on backend='mujoco' (native) only")
        return "mujoco", None
    if task_id in LEGACY_MUJOCO_TASKS and task_id.endswith(("-v2", "-v3")) and backend not in (None, "mujoco"):
        raise ValueError(f"{task_id!r} is EnvPool's alias of a v4 MuJoCo task: it runs on backend='mujoco' (native) "
                         "only (Gymnasium's own needs mujoco-py)")
    if task_id in MUJOCO_TASKS + LEGACY_MUJOCO_TASKS and backend in (None, "mujoco"):
        if backend == "mujoco" or native_mujoco_ready(task_id):
            return "mujoco", None
        if task_id.endswith(("-v2", "-v3")):  # Gymnasium's own are mujoco-py's, which it no longer runs
            raise ValueError(f"{task_id!r} runs on the native MuJoCo pool only, which needs mujoco: "
                             "pip install -e '.[mujoco]'")
        return "process", None  # Gymnasium's own env (mujoco missing, or no kernel: warned once)
    if backend == "mujoco":
        raise _unknown(task_id, f" for backend='mujoco' (its tasks: {list(MUJOCO_TASKS + LEGACY_MUJOCO_TASKS)})")
    native = NATIVE_TASKS.get(task_id)
    if native is None:
        check_runnable_rom(task_id)
    if backend == "atari":
        raise _unknown(task_id, " for backend='atari' (Atari ids look like 'Pong-v5')")
    if backend == "native":
        if native is None:
            raise _unknown(task_id, f" for backend='native' (built-in tasks: {sorted(NATIVE_TASKS)})")
        return "native", native
    if native is not None and backend is None:
        return "native", native
    registered = find_spec(task_id) is not None
    if native is not None and not registered:
        raise ValueError(f"task {task_id!r} is built in only (it has no Gymnasium id), so backend='process' cannot run it")
    if registered:
        return "process", None
    raise _unknown(task_id)

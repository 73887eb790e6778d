"""Which ids are JAX-native (`SUITE/ID`) and how to build them.

Every suite name below is reserved: an id `SUITE/...` is never looked up as a Gymnasium namespace,
installed or not. A suite's package is imported only when one of its ids is built (or listed:
`suite_ids`, `installed_suites`); a suite not installed is a one-line ImportError naming its pip
extra (and, where the extra cannot coexist with the base install, why), and so is an installed
suite that cannot import a module it needs (gymnax without six): the module named, with the
same install command, which installs the suite's dependencies with it.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jax is imported only when a JAX env is built
    from envs.jax.core import JaxEnv, RawJaxEnv


@dataclasses.dataclass(frozen=True)
class Suite:
    name: str  # the reserved SUITE of SUITE/ID
    module: str  # the package it needs, imported only when one of its ids is built
    extra: str  # sebulba's pip extra for it
    adapter: str  # envs.jax.<adapter>, with make(name, **kwargs) -> RawJaxEnv and ids()
    conflict: str = ""  # why the extra cannot coexist with the base install ("" when it can)

    @property
    def install(self) -> str:
        """The install command, as the docs give it (users install from a clone)."""
        return f'pip install -e ".[{self.extra}]"'


SUITES: dict[str, Suite] = {
    s.name: s
    for s in (
        Suite("gymnax", "gymnax", "gymnax", "gymnax"),
        Suite("jumanji", "jumanji", "jumanji", "jumanji"),
        Suite(
            "craftax",
            "craftax",
            "craftax",
            "craftax",
            "it pulls pygame, which overwrites pygame-ce's files (sebulba's render, video and dev extras): install it "
            "where those are not",
        ),
        Suite("xminigrid", "xminigrid", "xminigrid", "xminigrid"),
        Suite("navix", "navix", "navix", "navix"),
        Suite("brax", "brax", "brax", "brax"),
        Suite("playground", "mujoco_playground", "playground", "playground"),
        Suite("jaxmarl", "jaxmarl", "jaxmarl", "jaxmarl"),
        Suite("pgx", "pgx", "pgx", "pgx"),
    )
}


def is_jax_id(task_id: Any) -> bool:
    """Whether task_id names a JAX-native env (`SUITE/ID` with a reserved suite name)."""
    return isinstance(task_id, str) and "/" in task_id and task_id.partition("/")[0] in SUITES


def is_installed(suite: str) -> bool:
    """Whether a suite's package is installed (found, not imported)."""
    return importlib.util.find_spec(SUITES[suite].module) is not None


def installed_suites() -> list[str]:
    """The suites whose packages are installed here, in SUITES' order (nothing imported)."""
    return [name for name in SUITES if is_installed(name)]


def served_ids(suite: str) -> list[str]:
    """`suite_ids` less the ids its adapter refuses by name (its `UNSUPPORTED`: gymnax's
    MNISTBandit, jumanji's Sokoban), i.e. those `make` takes (imports the suite)."""
    refused = getattr(importlib.import_module(f"envs.jax.{SUITES[suite].adapter}"), "UNSUPPORTED", {})
    return [i for i in suite_ids(suite) if i.partition("/")[2] not in refused]


def _missing_module(suite: Suite, error: ModuleNotFoundError) -> ImportError:
    """A module the suite's package imports is not installed: one line naming it and the install."""
    name = error.name or str(error)
    extra = f" ({suite.conflict})" if suite.conflict else ""
    return ImportError(f"{suite.name}/... envs need {suite.module}, which imports {name}, not installed here: "
                       f"{suite.install} installs {suite.module} with what it needs{extra}")


def _calling(suite: Suite, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """fn(*args, **kwargs), where a module the suite needs but cannot find is `_missing_module`'s
    one line (an adapter imports parts of its suite only when it builds an env)."""
    try:
        return fn(*args, **kwargs)
    except ModuleNotFoundError as e:
        if (e.name or "").partition(".")[0] in ("envs", "sebulba"):  # ours: not the suite's dependency
            raise
        raise _missing_module(suite, e) from e


def _adapter(suite: Suite) -> tuple[Callable[..., RawJaxEnv], Callable[[], list[str]]]:
    """The suite's (make, ids), importing its package: a one-line ImportError when it is missing,
    or when it is installed but one of the modules it imports is not."""
    if not is_installed(suite.name):
        extra = f" ({suite.conflict})" if suite.conflict else ""
        raise ImportError(f"{suite.name}/... envs need {suite.module}: {suite.install}{extra}")
    module = importlib.import_module(f"envs.jax.{suite.adapter}")  # first: it may prepare the package's import
    _calling(suite, importlib.import_module, suite.module)
    return module.make, module.ids


def suite_ids(suite: str) -> list[str]:
    """The full ids (`SUITE/ID`) a suite serves here (imports the suite)."""
    _, ids = _adapter(SUITES[suite])
    return [f"{suite}/{name}" for name in _calling(SUITES[suite], ids)]


def has_stateless_step(task_id: Any) -> bool:
    """Whether task_id is a built-in task (not a `SUITE/ID`) that the compiled kernel also steps as
    a stateless JAX env (`envs/native/stateless.py`): the Anakin loop can run it."""
    if not isinstance(task_id, str) or "/" in task_id:
        return False
    from envs.native.tasks import TASK_CODES

    return task_id in TASK_CODES


def make_raw(task_id: str, **kwargs: Any) -> RawJaxEnv:
    """The RawJaxEnv of a `SUITE/ID`; kwargs are the suite's env parameters. An unknown id is a
    one-line ValueError with close matches. A built-in task the compiled kernel steps
    (`CartPole-v1`, ...; not a JAX id: it runs on the host pool unless the Anakin loop is asked
    for) is its stateless compiled env (envs/native/stateless.py)."""
    if has_stateless_step(task_id):
        from envs.native.stateless import StatelessEnv

        if kwargs:
            raise ValueError(f"{task_id} takes no env parameters here, got {', '.join(sorted(kwargs))}")
        return StatelessEnv(task_id)
    if not is_jax_id(task_id):
        raise ValueError(f"{task_id!r} is not a JAX-native env id (SUITE/ID with SUITE one of {', '.join(SUITES)})")
    suite, _, name = task_id.partition("/")
    make, ids = _adapter(SUITES[suite])
    known = _calling(SUITES[suite], ids)
    if name not in known:
        full = [f"{suite}/{n}" for n in known]
        close = difflib.get_close_matches(task_id, full, n=3, cutoff=0.5)
        hint = f"did you mean {' or '.join(close)}?" if close else f"its ids: {', '.join(full)}"
        raise ValueError(f"unknown {suite} id {task_id!r}; {hint}")
    return _calling(SUITES[suite], make, name, **kwargs)


def make_jax_env(task_id: str, max_episode_steps: int | None = None, **kwargs: Any) -> JaxEnv:
    """The batched JaxEnv of a `SUITE/ID` (or of a built-in task, see `make_raw`); kwargs are the
    suite's env parameters."""
    from envs.jax.core import JaxEnv

    return JaxEnv(make_raw(task_id, **kwargs), max_episode_steps)


def close_suite(task_id: str) -> str | None:
    """For an id `X/...` whose X is not a suite but close to one ("gymanx/CartPole-v1"), the id
    with that suite's name (for a "did you mean" hint)."""
    prefix, sep, rest = task_id.partition("/")
    if not sep or prefix in SUITES:
        return None
    close = difflib.get_close_matches(prefix, list(SUITES), n=1, cutoff=0.7)
    return f"{close[0]}/{rest}" if close else None

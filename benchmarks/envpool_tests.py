"""EnvPool's own test files run against `envs` (issue 56): each file is copied unchanged next to a
small `envpool` package that re-exports `envs` under EnvPool's module names (`envpool.make`,
`envpool.registration.make_gymnasium`, `envpool.python.protocol.EnvSpec`, the suites'
`registration` modules), so what the tests ask of EnvPool they ask of this pool. Names that exist
only in EnvPool's low-level API over its compiled extension (`AtariEnvSpec`, `_AtariEnvPool`,
...) are stand-ins that refuse to work, so a file that imports one still runs its other cases
and the cases that use one fail.

    git clone https://github.com/sail-sg/envpool /tmp/envpool
    python -m benchmarks.envpool_tests --envpool /tmp/envpool            # prints the table
    python -m benchmarks.envpool_tests --envpool /tmp/envpool --write    # and BENCHMARKS.md

Each file runs in its own pytest process (a file that cannot be imported fails all its cases).
"""

from __future__ import annotations

import argparse
import datetime
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from benchmarks._report import publish

ROOT = Path(__file__).resolve().parent.parent
FILES = (  # the files issue 56 names, EnvPool's paths
    "envpool/make_test.py",
    "envpool/atari/api_test.py",
    "envpool/atari/atari_envpool_test.py",
    "envpool/toy_text/toy_text_test.py",
    "envpool/classic_control/classic_control_test.py",
    "envpool/mujoco/dmc/mujoco_dmc_suite_align_test.py",
    "envpool/mujoco/dmc/mujoco_dmc_suite_deterministic_test.py",
    "envpool/mujoco/dmc/mujoco_dmc_suite_ext_align_test.py",
    "envpool/mujoco/dmc/mujoco_dmc_suite_ext_deterministic_test.py",
    "envpool/mujoco/dmc/mujoco_dmc_render_test.py",
    "envpool/mujoco/dmc/mujoco_dmc_pixel_observation_test.py",
    "envpool/mujoco/gym/mujoco_gym_align_test.py",
    "envpool/mujoco/gym/mujoco_gym_deterministic_test.py",
    "envpool/mujoco/gym/mujoco_render_test.py",
)
HELPERS = ("envpool/mujoco/pixel_observation_test_utils.py",)  # EnvPool's test helpers the files import
SECTION = "envpool_tests"

# The shim: EnvPool's public names, each the one `envs` has.
PUBLIC = '''"""EnvPool's public names: `envs`'s (benchmarks/envpool_tests.py)."""
import envs
from envs import *  # noqa: F401,F403
__all__ = envs.__all__
__version__ = "envs"
'''
PROTOCOL = '''"""EnvPool's protocol types: this pool's classes."""
from envs import DMEnvPool, EnvPool, EnvSpec, GymnasiumEnvPool  # noqa: F401
GymEnvPool = GymnasiumEnvPool
'''
GLFW_CONTEXT = '''"""EnvPool's Windows OpenGL preload: nothing to load off Windows (as EnvPool's own)."""


def preload_windows_gl_dlls(*, prepend_path=True, strict=False):
    return None
'''
# envpool.registration: the public names, and EnvPool's `registry`, whose `specs` map each id to (its
# suite's import path, its spec class's name, its kwargs), which EnvPool's test helpers list tasks by
REGISTRATION = PUBLIC + """

import functools


class _Registry:
    \"\"\"EnvPool's registry of the ids `envs` serves, with EnvPool's import path for each suite.\"\"\"

    @functools.cached_property  # EnvPool's helpers read it once per task family
    def specs(self):
        from envs.mujoco import LEGACY_MUJOCO_TASKS, MUJOCO_TASKS
        from envs.mujoco.dmc.ids import DMC_IDS

        gym_mujoco = set(MUJOCO_TASKS) | set(LEGACY_MUJOCO_TASKS)

        def where(task_id):
            if task_id in DMC_IDS:
                return "envpool.mujoco.dmc", "DmcSpec"
            if task_id in gym_mujoco:
                return "envpool.mujoco.gym", "GymMujocoSpec"
            if is_atari(task_id):
                return "envpool.atari", "AtariEnvSpec"
            return "envpool", "EnvSpec"

        return {task_id: (*where(task_id), {}) for task_id in list_all_envs()}

    def list_all_envs(self):
        return list_all_envs()


registry = _Registry()
"""
EMPTY = '"""Nothing to register: `envs` serves every id it has on import."""\n'
# dm_control's suite, which the DMC tests hold the pool against, on the MuJoCo installed here
DMC_REGISTRATION = EMPTY + """from tests.support.dm_control_suite import patch_dm_control
from envs.mujoco.dmc.ids import DMC_IDS
patch_dm_control()
dmc_mujoco_envs = [(domain, task, 1000) for domain, task in DMC_IDS.values()]  # EnvPool's list: every id 1,000 steps
"""
GYM_REGISTRATION = EMPTY + """from envs.mujoco import LEGACY_MUJOCO_TASKS, MUJOCO_TASKS
from envs.mujoco.backend import TASKS
from envs.mujoco.legacy import LEGACY_TASKS
_ids = MUJOCO_TASKS + LEGACY_MUJOCO_TASKS
_tasks = list(dict.fromkeys(i.split("-")[0] for i in _ids))
# EnvPool's list: (task, its versions, max_episode_steps)
gym_mujoco_envs = [(t, tuple(sorted(i.split("-")[1] for i in _ids if i.split("-")[0] == t)),
                    {**TASKS, **LEGACY_TASKS}[t + "-v5"].max_episode_steps) for t in _tasks]
"""
STAND_IN = '''

class _NotServed:
    """EnvPool's low-level API over its compiled extension: not part of `envs`."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("EnvPool's low-level API is not served by envs")

    def __getattr__(self, name):
        raise NotImplementedError("EnvPool's low-level API is not served by envs")


class _NotServedMeta(type):
    def __getattr__(cls, name):
        raise NotImplementedError(f"EnvPool's low-level {cls.__name__}.{name} is not served by envs")


def _stand_in(name):
    return _NotServedMeta(name, (_NotServed,), {})
'''
LOW_LEVEL = {  # module -> names the tests import from it
    "atari/__init__.py": ("AtariEnvSpec", "AtariDMEnvPool", "AtariGymEnvPool", "AtariGymnasiumEnvPool"),
    "atari/atari_envpool.py": ("_AtariEnvPool", "_AtariEnvSpec"),
}
SUBPACKAGES = ("atari", "classic_control", "toy_text", "mujoco", "mujoco/gym", "mujoco/dmc", "box2d", "procgen",
               "vizdoom", "minigrid")


def build_shim(where: Path) -> None:
    pkg = where / "envpool"
    (pkg / "python").mkdir(parents=True)
    (pkg / "__init__.py").write_text(PUBLIC)
    if (ROOT / "envs" / "py.typed").is_file():  # the marker of the package it stands for
        shutil.copy(ROOT / "envs" / "py.typed", pkg / "py.typed")
    (pkg / "registration.py").write_text(REGISTRATION)
    (pkg / "python" / "__init__.py").write_text(EMPTY)
    (pkg / "python" / "protocol.py").write_text(PROTOCOL)
    (pkg / "python" / "glfw_context.py").write_text(GLFW_CONTEXT)
    for sub in SUBPACKAGES:
        (pkg / sub).mkdir(parents=True, exist_ok=True)
        (pkg / sub / "__init__.py").write_text(EMPTY)
        (pkg / sub / "registration.py").write_text(EMPTY)
    (pkg / "mujoco" / "dmc" / "registration.py").write_text(DMC_REGISTRATION)
    (pkg / "mujoco" / "gym" / "registration.py").write_text(GYM_REGISTRATION)
    for module, names in LOW_LEVEL.items():
        (pkg / module).write_text(EMPTY + STAND_IN + "".join(f"{n} = _stand_in({n!r})\n" for n in names))


def run_file(shim: Path, source: Path, rel: str, timeout: int) -> dict[str, str]:
    """{test name: passed | failed | skipped} of one EnvPool test file."""
    copy = shim / "tests" / rel.replace("/", "__")
    copy.parent.mkdir(exist_ok=True)
    shutil.copy(source / rel, copy)
    junit = copy.with_suffix(".xml")
    env = {"PYTHONPATH": f"{shim}:{ROOT}", "PATH": "/usr/bin:/bin", "HOME": str(Path.home()),
           "JAX_PLATFORMS": "cpu", "MUJOCO_GL": "egl"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir", str(shim),
           f"--junitxml={junit}", str(copy)]
    try:
        subprocess.run(cmd, cwd=shim, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {rel: "failed (timed out)"}
    out = {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            if not case.get("classname"):
                continue  # a collection error (the file did not import): counted below
            name = f"{case.get('classname').rsplit('.', 1)[-1]}.{case.get('name')}"
            kinds = {child.tag for child in case}
            out[name] = "skipped" if "skipped" in kinds else "failed" if kinds & {"failure", "error"} else "passed"
    if not out:  # the file did not import: each of its cases fails
        names = re.findall(r"^    def (test_\w+)", (source / rel).read_text(), flags=re.M)
        out = {f"{name} (import)": "failed" for name in names}
    return out


def report(results: dict[str, dict[str, str]], source: Path) -> str:
    commit = subprocess.run(["git", "-C", str(source), "log", "-1", "--format=%h %cs"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    total = {k: sum(v.startswith(k) for r in results.values() for v in r.values()) for k in ("passed", "failed", "skipped")}
    cases = sum(total.values())
    lines = [f"EnvPool's own tests with `envs` in place of `envpool` (EnvPool at {commit}; "
             f"`python -m benchmarks.envpool_tests --envpool DIR --write`, {datetime.date.today()}): "
             f"**{total['passed']} of {cases} cases pass**, {total['skipped']} skip, {total['failed']} fail.", "",
             "| file | passed | failed | skipped | failing cases |", "|---|---|---|---|---|"]
    for rel, cases_of in results.items():
        failing = ", ".join(sorted(k for k, v in cases_of.items() if v.startswith("failed")))
        counts = [sum(v.startswith(k) for v in cases_of.values()) for k in ("passed", "failed", "skipped")]
        lines.append(f"| `{rel}` | {counts[0]} | {counts[1]} | {counts[2]} | {failing or '-'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envpool", type=Path, required=True, help="a checkout of sail-sg/envpool")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per file")
    parser.add_argument("--write", action="store_true", help="also write the table to BENCHMARKS.md")
    args = parser.parse_args(argv)
    missing = [rel for rel in FILES if not (args.envpool / rel).is_file()]
    if missing:
        parser.error(f"{args.envpool} is not an EnvPool checkout: no {', '.join(missing)}")
    with tempfile.TemporaryDirectory(prefix="envpool-tests-") as tmp:
        shim = Path(tmp)
        build_shim(shim)
        for rel in HELPERS:  # EnvPool's own test helpers, beside the shim's modules
            if (args.envpool / rel).is_file():
                shutil.copy(args.envpool / rel, shim / rel)
        results = {rel: run_file(shim, args.envpool, rel, args.timeout) for rel in FILES}
    publish(SECTION, report(results, args.envpool) + "\n", args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())

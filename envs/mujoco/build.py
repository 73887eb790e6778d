"""Builds the MuJoCo stepping kernel (kernel.c) on first use, and finds MuJoCo's own functions.

The kernel is C with pthreads, compiled against the headers the `mujoco` package ships; it calls
MuJoCo through function pointers taken from the `libmujoco` that package loaded, so the physics
is that library's (the one Gymnasium's envs run). It is compiled with the machine's C compiler (`$CC`, else `cc`)
into the cache the compiled native pool uses (`$SEBULBA_CACHE_DIR`, else `~/.cache/sebulba`),
keyed by its sources (kernel.c, envs/native/jobs.h and dmc/compiled.c, the dm_control tasks' math the kernel runs per
env). Without a compiler, or with `SEBULBA_NATIVE_KERNEL=0`, the MuJoCo tasks run on the
worker-process backend (Gymnasium's own envs), with one warning that says why.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import sys
import warnings
from pathlib import Path

from envs.native.kernel.build import KernelLoader, KernelUnavailable, build_atomically, cache_dir, declare

_SOURCE = Path(__file__).resolve().parent / "kernel.c"
_TASKS = Path(__file__).resolve().parent / "dmc" / "compiled.c"  # dm_control tasks' math, run by the kernel
_JOBS = Path(__file__).resolve().parents[1] / "native" / "jobs.h"  # the thread pool the kernel runs on


def _include_dir() -> Path:
    import mujoco

    include = Path(mujoco.__file__).resolve().parent / "include"
    if not (include / "mujoco" / "mujoco.h").exists():
        raise KernelUnavailable(f"the mujoco package ships no headers ({include})")
    return include


def _library_path(include: Path) -> Path:
    import mujoco

    h = hashlib.sha256(_SOURCE.read_bytes() + _TASKS.read_bytes() + _JOBS.read_bytes())
    h.update(f"{mujoco.__version__} {include} {sys.platform}".encode())
    return cache_dir() / f"mujoco_pool_{h.hexdigest()[:16]}.so"


def _load() -> ctypes.CDLL:
    include = _include_dir()
    path = _library_path(include)
    if not path.exists():
        cc = os.environ.get("CC", "cc")
        build_atomically(path, lambda tmp: [cc, "-O2", "-std=c11", "-shared", "-fPIC", "-w", f"-I{include}", f"-I{_JOBS.parent}", str(_SOURCE),
                                            str(_TASKS), "-o", tmp, "-lpthread", "-lm"])
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        raise KernelUnavailable(f"cannot load {path}: {e}") from e
    p, i, q = ctypes.c_void_p, ctypes.c_int, ctypes.c_long
    sig = {
        "mjp_create": (p, [p, p, p, p, i, i, p, p, p, p, p, p, i, i, i, i]),
        "mjp_start": (q, [p, p, p, i, i, p, p, p, p, p, p]),  # the job's number
        "mjp_set_task": (None, [p, p, p, i]),
        "mjp_set_timer": (None, [p, p, p]),
        "mjp_wait": (None, [p, q]),
        "mjp_done": (i, [p, q]),
        "mjp_destroy": (None, [p]),
    }
    return declare(lib, sig)


_KERNEL = KernelLoader(_load)
library = _KERNEL.library  # the loaded kernel, or None when MuJoCo pools must run without it
why_unavailable = _KERNEL.why_unavailable


@functools.cache
def warn_unavailable(task_id: str) -> None:
    warnings.warn(f"envs: the native MuJoCo pool is unavailable ({why_unavailable()}); {task_id} runs Gymnasium's env "
                  "in worker processes", RuntimeWarning, stacklevel=4)


@functools.cache
def mujoco_functions() -> dict[str, int]:
    """Addresses of mj_step, mj_rnePostConstraint, mj_resetData, mj_forward, mj_step1 and mj_step2 in the libmujoco
    that the `mujoco` package loaded (the same file, so the same library instance), and of its mjcb_time."""
    import mujoco

    lib_dir = Path(mujoco.__file__).resolve().parent
    candidates = sorted(lib_dir.glob("libmujoco.so*")) + sorted(lib_dir.glob("libmujoco*.dylib"))
    if not candidates:
        raise KernelUnavailable(f"the mujoco package has no libmujoco in {lib_dir}")
    lib = ctypes.CDLL(str(candidates[0]))
    names = ("mj_step", "mj_rnePostConstraint", "mj_resetData", "mj_forward", "mj_step1", "mj_step2")
    out = {n: ctypes.cast(getattr(lib, n), ctypes.c_void_p).value for n in names}
    out["mjcb_time"] = ctypes.addressof(ctypes.c_void_p.in_dll(lib, "mjcb_time"))  # the timer's slot (kernel.c)
    return out

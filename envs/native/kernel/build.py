"""Builds the compiled native pool (and the stateless targets of envs/native/stateless.py, in the
same library) on first use and loads it.

The sources ship with the package; the first pool of a built-in task compiles them with the
machine's C++ compiler (`$CXX`, else `c++`; a few seconds) against the XLA FFI headers that
jaxlib ships, into a cache keyed by the sources, jaxlib and Python (`$SEBULBA_CACHE_DIR`, else
`~/.cache/sebulba`). Later pools, and later processes, load the cached library. The build is
atomic (compile to a temporary name, then rename), so processes that build at once are safe.

When the library cannot be had (no compiler, a failed build) or its math differs from numpy's
on this host (the load-time check below), the built-in tasks run on their numpy path instead,
with one warning that says why. `SEBULBA_NATIVE_KERNEL=0` chooses the numpy path on purpose.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from typing import Any
from pathlib import Path

import numpy as np

SOURCES = ("classic_control.h", "pool.cc", "stateless.cc")
_HERE = Path(__file__).resolve().parent


class KernelUnavailable(RuntimeError):
    """The compiled pool cannot be used here; the message says why."""


def enabled() -> bool:
    return os.environ.get("SEBULBA_NATIVE_KERNEL", "1") != "0"


def cache_dir() -> Path:
    root = os.environ.get("SEBULBA_CACHE_DIR") or Path.home() / ".cache" / "sebulba"
    return Path(root) / "kernels"


def _include_dir() -> str:
    """jaxlib's headers (jax.ffi.include_dir(), found without importing jax: pools need no JAX)."""
    spec = importlib.util.find_spec("jaxlib")
    if spec is None or not spec.submodule_search_locations:
        raise KernelUnavailable("jaxlib is not installed (its XLA FFI headers are needed)")
    include = Path(next(iter(spec.submodule_search_locations))) / "include"
    if not (include / "xla" / "ffi" / "api" / "ffi.h").exists():
        raise KernelUnavailable(f"jaxlib's XLA FFI headers are missing ({include})")
    return str(include)


def _library_path(include: str) -> Path:
    h = hashlib.sha256()
    for name in SOURCES:
        h.update((_HERE / name).read_bytes())
    h.update(f"{importlib.metadata.version('jaxlib')} {include} {sys.version} {sys.platform}".encode())
    return cache_dir() / f"native_pool_{h.hexdigest()[:16]}.so"


def _compile(target: Path, include: str) -> None:
    cxx = os.environ.get("CXX", "c++")
    build_atomically(target, lambda tmp: [
        cxx, "-O2", "-std=c++17", "-shared", "-fPIC", "-ffp-contract=off", "-fno-fast-math", "-w",  # every product and sum rounds as in numpy
        "-fno-builtin-pow", "-fno-builtin-powf",  # pow(x, 2) stays libm pow, which differs from x * x in the last bit
        f"-I{include}", str(_HERE / "pool.cc"), str(_HERE / "stateless.cc"), "-o", tmp,
    ])  # fmt: skip


def build_atomically(target: Path, command: Callable[[str], list[str]]) -> None:
    """Runs command(temporary path) to build a shared library, then renames it to target, so
    processes that build at once are safe. KernelUnavailable says why when it cannot."""
    compiler = command("")[0]
    if shutil.which(compiler) is None:
        raise KernelUnavailable(f"no compiler ({compiler!r} is not on PATH; set $CC/$CXX or install gcc)")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    cmd = command(tmp)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise KernelUnavailable(f"the build failed ({' '.join(cmd)}): {done.stderr.strip()[-800:]}")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _declare(lib: ctypes.CDLL) -> None:
    p, i = ctypes.c_void_p, ctypes.c_int
    sig = {
        "np_last_error": (ctypes.c_char_p, []),
        "np_create": (i, [ctypes.c_char_p, i, i, i, i, p]),
        "np_close": (None, [i]),
        "np_send": (i, [i, p, p, i]),
        "np_recv": (i, [i, p, p, p, p, p, p, p]),
        "np_step": (i, [i, p, p, i, p, p, p, p, p, p, p]),
        "np_reset": (i, [i, p, i, p, p, p, p, p, p]),
        "np_async_reset": (i, [i]),
        "np_seed": (i, [i, p, i, p]),
        "np_get_state": (i, [i, p, p, p, p, p, p, p]),
        "np_set_state": (i, [i, p, p, p, p, p, p, i]),
        "np_math": (None, [p, i, p]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args


def _check_math(lib: ctypes.CDLL) -> None:
    """The tasks' cos, sin, pow and powf must equal numpy's here (the numpy path matches Gymnasium
    through numpy; on some hosts numpy's SIMD loops round differently from libm)."""
    x = np.random.default_rng(0).uniform(-12.0, 12.0, 4096)
    x[:3] = (0.0, np.pi, -np.pi)
    out = np.empty((len(x), 5))
    lib.np_math(x.ctypes.data, len(x), out.ctypes.data)
    f = x.astype(np.float32)
    want = np.stack(
        [np.cos(x), np.sin(x), np.float_power(x, 2.0), np.array([v**2 for v in f], np.float32).astype(np.float64),
         np.remainder(x, 2 * np.pi)], axis=1,
    )  # fmt: skip
    bad = [name for name, col in zip(("cos", "sin", "pow", "powf", "remainder"), range(5)) if not np.array_equal(out[:, col], want[:, col])]
    if bad:
        raise KernelUnavailable(f"its {', '.join(bad)} differ from numpy's on this host, so it would not match Gymnasium")


def _load() -> ctypes.CDLL:
    include = _include_dir()
    path = _library_path(include)
    if not path.exists():
        _compile(path, include)
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        raise KernelUnavailable(f"cannot load {path}: {e}") from e
    _declare(lib)
    _check_math(lib)
    return lib


@functools.cache
def _warn_once(reason: str) -> None:
    warnings.warn(f"envs: the compiled native pool is unavailable ({reason}); the built-in tasks run on their numpy path", RuntimeWarning, stacklevel=4)


def attempt(load: Callable[[], ctypes.CDLL]) -> tuple[ctypes.CDLL | None, str]:
    """(load(), "") or (None, why the library cannot be had here)."""
    try:
        return load(), ""
    except KernelUnavailable as e:
        return None, str(e)


def declare(lib: ctypes.CDLL, signatures: dict[str, tuple[Any, list[Any]]]) -> ctypes.CDLL:
    """Sets each named function's (restype, argtypes); returns lib."""
    for name, (res, args) in signatures.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


class KernelLoader:
    """A kernel other than this file's (the MuJoCo and Atari kernels), built and loaded once per
    process by `load`: `library()` is None where it cannot be had or SEBULBA_NATIVE_KERNEL=0,
    and `why_unavailable()` says why."""

    def __init__(self, load: Callable[[], ctypes.CDLL]):
        self._load = load

    @functools.cached_property
    def _loaded(self) -> tuple[ctypes.CDLL | None, str]:
        return attempt(self._load)

    def library(self) -> ctypes.CDLL | None:
        return self._loaded[0] if enabled() else None

    def why_unavailable(self) -> str:
        return "SEBULBA_NATIVE_KERNEL=0" if not enabled() else self._loaded[1]


@functools.cache
def _load_once() -> tuple[ctypes.CDLL | None, str]:
    return attempt(_load)


def library() -> ctypes.CDLL | None:
    """The loaded library, or None (with one warning) when the numpy path must serve."""
    if not enabled():
        return None
    lib, reason = _load_once()
    if lib is None:
        _warn_once(reason)
    return lib

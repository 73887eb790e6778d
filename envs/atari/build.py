"""Builds the Atari kernel (kernel.c and ale_env.cc) on first use, linked against ale-py's own extension.

The kernel steps ALE's per-env preprocessing class (`ale::vector::PreprocessedEnv`, the one ALE's
vector env runs) on envs/native/jobs.h's threads, so a pool can step any subset of its envs
(envs/atari/native.py). ale-py ships no headers: ale_env.cc declares the class as ale-py 0.12.1
lays it out and checks that layout on every env it makes. The library links the extension module
ale-py loaded (`ale_py._ale_py`: the same file, so one ALE in the process), is compiled with the
machine's C compiler (`$CC`, else `cc`, which compiles the .cc as C++) into the cache the other
kernels use, keyed by its sources and ale-py's version. Without a compiler, with
`SEBULBA_NATIVE_KERNEL=0`, or with an ale-py the layout check refuses, Atari pools run on ALE's
vector env (envs/atari/backend.py), whose sync pools step all their envs at once.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.metadata
import os
import sys
from pathlib import Path

from envs.native.kernel.build import KernelLoader, KernelUnavailable, build_atomically, cache_dir, declare

_HERE = Path(__file__).resolve().parent
_SOURCES = (_HERE / "kernel.c", _HERE / "ale_env.cc", _HERE.parent / "native" / "jobs.h")


def _extension() -> Path:
    from ale_py import _ale_py

    return Path(_ale_py.__file__).resolve()


def _library_path(ext: Path) -> Path:
    h = hashlib.sha256()
    for source in _SOURCES:
        h.update(source.read_bytes())
    h.update(f"{importlib.metadata.version('ale-py')} {ext} {sys.platform}".encode())
    return cache_dir() / f"atari_pool_{h.hexdigest()[:16]}.so"


def _load() -> ctypes.CDLL:
    ext = _extension()
    path = _library_path(ext)
    if not path.exists():
        cc = os.environ.get("CC", "cc")
        build_atomically(path, lambda tmp: [
            cc, "-O2", "-shared", "-fPIC", "-w", f"-I{_HERE.parent / 'native'}", str(_SOURCES[0]), str(_SOURCES[1]),
            "-o", tmp, f"-L{ext.parent}", f"-l:{ext.name}", f"-Wl,-rpath,{ext.parent}", "-lstdc++", "-lpthread",
        ])  # fmt: skip
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        raise KernelUnavailable(f"cannot load {path}: {e}") from e
    p, i, q, f = ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_float
    sig = {
        "atp_create": (p, [ctypes.c_char_p, i, i, i, i, i, i, i, i, i, i, f, i, i, i, p, i]),
        "atp_num_actions": (i, [p]),
        "atp_start": (q, [p, p, p, p, p, i, p, p, p, p, p, p, p]),
        "atp_wait": (None, [p, q]),
        "atp_done": (i, [p, q]),
        "atp_error": (ctypes.c_char_p, [p]),
        "atp_destroy": (None, [p]),
    }
    return declare(lib, sig)


_KERNEL = KernelLoader(_load)
library = _KERNEL.library  # the loaded kernel, or None when Atari pools must run without it
why_unavailable = _KERNEL.why_unavailable

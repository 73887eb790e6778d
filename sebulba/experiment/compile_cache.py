"""JAX's persistent compilation cache for the entry points: a run of a task compiled before
loads its programs from disk instead of compiling them again (PPO CartPole on 2 cores: the first
learner update 9.6 s after the process starts with an empty cache, 3.3-4.1 s with a warm one;
BENCHMARKS.md "Time to the first update")."""

from __future__ import annotations

import os
from pathlib import Path

import jax


def default_dir() -> Path:
    """$XDG_CACHE_HOME/sebulba/jax, else ~/.cache/sebulba/jax."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sebulba" / "jax"


def enable(on: bool = True) -> Path | None:
    """Use the cache (call before the first compile): JAX_COMPILATION_CACHE_DIR's folder when set,
    else `default_dir()`; every program is kept, however fast it compiled (the small eager
    programs of a network's initialisation add up to seconds on 2 cores). The folder in use, or None."""
    if not on:
        jax.config.update("jax_compilation_cache_dir", None)
        return None
    folder = jax.config.jax_compilation_cache_dir or str(default_dir())
    jax.config.update("jax_compilation_cache_dir", folder)
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return Path(folder)

"""Gymnasium's reset arguments for a pool: `reset(seed=..., options=...)` as
`gymnasium.vector.VectorEnv` defines them, checked and put in the form the backends take.

- `seed`: None keeps every env's random stream; an int s seeds env i with s + i (as `make`'s seed,
  and as Gymnasium's `SyncVectorEnv`); a list gives one seed (or None: keep) per env of the pool,
  indexed by env id. Only the envs being reset take theirs (Gymnasium ignores the others' too).
- `options["reset_mask"]`: Gymnasium's partial reset, checked as Gymnasium's vector envs check it;
  the output then covers every env (`scatter`, `scatter_info`), the others' last observations
  and their info masked False. Any other option goes to the envs' own `reset`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

Seeds = list[int | None]


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def env_seeds(seed: int | Sequence[int | None] | np.ndarray | None, num_envs: int, max_seed: int | None) -> Seeds | None:
    """One seed (or None: keep the stream) per env of the pool, or None when no env is seeded."""
    if seed is None:
        return None
    if _is_int(seed):
        seeds: Seeds = [int(seed) + i for i in range(num_envs)]
    elif isinstance(seed, (list, tuple, np.ndarray)):
        given = list(np.asarray(seed, dtype=object).ravel()) if isinstance(seed, np.ndarray) else list(seed)
        if len(given) != num_envs:
            raise ValueError(f"a list of seeds needs one per env (num_envs={num_envs}), got {len(given)}")
        bad = [s for s in given if s is not None and not _is_int(s)]
        if bad:
            raise ValueError(f"seeds must be ints or None, got {bad[0]!r} ({type(bad[0]).__name__})")
        seeds = [None if s is None else int(s) for s in given]
        if all(s is None for s in seeds):
            return None
    else:
        raise ValueError(f"seed must be an int, a list of ints (one per env) or None, got {seed!r} ({type(seed).__name__})")
    given_ints = [s for s in seeds if s is not None]
    low = min(given_ints)
    if low < 0:
        raise ValueError(f"seeds must be >= 0, got {low}" + (" (env i is seeded seed + i)" if _is_int(seed) else ""))
    high = max(given_ints)
    if max_seed is not None and high > max_seed:
        how = f"env i is seeded seed + i, so seed must be <= {max_seed - num_envs + 1}" if _is_int(seed) else ""
        raise ValueError(f"seed {high} is out of range: this pool's envs take seeds in [0, {max_seed}]" + (f"; {how}" if how else ""))
    return seeds


def reset_mask_ids(options: Mapping[str, Any], num_envs: int) -> np.ndarray | None:
    """The env ids of `options["reset_mask"]` (None: every env), checked as Gymnasium's
    `SyncVectorEnv` checks it. The options are not changed: wrappers such as
    `RecordEpisodeStatistics` read the mask after the env."""
    mask = options["reset_mask"]
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
    if mask.shape != (num_envs,):
        raise ValueError(f"`options['reset_mask']` must have shape `({num_envs},)`, got {mask.shape}")
    if mask.dtype != np.bool_:
        raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
    if not mask.any():
        raise ValueError(
            f"`options['reset_mask']` must contain a boolean array with at least one True value, got reset_mask={mask}"
        )
    return None if mask.all() else np.flatnonzero(mask).astype(np.int32)


def scatter(last: Any, new: Any, ids: np.ndarray) -> Any:
    """A copy of the batch `last` with rows ids replaced by `new` (arrays, or dicts/tuples of them)."""
    if isinstance(last, Mapping):
        return {k: scatter(last[k], new[k], ids) for k in last}
    if isinstance(last, tuple):
        return tuple(scatter(a, b, ids) for a, b in zip(last, new))
    out = np.array(last, copy=True)
    out[ids] = new
    return out


def mask_of(info: Mapping[Hashable, Any], key: Hashable, n: int) -> np.ndarray | None:
    """info's mask `_key` of key, if it has one of shape (n,)."""
    m = info.get(f"_{key}")
    return m if isinstance(m, np.ndarray) and m.dtype == np.bool_ and m.shape == (n,) else None


def mask_names(info: Mapping[Hashable, Any], n: int) -> set[str]:
    """The keys of info that are the boolean mask `_key` of another key (Gymnasium's layout)."""
    return {f"_{k}" for k in info if mask_of(info, k, n) is not None}


def scatter_info(info: Mapping[Hashable, Any], ids: np.ndarray, n: int) -> dict[Hashable, Any]:
    """The info of envs ids (a partial reset) over all n envs, each key with its mask `_key`
    True only at ids (Gymnasium's vector layout)."""
    out: dict[Hashable, Any] = {}
    k_ids = len(ids)
    masks = mask_names(info, k_ids)
    for k, v in info.items():
        if k in masks:
            continue
        if isinstance(v, Mapping):
            full = scatter_info(v, ids, n)
        else:
            v = np.asarray(v)
            full = np.empty(n, object) if v.dtype == object else np.zeros((n, *v.shape[1:]), v.dtype)
            full[ids] = v
        mask = np.zeros(n, np.bool_)
        own = mask_of(info, k, k_ids)
        mask[ids] = True if own is None else own
        out[k], out[f"_{k}"] = full, mask
    return out

"""Batching the info dicts of single envs into one dict of arrays, as Gymnasium's vector envs
do, so the worker-process backend can hand its envs' own info keys to the caller.

The rule (Gymnasium's `VectorEnv._add_info`, with three changes):
- Every key becomes an array with a leading env axis. Numbers (Python or numpy scalars) batch
  into one numeric array, numpy arrays of one shape into one stacked array, and anything else
  (strings, None, lists, other objects, arrays of differing shapes) into an object array: a
  value is never lost. Nested dicts batch recursively.
- A key that only some envs returned gets a boolean mask `_key` (Gymnasium's name), and its
  other rows hold 0 (None in object arrays). *Change 1*: a key every env returned gets no mask
  (EnvPool's info has none), so an env with a constant set of keys gives plain arrays.
- *Change 2*: numbers of mixed types are promoted as numpy promotes them (an int then a float
  gives float64); Gymnasium keeps the first env's type. *Change 3*: arrays of differing shapes
  give an object array, and numpy booleans a bool array; Gymnasium raises, or gives an object array.
  (Gymnasium's special case, `final_obs` always as objects, is not made: the pool never sets it.)
- A key named `_k` next to a key `k` is read as k's mask, as in Gymnasium (a clash the env's
  author has to avoid).

Also here: the dm TimeStep's observation type (`DmObservation`, plus one field per extra key),
splitting and joining such dicts (`take_info`, `concat_infos`) for batches that are
assembled from several chunks, and `dm_field_names`, the rule that turns info keys into
field names of a dm TimeStep's observation namedtuple.
"""

from __future__ import annotations

import collections
import functools
import keyword
import re
from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

# An env key that the pool sets itself (env_id, elapsed_step) is kept under this prefix.
RENAMED_PREFIX = "info_"
_NUMBER = (bool, int, float, complex, np.number, np.bool_)
_EMPTY: Mapping[str, Any] = {}


def batch_infos(infos: Sequence[Mapping[Hashable, Any]], reserved: Collection[str] = ()) -> dict[Hashable, Any]:
    """One dict of arrays (leading axis: the envs, in infos' order) from one info dict per env.

    `reserved`: top-level keys the caller sets itself; an env's key of that name is renamed
    `info_<key>` (its mask `_info_<key>`) instead of being overwritten."""
    n = len(infos)
    if not n:
        return {}
    first = infos[0].keys()
    same = all(info.keys() == first for info in infos)  # the common case: no masks to make
    out: dict[Hashable, Any] = {}
    for key in first if same else dict.fromkeys(k for info in infos for k in info):
        name = f"{RENAMED_PREFIX}{key}" if key in reserved else key
        if same:
            out[name] = _batch_values([info[key] for info in infos], None, n)
            continue
        present = [i for i, info in enumerate(infos) if key in info]
        out[name] = _batch_values([infos[i][key] for i in present], present, n)
        if len(present) < n:
            mask = np.zeros(n, bool)
            mask[present] = True
            out[f"_{name}"] = mask
    return out


def _batch_values(values: list[Any], present: list[int] | None, n: int) -> Any:
    """One key's values (those of envs `present`; None: all) as an array over n envs, or a
    nested dict."""
    types = set(map(type, values))
    arr = _stack(values, types)
    if arr is None and all(issubclass(t, Mapping) for t in types):
        if present is None:
            return batch_infos(values)
        rows: list[Mapping[Hashable, Any]] = [_EMPTY] * n
        for i, v in zip(present, values):
            rows[i] = v
        return batch_infos(rows)
    if arr is None:
        out = np.empty(n, object)  # filled with None
        if present is None:
            out[:] = _object_column(values)
        else:
            for i, v in zip(present, values):
                out[i] = v
        return out
    if present is None:
        return arr
    full = np.zeros((n, *arr.shape[1:]), arr.dtype)
    full[present] = arr
    return full


def _object_column(values: list[Any]) -> np.ndarray:
    col = np.empty(len(values), object)
    for i, v in enumerate(values):
        col[i] = v  # one by one: numpy would unpack lists and arrays
    return col


def _stack(values: list[Any], types: set[type]) -> np.ndarray | None:
    """values as one numeric array, or None when they cannot be batched that way."""
    if all(issubclass(t, _NUMBER) for t in types):
        try:
            arr = np.array(values)
        except (OverflowError, ValueError, TypeError):  # e.g. an int beyond int64
            return None
        return arr if arr.dtype != object else None
    if types == {np.ndarray}:
        shape, kinds = values[0].shape, {v.dtype.kind for v in values}
        # numbers of any kinds promote; strings or bytes only among themselves (never "1" from 1)
        if all(v.shape == shape for v in values) and (kinds <= set("biufc") or kinds in ({"U"}, {"S"})):
            return np.stack(values)
    return None


def _masks(info: Mapping[Hashable, Any]) -> dict[Hashable, np.ndarray]:
    """{key: its mask} for the keys of a batched info that have a mask `_key`."""
    found = {}
    for k in info:
        m = info.get(f"_{k}")
        if isinstance(m, np.ndarray) and m.dtype == bool and m.ndim == 1:
            found[k] = m
    return found


def take_info(info: Mapping[Hashable, Any], sel: slice | np.ndarray) -> dict[Hashable, Any]:
    """The rows `sel` of a batched info; a mask left all True is dropped, and a key whose mask
    is left all False is dropped with it (no env of the selection returned it)."""
    out = {k: take_info(v, sel) if isinstance(v, Mapping) else v[sel] for k, v in info.items()}
    for k, m in _masks(out).items():
        if m.all():
            del out[f"_{k}"]
        elif not m.any():
            del out[k], out[f"_{k}"]
    return out


def unbatch_info(info: Mapping[Hashable, Any], n: int) -> list[dict[Hashable, Any]]:
    """The n per-env info dicts of a batched info (the inverse of batch_infos, up to dtypes)."""
    rows: list[dict[Hashable, Any]] = [{} for _ in range(n)]
    masks = _masks(info)
    mask_names = {f"_{k}" for k in masks}
    for k, v in info.items():
        if k in mask_names:
            continue
        col = unbatch_info(v, n) if isinstance(v, Mapping) else v
        m = masks.get(k)
        for i in range(n):
            if m is None or m[i]:
                rows[i][k] = col[i]
    return rows


def concat_infos(parts: Sequence[Mapping[Hashable, Any] | None], sizes: Sequence[int]) -> dict[Hashable, Any] | None:
    """The batched infos of consecutive parts (sizes[i] envs each; None: no info) as one."""
    if all(p is None for p in parts):
        return None
    first = parts[0]
    if first is not None and all(p is not None and p.keys() == first.keys() for p in parts):
        if not any(isinstance(v, Mapping) for v in first.values()):
            try:  # the same keys everywhere (Atari's lives and reward): a plain concatenation
                return {k: np.concatenate([p[k] for p in parts]) for k in first}
            except ValueError:  # arrays of differing shapes: rebatched below, as objects
                pass
    rows = [row for p, n in zip(parts, sizes) for row in (unbatch_info(p, n) if p is not None else [{}] * n)]
    return batch_infos(rows) or None


def dm_field_names(keys: Sequence[Hashable], taken: Collection[str] = ("obs", "env_id", "elapsed_step")) -> tuple[str, ...]:
    """Field names for info keys in a dm observation namedtuple, one per key, in order.

    A namedtuple field must be an identifier, not a keyword, not start with "_", and not repeat
    one. The rule: a mask `_k` becomes `<name of k>_mask`; a key that is a usable name and not
    one of `taken` keeps it; any other key k becomes `info_` + str(k) with every character that
    cannot be in an identifier replaced by "_"; a name already used gets "_" appended until it
    is new. So {"prob", "_prob", "obs", "x-y", "class"} give prob, prob_mask, info_obs, info_x_y,
    info_class."""
    used = set(taken)
    names = []
    for k in keys:
        s = str(k)
        name = _field(s[1:]) + "_mask" if s.startswith("_") else _field(s)
        if name in taken:
            name = RENAMED_PREFIX + name
        while name in used:
            name += "_"
        used.add(name)
        names.append(name)
    return tuple(names)


def _field(s: str) -> str:
    if s.isidentifier() and not keyword.iskeyword(s) and not s.startswith("_"):
        return s
    return RENAMED_PREFIX + re.sub(r"\W", "_", s)


class DmObservation(NamedTuple):
    """The `observation` of a dm_env.TimeStep from this pool."""

    obs: Any
    env_id: np.ndarray
    elapsed_step: np.ndarray


@functools.cache
def dm_observation_type(extra: tuple[str, ...], obs_keys: tuple[str, ...] = ()) -> type:
    """DmObservation, or with extra info (a task's, as Atari's lives and reward, or a Gymnasium
    env's own keys) the same fields plus one per key, in order, named by `dm_field_names`:
    a key that is a usable field name keeps it, a mask `_k` becomes `k_mask`, any other key
    `info_<key>` (non-identifier characters as "_"). With `obs_keys` (a Dict observation spread
    as EnvPool's DMC pools give it: its state keys obs:KEY) a field per key stands in for `obs`."""
    if not extra and not obs_keys:
        return DmObservation
    head = (*(obs_keys or ("obs",)), "env_id", "elapsed_step")
    return collections.namedtuple("DmObservation", (*head, *dm_field_names(extra, head)))


def dm_observation(obs: Any, env_id: Any, elapsed: Any, extra: Mapping[str, Any] | None,
                   fields: tuple[str, ...] | None) -> Any:
    """A dm TimeStep's observation (or its spec, or its template: any leaves): `obs` as one field
    (`fields` None), or in the named fields: each key of a Dict observation in its own, a single
    array in the one named (EnvPool's DMC pools: obs:position, ...; obs:pixels)."""
    extra = extra or {}
    keys = tuple(fields or ())
    head = [obs] if not keys else [obs[k] for k in keys] if isinstance(obs, Mapping) else [obs]
    values = (dm_nested(k, v) if isinstance(v, Mapping) else v for k, v in extra.items())
    return dm_observation_type(tuple(extra), keys)(*head, env_id, elapsed, *values)


def dm_nested(name: Hashable, tree: Mapping[Hashable, Any]) -> Any:
    """A nested info dict as a dm observation's field: a namedtuple (recursively), its fields
    named by `dm_field_names` with nothing taken, as EnvPool gives `observation.players.env_id`."""
    values = (dm_nested(k, v) if isinstance(v, Mapping) else v for k, v in tree.items())
    return _nested_type(_field(str(name)), tuple(tree))(*values)


@functools.cache
def _nested_type(name: str, keys: tuple[Hashable, ...]) -> type:
    return collections.namedtuple(name, dm_field_names(keys, ()))

"""Structured observations: Gymnasium `Dict` and `Tuple` spaces as trees of array leaves.

An observation of a `Dict` space is a dict of arrays, of a `Tuple` space a tuple of arrays,
nested as the space is; a pool batches each leaf on its own (a dict of batched arrays, as
EnvPool returns dict observations). The helpers here walk such trees without JAX: `envs` sits
below it. A leaf is addressed by its path, a tuple of dict keys and tuple positions, written
"a/b/0" in messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym

Path = tuple[Any, ...]
# The leaf spaces a pool batches: each has a fixed shape and dtype.
BATCHABLE = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


def is_structured(space: gym.spaces.Space) -> bool:
    return isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple))


def path_name(path: Path) -> str:
    return "/".join(str(p) for p in path)


def leaf_spaces(space: gym.spaces.Space, path: Path = ()) -> Iterator[tuple[Path, gym.spaces.Space]]:
    """(path, leaf space) of every leaf, depth first, in the space's key order."""
    if isinstance(space, gym.spaces.Dict):
        for key, sub in space.spaces.items():
            yield from leaf_spaces(sub, (*path, key))
    elif isinstance(space, gym.spaces.Tuple):
        for i, sub in enumerate(space.spaces):
            yield from leaf_spaces(sub, (*path, i))
    else:
        yield path, space


def check_batchable(space: gym.spaces.Space, what: str, task_id: str) -> None:
    """Raises a ValueError naming the first leaf (by path) the pool cannot batch."""
    for path, leaf in leaf_spaces(space):
        if not isinstance(leaf, BATCHABLE):
            where = f" leaf {path_name(path)!r}" if path else ""
            hint = ""
            if what == "observation" and path and isinstance(space, gym.spaces.Dict):
                hint = f"; leave it out with drop_observation_keys=[{path[0]!r}]"
            raise ValueError(
                f"task {task_id!r} has an {what} space{where} {type(leaf).__name__} that the pool cannot batch "
                f"(supported leaves: {', '.join(s.__name__ for s in BATCHABLE)}, alone or in Dict and Tuple spaces){hint}"
            )


def map_space(fn: Callable[[gym.spaces.Space], gym.spaces.Space], space: gym.spaces.Space) -> gym.spaces.Space:
    """The space with fn applied to each leaf space."""
    if isinstance(space, gym.spaces.Dict):
        return gym.spaces.Dict({k: map_space(fn, s) for k, s in space.spaces.items()})
    if isinstance(space, gym.spaces.Tuple):
        return gym.spaces.Tuple(tuple(map_space(fn, s) for s in space.spaces))
    return fn(space)


def map_obs(fn: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """fn applied leafwise over one or more observations of the same structure."""
    if isinstance(tree, dict):
        return {k: map_obs(fn, v, *(r[k] for r in rest)) for k, v in tree.items()}
    if isinstance(tree, tuple):
        return tuple(map_obs(fn, v, *(r[i] for r in rest)) for i, v in enumerate(tree))
    return fn(tree, *rest)


def obs_leaves(tree: Any) -> list[Any]:
    """The leaves of an observation in leaf_spaces' order."""
    if isinstance(tree, dict):
        return [leaf for v in tree.values() for leaf in obs_leaves(v)]
    if isinstance(tree, tuple):
        return [leaf for v in tree for leaf in obs_leaves(v)]
    return [tree]


def get_leaf(tree: Any, path: Path) -> Any:
    for p in path:
        tree = tree[p]
    return tree


def build(fn: Callable[[Path, gym.spaces.Space], Any], space: gym.spaces.Space, path: Path = ()) -> Any:
    """An observation-shaped tree (dicts, tuples) with fn(path, leaf space) at each leaf."""
    if isinstance(space, gym.spaces.Dict):
        return {k: build(fn, s, (*path, k)) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(build(fn, s, (*path, i)) for i, s in enumerate(space.spaces))
    return fn(path, space)

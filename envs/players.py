"""Multi-player pools (max_num_players = P > 1), as EnvPool lays them out: each row of a batch is one
(env, player) pair, an env's P players in consecutive rows, in player order.

Backends work in envs: an env's action is (P, *action shape), its results carry a player axis
(obs (P, ...), reward, terminated, truncated (P,)) and `extra["players"]["alive"]` (P,); elapsed
is the env's. The pool turns envs into rows here, both ways:

- actions in: EnvPool's dict form `{"action": (R, ...), "env_id": (R,), "players.id": (R,)}` (or
  nested, `{"players": {"id": ...}}`, as EnvPool flattens it), one row per (env, player), in any
  order; or the array form `(action (k * P, ...), env_id (k,))`: every player of each named env,
  in player order. Every player of a named env must act (an action for a dead player, or for
  one not to move in a turn-based game, is ignored).
- results out: every (n, P, ...) field to (n * P, ...); `info["env_id"]` and `elapsed_step` per
  row, and `info["players"] = {"env_id", "id", "alive"}` per row (dm: the `players` field, a
  namedtuple). A single-player pool's info has `players = {"env_id"}` (EnvPool's on every pool).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from envs.ready import Batch
from envs.tree import map_obs

PLAYERS = "players"  # the info key (dm field) of the per-row player ids; also the backends' `alive` holder
# Cooperative multi-player tasks: every player works toward one shared goal, so no player or team
# wins an episode. PettingZoo's docs class the butterfly and SISL families as cooperative, and of
# MPE simple, simple_spread, simple_reference and simple_speaker_listener (JaxMARL's MPE ports too).
COOPERATIVE_FAMILIES = ("butterfly", "sisl")
COOPERATIVE_MPE = ("simple", "simple_spread", "simple_reference", "simple_speaker_listener")
ROW_KEYS = ("action", "env_id", "players.id")


def cooperative(task_id: str) -> bool:
    """Whether task_id names a cooperative multi-player task (`COOPERATIVE_FAMILIES`, `COOPERATIVE_MPE`):
    `pettingzoo/<module>/<env>_v<n>` or `jaxmarl/MPE_<env>_v<n>`."""
    parts = task_id.split("/")
    name = re.sub(r"_v\d+$", "", parts[-1])
    if parts[0] == "pettingzoo" and len(parts) >= 3:
        family = parts[1]
        return family in COOPERATIVE_FAMILIES or (family in ("mpe", "mpe2") and name in COOPERATIVE_MPE)
    if parts[0] == "jaxmarl" and len(parts) == 2 and name.startswith("MPE_"):
        return name[len("MPE_"):] in COOPERATIVE_MPE
    return False


def flat_keys(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested action dict with EnvPool's dotted keys: {"players": {"id": x}} -> {"players.id": x}."""
    out: dict[str, Any] = {}
    for k, v in tree.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flat_keys(v, f"{name}."))
        else:
            out[name] = v
    return out


def _int_rows(name: str, x: Any) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise ValueError(f"{name} must be a 1-D array of integers (one per row), got {a.dtype} array of shape {a.shape}")
    return a.astype(np.int64)


def unpack_action(action: Mapping[str, Any]) -> tuple[Any, Any]:
    """(action, env_id or None) of a single-player pool's dict form: "action", optionally "env_id"
    and EnvPool's "players.env_id" (flat or nested), which names the same envs as env_id (all the
    envs when env_id is absent) and is checked against it."""
    flat = flat_keys(action)
    extra = set(flat) - {"action", "env_id", "players.env_id"}
    if "action" not in flat or extra:
        raise ValueError(
            f"an action dict needs the key 'action' (and optionally 'env_id', 'players.env_id'), got keys {sorted(flat)}"
        )
    env_id = flat.get("env_id")
    if "players.env_id" in flat:
        players = np.asarray(flat["players.env_id"])
        expected = np.arange(len(np.asarray(flat["action"]))) if env_id is None else np.asarray(env_id)
        if players.shape != expected.shape or not np.array_equal(players, expected):
            raise ValueError(
                "a single-player pool's players.env_id names the envs env_id names (one player each), "
                f"got players.env_id {players.tolist()[:16]} for env_id {expected.tolist()[:16]}"
            )
    return flat["action"], env_id


def rows_to_envs(action: Mapping[str, Any], num_envs: int, num_players: int) -> tuple[np.ndarray, np.ndarray]:
    """(actions (k, P, ...), env ids (k,), in order of first appearance) of the dict form."""
    flat = flat_keys(action)
    if set(flat) != set(ROW_KEYS):
        raise ValueError(
            f"a multi-player action dict needs exactly the keys {list(ROW_KEYS)} (one entry per (env, player) row), "
            f"got {sorted(flat)}"
        )
    a = np.asarray(flat["action"])
    env = _int_rows("env_id", flat["env_id"])
    pid = _int_rows("players.id", flat["players.id"])
    if a.ndim == 0 or not len(a) == len(env) == len(pid):
        raise ValueError(
            f"action, env_id and players.id need one entry per row: got {a.shape[:1] or 'a scalar'}, {len(env)} and {len(pid)}"
        )
    if len(env) == 0:
        raise ValueError("env_id is empty")
    bad = (env < 0) | (env >= num_envs)
    if bad.any():
        raise ValueError(f"env_id out of range [0, {num_envs}): {env[bad].tolist()}")
    bad = (pid < 0) | (pid >= num_players)
    if bad.any():
        rows = list(zip(env[bad].tolist(), pid[bad].tolist()))
        raise ValueError(f"unknown player id(s) in (env, player) rows {rows[:16]}: players are 0..{num_players - 1}")
    key = env * num_players + pid
    uniq, first, counts = np.unique(key, return_index=True, return_counts=True)
    if len(uniq) != len(key):
        twice = uniq[counts > 1]
        raise ValueError(f"(env, player) rows given twice: {list(zip(*(x.tolist() for x in divmod(twice, num_players))))[:16]}")
    envs, first_row = np.unique(env, return_index=True)
    order = envs[np.argsort(first_row)]
    if len(key) != len(order) * num_players:
        have = np.zeros((num_envs, num_players), bool)
        have[env, pid] = True
        missing = [(e, p) for e in order.tolist() for p in np.flatnonzero(~have[e]).tolist()]
        raise ValueError(
            f"missing actions for (env, player) rows {missing[:16]}: every player of a named env needs an action "
            "(a dead or idle player's is ignored)"
        )
    pos = np.empty(num_envs, np.int64)
    pos[order] = np.arange(len(order))
    full = np.zeros((len(order), num_players, *a.shape[1:]), a.dtype)
    full[pos[env], pid] = a
    return full, order.astype(np.int32)


def array_to_envs(action: Any, num_players: int, action_ndim: int) -> Any:
    """The array form's rows (k * P, ...) as (k, P, ...); other shapes pass on, refused by the pool's check."""
    a = action if type(action) is np.ndarray else np.asarray(action)
    if a.ndim != action_ndim + 1 or len(a) % num_players:
        raise ValueError(
            f"action must have one row per (env, player), {num_players} rows per env (its players in order), "
            f"got shape {a.shape}"
        )
    return a.reshape(len(a) // num_players, num_players, *a.shape[1:])


def per_player(x: Any, n: int, p: int) -> Any:
    """A batched info of n * p rows (env-major) with a player axis: (n, p, ...) leaves."""
    if isinstance(x, Mapping):
        return {k: per_player(v, n, p) for k, v in x.items()}
    return x.reshape(n, p, *x.shape[1:])


def _rows(x: Any, n: int, p: int) -> Any:
    if isinstance(x, Mapping):
        return {k: _rows(v, n, p) for k, v in x.items()}
    if isinstance(x, np.ndarray) and x.ndim >= 2 and x.shape[:2] == (n, p):
        return x.reshape(n * p, *x.shape[2:])
    return x


def with_players(b: Batch, num_players: int) -> Batch:
    """A backend's batch as the pool returns it: a multi-player batch as (env, player) rows
    (`envs_to_rows`), a single-player one with `extra["players"] = {"env_id": env ids}`, as
    EnvPool's info and dm observation carry `players.env_id` on every pool."""
    if num_players > 1:
        return envs_to_rows(b, num_players)
    return b._replace(extra={**(b.extra or {}), PLAYERS: {"env_id": b.env_id}})


def envs_to_rows(b: Batch, num_players: int) -> Batch:
    """A backend's batch of envs as a batch of (env, player) rows; extra["players"] gets the rows'
    env_id and player id next to alive."""
    n, p = len(b.env_id), num_players
    extra = _rows(dict(b.extra or {}), n, p)
    players = extra.pop(PLAYERS, {})
    env_id = np.repeat(b.env_id, p)
    extra[PLAYERS] = {"env_id": env_id, "id": np.tile(np.arange(p, dtype=np.int32), n),
                      "alive": players.get("alive", np.ones(n * p, bool))}  # fmt: skip
    obs = map_obs(lambda a: a.reshape(n * p, *a.shape[2:]), b.obs)
    return Batch(env_id, obs, b.reward.reshape(-1), b.terminated.reshape(-1), b.truncated.reshape(-1),
                 np.repeat(b.elapsed, p), extra)  # fmt: skip

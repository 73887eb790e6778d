"""The loop of one env worker process: it owns a contiguous range of envs, steps the ones the
pool names, writes results into shared memory, and answers with the env ids that finished
(and, when some of them returned a non-empty info dict, those infos, pickled)."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
import numpy as np

from envs.episodes import EpisodeBook
from envs.process.shm import Layout, SharedBuffers
from envs.process.supervisor import DONE, READY, exit_with_parent, send_failure
from envs.tree import get_leaf

# One byte of command, then the env ids as int32 bytes; RESET_WITH (Gymnasium's reset(seed=...,
# options=...)): count (int32), the ids, then pickled (a seed or None per id, options or None).
STEP, RESET, CLOSE, RESET_WITH = b"S", b"R", b"C", b"W"
# RENDER + ids: the envs' frames (`env.render()`, pools made with render_mode="rgb_array"), answered
# FRAMES + a pickled (len(ids), H, W, 3) uint8 array; nothing is stepped.
RENDER, FRAMES = b"F", b"P"
# Answers (envs.process.supervisor): READY once started, DONE + ids after each command,
# ERROR + pickled (message, traceback), after which the worker exits. A command whose envs
# returned some non-empty info is answered INFO + count (int32) + ids + pickled {env id: info}
# of those envs instead, so envs without info cost no pickling.
INFO = b"I"
_COUNT = np.dtype(np.int32).itemsize


def info_answer(ids_bytes: bytes, infos: dict[int, dict[str, Any]]) -> bytes:
    """The INFO answer; raises TypeError naming the info key whose value cannot be pickled."""
    try:
        payload = pickle.dumps(infos, pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # noqa: BLE001 - pickle raises many kinds; find the culprit
        raise TypeError(f"{_unpicklable(infos)} cannot be pickled to reach the pool: {e}") from e
    count = len(ids_bytes) // _COUNT
    return INFO + count.to_bytes(_COUNT, "little", signed=True) + ids_bytes + payload


def _unpicklable(infos: dict[int, dict[str, Any]]) -> str:
    for g, info in infos.items():
        for key, value in info.items():
            try:
                pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001
                return f"info key {key!r} of env {g} (a {type(value).__name__})"
    return "an info dict"


def reset_with_message(ids: np.ndarray, seeds: list[int | None] | None, options: dict[str, Any] | None) -> bytes:
    """The RESET_WITH command for envs ids; seeds: one per env of the pool (indexed by env id)."""
    mine = None if seeds is None else [seeds[g] for g in ids.tolist()]
    payload = pickle.dumps((mine, options), pickle.HIGHEST_PROTOCOL)
    ids = np.ascontiguousarray(ids, np.int32)
    return RESET_WITH + len(ids).to_bytes(_COUNT, "little", signed=True) + ids.tobytes() + payload


def _parse_reset_with(msg: bytes) -> tuple[np.ndarray, list[int | None] | None, dict[str, Any] | None]:
    count = int.from_bytes(msg[1 : 1 + _COUNT], "little", signed=True)
    start = 1 + _COUNT
    ids = np.frombuffer(msg, np.int32, count, offset=start)
    seeds, options = pickle.loads(msg[start + count * _COUNT :])
    return ids, seeds, options


def parse_info_answer(msg: bytes) -> tuple[np.ndarray, dict[int, dict[str, Any]]]:
    """(env ids, {env id: info}) of an INFO answer."""
    count = int.from_bytes(msg[1 : 1 + _COUNT], "little", signed=True)
    start = 1 + _COUNT
    ids = np.frombuffer(msg, np.int32, count, offset=start)
    return ids, pickle.loads(msg[start + count * _COUNT :])


def _to_env_action(space: gym.spaces.Space) -> Callable[[np.ndarray], object]:
    if isinstance(space, gym.spaces.Discrete):
        return lambda a: int(a)
    return lambda a: np.array(a)  # a copy: the env may keep it, the buffer is reused


def worker_main(
    conn: Connection,
    factory: Callable[[], gym.Env],
    first_env: int,
    num_envs: int,
    seed: int,
    max_episode_steps: int | None,
    layout: Layout,
    shm_name: str,
    obs_leaves: tuple[tuple[tuple, str, bool], ...],
    cpu: int,
    num_players: int = 1,
) -> None:
    """obs_leaves: (path in the observation, shared-memory field, channel-last image to move) of
    each observation leaf; one leaf with path () for an unstructured observation. num_players > 1:
    each env is a `PlayersEnv` (envs/process/pettingzoo_env.py), whose results carry a player axis;
    the rows' flags are the players' (terminated, truncated, alive), the episode's the env's."""
    shm = None
    try:
        exit_with_parent()
        if cpu >= 0 and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {cpu % (os.cpu_count() or 1)})
        shm = SharedBuffers(layout, shm_name)
        a = shm.arrays
        act_buf = a["action"]
        plain = len(obs_leaves) == 1 and obs_leaves[0][0] == ()
        obs_buf, transpose_obs = a[obs_leaves[0][1]], obs_leaves[0][2]
        writers = [(path, a[field], image) for path, field, image in obs_leaves]
        rew_buf, term_buf, trunc_buf, elapsed_buf = a["reward"], a["terminated"], a["truncated"], a["elapsed"]
        envs = [factory() for _ in range(num_envs)]
        multi = num_players > 1
        to_action = _to_env_action(envs[0].action_space) if not multi else lambda a: a  # PlayersEnv converts
        alive_buf = a["alive"] if multi else None
        seeded = [False] * num_envs
        book = EpisodeBook(num_envs, max_episode_steps)
        conn.send_bytes(READY)
        while True:
            msg = conn.recv_bytes()
            cmd = msg[:1]
            if cmd == CLOSE:
                break
            if cmd == RENDER:
                ids = np.frombuffer(msg, np.int32, offset=1) - first_env
                frames = np.stack([np.asarray(envs[i].render(), np.uint8) for i in ids.tolist()])
                conn.send_bytes(FRAMES + pickle.dumps(frames, pickle.HIGHEST_PROTOCOL))
                continue
            seeds: list[int | None] | None = None
            options: dict[str, Any] | None = None
            if cmd == RESET_WITH:
                ids, seeds, options = _parse_reset_with(msg)
                ids_bytes = ids.tobytes()
            else:
                ids = np.frombuffer(msg, np.int32, offset=1)
                ids_bytes = msg[1:]
            local = ids - first_env
            force_reset = cmd != STEP
            resets = np.ones(len(ids), bool) if force_reset else book.done[local].copy()
            term = np.zeros(len(ids), bool)
            env_trunc = np.zeros(len(ids), bool)
            infos: dict[int, dict[str, Any]] = {}
            if multi:
                player_term = np.zeros((len(ids), num_players), bool)
                player_trunc = np.zeros((len(ids), num_players), bool)
            for k, (g, i) in enumerate(zip(ids.tolist(), local.tolist())):
                env = envs[i]
                if resets[k]:
                    given = None if seeds is None else seeds[k]
                    env_seed = given if given is not None else None if seeded[i] else seed + g
                    obs, info = env.reset(seed=env_seed) if options is None else env.reset(seed=env_seed, options=options)
                    seeded[i] = True
                    rew_buf[g] = 0.0
                else:
                    obs, r, term[k], env_trunc[k], info = env.step(to_action(act_buf[g]))
                    rew_buf[g] = r
                if info:
                    infos[g] = info
                if multi:
                    player_term[k], player_trunc[k], alive_buf[g] = env.flags
                # -3: an image's channel axis, also behind a player axis
                if plain:
                    obs_buf[g] = np.moveaxis(obs, -1, -3) if transpose_obs else obs
                else:
                    for path, buf, image in writers:
                        leaf = get_leaf(obs, path)
                        buf[g] = np.moveaxis(leaf, -1, -3) if image else leaf
            terminated, truncated, elapsed = book.finish(local, resets, term, env_trunc)
            if multi:  # the pool's time limit truncates the players still in the episode
                terminated, truncated = player_term, player_trunc | (truncated[:, None] & ~player_term)
            term_buf[ids], trunc_buf[ids], elapsed_buf[ids] = terminated, truncated, elapsed
            conn.send_bytes(info_answer(ids_bytes, infos) if infos else DONE + ids_bytes)
    except (KeyboardInterrupt, EOFError, BrokenPipeError):
        pass
    except BaseException as e:  # everything else reaches the pool with its traceback
        send_failure(conn, e)
    finally:
        if shm is not None:
            shm.close()

"""The Atari backend: ALE's C++ threaded vector env (`ale_py.vector_env.AtariVectorEnv`).

ALE does the stepping, frame skip, max-pooling, resizing, stacking, noop starts, sticky actions
and EnvPool's auto-reset rule (an env whose episode ended resets on its next step, discarding the
action). This layer adds EnvPool's outputs: float32 rewards (clipped when asked, the raw reward
kept in info), channel-first RGB stacks, elapsed steps, and truncation never set with termination. With episodic_life, a life loss terminates the episode
and the next step starts the next one (elapsed_step 0) in the same game; unlike EnvPool, ALE
applies that step's action rather than discarding it.

ALE's `send` takes no env ids: it acts on the batch it returned last. So this backend is
`lockstep`: the pool checks that a send names exactly those envs (in any order) and the backend
reorders the actions to ALE's order.

Fairness: async pools keep their own queue and run ALE in sync mode only. ALE's own async mode
(its batch_size < num_envs) hands back whichever envs its worker threads finish first, and can
hold an env back for many recvs (ALE issue #641: 4 Pongs, batch 2, 2 threads, one env missing
from 13 recvs in a row), while EnvPool's recv returns envs in the order their steps completed. So
an async pool splits its envs into groups of g = gcd(num_envs, batch_size) consecutive envs (g =
batch_size when it divides num_envs), each group its own vector env in sync mode (batch_size = its
g envs; env i still seeded seed + i, so every env's trajectory is the one a sync pool gives).
ALE's `send` returns at once and its `recv` blocks until that group's envs are all done; this
backend sends each group of a batch in the order the groups were returned and receives the group
sent longest ago, so groups come back first in, first out: an env sent waits ceil(num_envs /
batch_size) recvs at most, whatever ALE's threads do, and no env waits behind one sent after it.
Threads: of the budget (num_threads; 0: ALE's default, min(batch_size, cores)), up to
m = min(groups, budget, max(2, budget // g)) groups are in ALE at once, so ALE steps one group
while the caller handles another; a group sent beyond that waits in this backend's queue and goes
to ALE as soon as a recv frees its place. Each group's vector env has t = min(g, budget) workers,
as `xla()`'s step runs one group at a time (ALE has no send-only XLA target), so m groups in
flight may run up to m * t workers, which time-share the cores (Pong, 16 envs, batch 8, 2 threads
on 2 cores: 2 groups of 8 in flight on 2 workers each ran 1.1x one group at a time, and xla()'s
step 1.9x groups of 1 worker). A sync pool is one vector env, as ALE runs it.
"""

from __future__ import annotations

import collections
import math
import os
from typing import Any

import numpy as np

from envs.atari.games import check_rom
from envs.atari.task import ALE_MAX_SEED, ATARI_INFO, AtariTask, channels_first, game_over
from envs.contract import Backend
from envs.episodes import EpisodeBook
from envs.ready import Batch, Chunk


class AtariBackend(Backend):
    lockstep = True  # a send must name exactly the envs of the last batch received
    extra_info = ATARI_INFO  # info beyond env_id, elapsed_step
    max_seed = ALE_MAX_SEED
    xla_owner: str | None = None  # why the Python API is locked: xla()'s step holds the counters (envs/atari/xla.py)

    def __init__(self, task: AtariTask):
        from ale_py.vector_env import AtariVectorEnv

        config = task.config
        check_rom(task.rom, config.task_id)  # ALE exits the process on a multi-player ROM
        o = task.option
        self.observation_space = task.observation_space
        self.action_space = task.action_space
        n = self._n = config.num_envs
        self._sync = not config.is_async
        self._seed = config.seed
        self._reward_clip = bool(o("reward_clip"))
        self._episodic_life = bool(o("episodic_life"))
        self._lives = np.zeros(n, np.int32)  # each env's lives at its last result (info["terminated"]: game over)
        self._rgb = not o("gray_scale")
        # Groups (module docstring): sync, one vector env of all envs; async, num_envs / g of g envs.
        g = self._group_size = n if self._sync else math.gcd(n, config.batch_size)
        if self._sync:
            threads, self._max_in_ale = config.num_threads, 1
        else:
            budget = config.num_threads or min(config.batch_size, os.cpu_count() or 1)
            groups = n // g
            # At least 2 groups in ALE where the budget allows, so ALE steps one while the caller
            # handles another; each group on the whole budget, as xla()'s step runs one at a time.
            self._max_in_ale = min(groups, budget, max(2, budget // g))  # groups in ALE at once
            threads = min(g, budget)
        offset = config.thread_affinity_offset
        self._vecs = [
            AtariVectorEnv(
                task.rom, g,
                batch_size=g,
                num_threads=threads,
                # Groups that can be in ALE together get disjoint cores.
                thread_affinity_offset=offset if offset < 0 else offset + (k % self._max_in_ale) * threads,
                # ALE counts these frames from the end of the noop reset: max_episode_steps agent steps.
                max_num_frames_per_episode=config.max_episode_steps * o("frame_skip"),
                repeat_action_probability=float(o("repeat_action_probability")),
                full_action_space=bool(o("full_action_space")),
                img_height=o("img_height"), img_width=o("img_width"), grayscale=not self._rgb,
                stack_num=o("stack_num"), frameskip=o("frame_skip"), maxpool=True, noop_max=o("noop_max"),
                # EnvPool's episodic_life: a life loss ends the episode and the game goes on. (ALE's
                # own episodic_life restarts the whole game on every life loss, a different task.)
                life_loss_info=bool(o("episodic_life")),
                reward_clipping=False,  # clipped here, so info keeps the raw reward
                use_fire_reset=bool(o("use_fire_reset")),
            )
            for k in range(n // g)
        ]
        self._vec = self._vecs[0]  # a sync pool's one vector env
        self._ales = [v.ale for v in self._vecs]  # the C++ interfaces: skip the wrapper's per-call asserts
        self._ale = self._ales[0]
        self._group_ids = [np.arange(k * g, (k + 1) * g, dtype=np.int32) for k in range(n // g)]
        self._paddle = np.ones(g, np.float32)
        self._book = EpisodeBook(n, None)  # ALE truncates; the book counts steps
        self._started = False
        self._seeds = np.full(n, -1, np.int64)  # each env's seed for its next reset (-1: keep its stream)
        self._ale_ids: np.ndarray | None = None  # sync: the batch ALE returned last, in its order
        self._pos = np.empty(n, np.int64)
        self._queued: list[Chunk] = []
        # Async: the groups' queue. A group is in ALE, waiting for a place in ALE, or out (returned to
        # the pool, not yet sent again); `in_ale` and `waiting` are in the order the groups were sent.
        self._in_ale: collections.deque[int] = collections.deque()
        self._waiting: collections.deque[tuple[int, np.ndarray]] = collections.deque()  # (group, its actions)
        self._out: list[int] = []  # in the order they were returned

    def make_xla(self, pool: Any) -> tuple[Any, Any, Any, Any]:
        """`pool.xla()`: step on ALE's compiled XLA step target (envs/atari/xla.py)."""
        from envs.atari.xla import make_atari_xla

        return make_atari_xla(pool, self)

    def prime_reset(self, ids: np.ndarray, seeds: list[int | None] | None, options: dict | None) -> None:
        """The seeds go to ALE's vector reset with the envs' next reset (-1: keep the stream)."""
        if self.xla_owner is not None:
            raise RuntimeError(self.xla_owner)
        if seeds is not None:
            for i in ids.tolist():
                if seeds[i] is not None:
                    self._seeds[i] = seeds[i]

    def send(self, ids: np.ndarray | None, action: np.ndarray | None, reset: bool) -> None:
        if self.xla_owner is not None:
            raise RuntimeError(self.xla_owner)
        if reset or not self._started:  # a fresh env's first step is its reset (EnvPool's rule)
            self._reset(ids if reset else None)
            return
        if not self._sync:
            self._send_groups(np.arange(self._n, dtype=np.int32) if ids is None else ids, action)
            return
        if ids is not None:  # all envs, permuted (the pool checks); ALE's sync order is env id order
            self._pos[ids] = np.arange(len(ids))
            action = action[self._pos[: self._n]]
        if action.dtype != np.int32:
            action = action.astype(np.int32)
        self._ale.send(action, self._paddle)

    def _send_groups(self, ids: np.ndarray, action: np.ndarray) -> None:
        """Async: the groups of the last batch (ids, in any order; the pool checks) go to ALE in the
        order they were returned, each with its actions in its env order."""
        g = self._group_size
        if len(ids) == g:  # one group (batch_size divides num_envs)
            groups = [int(ids[0]) // g]
        else:
            present = set((ids // g).tolist())
            groups = [k for k in self._out if k in present]
        if action.dtype != np.int32:
            action = action.astype(np.int32)
        in_order = len(groups) == 1 and ids[0] == groups[0] * g and bool((ids[1:] > ids[:-1]).all())
        if not in_order:
            self._pos[ids] = np.arange(len(ids))
        for p, k in enumerate(groups):
            self._out.remove(k)
            a = action if in_order else action[self._pos[self._group_ids[k]]]
            if len(self._in_ale) < self._max_in_ale:
                self._ales[k].send(a, self._paddle)
                self._in_ale.append(k)
            else:  # a copy: the caller may reuse its array before the group goes to ALE
                self._waiting.append((k, np.array(a)))

    def _reset(self, ids: np.ndarray | None) -> None:
        if ids is None or not self._started:
            first = not self._started
            self._started = True
            self._book.done[:] = True  # every env's next result is its reset
            self._drain()
            for k, vec in enumerate(self._vecs):
                start, end = k * self._group_size, (k + 1) * self._group_size
                seed = self._seeds[start:end].copy()  # a seeded reset's, else -1: keep
                if first:  # env i's first seed is seed + i
                    seed = np.where(seed >= 0, seed, np.arange(self._seed + start, self._seed + end))
                obs, info = vec.reset(seed=seed if (seed >= 0).any() else None)  # sync: the group, in env id order
                if start:
                    info["env_id"] = self._group_ids[k].copy()
                self._book.reset(info["env_id"])
                self._queued.append(self._reset_chunk(obs, info))
                if not self._sync:
                    self._out.append(k)
        else:  # sync mode only (the pool checks): ALE resets a masked subset and returns every env
            mask = np.zeros(self._n, bool)
            mask[ids] = True
            seed = self._seeds[mask]  # one per env reset, in env id order, as ALE takes them
            obs, info = self._vec.reset(seed=seed if (seed >= 0).any() else None, options={"reset_mask": mask})
            self._book.reset(ids)
            self._queued.append(self._reset_chunk(obs[ids], {k: v[ids] for k, v in info.items()}))
        self._seeds[:] = -1

    def _drain(self) -> None:
        """Async: receive (and drop) the groups still in ALE, so each vector env is idle."""
        while self._in_ale:
            self._ales[self._in_ale.popleft()].recv()
        self._waiting.clear()
        self._out.clear()

    def _reset_chunk(self, obs: np.ndarray, info: dict) -> Chunk:
        env_id = info["env_id"]
        if self._sync:
            self._ale_ids = env_id
        n = len(env_id)
        zeros = np.zeros(n, np.float32)
        self._lives[env_id] = info["lives"]
        extra = {"lives": info["lives"], "reward": zeros.copy(), "terminated": np.zeros(n, np.int32)}
        batch = Batch(env_id, self._obs(obs), zeros, np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, np.int32), extra)
        return Chunk(env_id, batch, self._in_order(env_id))

    def collect(self, block: bool) -> list[Chunk]:
        if self.xla_owner is not None:
            raise RuntimeError(self.xla_owner)
        if self._queued:
            out, self._queued = self._queued, []
            return out
        if self._sync:
            obs, reward, terminated, env_truncated, info = self._ale.recv()
            env_id = self._ale_ids = info["env_id"]
        else:  # the group sent longest ago; then the next waiting group takes its place in ALE
            if not self._in_ale:
                raise RuntimeError("no Atari env in flight")
            k = self._in_ale[0]
            obs, reward, terminated, env_truncated, info = self._ales[k].recv()
            self._in_ale.popleft()
            if self._waiting:
                k2, action = self._waiting.popleft()
                self._ales[k2].send(action, self._paddle)
                self._in_ale.append(k2)
            self._out.append(k)
            env_id = self._group_ids[k].copy()  # the caller owns what it receives
        return [self._chunk(env_id, obs, reward, terminated, env_truncated, info["lives"])]

    def _chunk(self, env_id: np.ndarray, obs: np.ndarray, reward: np.ndarray, terminated: np.ndarray,
               env_truncated: np.ndarray, lives: np.ndarray) -> Chunk:
        resets = self._book.done[env_id]
        if not np.count_nonzero(resets):
            resets = None
        over = game_over(terminated, lives, self._lives[env_id], self._episodic_life)
        self._lives[env_id] = lives
        terminated, truncated, elapsed = self._book.finish(env_id, resets, terminated, env_truncated)
        raw = reward.astype(np.float32)
        reward = np.sign(raw) if self._reward_clip else raw
        batch = Batch(env_id, self._obs(obs), reward, terminated, truncated, elapsed,
                      {"lives": lives, "reward": raw, "terminated": over})
        return Chunk(env_id, batch, self._in_order(env_id))

    def _in_order(self, env_id: np.ndarray) -> bool:
        return self._sync and len(env_id) == self._n and bool((env_id[1:] > env_id[:-1]).all())

    def _obs(self, obs: np.ndarray) -> np.ndarray:
        return channels_first(obs) if self._rgb else obs

    def gather(self, ids: np.ndarray | None) -> Batch:
        raise AssertionError("Atari chunks always carry their batch")

    def close(self) -> None:
        self._queued = []
        vecs, self._vecs, self._ales, self._vec, self._ale = self._vecs, [], [], None, None
        try:  # let ALE finish the groups it is stepping before it goes
            while self._in_ale:
                vecs[self._in_ale.popleft()].ale.recv()
        except Exception:  # noqa: BLE001 - closing regardless
            pass
        self._in_ale.clear()
        self._waiting.clear()
        for vec in vecs:
            vec.close()

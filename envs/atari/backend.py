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
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envs.atari.games import check_rom
from envs.atari.task import ATARI_INFO, AtariTask
from envs.episodes import EpisodeBook
from envs.ready import Batch, Chunk


class AtariBackend:
    lockstep = True  # a send must name exactly the envs of the last batch received
    extra_info = ATARI_INFO  # info beyond env_id, elapsed_step
    xla_owner: str | None = None  # why the Python API is locked: xla()'s step holds the counters (envs/atari/xla.py)

    def __init__(self, task: AtariTask):
        from ale_py.vector_env import AtariVectorEnv

        config = task.config
        check_rom(task.rom, config.task_id)  # ALE exits the process on a multi-player ROM
        o = task.option
        self.observation_space = task.observation_space
        self.action_space = task.action_space
        self._n = config.num_envs
        self._sync = not config.is_async
        self._seed = config.seed
        self._reward_clip = bool(o("reward_clip"))
        self._rgb = not o("gray_scale")
        self._vec = AtariVectorEnv(
            task.rom, config.num_envs,
            batch_size=config.batch_size,
            num_threads=config.num_threads,
            thread_affinity_offset=config.thread_affinity_offset,
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
        self._ale = self._vec.ale  # the C++ interface: skips the wrapper's per-call asserts
        self._paddle = np.ones(config.batch_size, np.float32)
        self._book = EpisodeBook(config.num_envs, None)  # ALE truncates; the book counts steps
        self._started = False
        self._ale_ids: np.ndarray | None = None  # the batch ALE returned last, in its order
        self._pos = np.empty(config.num_envs, np.int64)
        self._queued: list[Chunk] = []

    def make_xla(self, pool: Any) -> tuple[Any, Any, Any, Any]:
        """`pool.xla()`: step on ALE's compiled XLA step target (envs/atari/xla.py)."""
        from envs.atari.xla import make_atari_xla

        return make_atari_xla(pool, self)

    def send(self, ids: np.ndarray | None, action: np.ndarray | None, reset: bool) -> None:
        if self.xla_owner is not None:
            raise RuntimeError(self.xla_owner)
        if reset or not self._started:  # a fresh env's first step is its reset (EnvPool's rule)
            self._reset(ids if reset else None)
            return
        if ids is not None and not np.array_equal(ids, self._ale_ids):
            self._pos[ids] = np.arange(len(ids))
            action = action[self._pos[self._ale_ids]]
        if action.dtype != np.int32:
            action = action.astype(np.int32)
        self._ale.send(action, self._paddle)

    def _reset(self, ids: np.ndarray | None) -> None:
        if ids is None or not self._started:
            seed = np.arange(self._seed, self._seed + self._n) if not self._started else None
            obs, info = self._vec.reset(seed=seed)  # async: one batch now, the others through recv
            self._started = True
            self._book.done[:] = True  # every env's next result is its reset
            self._book.reset(info["env_id"])
            self._queued.append(self._reset_chunk(obs, info))
        else:  # sync mode only (the pool checks): ALE resets a masked subset and returns every env
            mask = np.zeros(self._n, bool)
            mask[ids] = True
            obs, info = self._vec.reset(options={"reset_mask": mask})
            self._book.reset(ids)
            self._queued.append(self._reset_chunk(obs[ids], {k: v[ids] for k, v in info.items()}))

    def _reset_chunk(self, obs: np.ndarray, info: dict) -> Chunk:
        env_id = info["env_id"]
        self._ale_ids = env_id
        n = len(env_id)
        zeros = np.zeros(n, np.float32)
        extra = {"lives": info["lives"], "reward": zeros.copy()}
        batch = Batch(env_id, self._obs(obs), zeros, np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, np.int32), extra)
        return Chunk(env_id, batch, self._in_order(env_id))

    def collect(self, block: bool) -> list[Chunk]:
        if self.xla_owner is not None:
            raise RuntimeError(self.xla_owner)
        if self._queued:
            out, self._queued = self._queued, []
            return out
        obs, reward, terminated, env_truncated, info = self._ale.recv()
        env_id = info["env_id"]
        self._ale_ids = env_id
        resets = self._book.done[env_id]
        if not np.count_nonzero(resets):
            resets = None
        terminated, truncated, elapsed = self._book.finish(env_id, resets, terminated, env_truncated)
        raw = reward.astype(np.float32)
        reward = np.sign(raw) if self._reward_clip else raw
        batch = Batch(env_id, self._obs(obs), reward, terminated, truncated, elapsed, {"lives": info["lives"], "reward": raw})
        return [Chunk(env_id, batch, self._in_order(env_id))]

    def _in_order(self, env_id: np.ndarray) -> bool:
        return self._sync and len(env_id) == self._n and bool((env_id[1:] > env_id[:-1]).all())

    def _obs(self, obs: np.ndarray) -> np.ndarray:
        if not self._rgb:
            return obs
        n, stack, h, w, c = obs.shape  # ALE: (N, stack, H, W, 3); EnvPool: (N, 3 * stack, H, W)
        return np.ascontiguousarray(obs.transpose(0, 1, 4, 2, 3)).reshape(n, stack * c, h, w)

    def gather(self, ids: np.ndarray | None) -> Batch:
        raise AssertionError("Atari chunks always carry their batch")

    def close(self) -> None:
        self._queued = []
        vec, self._vec, self._ale = self._vec, None, None
        if vec is not None:
            vec.close()

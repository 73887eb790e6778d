"""The native Atari backend: ALE's per-env preprocessing stepped on our own threads (envs/atari/kernel.c).

Each env is ALE's `PreprocessedEnv`, the class ALE's vector env steps (frame skip, max-pooling,
resizing, stacking, noop starts, sticky actions, FIRE reset, the frame limit), so the frames,
rewards and lives are ALE's own, bit for bit (tests/test_atari_native.py steps both side by side).
What the kernel adds over ALE's vector env is EnvPool's freedom of env ids: a job is any set of
envs, so a sync pool steps or resets any subset of its envs (EnvPool's partial steps), and an
async pool's batches come back in the order they were sent, first in, first out, whatever their
envs. A send starts a kernel job and returns: ALE runs while the caller computes its next
actions, and `collect` waits for the oldest job, the caller stepping envs no worker has taken.

Above the kernel, the contract is the vector backend's (envs/atari/backend.py): float32 rewards
(sign-clipped with reward_clip, the raw reward in info), channel-first RGB stacks, elapsed steps,
truncation at ALE's frame limit and never with termination, EnvPool's `terminated` info (game
over) and episodic_life as a life loss that ends the episode while the game goes on (ALE applies
the next step's action, as its vector env does). An env resets where the caller resets it or its
game ended (EnvPool's auto-reset rule); env i's first reset is seeded seed + i.
"""

from __future__ import annotations

import ctypes
import os

import numpy as np

from envs.atari.games import check_rom
from envs.atari.task import ALE_MAX_SEED, ATARI_INFO, AtariTask, channels_first, game_over
from envs.contract import Backend
from envs.episodes import EpisodeBook
from envs.native.jobs import KernelJobs
from envs.ready import Batch, Chunk


class Job:
    """A kernel job's arrays for n envs, and the kernel's arguments pointing at them."""

    def __init__(self, n: int, frame_shape: tuple[int, ...]):
        self.n = n
        self.ids = np.zeros(n, np.int32)
        self.action = np.zeros(n, np.int32)
        self.explicit = np.zeros(n, bool)  # the caller's reset
        self.reset = np.zeros(n, np.uint8)
        self.seed = np.full(n, -1, np.int32)
        self.obs = np.zeros((n, *frame_shape), np.uint8)
        self.reward = np.zeros(n, np.int32)
        self.terminated = np.zeros(n, np.uint8)
        self.truncated = np.zeros(n, np.uint8)
        self.lives = np.zeros(n, np.int32)
        self.frame_number = np.zeros(n, np.int32)
        self.episode_frame_number = np.zeros(n, np.int32)
        a = lambda x: x.ctypes.data  # noqa: E731
        self.inputs = (a(self.ids), a(self.action), a(self.reset), a(self.seed))
        self.outputs = (a(self.obs), a(self.reward), a(self.terminated), a(self.truncated), a(self.lives),
                        a(self.frame_number), a(self.episode_frame_number))  # fmt: skip


class AtariNativeBackend(KernelJobs, Backend):
    extra_info = ATARI_INFO  # info beyond env_id, elapsed_step
    max_seed = ALE_MAX_SEED

    def __init__(self, task: AtariTask, lib: ctypes.CDLL):
        from ale_py import roms

        config = self._config = task.config
        self._task = task
        check_rom(task.rom, config.task_id)  # ALE exits the process on a multi-player ROM
        o = task.option
        self.observation_space = task.observation_space
        self.action_space = task.action_space
        n = self._n = config.num_envs
        self._seed = config.seed
        self._reward_clip = bool(o("reward_clip"))
        self._episodic_life = bool(o("episodic_life"))
        self._rgb = not o("gray_scale")
        stack, h, w = o("stack_num"), o("img_height"), o("img_width")
        self._frame_shape = (stack, h, w, 3) if self._rgb else (stack, h, w)  # ALE's layout, per env
        # num_threads threads step envs: the caller is one of them while it waits, so num_threads - 1
        # workers start (ALE's vector env: min(batch_size, cores) threads by default)
        threads = config.num_threads or min(config.batch_size, os.cpu_count() or 1)
        err = ctypes.create_string_buffer(512)
        self._lib = lib
        self._init_jobs()
        self._pool = lib.atp_create(
            str(roms.get_rom_path(task.rom)).encode(), n, h, w, o("frame_skip"), int(not self._rgb), stack, o("noop_max"),
            int(bool(o("use_fire_reset"))),
            # EnvPool's episodic_life: a life loss ends the episode and the game goes on (ALE's
            # life_loss_info; ALE's own episodic_life restarts the whole game on every life loss)
            int(self._episodic_life),
            config.max_episode_steps * o("frame_skip"),  # ALE counts frames from the end of the noop reset
            float(o("repeat_action_probability")), int(bool(o("full_action_space"))), threads - 1,
            config.thread_affinity_offset, err, len(err),
        )  # fmt: skip
        if not self._pool:
            raise RuntimeError(f"{config.task_id}: ALE could not make the pool's envs: {err.value.decode(errors='replace')}")
        if lib.atp_num_actions(self._pool) != task.action_space.n:
            self.close()
            raise RuntimeError(f"{config.task_id}: the kernel's envs have another action set than ALE's interface "
                               f"({task.action_space.n} actions)")  # fmt: skip
        self._lives = np.zeros(n, np.int32)  # each env's lives at its last result
        self._book = EpisodeBook(n, None)  # ALE truncates at its frame limit; the book counts steps
        self._fresh = np.ones(n, bool)  # never reset: its first reset is seeded seed + i
        self._seeds = np.full(n, -1, np.int64)  # each env's seed for its next reset (-1: keep its stream)
        self._all_ids = np.arange(n, dtype=np.int32)
        self._async = config.is_async
        self._returned = np.zeros(n, np.int64)  # when each env's last result was made (the order of results)
        self._turn = 0

    def xla_backend(self) -> Backend:
        """ALE's vector env on the same task: its XLA step target runs inside a jitted program
        (envs/atari/xla.py), where this kernel has none and `xla()` would run on host callbacks."""
        from envs.atari.backend import AtariBackend

        return AtariBackend(self._task)

    def prime_reset(self, ids: np.ndarray, seeds: list[int | None] | None, options: dict | None) -> None:
        """Env i's next reset reseeds its ALE with seeds[i] (ALE's own reseeding: the ROM reloaded)."""
        if seeds is not None:
            for i in ids.tolist():
                if seeds[i] is not None:
                    self._seeds[i] = seeds[i]

    # ------------------------------------------------------------------ the kernel's jobs (envs/native/jobs.py)
    def _new_job(self, n: int) -> Job:
        return Job(n, self._frame_shape)

    def _job_done(self, number: int) -> bool:
        return bool(self._lib.atp_done(self._pool, number))

    def _wait_job(self, number: int) -> None:
        self._lib.atp_wait(self._pool, number)
        failed = self._lib.atp_error(self._pool)
        if failed:
            raise RuntimeError(f"{self._config.task_id}: ALE failed stepping the pool's envs: {failed.decode(errors='replace')}")

    def _start(self) -> None:
        """Merges the queued sends into one kernel job and starts it."""
        queued, self._queued = self._queued, []
        all_ids = [self._all_ids if ids is None else ids for ids, _ in queued]
        job = self._buffers(sum(map(len, all_ids)))
        if len(queued) == 1:
            job.ids[:] = all_ids[0]
            action = queued[0][1]
            job.explicit[:] = action is None
            if action is not None:
                job.action[:] = action
        else:
            job.ids[:] = np.concatenate(all_ids)
            pos = 0
            for (_, a), ids in zip(queued, all_ids):
                k = len(ids)
                job.explicit[pos:pos + k] = a is None
                if a is not None:
                    job.action[pos:pos + k] = a
                pos += k
        ids = job.ids
        if self._async and len(queued) == 1 and len(ids) > 1:
            # a batch's envs go back in the order they were returned, whatever the caller's order, so
            # they come back in that order too and take turns equally (the vector backend's rule)
            order = np.argsort(self._returned.take(ids), kind="stable")
            if (order[1:] < order[:-1]).any():
                ids[:], job.action[:], job.explicit[:] = ids[order], job.action[order], job.explicit[order]
        job.reset[:] = job.explicit  # the kernel resets an env whose game ended too (ALE's rule)
        seed = self._seeds.take(ids)
        fresh = self._fresh.take(ids)
        if np.count_nonzero(fresh):
            seed = np.where((seed < 0) & fresh, self._seed + ids, seed)
            self._fresh[ids] = False
        job.seed[:] = seed
        self._seeds[ids] = -1
        self._in_flight.append((self._lib.atp_start(self._pool, *job.inputs, job.n, *job.outputs), job))

    def _finish(self, job: Job) -> Chunk:
        ids = job.ids.copy()  # the buffers serve the next job
        self._returned[ids] = np.arange(self._turn, self._turn + len(ids))
        self._turn += len(ids)
        resets = self._book.done.take(ids) | job.explicit  # results that start an episode
        if not np.count_nonzero(resets):
            resets = None
        terminated = job.terminated.astype(bool)
        lives = job.lives.copy()
        over = game_over(terminated, lives, self._lives.take(ids), self._episodic_life)
        self._lives[ids] = lives
        terminated, truncated, elapsed = self._book.finish(ids, resets, terminated, job.truncated.astype(bool))
        raw = job.reward.astype(np.float32)
        reward = np.sign(raw) if self._reward_clip else raw
        obs = channels_first(job.obs) if self._rgb else job.obs.copy()
        batch = Batch(ids, obs, reward, terminated, truncated, elapsed, {"lives": lives, "reward": raw, "terminated": over})
        in_order = len(ids) == self._n and bool((ids[1:] > ids[:-1]).all())
        return Chunk(ids, batch, in_order)

    def gather(self, ids: np.ndarray | None) -> Batch:
        raise AssertionError("Atari chunks always carry their batch")

    def close(self) -> None:
        self._queued = []
        pool, self._pool = getattr(self, "_pool", None), None
        if pool:
            self._lib.atp_destroy(pool)  # waits for the jobs in flight
        self._in_flight.clear()

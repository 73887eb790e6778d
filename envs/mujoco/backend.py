"""The native MuJoCo backend: Gymnasium's MuJoCo tasks (v5, and EnvPool's v4/v3/v2 ids), all envs
stepped by one kernel call.

Each env is an `mujoco.MjData` of one shared model; a pool step hands the batch to the kernel
(envs/mujoco/kernel.c), whose threads run Gymnasium's exact sequence of MuJoCo calls per env
and copy the fields the task reads into batched arrays; the task's numpy (envs/mujoco/tasks.py)
then makes observations, rewards, termination and info for the whole batch. A send starts the
kernel and returns: the physics runs while the caller computes its next actions, and `collect`
waits for it. Resets draw each env's noise from its own generator (env i seeded seed + i), as
the Gymnasium env draws it. With render_mode="rgb_array", envs/mujoco/render.py draws each env's
MjData between steps.
"""

from __future__ import annotations

import copy
import ctypes
import dataclasses
import importlib.util
import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from envs.config import PoolConfig
from envs.contract import Backend
from envs.episodes import EpisodeBook
from envs.mujoco.legacy import LEGACY_TASKS
from envs.mujoco.log import route_warnings
from envs.mujoco.render import MujocoRenderer, check_render_kwargs, envpool_render_names
from envs.mujoco.tasks import RENDER_KWARGS, TASKS, Task
from envs.native.jobs import KernelJobs
from envs.ready import Batch, Chunk

INSTALL_HINT = "MuJoCo tasks need mujoco: pip install -e '.[mujoco]'"
STACK_KWARGS = {"frame_stack": 1}  # EnvPool's: observations of the last k steps, stacked on a leading axis
def mujoco_available() -> bool:
    """Whether the mujoco package is installed (found without importing it)."""
    return importlib.util.find_spec("mujoco") is not None


def xml_path(xml_file: str) -> str:
    """Gymnasium's rule: an absolute path as is, else a file of Gymnasium's MuJoCo assets."""
    if xml_file.startswith(os.path.sep):
        return xml_file
    import gymnasium.envs.mujoco

    return str(Path(gymnasium.envs.mujoco.__file__).resolve().parent / "assets" / xml_file)


def load_model(xml_file: str) -> Any:
    import mujoco

    path = xml_path(xml_file)
    if not os.path.exists(path):
        raise ValueError(f"xml_file {xml_file!r}: no such file ({path})")
    route_warnings()
    return mujoco.MjModel.from_xml_path(path)


@dataclasses.dataclass(frozen=True)
class MujocoTask:
    config: PoolConfig
    task_cls: type[Task]
    model: Any
    observation_space: gym.spaces.Box
    action_space: gym.spaces.Box
    extra_info: dict[str, np.dtype]
    camera_id: int  # the camera camera_id / camera_name picked, else the model's "track" camera (-1: the free one)
    nstep: int  # physics steps per env step (frame_skip; dm_control's n_sub_steps)


def _check_kwargs(task_id: str, kw: dict[str, Any], defaults: dict[str, Any]) -> None:
    for name, default in defaults.items():
        v = kw[name]
        if name in ("frame_skip", "frame_stack"):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{task_id}: {name} must be an int >= 1, got {v!r}")
        elif name == "xml_file":
            if not isinstance(v, str):
                raise ValueError(f"{task_id}: xml_file must be a str (a path, or a file of Gymnasium's assets), got {v!r}")
        elif name == "main_body":
            if isinstance(v, bool) or not isinstance(v, (int, np.integer, str)):
                raise ValueError(f"{task_id}: main_body must be a body id or name, got {v!r}")
        elif isinstance(default, bool):
            if not isinstance(v, (bool, np.bool_)):
                raise ValueError(f"{task_id}: {name} must be a bool, got {v!r}")
        elif isinstance(default, tuple):
            if not (isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)):
                raise ValueError(f"{task_id}: {name} must be a (low, high) pair of numbers, got {v!r}")
        elif isinstance(default, float):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)) or not np.isfinite(v):
                raise ValueError(f"{task_id}: {name} must be a finite number, got {v!r}")


def configure(task_id: str, env_type: str, kwargs: dict[str, Any]) -> MujocoTask:
    """The validated config, model and spaces of a native MuJoCo pool."""
    task_cls = TASKS.get(task_id) or LEGACY_TASKS[task_id]
    kwargs = envpool_render_names(task_id, kwargs)
    config = PoolConfig.create(task_id, env_type, "mujoco", task_cls.max_episode_steps, kwargs,
                               {**task_cls.defaults, **RENDER_KWARGS, **STACK_KWARGS})
    kw = dict(config.task_kwargs)
    _check_kwargs(task_id, kw, {**task_cls.defaults, **STACK_KWARGS})
    model = load_model(kw["xml_file"])
    camera_id = check_render_kwargs(task_id, kw, model)
    if "main_body" in kw:
        try:
            model.body(kw["main_body"])
        except (KeyError, IndexError, ValueError) as e:
            raise ValueError(f"{task_id}: main_body {kw['main_body']!r} is not a body of the model") from e
    try:
        probe = task_cls(kw, model, np.zeros(model.nq), np.zeros(model.nv))
    except KeyError as e:  # a user's xml_file without a body the task reads
        raise ValueError(f"{task_id}: the model of xml_file {kw['xml_file']!r} lacks {e}") from e
    low, high = model.actuator_ctrlrange.T.astype(np.float32)  # MujocoEnv._set_action_space
    action_space = gym.spaces.Box(low=low, high=high, dtype=np.float32)
    # Humanoid's tendon_length and tendon_velocity have a value per tendon: a subarray dtype
    info = {k: np.dtype((np.float64, (model.ntendon,))) if k in task_cls.vector_info else np.dtype(np.float64)
            for k in task_cls.info_keys}
    # EnvPool's test info: each env's state at the start of its episode (what its align tests set
    # Gymnasium's env to)
    info.update(qpos0=np.dtype((np.float64, (model.nq,))), qvel0=np.dtype((np.float64, (model.nv,))))
    space, k = probe.observation_space(), int(kw["frame_stack"])
    if k > 1:  # EnvPool's frame stack: the last k observations, oldest first
        space = gym.spaces.Box(np.repeat(space.low[None], k, 0), np.repeat(space.high[None], k, 0), dtype=space.dtype)
    return MujocoTask(config, task_cls, model, space, action_space, info, camera_id, int(kw["frame_skip"]))


class Job:
    """A kernel job's arrays for n envs, and the kernel's arguments pointing at them."""

    def __init__(self, n: int, model: Any, sizes: list[int], frame_skip: int, action_dtype: np.dtype,
                 task_width: int = 0):
        self.n = n
        self.ids = np.zeros(n, np.int32)
        self.explicit = np.zeros(n, bool)
        self.reset = np.zeros(n, bool)
        self.flags = np.zeros(n, np.uint8)
        self.action = np.zeros((n, model.nu), action_dtype)
        self.ctrl = np.zeros((n, model.nu))
        self.qpos = np.zeros((n, model.nq))
        self.qvel = np.zeros((n, model.nv))
        self.out = [np.zeros((n, s)) for s in sizes]
        self.out_ptrs = np.array([o.ctypes.data for o in self.out], np.uintp)
        self.unstable = np.zeros(n, np.int32)
        # a compiled task's rows (reward, then the observation), written by the kernel's threads
        self.task_out = np.zeros((n, task_width)) if task_width else None
        a = lambda x: x.ctypes.data  # noqa: E731
        self.args = (a(self.flags), a(self.ids), n, frame_skip, a(self.ctrl), a(self.qpos), a(self.qvel), a(self.out_ptrs),
                     a(self.unstable), a(self.task_out) if task_width else None)


class MujocoBackend(KernelJobs, Backend):
    """Gymnasium's v5 tasks; envs/mujoco/dmc/backend.py's DmcBackend serves dm_control's suite
    on the same kernel, through the hooks marked below."""

    # the kernel's MODE_GYM: Gymnasium's mj_step x frame_skip, then mj_rnePostConstraint; MODE_GYM_NO_POST
    # without it (post_constraint=False, the pre-v5 ids' default)
    kernel_mode = 0
    action_dtype = np.dtype(np.float32)  # the action Gymnasium's env gets through worker processes
    _task_width = 0  # doubles a compiled task writes per env (DmcBackend's compiled tasks); 0: none

    def __init__(self, task: MujocoTask, lib: ctypes.CDLL):
        import mujoco

        from envs.mujoco.build import mujoco_functions

        config = self._config = task.config
        n = self._n = config.num_envs
        self.observation_space, self.action_space = task.observation_space, task.action_space
        self.extra_info = dict(task.extra_info)
        self._model = model = task.model
        kw = dict(config.task_kwargs)
        self._frame_skip = task.nstep
        self._models = self._env_models(model, n)
        self._datas = [mujoco.MjData(m) for m in self._models]
        self.task = self._make_task(task, kw)
        self._rngs = self._make_rngs(config.seed, n)
        self._book = EpisodeBook(n, config.max_episode_steps)
        self._stacks = self._make_stacks(task, kw)  # each env's last k observations per key, oldest first
        # EnvPool's test info, per env, as of its episode's start (set by the resets)
        self._test_info = {k: np.zeros((n, *task.extra_info[k].shape)) for k in self._test_keys(task)}
        self._renderer = None  # before the kernel's threads start: a GL backend that fails leaves nothing running
        if self._wants_renderer(task):
            self._renderer = self._make_renderer(task, kw)
        fields = self.task.fields
        self._sizes = [getattr(self._datas[0], f).size for f in fields]
        # each env's last value of the fields its next step reads as "before"
        self._last = {f: np.zeros((n, s)) for f, s in zip(fields, self._sizes) if f in self.task.before_fields}
        # Addresses the kernel reads: the mjModel and mjData of each env and its fields (stable for its lifetime).
        self._model_ptrs = np.array([m._address for m in self._models], np.uintp)
        self._data_ptrs = np.array([d._address for d in self._datas], np.uintp)
        self._field_ptrs = np.array([[getattr(d, f).ctypes.data for f in fields] for d in self._datas], np.uintp)
        self._field_size = np.array(self._sizes, np.int32)
        fn = mujoco_functions()
        threads = config.num_threads or min(config.batch_size, os.cpu_count() or 1)
        # num_threads threads step envs: the caller is one of them while it waits (it steps the envs no
        # worker has taken: `help` below), so num_threads - 1 workers start; a worker waits for jobs
        # spinning, and one more thread than the cores given would take turns with the caller
        workers = threads - 1
        self._lib = lib
        self._pool = lib.mjp_create(
            self._model_ptrs.ctypes.data, self._data_ptrs.ctypes.data, self._field_ptrs.ctypes.data,
            self._field_size.ctypes.data, n, len(fields), fn["mj_step"], fn["mj_rnePostConstraint"], fn["mj_resetData"],
            fn["mj_forward"], fn["mj_step1"], fn["mj_step2"], self._kernel_mode(kw), workers, config.thread_affinity_offset,
            1,  # the caller steps envs too while it waits
        )
        if not self._pool:
            raise MemoryError("the MuJoCo pool could not be created")
        if mujoco.get_mjcb_time() is None:  # the timer set is the bindings' own, not the user's: off (kernel.c)
            lib.mjp_set_timer(self._pool, fn["mjcb_time"], ctypes.c_void_p.from_address(fn["mjcb_time"]).value)
        self._all_ids = np.arange(n, dtype=np.int32)
        self._init_jobs()

    # ------------------------------------------------------------------ hooks (DmcBackend's differ)
    def _make_stacks(self, task: MujocoTask, kw: dict[str, Any]) -> dict[str, np.ndarray] | None:
        """frame_stack k > 1: each env's last k observations (per observation key), else None."""
        k = int(kw.get("frame_stack", 1))
        return {"obs": np.zeros((self._n, *task.observation_space.shape))} if k > 1 else None

    def _stacked(self, obs: dict[str, np.ndarray], ids: np.ndarray, reset: np.ndarray) -> dict[str, np.ndarray]:
        """EnvPool's frame stack: a reset fills an env's stack with its first observation; a step
        drops the oldest and appends the new one."""
        out = {}
        for key, new in obs.items():
            stack = self._stacks[key]
            rows = stack[ids]
            rows[:, :-1] = rows[:, 1:]
            rows[:, -1] = new
            rows[reset] = new[reset][:, None]
            stack[ids] = rows
            out[key] = rows
        return out

    def _test_keys(self, task: MujocoTask) -> tuple[str, ...]:
        """The info keys that hold EnvPool's test info (the rest: the task's step info)."""
        return ("qpos0", "qvel0")

    def _kernel_mode(self, kw: dict[str, Any]) -> int:
        return self.kernel_mode if kw.get("post_constraint", True) else 3  # MODE_GYM_NO_POST

    def _env_models(self, model: Any, n: int) -> list[Any]:
        """Each env's mjModel: one shared (no v5 task changes its model)."""
        return [model] * n

    def _make_task(self, task: MujocoTask, kw: dict[str, Any]) -> Any:
        return task.task_cls(kw, task.model, self._datas[0].qpos.copy(), self._datas[0].qvel.copy())

    def _make_rngs(self, seed: int, n: int) -> list[Any]:
        return [np.random.default_rng(seed + i) for i in range(n)]

    def _wants_renderer(self, task: MujocoTask) -> bool:
        return task.config.render_mode is not None

    def _make_renderer(self, task: MujocoTask, kw: dict[str, Any]) -> Any:
        return MujocoRenderer(task.task_cls.gymnasium_id(), task.model, kw, task.camera_id)

    def _reset_rows(self, job: Job, rows: np.ndarray) -> None:
        """Job rows `rows` reset: each env's noise drawn here, the reset itself done by the kernel
        (flag 1: mj_resetData, the drawn qpos and qvel, mj_forward)."""
        for k in rows.tolist():
            i = job.ids[k]
            job.qpos[k], job.qvel[k] = self.task.reset_noise(self._rngs[i])
            self._test_info["qpos0"][i], self._test_info["qvel0"][i] = job.qpos[k], job.qvel[k]

    def _results(self, job: Job, ids: np.ndarray, reset: np.ndarray, after: dict[str, np.ndarray]) -> tuple:
        """(obs, reward, terminated, info) of a finished job, from the fields it copied out."""
        before = {f: v.take(ids, 0) for f, v in self._last.items()}
        reward, terminated, info = self.task.step(before, after, job.action)
        obs = self.task.observe(after)
        if self._stacks is not None:
            obs = self._stacked({"obs": obs}, ids, reset)["obs"]
        if np.count_nonzero(reset):
            reset_info = self.task.reset_info({f: v[reset] for f, v in after.items()})
            for k, v in info.items():
                v[reset] = reset_info[k]
            reward[reset] = 0.0
            terminated = terminated & ~reset
        info.update({k: v.take(ids, 0) for k, v in self._test_info.items()})
        return obs, reward, terminated, info

    # ------------------------------------------------------------------ the pool's backend API
    def prime_reset(self, ids: np.ndarray, seeds: list[int | None] | None, options: dict | None) -> None:
        """Env i's reset noise comes from default_rng(seeds[i]), as Gymnasium's reset(seed=...)."""
        if seeds is not None:
            for i in ids.tolist():
                if seeds[i] is not None:
                    self._rngs[i] = np.random.default_rng(seeds[i])

    # ------------------------------------------------------------------ the kernel's jobs (envs/native/jobs.py)
    def _new_job(self, n: int) -> Job:
        return Job(n, self._model, self._sizes, self._frame_skip, self.action_dtype, self._task_width)

    def _job_done(self, number: int) -> bool:
        return bool(self._lib.mjp_done(self._pool, number))

    def _wait_job(self, number: int) -> None:
        self._lib.mjp_wait(self._pool, number)

    def _start(self) -> None:
        """Merges the queued sends into one kernel job and starts it."""
        queued, self._queued = self._queued, []
        if len(queued) == 1:
            ids, action = queued[0]
            n = self._n if ids is None else len(ids)
            job = self._buffers(n)
            job.ids[:] = self._all_ids if ids is None else ids
            if action is None:  # the caller's reset
                job.reset[:] = True
            else:  # EnvPool's auto-reset: an env whose episode ended resets on its next step instead of stepping
                job.action[:] = action  # as action_dtype
                job.reset[:] = self._book.done.take(job.ids)
        else:
            all_ids = [self._all_ids if ids is None else ids for ids, _ in queued]
            job = self._buffers(sum(map(len, all_ids)))
            job.ids[:] = np.concatenate(all_ids)
            pos = 0
            for (_, a), ids in zip(queued, all_ids):
                k = len(ids)
                job.explicit[pos:pos + k] = a is None  # the caller's reset (reset(), async_reset(), reset(env_id))
                if a is not None:
                    job.action[pos:pos + k] = a
                pos += k
            np.logical_or(job.explicit, self._book.done.take(job.ids), out=job.reset)  # and the auto-resets
        reset = job.reset
        job.flags[:] = reset
        if np.count_nonzero(reset):
            self._reset_rows(job, np.flatnonzero(reset))
        job.ctrl[:] = job.action  # data.ctrl[:] = action, as the Gymnasium env (and dm_control's Task) does
        self._in_flight.append((self._lib.mjp_start(self._pool, *job.args), job))

    def _finish(self, job: Job) -> Chunk:
        ids, reset = job.ids.copy(), job.reset.copy()  # the buffers serve the next job
        after = dict(zip(self.task.fields, job.out))
        if np.count_nonzero(job.unstable):
            bad = ids[job.unstable > 0]
            raise RuntimeError(
                f"{self._config.task_id}: the simulation of env_id {bad[:16].tolist()} became unstable (MuJoCo warned of "
                "NaN, Inf or huge values in qpos, qvel or qacc and reset its state); its results would be those of a "
                "reset, not of the step, so the pool stops. Smaller actions, reset noise or timestep avoid it"
            )
        obs, reward, terminated, info = self._results(job, ids, reset, after)
        for f, v in self._last.items():
            v[ids] = after[f]
        # a reset (the caller's or an auto-reset) starts the episode: elapsed 0, not done
        terminated, truncated, elapsed = self._book.finish(ids, reset if np.count_nonzero(reset) else None, terminated)
        env_id = ids
        in_order = len(ids) == self._n and bool((ids == self._all_ids).all())
        batch = Batch(env_id, obs, reward.astype(np.float32), terminated, truncated, elapsed, info)
        return Chunk(env_id, batch, in_order)

    # ------------------------------------------------------------------ state
    def _states(self) -> np.ndarray:
        import mujoco

        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        size = mujoco.mj_stateSize(self._model, spec)
        states = np.empty((self._n, size))
        for m, d, row in zip(self._models, self._datas, states):
            mujoco.mj_getState(m, d, row, spec)
        return states

    def snapshot(self) -> tuple:
        if self._in_flight or self._queued:
            raise RuntimeError("snapshot() with envs in flight: recv() their results first")
        return ("mujoco", self._config.task_id, self._n, self._states(), copy.deepcopy(self._last),
                copy.deepcopy(self._rngs), copy.deepcopy(self._book), copy.deepcopy(self._test_info),
                copy.deepcopy(self._stacks))

    def restore(self, state: tuple) -> None:
        import mujoco

        kind, task_id, n, states, last, rngs, book, test_info, stacks = state
        if kind != "mujoco" or task_id != self._config.task_id or n != self._n:
            raise ValueError(f"snapshot of {task_id} x {n} does not fit this pool ({self._config.task_id} x {self._n})")
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        for m, d, row in zip(self._models, self._datas, states):  # the next step starts from the state alone
            mujoco.mj_setState(m, d, row, spec)
        self._last, self._rngs, self._book = copy.deepcopy(last), copy.deepcopy(rngs), copy.deepcopy(book)
        self._test_info, self._stacks = copy.deepcopy(test_info), copy.deepcopy(stacks)

    def render(self, ids: np.ndarray) -> np.ndarray:
        """Frames of envs ids as they are now (MuJoCo's renderer, envs/mujoco/render.py)."""
        if any(np.isin(ids, job.ids).any() for _, job in self._in_flight):
            raise RuntimeError("render() of envs whose step is in flight: recv() their results first")
        return self._renderer.frames(self._datas, ids)

    def gather(self, ids: np.ndarray) -> Batch:
        raise AssertionError("MuJoCo chunks always carry their batch")

    def close(self) -> None:
        self._queued = []
        renderer, self._renderer = getattr(self, "_renderer", None), None
        if renderer is not None:
            renderer.close()
        pool, self._pool = getattr(self, "_pool", None), None
        if pool:
            self._lib.mjp_destroy(pool)  # waits for the jobs in flight
        self._in_flight.clear()

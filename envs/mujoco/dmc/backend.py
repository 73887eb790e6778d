"""The native pool of dm_control's suite: MujocoBackend's kernel, dm_control's step and resets.

What differs from the Gymnasium v5 tasks (envs/mujoco/backend.py):
- Stepping: dm_control's `Physics.step` with `legacy_step` (mj_step2, mj_step x (n - 1), mj_step1;
  the kernel's MODE_DM, or MODE_DM_RK4 for RK4 models), n the task's physics steps per control step.
- Resets run here, per env, on that env's own mjModel and mjData: `Physics.reset_context` around
  the task's `initialize_episode` (mj_resetData, a forward without actuation, the task's draws
  from its `numpy.random.RandomState`, a forward without actuation); the kernel then only copies
  the env's fields (flag 2). Each env has its own mjModel, as tasks that place a target per
  episode (reacher, fish, ...) change their model. Env i's RandomState is seeded seed + i, so env
  i of a pool is `dm_control.suite.load(domain, task, task_kwargs={"random": seed + i})`.
- Observations are dm_control's dicts (a Dict space of float64 Boxes), actions float64, rewards
  dm_control's (float32 in the batch, as every pool's), terminations its discount-0 steps; the
  time limit truncates at dm_control's step count. Info holds EnvPool's test keys (qpos0, ...).
"""

from __future__ import annotations

import collections
import copy
import ctypes
from typing import Any

import gymnasium as gym
import numpy as np

from envs.config import PoolConfig
from envs.mujoco.backend import MujocoBackend, MujocoTask, Job
from envs.mujoco.dmc.tasks import served
from envs.mujoco.dmc.base import DmcTask
from envs.mujoco.dmc.render import RENDER_KWARGS, DmcRenderer, check_render_kwargs
from envs.mujoco.log import route_warnings


def _probe(task: DmcTask, model: Any) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One env's first observation and test info (their keys and shapes), on a copy of the model."""
    import mujoco

    model = copy.deepcopy(model)
    data = mujoco.MjData(model)
    info = task.reset(model, data, np.random.RandomState(0))
    return task.observe({f: getattr(data, f).reshape(1, -1).copy() for f in task.fields}), info


# The model fields the suite's tasks set per episode (targets' places and sizes, colours, damping, terrain)
MODEL_STATE = ("geom_pos", "geom_quat", "geom_size", "geom_rgba", "site_pos", "site_size", "site_rgba", "body_pos", "body_quat",
               "light_pos", "wrap_prm", "dof_damping", "mat_rgba", "hfield_data")


PIXELS = "pixels"  # the observation's name in a dm TimeStep (EnvPool's obs:pixels)


def mujoco_max_value() -> float:
    import mujoco

    return float(mujoco.mjMAXVAL)


def configure(task_id: str, env_type: str, kwargs: dict[str, Any]) -> MujocoTask:
    """The validated config, model and spaces of a DMC id's native pool."""
    task_cls = served()[task_id]
    route_warnings()
    model = task_cls.load_model()
    # EnvPool's DMC kwargs: frame_skip, the physics steps per env step (default: dm_control's
    # n_sub_steps for the task; the time limit stays the task's step count), and frame_stack, the
    # last k observations of each key stacked on a leading axis (k = 1: none)
    # from_pixels: the observation is the env's frame (render_width x render_height, render_camera_id),
    # channel first, uint8; with frame_stack k the last k frames on the channel axis (3k channels)
    defaults = {"frame_skip": task_cls.n_sub_steps(model), "frame_stack": 1, "from_pixels": False, **RENDER_KWARGS}
    config = PoolConfig.create(task_id, env_type, "mujoco", task_cls.max_episode_steps(model), kwargs, defaults)
    kw = dict(config.task_kwargs)
    for name in ("frame_skip", "frame_stack"):
        v = kw[name]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{task_id}: {name} must be an int >= 1, got {v!r}")
    if not isinstance(kw["from_pixels"], (bool, np.bool_)):
        raise ValueError(f"{task_id}: from_pixels must be a bool, got {kw['from_pixels']!r}")
    check_render_kwargs(task_id, kw, model)
    task = task_cls(model)
    obs, info = _probe(task, model)
    k = int(kw["frame_stack"])
    if kw["from_pixels"]:
        shape = (3 * k, int(kw["render_height"]), int(kw["render_width"]))
        observation_space: gym.spaces.Space = gym.spaces.Box(0, 255, shape, np.uint8)
    else:  # in dm_control's order (a plain dict would be sorted by gymnasium)
        stack = () if k == 1 else (k,)
        observation_space = gym.spaces.Dict(collections.OrderedDict(
            (key, gym.spaces.Box(-np.inf, np.inf, (*stack, *v.shape[1:]), np.float64)) for key, v in obs.items()))
    # dm_control's mujoco.action_spec: float64, each actuator's ctrlrange where limited, else +-mjMAXVAL (1e10)
    limited = model.actuator_ctrllimited.astype(bool)
    low, high = np.full(model.nu, -mujoco_max_value()), np.full(model.nu, mujoco_max_value())
    low[limited], high[limited] = model.actuator_ctrlrange[limited].T
    action_space = gym.spaces.Box(low=low, high=high, dtype=np.float64)
    extra_info = {k: np.dtype((np.float64, np.shape(v))) for k, v in info.items()}
    return MujocoTask(config, task_cls, model, observation_space, action_space, extra_info, None, int(kw["frame_skip"]))


class DmcBackend(MujocoBackend):
    action_dtype = np.dtype(np.float64)  # dm_control's action spec

    def __init__(self, task: MujocoTask, lib: ctypes.CDLL):
        import mujoco

        # the kernel's MODE_DM (legacy step), or MODE_DM_RK4 for RK4 models
        self.kernel_mode = 2 if task.model.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4 else 1
        n = task.config.num_envs
        self._task_cls = task.task_cls
        kw = task.config.task_kwargs
        self._pixels = bool(kw["from_pixels"])
        self._fresh_rngs = [np.random.RandomState((task.config.seed + i) % 2**32) for i in range(n)]
        super().__init__(task, lib)
        # a compiled task: the kernel's threads write each env's reward and observation (compiled.c)
        # (key, its columns in a row, its shape where a reshape is needed: None for a scalar's or a vector's)
        self._layout: list[tuple[str, int | slice, tuple[int, ...] | None]] = []
        if self.task.compiled is not None:
            probe = self.task.observe({f: np.zeros((1, size)) for f, size in zip(self.task.fields, self._sizes)})
            end = 1  # column 0: the reward
            for key, v in probe.items():
                shape = v.shape[1:]
                columns = slice(end, end + v[0].size) if shape else end
                self._layout.append((key, columns, shape if len(shape) > 1 else None))
                end += v[0].size
            self._task_params = np.asarray(self.task.compiled_params(), np.float64)  # kept: the kernel reads it
            self._task_width = end
            fn = ctypes.cast(getattr(lib, f"dmc_{self.task.compiled}"), ctypes.c_void_p).value
            lib.mjp_set_task(self._pool, fn, self._task_params.ctypes.data, end)

    def _make_stacks(self, task: MujocoTask, kw: dict[str, Any]) -> dict[str, np.ndarray] | None:
        k, n = int(kw["frame_stack"]), task.config.num_envs
        if k == 1:
            return None
        if self._pixels:
            frame = (3, int(kw["render_height"]), int(kw["render_width"]))
            return {PIXELS: np.zeros((n, k, *frame), np.uint8)}
        return {key: np.zeros((n, *s.shape)) for key, s in task.observation_space.spaces.items()}

    def _env_models(self, model: Any, n: int) -> list[Any]:
        return [self._task_cls.env_model(model, rng) for rng in self._fresh_rngs]

    def _make_renderer(self, task: MujocoTask, kw: dict[str, Any]) -> DmcRenderer:
        return DmcRenderer(task.model, self._models, kw, MODEL_STATE)

    def _wants_renderer(self, task: MujocoTask) -> bool:
        return task.config.render_mode is not None or bool(task.config.task_kwargs["from_pixels"])

    def _make_task(self, task: MujocoTask, kw: dict[str, Any]) -> DmcTask:
        return task.task_cls(task.model)

    def _make_rngs(self, seed: int, n: int) -> list[np.random.RandomState]:
        return self._fresh_rngs  # env i's: seed + i (what building its model drew from it, drawn)

    def prime_reset(self, ids: np.ndarray, seeds: list[int | None] | None, options: dict | None) -> None:
        """Env i's episode draws come from RandomState(seeds[i]), as dm_control's task_kwargs random."""
        if seeds is not None:
            for i in ids.tolist():
                if seeds[i] is not None:
                    self._rngs[i] = np.random.RandomState(seeds[i] % 2**32)

    def _test_keys(self, task: MujocoTask) -> tuple[str, ...]:
        return tuple(task.extra_info)  # every info key of a DMC pool is EnvPool's test info

    def _reset_rows(self, job: Job, rows: np.ndarray) -> None:
        if not self._task_cls.per_episode_model:
            # dm_control's reset disables actuation in the mjModel for its forward: a model the envs
            # share may not change while the kernel steps any of them
            self._wait_in_flight()
        for k in rows.tolist():
            i = int(job.ids[k])
            info = self.task.reset(self._models[i], self._datas[i], self._rngs[i])
            for key, v in self._test_info.items():
                v[i] = info[key]
            job.flags[k] = 2  # the kernel copies its fields only

    def _results(self, job: Job, ids: np.ndarray, reset: np.ndarray, after: dict[str, np.ndarray]) -> tuple:
        rows = job.task_out  # a compiled task's: the reward, then the observation's keys
        if self._pixels:  # each env's frame as it is now, channel first
            obs = {PIXELS: self._renderer.frames(self._datas, ids).transpose(0, 3, 1, 2)}
        elif rows is not None:
            obs = {key: rows[:, cols].copy() if shape is None else rows[:, cols].copy().reshape(len(ids), *shape)
                   for key, cols, shape in self._layout}
        else:
            obs = self.task.observe(after)
        if self._stacks is not None:
            obs = self._stacked(obs, ids, reset)
        if self._pixels:
            frames = obs[PIXELS]
            obs = frames.reshape(len(ids), -1, *frames.shape[-2:])  # EnvPool's: the k frames on the channel axis
        reward = rows[:, 0].copy() if rows is not None else self.task.reward(after, job.action)
        terminated = self.task.terminated(after)
        if np.count_nonzero(reset):
            reward[reset] = 0.0
            terminated = terminated & ~reset
        info = {k: v.take(ids, 0) for k, v in self._test_info.items()}
        return obs, reward, terminated, info

    def snapshot(self) -> tuple:
        models = ([{name: getattr(m, name).copy() for name in MODEL_STATE} for m in self._models]
                  if self._task_cls.per_episode_model else None)
        return (*super().snapshot(), models)

    def restore(self, state: tuple) -> None:
        *base, models = state
        for mine, theirs in zip(self._models, models or ()):  # into the same objects: the kernel holds their addresses
            for name, value in theirs.items():
                getattr(mine, name)[:] = value
        super().restore(tuple(base))
        import mujoco

        for m, d in zip(self._models, self._datas):  # the step's mj_step2 reads what mj_step1 computes
            mujoco.mj_step1(m, d)

"""dm_control's suite tasks over a batch of envs: the base class and what tasks share.

A task is one of dm_control's `base.Task`s split in two. Its episode start runs per env on that
env's own `mujoco.MjModel` and `MjData` (`initialize_episode`: the same MuJoCo calls and the same
`numpy.random.RandomState` draws, in the same order, as dm_control's task), between `reset_physics`
and `after_reset` (dm_control's `Physics.reset_context`). Its observation, reward and termination
are numpy over the batch, from the mjData fields the kernel copies out after each step (`fields`):
the same operations as dm_control's, so each row is the float dm_control computes. A task may also
name a C version of its observe and reward (`compiled`, envs/mujoco/dmc/compiled.c: the same
arithmetic per env, run in the kernel's threads); the numpy methods stay its definition and the
reference the tests hold the C to.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from envs.mujoco.dmc import assets

Fields = dict[str, np.ndarray]


def disabled_actuation(model: Any) -> Any:
    """A context in which `model`'s actuation is off (dm_control's `model.disable('actuation')`)."""
    import contextlib

    import mujoco

    @contextlib.contextmanager
    def off():
        old = model.opt.disableflags
        model.opt.disableflags = old | int(mujoco.mjtDisableBit.mjDSBL_ACTUATION)
        try:
            yield
        finally:
            model.opt.disableflags = old

    return off()


def physics_model(xml: str, files: dict[str, bytes]) -> Any:
    """The model of `xml` without its textures (materials keep their colours): the same physics,
    without the ~11 MiB of pixels the suite's skybox and grid textures take in every copy."""
    import mujoco

    spec = mujoco.MjSpec.from_string(xml, files)
    for texture in list(spec.textures):
        spec.delete(texture)
    for material in spec.materials:
        material.textures = [""] * len(material.textures)
    return spec.compile()


def forward_without_actuation(model: Any, data: Any) -> None:
    """dm_control's `Physics.after_reset` (and the forward that ends `Physics.reset`)."""
    import mujoco

    with disabled_actuation(model):
        mujoco.mj_forward(model, data)


def legacy_step(model: Any, data: Any, nstep: int) -> None:
    """dm_control's `Physics.step(nstep)` with `legacy_step` (its default in the suite)."""
    import mujoco

    if model.opt.integrator != mujoco.mjtIntegrator.mjINT_RK4:
        mujoco.mj_step2(model, data)
        if nstep > 1:
            mujoco.mj_step(model, data, nstep - 1)
    else:
        mujoco.mj_step(model, data, nstep)
    mujoco.mj_step1(model, data)


def randomize_limited_and_rotational_joints(model: Any, data: Any, random: np.random.RandomState) -> None:
    """dm_control's `suite.utils.randomizers.randomize_limited_and_rotational_joints`."""
    import mujoco

    hinge, slide = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)
    ball, free = int(mujoco.mjtJoint.mjJNT_BALL), int(mujoco.mjtJoint.mjJNT_FREE)
    for j in range(model.njnt):
        kind, adr = int(model.jnt_type[j]), int(model.jnt_qposadr[j])  # ints: numpy's int32 is no enum's equal
        range_min, range_max = model.jnt_range[j]
        if model.jnt_limited[j]:
            if kind in (hinge, slide):
                data.qpos[adr] = random.uniform(range_min, range_max)
            elif kind == ball:
                axis = random.randn(3)
                axis /= np.linalg.norm(axis)
                angle = random.rand() * range_max
                quaternion = np.zeros(4)
                mujoco.mju_axisAngle2Quat(quaternion, axis, angle)
                data.qpos[adr:adr + 4] = quaternion
        elif kind == hinge:
            data.qpos[adr] = random.uniform(-np.pi, np.pi)
        elif kind == ball:
            quat = random.randn(4)
            quat /= np.linalg.norm(quat)
            data.qpos[adr:adr + 4] = quat
        elif kind == free:
            quat = random.rand(4)
            quat /= np.linalg.norm(quat)
            data.qpos[adr + 3:adr + 7] = quat


def set_random_joint_angles(model: Any, data: Any, random: np.random.RandomState, max_attempts: int = 1000) -> None:
    """Random joint angles until the bodies do not touch (dm_control's finger `_set_random_joint_angles`)."""
    for _ in range(max_attempts):
        randomize_limited_and_rotational_joints(model, data, random)
        forward_without_actuation(model, data)
        if data.ncon == 0:
            return
    raise RuntimeError(f"could not find a collision-free state after {max_attempts} attempts")


def sensor(model: Any, name: str) -> slice:
    """Where sensor `name`'s values are in sensordata."""
    s = model.sensor(name)
    return slice(int(s.adr[0]), int(s.adr[0]) + int(s.dim[0]))


def start_state(data: Any, *keys: str) -> dict[str, np.ndarray]:
    """Copies of an episode's starting qpos, qvel, act, qacc_warmstart as EnvPool's test info
    names them (qpos0, ...)."""
    return {k: getattr(data, k[:-1]).copy() for k in keys}


def rows_times(vectors: np.ndarray, frames: np.ndarray) -> np.ndarray:
    """Each row vector times its 3 x 3 frame (dm_control's `vector.dot(xmat.reshape(3, 3))`)."""
    return np.einsum("ni,nij->nj", vectors, frames.reshape(-1, 3, 3))


def norm(rows: np.ndarray) -> np.ndarray:
    """np.linalg.norm of each row (the square root of its dot with itself)."""
    return np.sqrt(np.einsum("ij,ij->i", rows, rows))


class DmcTask:
    """One dm_control suite task over a batch. Subclasses set the class variables and the math."""

    domain: ClassVar[str]
    task: ClassVar[str]
    time_limit: ClassVar[float]  # seconds, the task's default
    per_episode_model: ClassVar[bool] = False  # the task places targets, terrain, gains in its model per episode
    control_timestep: ClassVar[float | None] = None  # None: one physics step per control step
    fields: ClassVar[tuple[str, ...]] = ("qpos", "qvel")
    before_fields: ClassVar[tuple[str, ...]] = ()  # no task reads the fields as they were before a step
    # the task's observe and reward in C (envs/mujoco/dmc/compiled.c's dmc_<compiled>), run per env by
    # the kernel's threads beside the physics; None: the numpy methods below run over the batch
    compiled: ClassVar[str | None] = None

    def __init__(self, model: Any):
        self.nq, self.nv, self.nu = model.nq, model.nv, model.nu

    # ------------------------------------------------------------------ the model
    @classmethod
    def model_xml(cls) -> str:
        return assets.read_model(f"{cls.domain}.xml")

    @classmethod
    def load_model(cls) -> Any:
        import mujoco

        return mujoco.MjModel.from_xml_string(cls.model_xml(), cls.model_assets())

    @classmethod
    def model_assets(cls) -> dict[str, bytes]:
        return assets.assets()

    @classmethod
    def env_model(cls, model: Any, random: np.random.RandomState) -> Any:
        """The mjModel of an env, given its fresh RandomState: the task's own, shared by every env,
        unless the task changes its model per episode (`per_episode_model`), when each env has a
        copy without textures (the physics reads none; a texture-laden copy of a suite model is
        ~11 MiB). lqr builds each env's from its RandomState, as dm_control builds it."""
        if not cls.per_episode_model:
            return model
        return physics_model(cls.model_xml(), cls.model_assets())

    @classmethod
    def n_sub_steps(cls, model: Any) -> int:
        """dm_control's `control.compute_n_steps` (physics steps per control step)."""
        if cls.control_timestep is None:
            return 1
        ratio = cls.control_timestep / model.opt.timestep
        if abs(ratio - round(ratio)) > 1e-8:
            raise ValueError(f"{cls.domain}/{cls.task}: control timestep {cls.control_timestep} is not a multiple of "
                             f"the physics timestep {model.opt.timestep}")
        return int(round(ratio))

    @classmethod
    def max_episode_steps(cls, model: Any) -> int:
        """The step at which dm_control's Environment ends the episode: the first step count >=
        time_limit / (timestep * n_sub_steps), the float it compares against (1,000, EnvPool's,
        for a task without a time limit)."""
        if math.isinf(cls.time_limit):
            return 1000
        return math.ceil(cls.time_limit / (model.opt.timestep * cls.n_sub_steps(model)))

    # ------------------------------------------------------------------ an episode's start, per env
    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        """The task's `initialize_episode` on one env. Returns its test info: what EnvPool's test
        build reports (qpos0, a target's place, ...) and its align tests read to start dm_control's
        env in the same state."""
        raise NotImplementedError

    def reset(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        """One env's episode start: dm_control's `Physics.reset_context` around the task's
        `initialize_episode`; returns the test info."""
        import mujoco

        mujoco.mj_resetData(model, data)
        forward_without_actuation(model, data)
        info = self.initialize_episode(model, data, random)
        forward_without_actuation(model, data)
        return info

    # ------------------------------------------------------------------ the batch's math
    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def compiled_params(self) -> list[float]:
        """What the compiled function reads besides mjData and the action (addresses, scales, flags)."""
        raise NotImplementedError

    def terminated(self, f: Fields) -> np.ndarray:
        """Where the task ends the episode (dm_control's get_termination: discount 0)."""
        return np.zeros(len(f["qpos"]), bool)

"""dm_control's cheetah, walker, hopper and humanoid domains over a batch (dm_control/suite/cheetah.py,
walker.py, hopper.py, humanoid.py, humanoid_CMU.py)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from envs.mujoco.dmc.base import (
    DmcTask,
    Fields,
    forward_without_actuation,
    legacy_step,
    norm,
    randomize_limited_and_rotational_joints,
    rows_times,
    sensor,
)
from envs.mujoco.dmc.rewards import scale, tolerance


class CheetahRun(DmcTask):
    domain, task = "cheetah", "run"
    time_limit = 10
    fields = ("qpos", "qvel", "sensordata")
    compiled = "cheetah"
    run_speed = 10

    def __init__(self, model: Any):
        super().__init__(model)
        self.velocity_sensor = sensor(model, "torso_subtreelinvel")

    def compiled_params(self) -> list[float]:
        return [self.velocity_sensor.start, self.run_speed, scale("linear", 0.0)]

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        is_limited = model.jnt_limited == 1
        lower, upper = model.jnt_range[is_limited].T
        data.qpos[is_limited] = random.uniform(lower, upper)  # nq == njnt: joints are qpos entries
        qpos0 = data.qpos.copy()
        legacy_step(model, data, 200)
        data.time = 0
        return {"qpos0": qpos0}

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        return {"position": f["qpos"][:, 1:].copy(), "velocity": f["qvel"].copy()}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        speed = f["sensordata"][:, self.velocity_sensor][:, 0]
        return tolerance(speed, (self.run_speed, float("inf")), margin=self.run_speed, value_at_margin=0, kind="linear")


class Walker(DmcTask):
    domain = "walker"
    time_limit = 25
    control_timestep = .025
    fields = ("qpos", "qvel", "xmat", "xpos", "sensordata")
    compiled = "walker"
    stand_height = 1.2
    move_speed: ClassVar[float]

    def __init__(self, model: Any):
        super().__init__(model)
        self.nbody = model.nbody
        self.torso = int(model.body("torso").id)
        self.velocity_sensor = sensor(model, "torso_subtreelinvel")

    def compiled_params(self) -> list[float]:
        return [self.torso, self.velocity_sensor.start, self.move_speed, self.stand_height, scale("gaussian", 0.1),
                scale("linear", 0.5)]

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        randomize_limited_and_rotational_joints(model, data, random)
        return {"qpos0": data.qpos.copy()}

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        n = len(f["qpos"])
        xmat = f["xmat"].reshape(n, self.nbody, 9)
        return {"orientations": xmat[:, 1:][:, :, [0, 2]].reshape(n, -1),
                "height": f["xpos"][:, 3 * self.torso + 2].copy(), "velocity": f["qvel"].copy()}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        height = f["xpos"][:, 3 * self.torso + 2]
        standing = tolerance(height, (self.stand_height, float("inf")), margin=self.stand_height / 2)
        upright = (1 + f["xmat"][:, 9 * self.torso + 8]) / 2
        stand_reward = (3 * standing + upright) / 4
        if self.move_speed == 0:
            return stand_reward
        speed = f["sensordata"][:, self.velocity_sensor][:, 0]
        move_reward = tolerance(speed, (self.move_speed, float("inf")), margin=self.move_speed / 2, value_at_margin=0.5,
                                kind="linear")
        return stand_reward * (5 * move_reward + 1) / 6


class WalkerStand(Walker):
    task, move_speed = "stand", 0


class WalkerWalk(Walker):
    task, move_speed = "walk", 1


class WalkerRun(Walker):
    task, move_speed = "run", 8


class Hopper(DmcTask):
    domain = "hopper"
    time_limit = 20
    control_timestep = .02
    fields = ("qpos", "qvel", "xipos", "sensordata")
    stand_height, hop_speed = 0.6, 2
    hopping: ClassVar[bool]

    def __init__(self, model: Any):
        super().__init__(model)
        self.torso, self.foot = int(model.body("torso").id), int(model.body("foot").id)
        self.velocity_sensor = sensor(model, "torso_subtreelinvel")
        self.touch = [sensor(model, s).start for s in ("touch_toe", "touch_heel")]

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        randomize_limited_and_rotational_joints(model, data, random)
        return {"qpos0": data.qpos.copy()}

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        return {"position": f["qpos"][:, 1:].copy(), "velocity": f["qvel"].copy(),
                "touch": np.log1p(f["sensordata"][:, self.touch])}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        height = f["xipos"][:, 3 * self.torso + 2] - f["xipos"][:, 3 * self.foot + 2]
        standing = tolerance(height, (self.stand_height, 2))
        if self.hopping:
            speed = f["sensordata"][:, self.velocity_sensor][:, 0]
            return standing * tolerance(speed, (self.hop_speed, float("inf")), margin=self.hop_speed / 2,
                                        value_at_margin=0.5, kind="linear")
        small_control = tolerance(action, margin=1, value_at_margin=0, kind="quadratic").mean(axis=1)
        return standing * ((small_control + 4) / 5)


class HopperStand(Hopper):
    task, hopping = "stand", False


class HopperHop(Hopper):
    task, hopping = "hop", True


class Humanoid(DmcTask):
    domain = "humanoid"
    time_limit = 25
    control_timestep = .025
    fields = ("qpos", "qvel", "xpos", "xmat", "sensordata")
    compiled = "humanoid"
    stand_height = 1.4
    move_speed: ClassVar[float]
    pure_state: ClassVar[bool] = False
    torso_name, sides = "torso", ("left_", "right_")
    upright_index = 8  # the torso frame's entry the upright reward reads: 'zz' (humanoid_CMU's thorax: 'zy')

    def __init__(self, model: Any):
        super().__init__(model)
        self.torso, self.head = int(model.body(self.torso_name).id), int(model.body("head").id)
        self.limbs = [int(model.body(side + limb).id) for side in self.sides for limb in ("hand", "foot")]
        self.com_velocity = sensor(model, f"{self.torso_name}_subtreelinvel")

    def compiled_params(self) -> list[float]:
        return [float(self.pure_state), self.torso, self.head, *self.limbs, self.com_velocity.start, self.upright_index,
                self.move_speed, self.stand_height, scale("gaussian", 0.1), scale("linear", 0.0), scale("quadratic", 0.0)]

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        penetrating = True
        while penetrating:
            randomize_limited_and_rotational_joints(model, data, random)
            forward_without_actuation(model, data)
            penetrating = data.ncon > 0
        return {"qpos0": data.qpos.copy()}

    def _xpos(self, f: Fields, body: int) -> np.ndarray:
        return f["xpos"][:, 3 * body:3 * body + 3]

    def _torso_frame(self, f: Fields) -> np.ndarray:
        return f["xmat"][:, 9 * self.torso:9 * self.torso + 9]

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        if self.pure_state:
            return {"position": f["qpos"].copy(), "velocity": f["qvel"].copy()}
        torso_pos, frame = self._xpos(f, self.torso), self._torso_frame(f)
        extremities = np.hstack([rows_times(self._xpos(f, limb) - torso_pos, frame) for limb in self.limbs])
        return {"joint_angles": f["qpos"][:, 7:].copy(), "head_height": self._xpos(f, self.head)[:, 2].copy(),
                "extremities": extremities, "torso_vertical": frame[:, [6, 7, 8]],
                "com_velocity": f["sensordata"][:, self.com_velocity].copy(), "velocity": f["qvel"].copy()}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        standing = tolerance(self._xpos(f, self.head)[:, 2], (self.stand_height, float("inf")), margin=self.stand_height / 4)
        upright = tolerance(self._torso_frame(f)[:, self.upright_index], (0.9, float("inf")), kind="linear", margin=1.9,
                            value_at_margin=0)
        stand_reward = standing * upright
        small_control = (4 + tolerance(action, margin=1, value_at_margin=0, kind="quadratic").mean(axis=1)) / 5
        horizontal = f["sensordata"][:, self.com_velocity][:, [0, 1]]
        if self.move_speed == 0:
            return small_control * stand_reward * tolerance(horizontal, margin=2).mean(axis=1)
        move = tolerance(norm(horizontal), (self.move_speed, float("inf")), margin=self.move_speed, value_at_margin=0,
                         kind="linear")
        return small_control * stand_reward * ((5 * move + 1) / 6)


class HumanoidStand(Humanoid):
    task, move_speed = "stand", 0


class HumanoidWalk(Humanoid):
    task, move_speed = "walk", 1


class HumanoidRun(Humanoid):
    task, move_speed = "run", 10


class HumanoidRunPureState(Humanoid):
    task, move_speed, pure_state = "run_pure_state", 10, True


class HumanoidCMU(Humanoid):
    """dm_control's humanoid_CMU (dm_control/suite/humanoid_CMU.py): the CMU mocap body, Humanoid's
    task with its thorax as the torso."""

    domain = "humanoid_CMU"
    time_limit = 20
    control_timestep = .02
    torso_name, sides, upright_index = "thorax", ("l", "r"), 7


class HumanoidCMUStand(HumanoidCMU):
    task, move_speed = "stand", 0


class HumanoidCMUWalk(HumanoidCMU):
    task, move_speed = "walk", 1


class HumanoidCMURun(HumanoidCMU):
    task, move_speed = "run", 10

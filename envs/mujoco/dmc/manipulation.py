"""dm_control's reacher, finger, ball_in_cup and point_mass domains over a batch
(dm_control/suite/reacher.py, finger.py, ball_in_cup.py, point_mass.py). Reacher, finger's turns
and point_mass's hard task place their target (or gains) per episode in the env's own mjModel."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from envs.mujoco.dmc.base import (
    DmcTask,
    Fields,
    forward_without_actuation,
    norm,
    randomize_limited_and_rotational_joints,
    sensor,
    set_random_joint_angles,
)
from envs.mujoco.dmc.rewards import tolerance


class Reacher(DmcTask):
    domain = "reacher"
    time_limit = 20
    fields = ("qpos", "qvel", "geom_xpos")
    target_size: ClassVar[float]

    def __init__(self, model: Any):
        super().__init__(model)
        self.target, self.finger = int(model.geom("target").id), int(model.geom("finger").id)
        self.finger_size = float(model.geom_size[self.finger, 0])

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        model.geom_size[self.target, 0] = self.target_size
        randomize_limited_and_rotational_joints(model, data, random)
        angle = random.uniform(0, 2 * np.pi)
        radius = random.uniform(.05, .2)
        model.geom_pos[self.target, 0] = radius * np.sin(angle)
        model.geom_pos[self.target, 1] = radius * np.cos(angle)
        return {"qpos0": data.qpos.copy(), "target": model.geom_pos[self.target, :2].copy()}

    def _to_target(self, f: Fields) -> np.ndarray:
        xpos = f["geom_xpos"].reshape(len(f["geom_xpos"]), -1, 3)
        return xpos[:, self.target, :2] - xpos[:, self.finger, :2]

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        return {"position": f["qpos"].copy(), "to_target": self._to_target(f), "velocity": f["qvel"].copy()}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        radii = np.array([self.target_size, self.finger_size]).sum()
        return tolerance(norm(self._to_target(f)), (0, radii))


class ReacherEasy(Reacher):
    task, target_size = "easy", .05


class ReacherHard(Reacher):
    task, target_size = "hard", .015


class Finger(DmcTask):
    domain = "finger"
    time_limit = 20
    control_timestep = .02
    fields = ("qpos", "qvel", "sensordata")

    def __init__(self, model: Any):
        super().__init__(model)
        at = lambda name: sensor(model, name).start  # noqa: E731
        self.touch = [at("touchtop"), at("touchbottom")]
        self.position = [at("proximal"), at("distal")]
        self.velocity = [at("proximal_velocity"), at("distal_velocity"), at("hinge_velocity")]
        self.hinge_velocity = at("hinge_velocity")
        self.tip, self.spinner, self.target = at("tip"), at("spinner"), at("target")

    def _xz(self, f: Fields, start: int) -> np.ndarray:
        return f["sensordata"][:, [start, start + 2]]

    def _tip(self, f: Fields) -> np.ndarray:
        return self._xz(f, self.tip) - self._xz(f, self.spinner)

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        s = f["sensordata"]
        return {"position": np.hstack((s[:, self.position], self._tip(f))), "velocity": s[:, self.velocity],
                "touch": np.log1p(s[:, self.touch])}


class FingerSpin(Finger):
    task = "spin"
    spin_velocity = 15.0

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        model.site_rgba[model.site("target").id, 3] = 0
        model.site_rgba[model.site("tip").id, 3] = 0
        model.dof_damping[model.joint("hinge").dofadr[0]] = 0.03
        set_random_joint_angles(model, data, random)
        return {"qpos0": data.qpos.copy()}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        return (f["sensordata"][:, self.hinge_velocity] <= -self.spin_velocity).astype(np.float64)


class FingerTurn(Finger):
    target_radius: ClassVar[float]

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        target_angle = random.uniform(-np.pi, np.pi)
        hinge_x, hinge_z = data.xanchor[model.joint("hinge").id, [0, 2]]
        radius = model.geom_size[model.geom("cap1").id].sum()
        target = model.site("target").id
        model.site_pos[target, [0, 2]] = (hinge_x + radius * np.sin(target_angle), hinge_z + radius * np.cos(target_angle))
        model.site_size[target, 0] = self.target_radius
        set_random_joint_angles(model, data, random)
        return {"qpos0": data.qpos.copy(), "target": np.array([target_angle])}

    def _target(self, f: Fields) -> np.ndarray:
        return self._xz(f, self.target) - self._xz(f, self.spinner)

    def _dist_to_target(self, f: Fields) -> np.ndarray:
        return norm(self._target(f) - self._tip(f)) - self.target_radius

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        return {**super().observe(f), "target_position": self._target(f), "dist_to_target": self._dist_to_target(f)}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        return (self._dist_to_target(f) <= 0).astype(np.float64)


class FingerTurnEasy(FingerTurn):
    task, target_radius = "turn_easy", .07


class FingerTurnHard(FingerTurn):
    task, target_radius = "turn_hard", .03


class BallInCupCatch(DmcTask):
    domain, task = "ball_in_cup", "catch"
    time_limit = 20
    control_timestep = .02
    fields = ("qpos", "qvel", "xpos", "site_xpos")

    def __init__(self, model: Any):
        super().__init__(model)
        self.ball_x, self.ball_z = (int(model.joint(j).qposadr[0]) for j in ("ball_x", "ball_z"))
        self.target, self.ball = int(model.site("target").id), int(model.body("ball").id)
        self.room = model.site_size[self.target, [0, 2]] - model.geom_size[model.geom("ball").id, 0]

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        penetrating = True
        while penetrating:
            data.qpos[self.ball_x] = random.uniform(-0.2, 0.2)
            data.qpos[self.ball_z] = random.uniform(0.2, 0.5)
            forward_without_actuation(model, data)
            penetrating = data.ncon > 0
        return {"qpos0": data.qpos.copy()}

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        return {"position": f["qpos"].copy(), "velocity": f["qvel"].copy()}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        target = f["site_xpos"][:, 3 * self.target:3 * self.target + 3][:, [0, 2]]
        ball = f["xpos"][:, 3 * self.ball:3 * self.ball + 3][:, [0, 2]]
        return np.all(abs(target - ball) < self.room, axis=1).astype(np.float64)


class PointMass(DmcTask):
    domain = "point_mass"
    time_limit = 20
    fields = ("qpos", "qvel", "geom_xpos")
    randomize_gains: ClassVar[bool]

    def __init__(self, model: Any):
        super().__init__(model)
        self.target, self.mass = int(model.geom("target").id), int(model.geom("pointmass").id)
        self.target_size = float(model.geom_size[self.target, 0])

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        randomize_limited_and_rotational_joints(model, data, random)
        if self.randomize_gains:
            dir1 = random.randn(2)
            dir1 /= np.linalg.norm(dir1)
            parallel = True
            while parallel:
                dir2 = random.randn(2)
                dir2 /= np.linalg.norm(dir2)
                parallel = abs(np.dot(dir1, dir2)) > 0.9
            model.wrap_prm[[0, 1]] = dir1
            model.wrap_prm[[2, 3]] = dir2
        return {"qpos0": data.qpos.copy(), "wrap_prm": model.wrap_prm.copy()}

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        return {"position": f["qpos"].copy(), "velocity": f["qvel"].copy()}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        xpos = f["geom_xpos"].reshape(len(f["geom_xpos"]), -1, 3)
        near_target = tolerance(norm(xpos[:, self.target] - xpos[:, self.mass]), (0, self.target_size),
                                margin=self.target_size)
        small_control = (tolerance(action, margin=1, value_at_margin=0, kind="quadratic").mean(axis=1) + 4) / 5
        return near_target * small_control


class PointMassEasy(PointMass):
    task, randomize_gains = "easy", False


class PointMassHard(PointMass):
    task, randomize_gains = "hard", True

"""dm_control's dog domain over a batch (dm_control/suite/dog.py): stand, walk, trot, run and
fetch with a muscle-driven dog (its activations are state, drawn at each episode's start)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any, ClassVar

import numpy as np

from envs.mujoco.dmc import assets
from envs.mujoco.dmc.base import DmcTask, Fields, forward_without_actuation, norm, rows_times, sensor, start_state
from envs.mujoco.dmc.rewards import tolerance

MIN_UPRIGHT_COSINE = np.cos(np.deg2rad(30))


def dog_xml(floor_size: float, remove_ball: bool) -> str:
    """dog.xml with its floor's size, and without the ball, target, their cameras and the walls
    where the task has no ball (dm_control's `dog.make_model`)."""
    root = ET.fromstring(assets.read_model("dog.xml"))
    root.find(".//geom[@name='floor']").attrib["size"] = f"{floor_size} {floor_size} .1"
    if remove_ball:
        assets.remove(root, ("body", "ball"), ("geom", "target"), ("camera", "ball"), ("camera", "head"),
                      *[("geom", f"wall_{w}") for w in ("px", "nx", "py", "ny")])
    return ET.tostring(root, encoding="unicode")


def linear_velocity(cvel: np.ndarray, pos: np.ndarray, com: np.ndarray) -> np.ndarray:
    """An object's linear velocity in the world frame from its body's com-based spatial velocity
    (mj_objectVelocity's mju_transformSpatial: v - (pos - com) x w)."""
    return cvel[:, 3:] - np.cross(pos - com, cvel[:, :3])


class Dog(DmcTask):
    domain = "dog"
    time_limit = 15
    control_timestep = .015
    fields = ("qpos", "qvel", "act", "xpos", "xmat", "sensordata")
    move_speed: ClassVar[float] = 0  # stand: 0; walk 1, trot 3, run 9

    @classmethod
    def model_xml(cls) -> str:
        return dog_xml(max(cls.move_speed, 1) * 15, remove_ball=True)

    @classmethod
    def model_assets(cls) -> dict[str, bytes]:
        return assets.dog_assets()

    def __init__(self, model: Any):
        import mujoco

        super().__init__(model)
        hinges = model.jnt_type == int(mujoco.mjtJoint.mjJNT_HINGE)
        self.hinge_q, self.hinge_v = model.jnt_qposadr[hinges], model.jnt_dofadr[hinges]
        self.torso, self.pelvis, self.skull = (int(model.body(b).id) for b in ("torso", "pelvis", "skull"))
        self.root = int(model.joint("root").qposadr[0])
        self.torso_linvel = sensor(model, "torso_linvel")
        at = lambda names: np.concatenate([np.arange(sensor(model, n).start, sensor(model, n).stop) for n in names])  # noqa: E731
        self.inertial = at(("accelerometer", "velocimeter", "gyro"))
        self.foot_forces = at(("foot_L", "foot_R", "hand_L", "hand_R"))
        self.touch = at(("palm_L", "palm_R", "sole_L", "sole_R"))
        data = mujoco.MjData(model)  # the standing heights: the torso's and pelvis's at the model's reset pose
        mujoco.mj_resetData(model, data)
        forward_without_actuation(model, data)
        self.stand_height = data.xpos[[self.torso, self.pelvis], 2] * 0.9
        self.body_weight = -model.opt.gravity[2] * model.body_subtreemass[self.torso]
        self.ctrlrange = model.actuator_ctrlrange.copy()

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        import mujoco

        mujoco.mj_resetData(model, data)  # the task's own physics.reset()
        forward_without_actuation(model, data)
        azimuth = random.uniform(0, 2 * np.pi)
        data.qpos[self.root + 3:self.root + 7] = (np.cos(azimuth / 2), 0, 0, np.sin(azimuth / 2))
        data.qvel[0] = 2 * random.randn()
        data.qvel[1] = 2 * random.randn()
        data.qvel[5] = 2 * random.randn()
        for actuator in range(model.nu):
            data.act[actuator] = random.uniform(*self.ctrlrange[actuator])
        return start_state(data, "qpos0", "qvel0", "act0", "qacc_warmstart0")

    def _frame(self, f: Fields, body: int) -> np.ndarray:
        return f["xmat"][:, 9 * body:9 * body + 9]

    def _heights(self, f: Fields) -> np.ndarray:
        return f["xpos"][:, [3 * self.torso + 2, 3 * self.pelvis + 2]]

    def _z_projection(self, f: Fields) -> np.ndarray:
        return np.hstack([self._frame(f, b)[:, 6:9] for b in (self.skull, self.torso, self.pelvis)])

    def _torso_com_velocity(self, f: Fields) -> np.ndarray:
        return rows_times(f["sensordata"][:, self.torso_linvel], self._frame(f, self.torso))

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        s = f["sensordata"]
        return {"joint_angles": f["qpos"][:, self.hinge_q], "joint_velocites": f["qvel"][:, self.hinge_v],
                "torso_pelvis_height": self._heights(f), "z_projection": self._z_projection(f),
                "torso_com_velocity": self._torso_com_velocity(f), "inertial_sensors": s[:, self.inertial],
                "foot_forces": s[:, self.foot_forces], "touch_sensors": s[:, self.touch], "actuator_state": f["act"].copy()}

    def reward_factors(self, f: Fields) -> list[np.ndarray]:
        heights = self._heights(f)
        torso = tolerance(heights[:, 0], (self.stand_height[0], float("inf")), margin=self.stand_height[0])
        pelvis = tolerance(heights[:, 1], (self.stand_height[1], float("inf")), margin=self.stand_height[1])
        upright = tolerance(self._z_projection(f)[:, [2, 5, 8]], (MIN_UPRIGHT_COSINE, float("inf")), kind="linear",
                            margin=MIN_UPRIGHT_COSINE + 1, value_at_margin=0)
        touch = tolerance(f["sensordata"][:, self.touch].sum(axis=1), (self.body_weight, float("inf")),
                          margin=self.body_weight, kind="linear", value_at_margin=0.9)
        factors = [torso, pelvis, *upright.T, touch]
        if self.move_speed:
            forward = tolerance(self._torso_com_velocity(f)[:, 0], (self.move_speed, 2 * self.move_speed),
                                margin=max(1.0, self.move_speed), value_at_margin=0, kind="linear")
            factors.append((4 * forward + 1) / 5)
        return factors

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        return np.prod(np.stack(self.reward_factors(f), axis=1), axis=1)


class DogStand(Dog):
    task = "stand"


class DogWalk(Dog):
    task, move_speed = "walk", 1


class DogTrot(Dog):
    task, move_speed = "trot", 3


class DogRun(Dog):
    task, move_speed = "run", 9


class DogFetch(Dog):
    task = "fetch"
    fields = (*Dog.fields, "site_xpos", "site_xmat", "geom_xpos", "cvel", "subtree_com")

    @classmethod
    def model_xml(cls) -> str:
        return dog_xml(10, remove_ball=False)

    def __init__(self, model: Any):
        super().__init__(model)
        self.ball_q, self.ball_v = int(model.joint("ball_root").qposadr[0]), int(model.joint("ball_root").dofadr[0])
        self.head, self.upper_bite, self.lower_bite = (int(model.site(s).id) for s in ("head", "upper_bite", "lower_bite"))
        self.ball, self.target = int(model.geom("ball").id), int(model.geom("target").id)
        self.head_body, self.ball_body = int(model.site_bodyid[self.head]), int(model.geom_bodyid[self.ball])
        self.head_root, self.ball_root = int(model.body_rootid[self.head_body]), int(model.body_rootid[self.ball_body])
        self.floor_size = float(model.geom_size[model.geom("floor").id, 0])
        self.bite_radius = float(model.site_size[self.upper_bite, 0])
        self.target_radius = float(model.geom_size[self.target, 0])

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        info = super().initialize_episode(model, data, random)
        radius = 0.75 * self.floor_size
        azimuth = random.uniform(0, 2 * np.pi)
        data.qpos[self.ball_q:self.ball_q + 3] = (radius * np.sin(azimuth), radius * np.cos(azimuth), 0.05)
        vertical_height = random.uniform(0, 3)
        vertical_velocity = np.sqrt(2 * -model.opt.gravity[2] * vertical_height)
        horizontal_speed = random.uniform(0, 5)
        direction = np.array((-np.sin(azimuth) + 0.05 * random.randn(), -np.cos(azimuth) + 0.05 * random.randn()))
        data.qvel[self.ball_v:self.ball_v + 3] = np.hstack((horizontal_speed * direction, vertical_velocity))
        return {**info, **start_state(data, "qpos0", "qvel0")}

    def _at(self, f: Fields, name: str, i: int) -> np.ndarray:
        return f[name][:, 3 * i:3 * i + 3]

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        head_frame = f["site_xmat"][:, 9 * self.head:9 * self.head + 9]
        head_pos, ball_pos = self._at(f, "site_xpos", self.head), self._at(f, "geom_xpos", self.ball)
        cvel = f["cvel"].reshape(len(head_pos), -1, 6)
        head_vel = linear_velocity(cvel[:, self.head_body], head_pos, self._at(f, "subtree_com", self.head_root))
        ball_vel = linear_velocity(cvel[:, self.ball_body], ball_pos, self._at(f, "subtree_com", self.ball_root))
        ball_state = np.hstack((rows_times(ball_pos - head_pos, head_frame), rows_times(ball_vel - head_vel, head_frame)))
        target = rows_times(self._at(f, "geom_xpos", self.target) - head_pos, head_frame)
        return {**super().observe(f), "ball_state": ball_state, "target_position": target}

    def reward_factors(self, f: Fields) -> list[np.ndarray]:
        ball = self._at(f, "geom_xpos", self.ball)
        to_mouth = 0.5 * (norm(ball - self._at(f, "site_xpos", self.upper_bite))
                          + norm(ball - self._at(f, "site_xpos", self.lower_bite)))
        reach_ball = (6 * tolerance(to_mouth, (0, self.bite_radius), kind="reciprocal", margin=2) + 1) / 7
        to_target = norm(ball - self._at(f, "geom_xpos", self.target))
        near_target = tolerance(to_target, (0, self.target_radius), kind="reciprocal", margin=self.floor_size)
        reach_ball = np.where(to_target < 2 * self.target_radius, 1.0, reach_ball)
        return [*super().reward_factors(f), reach_ball, (near_target + 1) / 2]

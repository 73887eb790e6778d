"""dm_control's reacher, finger, ball_in_cup, point_mass and manipulator domains over a batch
(dm_control/suite/reacher.py, finger.py, ball_in_cup.py, point_mass.py, manipulator.py). Reacher,
finger's turns, point_mass's hard task and manipulator place their targets (or gains) per episode
in the env's own mjModel."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any, ClassVar

import numpy as np

from envs.mujoco.dmc import assets
from envs.mujoco.dmc.base import (
    DmcTask,
    Fields,
    forward_without_actuation,
    norm,
    randomize_limited_and_rotational_joints,
    sensor,
    set_random_joint_angles,
    start_state,
)
from envs.mujoco.dmc.rewards import tolerance


class Reacher(DmcTask):
    domain = "reacher"
    per_episode_model = True
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
    per_episode_model = True
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
    per_episode_model = True
    task, randomize_gains = "hard", True


def manipulator_xml(use_peg: bool, insert: bool) -> str:
    """manipulator.xml without the props a task does not use (dm_control's `manipulator.make_model`)."""
    root = ET.fromstring(assets.read_model("manipulator.xml"))
    required = ["peg", "target_peg"] if use_peg else ["ball", "target_ball"]
    if insert:
        required.append("slot" if use_peg else "cup")
    props = ("ball", "target_ball", "cup", "peg", "target_peg", "slot")
    assets.remove(root, *[("body", prop) for prop in props if prop not in required])
    return ET.tostring(root, encoding="unicode")


class PlanarArm(DmcTask):
    """What manipulator and stacker share: the planar arm and hand, its random start (each joint
    within its range, or any angle where unlimited; the finger as the thumb), its observation."""

    per_episode_model = True
    time_limit = 10
    control_timestep = .01
    fields = ("qpos", "qvel", "xpos", "xquat", "site_xpos", "sensordata")
    arm_joints = ("arm_root", "arm_shoulder", "arm_elbow", "arm_wrist", "finger", "fingertip", "thumb", "thumbtip")
    close = 0.01

    def __init__(self, model: Any):
        super().__init__(model)
        self.arm_q = [int(model.joint(j).qposadr[0]) for j in self.arm_joints]
        self.arm_v = [int(model.joint(j).dofadr[0]) for j in self.arm_joints]
        self.finger, self.thumb = int(model.joint("finger").qposadr[0]), int(model.joint("thumb").qposadr[0])
        self.hand, self.grasp = int(model.body("hand").id), int(model.site("grasp").id)
        ids = [model.joint(j).id for j in self.arm_joints]
        is_limited, joint_range = model.jnt_limited[ids].astype(bool), model.jnt_range[ids]
        self.lower = np.where(is_limited, joint_range[:, 0], -np.pi)
        self.upper = np.where(is_limited, joint_range[:, 1], np.pi)

    def _random_arm(self, data: Any, random: np.random.RandomState) -> None:
        data.qpos[self.arm_q] = random.uniform(self.lower, self.upper)
        data.qpos[self.finger] = data.qpos[self.thumb]

    def _pose(self, f: Fields, body: int) -> np.ndarray:
        """dm_control's body_2d_pose: x, z, qw, qy."""
        return np.hstack((f["xpos"][:, [3 * body, 3 * body + 2]], f["xquat"][:, [4 * body, 4 * body + 2]]))

    def _arm(self, f: Fields) -> dict[str, np.ndarray]:
        arm = f["qpos"][:, self.arm_q]
        return {"arm_pos": np.stack((np.sin(arm), np.cos(arm)), axis=2), "arm_vel": f["qvel"][:, self.arm_v]}


class Manipulator(PlanarArm):
    """Bring (or insert) a ball or a peg to its target with a planar arm and hand."""

    domain = "manipulator"
    touch_sensors = ("palm_touch", "finger_touch", "thumb_touch", "fingertip_touch", "thumbtip_touch")
    p_in_hand = p_in_target = 0.1
    use_peg: ClassVar[bool]
    insert: ClassVar[bool]

    @classmethod
    def model_xml(cls) -> str:
        return manipulator_xml(cls.use_peg, cls.insert)

    def __init__(self, model: Any):
        super().__init__(model)
        obj = "peg" if self.use_peg else "ball"
        self.object_q = [int(model.joint(f"{obj}_{d}").qposadr[0]) for d in "xzy"]
        self.object_v = [int(model.joint(f"{obj}_{d}").dofadr[0]) for d in "xzy"]
        self.object = int(model.body(obj).id)
        self.target = int(model.body("target_peg" if self.use_peg else "target_ball").id)
        self.receptacle = int(model.body("slot" if self.use_peg else "cup").id) if self.insert else None
        self.touch = [sensor(model, s).start for s in self.touch_sensors]
        site = lambda name: int(model.site(name).id)  # noqa: E731
        self.pairs = ([(site("peg_grasp"), site("grasp")), (site("peg_pinch"), site("pinch")),
                       (site("peg"), site("target_peg")), (site("target_peg_tip"), site("peg_tip"))]
                      if self.use_peg else [(site("ball"), site("target_ball"))])

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        penetrating = True
        while penetrating:
            self._random_arm(data, random)
            target_x = random.uniform(-0.4, 0.4)
            target_z = random.uniform(0.1, 0.4)
            if self.insert:
                target_angle = random.uniform(-np.pi / 3, np.pi / 3)
                model.body_pos[self.receptacle, [0, 2]] = (target_x, target_z)
                model.body_quat[self.receptacle, [0, 2]] = [np.cos(target_angle / 2), np.sin(target_angle / 2)]
            else:
                target_angle = random.uniform(-np.pi, np.pi)
            model.body_pos[self.target, [0, 2]] = (target_x, target_z)
            model.body_quat[self.target, [0, 2]] = [np.cos(target_angle / 2), np.sin(target_angle / 2)]
            init_type = random.choice(["in_hand", "in_target", "uniform"],
                                      p=[self.p_in_hand, self.p_in_target, 1 - self.p_in_hand - self.p_in_target])
            if init_type == "in_target":
                object_x, object_z, object_angle = target_x, target_z, target_angle
            elif init_type == "in_hand":
                forward_without_actuation(model, data)
                object_x, object_z = data.site_xpos[self.grasp, 0], data.site_xpos[self.grasp, 2]
                grasp_direction = data.site_xmat[self.grasp, [0, 6]]  # ['xx', 'zx']
                object_angle = np.pi - np.arctan2(grasp_direction[1], grasp_direction[0])
            else:
                object_x = random.uniform(-0.5, 0.5)
                object_z = random.uniform(0, 0.7)
                object_angle = random.uniform(0, 2 * np.pi)
                data.qvel[self.object_v[0]] = random.uniform(-5, 5)
            data.qpos[self.object_q] = (object_x, object_z, object_angle)
            forward_without_actuation(model, data)
            penetrating = data.ncon > 0
        # EnvPool's random_info: what its align test needs to place dm_control's props the same way. Its codes
        # (1 in target, 2 in hand, 3 uniform); the last entry the object's x velocity at the start: the last
        # uniform draw's, kept through the draws penetration rejected after it (dm_control's loop, and EnvPool's,
        # sets it only in the uniform branch and never clears it), else 0
        code = {"in_target": 1, "in_hand": 2, "uniform": 3}[str(init_type)]
        info = [target_x, target_z, target_angle, code, object_x, object_z, object_angle, data.qvel[self.object_v[0]]]
        return {"qpos0": data.qpos.copy(), "random_info": np.array(info, np.float64)}

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        return {**self._arm(f), "touch": np.log1p(f["sensordata"][:, self.touch]), "hand_pos": self._pose(f, self.hand),
                "object_pos": self._pose(f, self.object), "object_vel": f["qvel"][:, self.object_v],
                "target_pos": self._pose(f, self.target)}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        xpos = f["site_xpos"].reshape(len(f["site_xpos"]), -1, 3)
        close = [tolerance(norm(xpos[:, a] - xpos[:, b]), (0, self.close), self.close * 2) for a, b in self.pairs]
        if not self.use_peg:
            return close[0]
        grasp, pinch, bring, bring_tip = close
        return np.maximum((bring + bring_tip) / 2, ((grasp + pinch) / 2) / 3)


class ManipulatorBringBall(Manipulator):
    task, use_peg, insert = "bring_ball", False, False


class ManipulatorBringPeg(Manipulator):
    task, use_peg, insert = "bring_peg", True, False


class ManipulatorInsertBall(Manipulator):
    task, use_peg, insert = "insert_ball", False, True


class ManipulatorInsertPeg(Manipulator):
    task, use_peg, insert = "insert_peg", True, True


def stacker_xml(n_boxes: int) -> str:
    """stacker.xml with boxes 0 .. n_boxes - 1 (dm_control's `stacker.make_model`)."""
    root = ET.fromstring(assets.read_model("stacker.xml"))
    assets.remove(root, *[("body", f"box{b}") for b in range(n_boxes, 4)])
    return ET.tostring(root, encoding="unicode")


class Stacker(PlanarArm):
    """Stack boxes with the manipulator's arm: a box on the target, the hand away from it."""

    domain = "stacker"
    n_boxes: ClassVar[int]

    @classmethod
    def model_xml(cls) -> str:
        return stacker_xml(cls.n_boxes)

    def __init__(self, model: Any):
        super().__init__(model)
        boxes = [f"box{b}" for b in range(self.n_boxes)]
        self.box_q = [[int(model.joint(f"{b}_{d}").qposadr[0]) for d in "xzy"] for b in boxes]
        self.box_v = [int(model.joint(f"{b}_{d}").dofadr[0]) for b in boxes for d in "xyz"]
        self.target = int(model.body("target").id)
        self.boxes = [int(model.body(b).id) for b in boxes]
        self.box_sites = [int(model.site(b).id) for b in boxes]
        self.target_site = int(model.site("target").id)
        self.box_size = float(model.geom_size[model.geom("target").id, 0])

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        penetrating = True
        while penetrating:
            self._random_arm(data, random)
            target_height = 2 * random.randint(self.n_boxes) + 1
            model.body_pos[self.target, 2] = self.box_size * target_height
            model.body_pos[self.target, 0] = random.uniform(-0.37, 0.37)
            for x, z, y in self.box_q:
                data.qpos[x] = random.uniform(0.1, 0.3)
                data.qpos[z] = random.uniform(0, 0.7)
                data.qpos[y] = random.uniform(0, 2 * np.pi)
            forward_without_actuation(model, data)
            penetrating = data.ncon > 0
        return {**start_state(data, "qpos0", "qvel0", "qacc_warmstart0"), "target0": model.body_pos[self.target, [0, 2]]}

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        return {**self._arm(f), "touch": np.log1p(f["sensordata"]), "hand_pos": self._pose(f, self.hand),
                "box_pos": np.stack([self._pose(f, b) for b in self.boxes], axis=1), "box_vel": f["qvel"][:, self.box_v],
                "target_pos": f["xpos"][:, [3 * self.target, 3 * self.target + 2]]}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        xpos = f["site_xpos"].reshape(len(f["site_xpos"]), -1, 3)
        target = xpos[:, self.target_site]
        nearest = np.min([norm(xpos[:, box] - target) for box in self.box_sites], axis=0)
        box_is_close = tolerance(nearest, margin=2 * self.box_size)
        hand_is_far = tolerance(norm(xpos[:, self.grasp] - target), (0.1, float("inf")), margin=self.close)
        return box_is_close * hand_is_far


class StackerStack2(Stacker):
    task, n_boxes = "stack_2", 2


class StackerStack4(Stacker):
    task, n_boxes = "stack_4", 4

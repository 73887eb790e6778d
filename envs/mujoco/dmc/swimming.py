"""dm_control's fish and swimmer domains over a batch (dm_control/suite/fish.py, swimmer.py):
bodies in a fluid, their targets placed per episode in the env's own mjModel."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any, ClassVar

import numpy as np

from envs.mujoco.dmc import assets
from envs.mujoco.dmc.base import DmcTask, Fields, norm, randomize_limited_and_rotational_joints, rows_times
from envs.mujoco.dmc.rewards import tolerance


class Fish(DmcTask):
    domain = "fish"
    time_limit = 40
    control_timestep = .04
    fields = ("qpos", "qvel", "xmat", "geom_xpos", "geom_xmat")
    joint_names = ("tail1", "tail_twist", "tail2", "finright_roll", "finright_pitch", "finleft_roll", "finleft_pitch")

    def __init__(self, model: Any):
        super().__init__(model)
        self.torso = int(model.body("torso").id)
        self.joints = [int(model.joint(j).qposadr[0]) for j in self.joint_names]
        self.root = int(model.joint("root").qposadr[0])
        self.target, self.mouth = int(model.geom("target").id), int(model.geom("mouth").id)
        self.radii = model.geom_size[[self.mouth, self.target], 0].sum()

    def _start(self, data: Any, random: np.random.RandomState) -> None:
        quat = random.randn(4)
        data.qpos[self.root + 3:self.root + 7] = quat / np.linalg.norm(quat)
        for j in self.joints:
            data.qpos[j] = random.uniform(-0.2, 0.2)

    def _upright(self, f: Fields) -> np.ndarray:
        return f["xmat"][:, 9 * self.torso + 8]

    def _mouth_to_target(self, f: Fields) -> np.ndarray:
        xpos = f["geom_xpos"]
        to_target = xpos[:, 3 * self.target:3 * self.target + 3] - xpos[:, 3 * self.mouth:3 * self.mouth + 3]
        return rows_times(to_target, f["geom_xmat"][:, 9 * self.mouth:9 * self.mouth + 9])

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        return {"joint_angles": f["qpos"][:, self.joints], "upright": self._upright(f).copy(), "velocity": f["qvel"].copy()}


class FishUpright(Fish):
    task = "upright"

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        self._start(data, random)
        model.geom_rgba[self.target, 3] = 0
        return {"qpos0": data.qpos.copy()}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        return tolerance(self._upright(f), (1, 1), margin=1)


class FishSwim(Fish):
    per_episode_model = True
    task = "swim"

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        self._start(data, random)
        model.geom_pos[self.target, 0] = random.uniform(-0.4, 0.4)
        model.geom_pos[self.target, 1] = random.uniform(-0.4, 0.4)
        model.geom_pos[self.target, 2] = random.uniform(0.1, 0.3)
        return {"qpos0": data.qpos.copy(), "target0": model.geom_pos[self.target].copy()}

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        obs = super().observe(f)
        return {"joint_angles": obs["joint_angles"], "upright": obs["upright"], "target": self._mouth_to_target(f),
                "velocity": obs["velocity"]}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        in_target = tolerance(norm(self._mouth_to_target(f)), (0, self.radii), margin=2 * self.radii)
        is_upright = 0.5 * (self._upright(f) + 1)
        return (7 * in_target + is_upright) / 8


def swimmer_xml(n_bodies: int) -> str:
    """swimmer.xml with a chain of n_bodies links, each with its joint, motor, velocimeter and gyro
    (dm_control's `swimmer._make_model`)."""
    root = ET.fromstring(assets.read_model("swimmer.xml"))
    head = root.find("./worldbody/body")
    actuator = ET.SubElement(root, "actuator")
    sensors = ET.SubElement(root, "sensor")
    parent = head
    for index in range(n_bodies - 1):
        child = ET.Element("body", name=f"segment_{index}")
        child.set("pos", "0 .1 0")
        ET.SubElement(child, "geom", {"class": "visual", "name": f"visual_{index}"})
        ET.SubElement(child, "geom", {"class": "inertial", "name": f"inertial_{index}"})
        child.append(ET.Element("site", name=f"site_{index}"))
        limit = 360.0 / n_bodies
        child.append(ET.Element("joint", {"name": f"joint_{index}", "range": f"{-limit} {limit}"}))
        actuator.append(ET.Element("motor", name=f"motor_{index}", joint=f"joint_{index}"))
        sensors.append(ET.Element("velocimeter", name=f"velocimeter_{index}", site=f"site_{index}"))
        sensors.append(ET.Element("gyro", name=f"gyro_{index}", site=f"site_{index}"))
        parent.append(child)
        parent = child
    scale = n_bodies / 6.0
    for cam in root.findall("./worldbody/body/camera"):
        if cam.get("mode") == "trackcom":
            cam.set("pos", " ".join(str(float(dim) * scale) for dim in cam.get("pos").split(" ")))
    return ET.tostring(root, encoding="unicode")


class Swimmer(DmcTask):
    domain = "swimmer"
    per_episode_model = True
    time_limit = 30
    control_timestep = .03
    fields = ("qpos", "qvel", "xmat", "geom_xpos", "sensordata")
    n_bodies: ClassVar[int]

    def __init__(self, model: Any):
        super().__init__(model)
        self.target, self.nose = int(model.geom("target").id), int(model.geom("nose").id)
        self.head = int(model.body("head").id)
        self.light = int(model.light("target_light").id)
        self.target_size = float(model.geom_size[self.target, 0])

    @classmethod
    def model_xml(cls) -> str:
        return swimmer_xml(cls.n_bodies)

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        randomize_limited_and_rotational_joints(model, data, random)
        close_target = random.rand() < 0.2
        box = 0.3 if close_target else 2
        xpos, ypos = random.uniform(-box, box, size=2)
        model.geom_pos[self.target, :2] = xpos, ypos
        model.light_pos[self.light, :2] = xpos, ypos
        return {"qpos0": data.qpos.copy(), "target0": np.array([xpos, ypos])}

    def _nose_to_target(self, f: Fields) -> np.ndarray:
        xpos = f["geom_xpos"]
        to_target = xpos[:, 3 * self.target:3 * self.target + 3] - xpos[:, 3 * self.nose:3 * self.nose + 3]
        return rows_times(to_target, f["xmat"][:, 9 * self.head:9 * self.head + 9])[:, :2]

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        n = len(f["qpos"])
        velocities = f["sensordata"][:, 12:].reshape(n, -1, 6)[:, :, [0, 1, 5]].reshape(n, -1)
        return {"joints": f["qpos"][:, 3:].copy(), "to_target": self._nose_to_target(f), "body_velocities": velocities}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        return tolerance(norm(self._nose_to_target(f)), (0, self.target_size), margin=5 * self.target_size,
                         kind="long_tail")


class Swimmer6(Swimmer):
    task, n_bodies = "swimmer6", 6


class Swimmer15(Swimmer):
    task, n_bodies = "swimmer15", 15

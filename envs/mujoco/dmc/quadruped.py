"""dm_control's quadruped domain over a batch (dm_control/suite/quadruped.py): walk and run on a
flat floor, escape from a bowl of random terrain (a heightfield drawn per episode in the env's
own mjModel), fetch a ball to a target."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any, ClassVar

import numpy as np

from envs.mujoco.dmc import assets
from envs.mujoco.dmc.base import DmcTask, Fields, forward_without_actuation, norm, rows_times, sensor, start_state
from envs.mujoco.dmc.rewards import tolerance

WALLS = ("wall_px", "wall_py", "wall_nx", "wall_ny")


def quadruped_xml(floor_size: float | None = None, terrain: bool = False, rangefinders: bool = False,
                  walls_and_ball: bool = False) -> str:
    """quadruped.xml with the parts a task leaves out removed (dm_control's `quadruped.make_model`)."""
    root = ET.fromstring(assets.read_model("quadruped.xml"))
    if floor_size is not None:
        root.find(".//geom[@name='floor']").attrib["size"] = f"{floor_size} {floor_size} .5"
    if not walls_and_ball:
        assets.remove(root, *[("geom", wall) for wall in WALLS], ("body", "ball"), ("site", "target"))
    if not terrain:
        assets.remove(root, ("geom", "terrain"))
    if not rangefinders:
        assets.remove(root, *root.findall(".//rangefinder"))
    return ET.tostring(root, encoding="unicode")


def find_non_contacting_height(model: Any, data: Any, orientation: np.ndarray, root: int, x_pos: float = 0.0,
                               y_pos: float = 0.0) -> None:
    """Raises the body from the floor in steps of 0.01 until nothing touches (dm_control's
    `_find_non_contacting_height`, each try a whole `reset_context`)."""
    import mujoco

    z_pos, num_contacts, attempts = 0.0, 1, 0
    while num_contacts > 0:
        mujoco.mj_resetData(model, data)
        forward_without_actuation(model, data)
        data.qpos[root:root + 3] = (x_pos, y_pos, z_pos)
        data.qpos[root + 3:root + 7] = orientation
        forward_without_actuation(model, data)
        num_contacts = data.ncon
        z_pos += 0.01
        attempts += 1
        if attempts > 10000:
            raise RuntimeError("Failed to find a non-contacting configuration.")


class Quadruped(DmcTask):
    domain = "quadruped"
    time_limit = 20
    control_timestep = .02
    fields = ("qpos", "qvel", "act", "xpos", "xmat", "site_xpos", "sensordata")
    model_kwargs: ClassVar[dict[str, Any]]

    def __init__(self, model: Any):
        import mujoco

        super().__init__(model)
        hinges = np.flatnonzero(model.jnt_type == int(mujoco.mjtJoint.mjJNT_HINGE))
        self.hinge_q, self.hinge_v = model.jnt_qposadr[hinges], model.jnt_dofadr[hinges]
        self.torso = int(model.body("torso").id)
        self.root = int(model.joint("root").qposadr[0])
        self.velocimeter = sensor(model, "velocimeter")

        def of_types(*types: Any) -> np.ndarray:  # sensordata of the sensors of these types, in sensor order
            ids = np.flatnonzero(np.isin(model.sensor_type, [int(t) for t in types]))
            return np.concatenate([np.arange(model.sensor_adr[i], model.sensor_adr[i] + model.sensor_dim[i]) for i in ids]
                                  ) if len(ids) else np.zeros(0, int)

        s = mujoco.mjtSensor
        self.imu = of_types(s.mjSENS_GYRO, s.mjSENS_ACCELEROMETER)
        self.force_torque = of_types(s.mjSENS_FORCE, s.mjSENS_TORQUE)
        self.rangefinder = of_types(s.mjSENS_RANGEFINDER)

    @classmethod
    def model_xml(cls) -> str:
        return quadruped_xml(**cls.model_kwargs)

    def _torso(self, f: Fields) -> tuple[np.ndarray, np.ndarray]:
        return f["xpos"][:, 3 * self.torso:3 * self.torso + 3], f["xmat"][:, 9 * self.torso:9 * self.torso + 9]

    def _upright(self, f: Fields) -> np.ndarray:
        return f["xmat"][:, 9 * self.torso + 8]

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        s = f["sensordata"]
        return {"egocentric_state": np.hstack((f["qpos"][:, self.hinge_q], f["qvel"][:, self.hinge_v], f["act"])),
                "torso_velocity": s[:, self.velocimeter].copy(), "torso_upright": self._upright(f).copy(),
                "imu": s[:, self.imu], "force_torque": np.arcsinh(s[:, self.force_torque])}

    def upright_reward(self, f: Fields, deviation_angle: float = 0) -> np.ndarray:
        deviation = np.cos(np.deg2rad(deviation_angle))
        return tolerance(self._upright(f), (deviation, float("inf")), kind="linear", margin=1 + deviation,
                         value_at_margin=0)


class QuadrupedMove(Quadruped):
    desired_speed: ClassVar[float]

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        orientation = random.randn(4)
        orientation /= np.linalg.norm(orientation)
        find_non_contacting_height(model, data, orientation, self.root)
        return start_state(data, "qpos0", "qvel0", "act0", "qacc_warmstart0")

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        move = tolerance(f["sensordata"][:, self.velocimeter][:, 0], (self.desired_speed, float("inf")),
                         margin=self.desired_speed, value_at_margin=0.5, kind="linear")
        return self.upright_reward(f) * move


class QuadrupedWalk(QuadrupedMove):
    task, desired_speed = "walk", 0.5
    model_kwargs = {"floor_size": 20 * 0.5}


class QuadrupedRun(QuadrupedMove):
    task, desired_speed = "run", 5
    model_kwargs = {"floor_size": 20 * 5}


class QuadrupedEscape(Quadruped):
    per_episode_model = True
    task = "escape"
    model_kwargs = {"floor_size": 40, "terrain": True, "rangefinders": True}
    smoothness, bump_scale = 0.15, 2

    def __init__(self, model: Any):
        super().__init__(model)
        self.workspace = int(model.site("workspace").id)
        self.terrain_size = float(model.hfield_size[0, 0])

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        from scipy import ndimage

        res = model.hfield_nrow[0]
        row_grid, col_grid = np.ogrid[-1:1:res * 1j, -1:1:res * 1j]
        radius = np.clip(np.sqrt(col_grid ** 2 + row_grid ** 2), .04, 1)
        bowl_shape = .5 - np.cos(2 * np.pi * radius) / 2
        bump_res = int(2 * model.hfield_size[0, 0] / self.bump_scale)
        bumps = random.uniform(self.smoothness, 1, (bump_res, bump_res))
        terrain = bowl_shape * ndimage.zoom(bumps, res / float(bump_res))
        start = model.hfield_adr[0]
        model.hfield_data[start:start + res ** 2] = terrain.ravel()
        orientation = random.randn(4)
        orientation /= np.linalg.norm(orientation)
        find_non_contacting_height(model, data, orientation, self.root)
        return {**start_state(data, "qpos0", "qvel0", "act0", "qacc_warmstart0"), "hfield0": terrain.ravel()}

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        pos, frame = self._torso(f)
        readings = f["sensordata"][:, self.rangefinder]
        return {**super().observe(f), "origin": -rows_times(pos, frame),
                "rangefinder": np.where(readings == -1.0, 1.0, np.tanh(readings))}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        distance = norm(f["site_xpos"][:, 3 * self.workspace:3 * self.workspace + 3])
        escape = tolerance(distance, (self.terrain_size, float("inf")), margin=self.terrain_size, value_at_margin=0,
                           kind="linear")
        return self.upright_reward(f, deviation_angle=20) * escape


class QuadrupedFetch(Quadruped):
    task = "fetch"
    model_kwargs = {"walls_and_ball": True}

    def __init__(self, model: Any):
        super().__init__(model)
        self.ball, self.ball_q = int(model.body("ball").id), int(model.joint("ball_root").qposadr[0])
        self.ball_v, self.root_v = int(model.joint("ball_root").dofadr[0]), int(model.joint("root").dofadr[0])
        self.workspace, self.target = int(model.site("workspace").id), int(model.site("target").id)
        floor = float(model.geom_size[model.geom("floor").id, 0])
        self.spawn_radius = 0.9 * floor
        self.arena_radius = floor * np.sqrt(2)
        self.reach_radius = model.site_size[self.workspace, 0] + model.geom_size[model.geom("ball").id, 0]
        self.target_radius = float(model.site_size[self.target, 0])

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        azimuth = random.uniform(0, 2 * np.pi)
        orientation = np.array((np.cos(azimuth / 2), 0, 0, np.sin(azimuth / 2)))
        r = self.spawn_radius
        x_pos, y_pos = random.uniform(-r, r, size=(2,))
        find_non_contacting_height(model, data, orientation, self.root, x_pos, y_pos)
        data.qpos[self.ball_q:self.ball_q + 2] = random.uniform(-r, r, size=(2,))
        data.qpos[self.ball_q + 2] = 2
        data.qvel[self.ball_v:self.ball_v + 2] = 5 * random.randn(2)
        return start_state(data, "qpos0", "qvel0", "act0", "qacc_warmstart0")

    def _site(self, f: Fields, site: int) -> np.ndarray:
        return f["site_xpos"][:, 3 * site:3 * site + 3]

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        pos, frame = self._torso(f)
        n = len(pos)
        ball_rel_pos = f["xpos"][:, 3 * self.ball:3 * self.ball + 3] - pos
        ball_rel_vel = f["qvel"][:, self.ball_v:self.ball_v + 3] - f["qvel"][:, self.root_v:self.root_v + 3]
        ball_rot_vel = f["qvel"][:, self.ball_v + 3:self.ball_v + 6]
        rows = np.stack((ball_rel_pos, ball_rel_vel, ball_rot_vel), axis=1)  # (n, 3, 3): vstack's rows
        ball_state = np.einsum("nri,nij->nrj", rows, frame.reshape(n, 3, 3)).reshape(n, 9)
        return {**super().observe(f), "ball_state": ball_state,
                "target_position": rows_times(self._site(f, self.target) - pos, frame)}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        ball = f["xpos"][:, 3 * self.ball:3 * self.ball + 3]
        reach = tolerance(norm((self._site(f, self.workspace) - ball)[:, :2]), (0, self.reach_radius), kind="linear",
                          margin=self.arena_radius, value_at_margin=0)
        fetch = tolerance(norm((self._site(f, self.target) - ball)[:, :2]), (0, self.target_radius), kind="linear",
                          margin=self.arena_radius, value_at_margin=0)
        return self.upright_reward(f) * (reach * (0.5 + 0.5 * fetch))

"""Gymnasium's MuJoCo v5 tasks as numpy over a batch of envs.

Each task reproduces its Gymnasium env's observation, reward, termination and info, step for
step (tests/test_mujoco.py), from the fields the physics kernel copies out after each step
(`fields`: qpos, qvel, and per task xpos, cfrc_ext). A row is an env; the math is Gymnasium's,
written over the batch with the same operations in the same order, so every value is the same
float. `before` holds each env's fields as they were before the step (its last result).
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

# MujocoEnv's rendering kwargs, used by render_mode="rgb_array" (envs/mujoco/render.py). A
# default_camera_config of None stands for the Gymnasium env's own; {} for none.
RENDER_KWARGS: dict[str, Any] = {
    "default_camera_config": None, "width": 480, "height": 480, "camera_id": None, "camera_name": None,
    "max_geom": 1000, "visual_options": {},
}  # fmt: skip

Fields = dict[str, np.ndarray]


def row_norm(rows: np.ndarray) -> np.ndarray:
    """np.linalg.norm(row) of each row, as Gymnasium computes it per env: the square root of the
    row's dot with itself, by the same dot kernel (BLAS's, which may fuse multiply-adds)."""
    return np.sqrt(np.vecdot(rows, rows))


class Task:
    """One Gymnasium v5 task over a batch. Subclasses set the class variables and the math."""

    task_id: ClassVar[str]
    defaults: ClassVar[dict[str, Any]]  # the Gymnasium env's own kwargs and their defaults
    max_episode_steps: ClassVar[int] = 1000  # Gymnasium's registration
    fields: ClassVar[tuple[str, ...]] = ("qpos", "qvel")
    before_fields: ClassVar[tuple[str, ...]] = ("qpos",)  # the fields `step` reads from before the step
    skipped_positions: ClassVar[int] = 1  # qpos entries exclude_current_positions_from_observation drops
    normal_qvel_noise: ClassVar[bool] = False  # reset qvel noise: scale * standard_normal, else uniform
    info_keys: ClassVar[tuple[str, ...]]
    vector_info: ClassVar[tuple[str, ...]] = ()  # info keys with a row per env (the others: a number)
    # Gymnasium's pre-v5 rule (v4 and EnvPool's v2/v3 ids, envs/mujoco/legacy.py): the healthy reward
    # is paid while healthy or while an unhealthy step ends the episode (terminate_when_unhealthy)
    legacy_healthy_reward: ClassVar[bool] = False

    @classmethod
    def gymnasium_id(cls) -> str:
        """The Gymnasium id whose env this task reproduces (its camera is this task's)."""
        return cls.task_id

    def __init__(self, kw: dict[str, Any], model: Any, init_qpos: np.ndarray, init_qvel: np.ndarray):
        self.kw = kw
        self.dt = model.opt.timestep * kw["frame_skip"]  # MujocoEnv.dt
        self.init_qpos, self.init_qvel = init_qpos, init_qvel
        self.nq, self.nv = model.nq, model.nv

    # ------------------------------------------------------------------ spaces
    def observation_size(self) -> int:
        return self.nq + self.nv - (self.skipped_positions if self.kw["exclude_current_positions_from_observation"] else 0)

    def observation_space(self) -> gym.spaces.Box:
        return gym.spaces.Box(-np.inf, np.inf, (self.observation_size(),), np.float64)

    # ------------------------------------------------------------------ math
    def _position(self, f: Fields) -> np.ndarray:
        qpos = f["qpos"]
        return qpos[:, self.skipped_positions:] if self.kw["exclude_current_positions_from_observation"] else qpos

    def observe(self, f: Fields) -> np.ndarray:
        return np.concatenate((self._position(f), f["qvel"]), axis=1)

    def ctrl_cost(self, action: np.ndarray) -> np.ndarray:
        return self.kw["ctrl_cost_weight"] * np.sum(np.square(action), axis=1)

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """(reward, terminated, info) of the envs that stepped from `before` to `after`."""
        raise NotImplementedError

    def reset_info(self, f: Fields) -> dict[str, np.ndarray]:
        """Info of envs just reset: Gymnasium's reset info, and zeros for the step-only keys."""
        qpos = f["qpos"]
        info = {k: np.zeros(len(qpos)) for k in self.info_keys if k not in self.vector_info}
        info["x_position"] = qpos[:, 0].copy()
        return info

    def healthy_reward(self, healthy: np.ndarray) -> np.ndarray:
        """The healthy reward of envs `healthy` or not (v5: only while healthy)."""
        if self.legacy_healthy_reward:
            return (healthy | bool(self.kw["terminate_when_unhealthy"])) * self.kw["healthy_reward"]
        return healthy * self.kw["healthy_reward"]

    def reset_noise(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """One env's reset (qpos, qvel), drawn as the Gymnasium env's reset_model draws them."""
        s = self.kw["reset_noise_scale"]
        qpos = self.init_qpos + rng.uniform(low=-s, high=s, size=self.nq)
        if self.normal_qvel_noise:
            qvel = self.init_qvel + s * rng.standard_normal(self.nv)
        else:
            qvel = self.init_qvel + rng.uniform(low=-s, high=s, size=self.nv)
        return qpos, qvel


class HalfCheetah(Task):
    task_id = "HalfCheetah-v5"
    defaults = {"xml_file": "half_cheetah.xml", "frame_skip": 5, "forward_reward_weight": 1.0, "ctrl_cost_weight": 0.1,
                "reset_noise_scale": 0.1, "exclude_current_positions_from_observation": True}
    normal_qvel_noise = True
    info_keys = ("x_position", "x_velocity", "reward_forward", "reward_ctrl")

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        x_after = after["qpos"][:, 0]
        x_velocity = (x_after - before["qpos"][:, 0]) / self.dt
        forward_reward = self.kw["forward_reward_weight"] * x_velocity
        ctrl_cost = self.ctrl_cost(action)
        reward = forward_reward - ctrl_cost
        info = {"x_position": x_after.copy(), "x_velocity": x_velocity, "reward_forward": forward_reward,
                "reward_ctrl": -ctrl_cost}
        return reward, np.zeros(len(reward), bool), info


class Hopper(Task):
    task_id = "Hopper-v5"
    defaults = {"xml_file": "hopper.xml", "frame_skip": 4, "forward_reward_weight": 1.0, "ctrl_cost_weight": 1e-3,
                "healthy_reward": 1.0, "terminate_when_unhealthy": True, "healthy_state_range": (-100.0, 100.0),
                "healthy_z_range": (0.7, float("inf")), "healthy_angle_range": (-0.2, 0.2), "reset_noise_scale": 5e-3,
                "exclude_current_positions_from_observation": True}
    info_keys = ("x_position", "z_distance_from_origin", "x_velocity", "reward_forward", "reward_ctrl", "reward_survive")

    def observe(self, f: Fields) -> np.ndarray:
        return np.concatenate((self._position(f), np.clip(f["qvel"], -10, 10)), axis=1)

    def is_healthy(self, f: Fields) -> np.ndarray:
        qpos = f["qpos"]
        z, angle = qpos[:, 1], qpos[:, 2]
        state = np.concatenate((qpos, f["qvel"]), axis=1)[:, 2:]
        min_state, max_state = self.kw["healthy_state_range"]
        min_z, max_z = self.kw["healthy_z_range"]
        min_angle, max_angle = self.kw["healthy_angle_range"]
        healthy_state = np.all(np.logical_and(min_state < state, state < max_state), axis=1)
        return healthy_state & (min_z < z) & (z < max_z) & (min_angle < angle) & (angle < max_angle)

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        qpos = after["qpos"]
        x_velocity = (qpos[:, 0] - before["qpos"][:, 0]) / self.dt
        forward_reward = self.kw["forward_reward_weight"] * x_velocity
        healthy = self.is_healthy(after)
        healthy_reward = self.healthy_reward(healthy)
        ctrl_cost = self.ctrl_cost(action)
        reward = (forward_reward + healthy_reward) - ctrl_cost
        terminated = ~healthy & bool(self.kw["terminate_when_unhealthy"])
        info = {"x_position": qpos[:, 0].copy(), "z_distance_from_origin": qpos[:, 1] - self.init_qpos[1],
                "x_velocity": x_velocity, "reward_forward": forward_reward, "reward_ctrl": -ctrl_cost,
                "reward_survive": healthy_reward}
        return reward, terminated, info

    def reset_info(self, f: Fields) -> dict[str, np.ndarray]:
        info = super().reset_info(f)
        info["z_distance_from_origin"] = f["qpos"][:, 1] - self.init_qpos[1]
        return info


class Walker2d(Hopper):
    task_id = "Walker2d-v5"
    defaults = {"xml_file": "walker2d_v5.xml", "frame_skip": 4, "forward_reward_weight": 1.0, "ctrl_cost_weight": 1e-3,
                "healthy_reward": 1.0, "terminate_when_unhealthy": True, "healthy_z_range": (0.8, 2.0),
                "healthy_angle_range": (-1.0, 1.0), "reset_noise_scale": 5e-3,
                "exclude_current_positions_from_observation": True}

    def is_healthy(self, f: Fields) -> np.ndarray:
        qpos = f["qpos"]
        z, angle = qpos[:, 1], qpos[:, 2]
        min_z, max_z = self.kw["healthy_z_range"]
        min_angle, max_angle = self.kw["healthy_angle_range"]
        return (min_z < z) & (z < max_z) & (min_angle < angle) & (angle < max_angle)


class Swimmer(Task):
    task_id = "Swimmer-v5"
    defaults = {"xml_file": "swimmer.xml", "frame_skip": 4, "forward_reward_weight": 1.0, "ctrl_cost_weight": 1e-4,
                "reset_noise_scale": 0.1, "exclude_current_positions_from_observation": True}
    skipped_positions = 2
    info_keys = ("x_position", "y_position", "distance_from_origin", "x_velocity", "y_velocity", "reward_forward",
                 "reward_ctrl")

    def _xy(self, f: Fields) -> np.ndarray:
        return f["qpos"][:, 0:2]

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        xy_after = self._xy(after)
        xy_velocity = (xy_after - self._xy(before)) / self.dt
        x_velocity, y_velocity = xy_velocity[:, 0], xy_velocity[:, 1]
        forward_reward = self.kw["forward_reward_weight"] * x_velocity
        ctrl_cost = self.ctrl_cost(action)
        reward, terminated, info = self._reward(after, forward_reward, ctrl_cost)
        qpos = after["qpos"]
        info = {"x_position": qpos[:, 0].copy(), "y_position": qpos[:, 1].copy(), "distance_from_origin": row_norm(qpos[:, 0:2]),
                "x_velocity": x_velocity, "y_velocity": y_velocity, **info}
        return reward, terminated, info

    def _reward(self, after: Fields, forward_reward: np.ndarray, ctrl_cost: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        reward = forward_reward - ctrl_cost
        return reward, np.zeros(len(reward), bool), {"reward_forward": forward_reward, "reward_ctrl": -ctrl_cost}

    def reset_info(self, f: Fields) -> dict[str, np.ndarray]:
        info = super().reset_info(f)
        qpos = f["qpos"]
        info.update(y_position=qpos[:, 1].copy(), distance_from_origin=row_norm(qpos[:, 0:2]))
        return info


class Ant(Swimmer):
    task_id = "Ant-v5"
    defaults = {"xml_file": "ant.xml", "frame_skip": 5, "forward_reward_weight": 1.0, "ctrl_cost_weight": 0.5,
                "contact_cost_weight": 5e-4, "healthy_reward": 1.0, "main_body": 1, "terminate_when_unhealthy": True,
                "healthy_z_range": (0.2, 1.0), "contact_force_range": (-1.0, 1.0), "reset_noise_scale": 0.1,
                "exclude_current_positions_from_observation": True, "include_cfrc_ext_in_observation": True}
    fields = ("qpos", "qvel", "xpos", "cfrc_ext")
    before_fields = ("xpos",)
    normal_qvel_noise = True
    info_keys = ("x_position", "y_position", "distance_from_origin", "x_velocity", "y_velocity", "reward_forward",
                 "reward_ctrl", "reward_contact", "reward_survive")

    def __init__(self, kw: dict[str, Any], model: Any, init_qpos: np.ndarray, init_qvel: np.ndarray):
        super().__init__(kw, model, init_qpos, init_qvel)
        self.nbody = model.nbody
        main = kw["main_body"]
        self.main_body = model.body(main).id  # a name or an id, as data.body(main_body) takes it

    def observation_size(self) -> int:
        size = super().observation_size()
        return size + (self.nbody - 1) * 6 if self.kw["include_cfrc_ext_in_observation"] else size

    def _xy(self, f: Fields) -> np.ndarray:
        return f["xpos"].reshape(-1, self.nbody, 3)[:, self.main_body, :2]

    def contact_forces(self, f: Fields) -> np.ndarray:
        lo, hi = self.kw["contact_force_range"]
        return np.clip(f["cfrc_ext"], lo, hi)  # (n, nbody * 6)

    def observe(self, f: Fields) -> np.ndarray:
        parts = (self._position(f), f["qvel"])
        if self.kw["include_cfrc_ext_in_observation"]:
            parts += (self.contact_forces(f)[:, 6:],)
        return np.concatenate(parts, axis=1)

    def is_healthy(self, f: Fields) -> np.ndarray:
        qpos = f["qpos"]
        finite = np.isfinite(qpos).all(axis=1) & np.isfinite(f["qvel"]).all(axis=1)
        min_z, max_z = self.kw["healthy_z_range"]
        return finite & (min_z <= qpos[:, 2]) & (qpos[:, 2] <= max_z)

    def _reward(self, after: Fields, forward_reward: np.ndarray, ctrl_cost: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        healthy = self.is_healthy(after)
        healthy_reward = self.healthy_reward(healthy)
        contact_cost = self.kw["contact_cost_weight"] * np.sum(np.square(self.contact_forces(after)), axis=1)
        reward = (forward_reward + healthy_reward) - (ctrl_cost + contact_cost)
        terminated = ~healthy & bool(self.kw["terminate_when_unhealthy"])
        info = {"reward_forward": forward_reward, "reward_ctrl": -ctrl_cost, "reward_contact": -contact_cost,
                "reward_survive": healthy_reward}
        return reward, terminated, info


class Humanoid(Swimmer):
    task_id = "Humanoid-v5"
    defaults = {"xml_file": "humanoid.xml", "frame_skip": 5, "forward_reward_weight": 1.25, "ctrl_cost_weight": 0.1,
                "contact_cost_weight": 5e-7, "contact_cost_range": (-np.inf, 10.0), "healthy_reward": 5.0,
                "terminate_when_unhealthy": True, "healthy_z_range": (1.0, 2.0), "reset_noise_scale": 1e-2,
                "exclude_current_positions_from_observation": True, "include_cinert_in_observation": True,
                "include_cvel_in_observation": True, "include_qfrc_actuator_in_observation": True,
                "include_cfrc_ext_in_observation": True}
    fields = ("qpos", "qvel", "xipos", "cinert", "cvel", "qfrc_actuator", "cfrc_ext", "ten_length", "ten_velocity")
    before_fields = ("xipos",)
    info_keys = ("x_position", "y_position", "tendon_length", "tendon_velocity", "distance_from_origin", "x_velocity",
                 "y_velocity", "reward_survive", "reward_forward", "reward_ctrl", "reward_contact")
    vector_info = ("tendon_length", "tendon_velocity")  # (n, ntendon) per key

    def __init__(self, kw: dict[str, Any], model: Any, init_qpos: np.ndarray, init_qvel: np.ndarray):
        super().__init__(kw, model, init_qpos, init_qvel)
        self.nbody, self.ntendon = model.nbody, model.ntendon
        self.body_mass = model.body_mass.copy()

    def _parts(self) -> tuple[tuple[str, int], ...]:
        """(field, its entries dropped from the front) of the observation after the positions."""
        kw = self.kw
        return tuple((f, skip) for f, skip, on in (
            ("qvel", 0, True), ("cinert", 10, kw["include_cinert_in_observation"]), ("cvel", 6, kw["include_cvel_in_observation"]),
            ("qfrc_actuator", 6, kw["include_qfrc_actuator_in_observation"]),
            ("cfrc_ext", 6, kw["include_cfrc_ext_in_observation"]),
        ) if on)

    def observation_size(self) -> int:
        sizes = {"qvel": self.nv, "cinert": self.nbody * 10, "cvel": self.nbody * 6, "qfrc_actuator": self.nv,
                 "cfrc_ext": self.nbody * 6}
        position = self.nq - (2 if self.kw["exclude_current_positions_from_observation"] else 0)
        return position + sum(sizes[f] - skip for f, skip in self._parts())

    def observe(self, f: Fields) -> np.ndarray:
        return np.concatenate((self._position(f), *(f[name][:, skip:] for name, skip in self._parts())), axis=1)

    def _xy(self, f: Fields) -> np.ndarray:
        """mass_center: the bodies' masses times their xipos, summed, over the total mass (x, y)."""
        num = np.einsum("b,nbj->nj", self.body_mass, f["xipos"].reshape(-1, self.nbody, 3))
        return (num / self.body_mass.sum())[:, 0:2]

    def ctrl_cost(self, action: np.ndarray) -> np.ndarray:  # Gymnasium squares data.ctrl (float64) here
        return self.kw["ctrl_cost_weight"] * np.sum(np.square(action.astype(np.float64)), axis=1)

    def is_healthy(self, f: Fields) -> np.ndarray:
        z = f["qpos"][:, 2]
        min_z, max_z = self.kw["healthy_z_range"]
        return (min_z < z) & (z < max_z)

    def _reward(self, after: Fields, forward_reward: np.ndarray, ctrl_cost: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        healthy = self.is_healthy(after)
        healthy_reward = self.healthy_reward(healthy)
        contact_cost = self.kw["contact_cost_weight"] * np.sum(np.square(after["cfrc_ext"]), axis=1)
        contact_cost = np.clip(contact_cost, *self.kw["contact_cost_range"])
        reward = (forward_reward + healthy_reward) - (ctrl_cost + contact_cost)
        terminated = ~healthy & bool(self.kw["terminate_when_unhealthy"])
        info = {"tendon_length": after["ten_length"].copy(), "tendon_velocity": after["ten_velocity"].copy(),
                "reward_survive": healthy_reward, "reward_forward": forward_reward, "reward_ctrl": -ctrl_cost,
                "reward_contact": -contact_cost}
        return reward, terminated, info

    def reset_info(self, f: Fields) -> dict[str, np.ndarray]:
        info = super().reset_info(f)
        info.update(tendon_length=f["ten_length"].copy(), tendon_velocity=f["ten_velocity"].copy())
        return info


class HumanoidStandup(Humanoid):
    task_id = "HumanoidStandup-v5"
    defaults = {"xml_file": "humanoidstandup.xml", "frame_skip": 5, "uph_cost_weight": 1.0, "ctrl_cost_weight": 0.1,
                "impact_cost_weight": 0.5e-6, "impact_cost_range": (-np.inf, 10.0), "reset_noise_scale": 1e-2,
                "exclude_current_positions_from_observation": True, "include_cinert_in_observation": True,
                "include_cvel_in_observation": True, "include_qfrc_actuator_in_observation": True,
                "include_cfrc_ext_in_observation": True}
    info_keys = ("x_position", "y_position", "z_distance_from_origin", "tendon_length", "tendon_velocity",
                 "reward_linup", "reward_quadctrl", "reward_impact")
    before_fields = ()

    def __init__(self, kw: dict[str, Any], model: Any, init_qpos: np.ndarray, init_qvel: np.ndarray):
        super().__init__(kw, model, init_qpos, init_qvel)
        self.timestep = model.opt.timestep

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        qpos = after["qpos"]
        uph_cost = (qpos[:, 2] - 0) / self.timestep
        quad_ctrl_cost = self.kw["ctrl_cost_weight"] * np.square(action.astype(np.float64)).sum(axis=1)
        quad_impact_cost = self.kw["impact_cost_weight"] * np.square(after["cfrc_ext"]).sum(axis=1)
        quad_impact_cost = np.clip(quad_impact_cost, *self.kw["impact_cost_range"])
        reward = uph_cost - quad_ctrl_cost - quad_impact_cost + 1
        info = {"x_position": qpos[:, 0].copy(), "y_position": qpos[:, 1].copy(),
                "z_distance_from_origin": qpos[:, 2] - self.init_qpos[2], "tendon_length": after["ten_length"].copy(),
                "tendon_velocity": after["ten_velocity"].copy(), "reward_linup": uph_cost,
                "reward_quadctrl": -quad_ctrl_cost, "reward_impact": -quad_impact_cost}
        return reward, np.zeros(len(reward), bool), info

    def reset_info(self, f: Fields) -> dict[str, np.ndarray]:
        qpos = f["qpos"]
        info = {k: np.zeros(len(qpos)) for k in self.info_keys}
        info.update(x_position=qpos[:, 0].copy(), y_position=qpos[:, 1].copy(),
                    z_distance_from_origin=qpos[:, 2] - self.init_qpos[2], tendon_length=f["ten_length"].copy(),
                    tendon_velocity=f["ten_velocity"].copy())
        return info


class InvertedPendulum(Task):
    task_id = "InvertedPendulum-v5"
    defaults = {"xml_file": "inverted_pendulum.xml", "frame_skip": 2, "reset_noise_scale": 0.01}
    before_fields = ()
    info_keys = ("reward_survive",)

    def observation_size(self) -> int:
        return self.nq + self.nv

    def observe(self, f: Fields) -> np.ndarray:
        return np.concatenate((f["qpos"], f["qvel"]), axis=1)

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        obs = self.observe(after)
        terminated = ~np.isfinite(obs).all(axis=1) | (np.abs(obs[:, 1]) > 0.2)
        reward = (~terminated).astype(np.float64)
        return reward, terminated, {"reward_survive": reward.copy()}

    def reset_info(self, f: Fields) -> dict[str, np.ndarray]:
        return {k: np.zeros(len(f["qpos"])) for k in self.info_keys}  # Gymnasium's reset info is empty


class InvertedDoublePendulum(InvertedPendulum):
    task_id = "InvertedDoublePendulum-v5"
    defaults = {"xml_file": "inverted_double_pendulum.xml", "frame_skip": 5, "healthy_reward": 10.0,
                "reset_noise_scale": 0.1}
    fields = ("qpos", "qvel", "site_xpos", "qfrc_constraint")
    normal_qvel_noise = True
    info_keys = ("reward_survive", "distance_penalty", "velocity_penalty")

    def observation_size(self) -> int:
        return 1 + 2 * (self.nq - 1) + self.nv + 1

    def observe(self, f: Fields) -> np.ndarray:
        qpos = f["qpos"]
        angles = np.ascontiguousarray(qpos[:, 1:])  # numpy's sin/cos over contiguous rows, as over the env's array
        return np.concatenate((qpos[:, :1], np.sin(angles), np.cos(angles), np.clip(f["qvel"], -10, 10),
                               np.clip(f["qfrc_constraint"], -10, 10)[:, :1]), axis=1)

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        x, y = after["site_xpos"][:, 0], after["site_xpos"][:, 2]
        terminated = y <= 1
        v1, v2 = after["qvel"][:, 1], after["qvel"][:, 2]
        dist_penalty = 0.01 * x**2 + (y - 2) ** 2
        vel_penalty = 1e-3 * v1**2 + 5e-3 * v2**2
        alive_bonus = self.kw["healthy_reward"] * (~terminated)
        reward = alive_bonus - dist_penalty - vel_penalty
        info = {"reward_survive": alive_bonus, "distance_penalty": -dist_penalty, "velocity_penalty": -vel_penalty}
        return reward, terminated, info


class Reacher(Task):
    task_id = "Reacher-v5"
    defaults = {"xml_file": "reacher.xml", "frame_skip": 2, "reward_dist_weight": 1.0, "reward_control_weight": 1.0}
    max_episode_steps = 50
    fields = ("qpos", "qvel", "xpos")
    before_fields = ()
    info_keys = ("reward_dist", "reward_ctrl")

    def __init__(self, kw: dict[str, Any], model: Any, init_qpos: np.ndarray, init_qvel: np.ndarray):
        super().__init__(kw, model, init_qpos, init_qvel)
        self.nbody = model.nbody
        self.fingertip, self.target = model.body("fingertip").id, model.body("target").id

    def observation_size(self) -> int:
        return 2 + 2 + (self.nq - 2) + 2 + 2

    def _body(self, f: Fields, body: int) -> np.ndarray:
        return f["xpos"].reshape(-1, self.nbody, 3)[:, body]  # get_body_com

    def observe(self, f: Fields) -> np.ndarray:
        theta = np.ascontiguousarray(f["qpos"][:, :2])
        vec = self._body(f, self.fingertip) - self._body(f, self.target)
        return np.concatenate((np.cos(theta), np.sin(theta), f["qpos"][:, 2:], f["qvel"][:, :2], vec[:, :2]), axis=1)

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        vec = self._body(after, self.fingertip) - self._body(after, self.target)
        reward_dist = -row_norm(vec) * self.kw["reward_dist_weight"]
        reward_ctrl = -np.square(action).sum(axis=1) * self.kw["reward_control_weight"]
        reward = reward_dist + reward_ctrl
        return reward, np.zeros(len(reward), bool), {"reward_dist": reward_dist, "reward_ctrl": reward_ctrl}

    def reset_info(self, f: Fields) -> dict[str, np.ndarray]:
        return {k: np.zeros(len(f["qpos"])) for k in self.info_keys}

    def reset_noise(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        qpos = rng.uniform(low=-0.1, high=0.1, size=self.nq) + self.init_qpos
        while True:
            goal = rng.uniform(low=-0.2, high=0.2, size=2)
            if np.linalg.norm(goal) < 0.2:
                break
        qpos[-2:] = goal
        qvel = self.init_qvel + rng.uniform(low=-0.005, high=0.005, size=self.nv)
        qvel[-2:] = 0
        return qpos, qvel


class Pusher(Reacher):
    task_id = "Pusher-v5"
    defaults = {"xml_file": "pusher_v5.xml", "frame_skip": 5, "reward_near_weight": 0.5, "reward_dist_weight": 1.0,
                "reward_control_weight": 0.1}
    max_episode_steps = 100
    info_keys = ("reward_dist", "reward_ctrl", "reward_near")

    def __init__(self, kw: dict[str, Any], model: Any, init_qpos: np.ndarray, init_qvel: np.ndarray):
        Task.__init__(self, kw, model, init_qpos, init_qvel)
        self.nbody = model.nbody
        self.tips_arm, self.object, self.goal = (model.body(b).id for b in ("tips_arm", "object", "goal"))

    def observation_size(self) -> int:
        return 7 + 7 + 9

    def observe(self, f: Fields) -> np.ndarray:
        bodies = [self._body(f, b) for b in (self.tips_arm, self.object, self.goal)]
        return np.concatenate((f["qpos"][:, :7], f["qvel"][:, :7], *bodies), axis=1)

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        obj = self._body(after, self.object)
        reward_near = -row_norm(obj - self._body(after, self.tips_arm)) * self.kw["reward_near_weight"]
        reward_dist = -row_norm(obj - self._body(after, self.goal)) * self.kw["reward_dist_weight"]
        reward_ctrl = -np.square(action).sum(axis=1) * self.kw["reward_control_weight"]
        reward = reward_dist + reward_ctrl + reward_near
        info = {"reward_dist": reward_dist, "reward_ctrl": reward_ctrl, "reward_near": reward_near}
        return reward, np.zeros(len(reward), bool), info

    def reset_noise(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        qpos = self.init_qpos.copy()
        goal_pos = np.asarray([0, 0])
        while True:
            cylinder_pos = np.concatenate([rng.uniform(low=-0.3, high=0, size=1), rng.uniform(low=-0.2, high=0.2, size=1)])
            if np.linalg.norm(cylinder_pos - goal_pos) > 0.17:
                break
        qpos[-4:-2] = cylinder_pos
        qpos[-2:] = goal_pos
        qvel = self.init_qvel + rng.uniform(low=-0.005, high=0.005, size=self.nv)
        qvel[-4:] = 0
        return qpos, qvel


TASKS: dict[str, type[Task]] = {
    t.task_id: t for t in (HalfCheetah, Hopper, Walker2d, Swimmer, Ant, Humanoid, HumanoidStandup, InvertedPendulum,
                           InvertedDoublePendulum, Reacher, Pusher)
}

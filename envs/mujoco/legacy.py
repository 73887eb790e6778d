"""Gymnasium's MuJoCo v4 tasks and EnvPool's older ids (v2, v3), as numpy over a batch of envs.

EnvPool serves every gym MuJoCo task at v4 (and keeps the v2/v3 ids CleanRL's and older scripts
use) beside v5: the math of Gymnasium's `*_v4.py` envs on EnvPool's pre-v5 physics, which skips
`mj_rnePostConstraint` after a step (`post_constraint=False`: `cfrc_ext` stays zero, so Humanoid's
contact-force entries are zeros and no contact cost is paid). Here each task is its v5 class with
what v4 changed: the legacy healthy reward (paid while healthy or while an unhealthy step ends the
episode), Ant's and Humanoid's observations with the world body's rows, Reacher's and Pusher's
reward read before the step, fixed weights where v4 has no kwargs, v4's info keys, and the v4
models (walker2d.xml, pusher.xml). Tested step for step against Gymnasium's v4 envs on the same
physics (tests/test_mujoco_legacy.py).

The v2/v3 ids are EnvPool's aliases of v4, except Ant-v3 and Humanoid-v3, which keep gym 0.21's
contact forces (Ant's 111-entry observation; Humanoid's contact cost and `reward_impact`).
`post_constraint=True` gives them (and every id here) v5's physics.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from envs.mujoco.tasks import (
    Ant,
    Fields,
    HalfCheetah,
    Hopper,
    Humanoid,
    HumanoidStandup,
    InvertedDoublePendulum,
    InvertedPendulum,
    Pusher,
    Reacher,
    Swimmer,
    Task,
    Walker2d,
    row_norm,
)

Step = tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]
PHYSICS = {"post_constraint": False}  # EnvPool's pre-v5 physics: no mj_rnePostConstraint after a step


class Legacy(Task):
    """What every pre-v5 task shares: the legacy healthy reward, an empty reset info (zeros here),
    and the v4 Gymnasium env it reproduces."""

    legacy_healthy_reward = True
    renamed: ClassVar[dict[str, str]] = {}  # v4 info key -> the v5 step's key holding its value

    @classmethod
    def gymnasium_id(cls) -> str:
        return f"{cls.task_id.split('-')[0]}-v4"

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> Step:
        reward, terminated, info = super().step(before, after, action)
        return reward, terminated, {k: info[self.renamed.get(k, k)] for k in self.info_keys}

    def reset_info(self, f: Fields) -> dict[str, np.ndarray]:
        return {k: np.zeros(len(f["qpos"])) for k in self.info_keys}  # Gymnasium's v4 reset info is empty


class HalfCheetahV4(Legacy, HalfCheetah):
    task_id = "HalfCheetah-v4"
    defaults = {**HalfCheetah.defaults, **PHYSICS}
    info_keys = ("x_position", "x_velocity", "reward_run", "reward_ctrl")
    renamed = {"reward_run": "reward_forward"}


class HopperV4(Legacy, Hopper):
    task_id = "Hopper-v4"
    defaults = {**Hopper.defaults, **PHYSICS}
    info_keys = ("x_position", "x_velocity")


class Walker2dV4(Legacy, Walker2d):
    task_id = "Walker2d-v4"
    defaults = {**Walker2d.defaults, "xml_file": "walker2d.xml", **PHYSICS}
    info_keys = ("x_position", "x_velocity")


class SwimmerV4(Legacy, Swimmer):
    task_id = "Swimmer-v4"
    defaults = {**Swimmer.defaults, **PHYSICS}
    info_keys = ("reward_fwd", "reward_ctrl", "x_position", "y_position", "distance_from_origin", "x_velocity",
                 "y_velocity", "forward_reward")
    renamed = {"reward_fwd": "reward_forward", "forward_reward": "reward_forward"}


class AntV4(Legacy, Ant):
    """v4: no forward_reward_weight or main_body (the torso), contact forces in the observation
    and cost only with use_contact_forces (all bodies' rows, the world's too), and Gymnasium's v4
    info, whose reward_ctrl then holds the contact cost."""

    task_id = "Ant-v4"
    defaults = {"xml_file": "ant.xml", "frame_skip": 5, **PHYSICS, "ctrl_cost_weight": 0.5, "use_contact_forces": False,
                "contact_cost_weight": 5e-4, "healthy_reward": 1.0, "terminate_when_unhealthy": True,
                "healthy_z_range": (0.2, 1.0), "contact_force_range": (-1.0, 1.0), "reset_noise_scale": 0.1,
                "exclude_current_positions_from_observation": True}
    info_keys = ("reward_forward", "reward_ctrl", "reward_survive", "x_position", "y_position", "distance_from_origin",
                 "x_velocity", "y_velocity", "forward_reward")

    def __init__(self, kw: dict[str, Any], model: Any, init_qpos: np.ndarray, init_qvel: np.ndarray):
        kw = {**kw, "main_body": "torso", "forward_reward_weight": 1.0}
        super().__init__(kw, model, init_qpos, init_qvel)

    def contact_forces_on(self) -> bool:
        return bool(self.kw["use_contact_forces"])

    def observation_size(self) -> int:
        size = Task.observation_size(self)
        return size + self.nbody * 6 if self.contact_forces_on() else size

    def observe(self, f: Fields) -> np.ndarray:
        parts = (self._position(f), f["qvel"])
        if self.contact_forces_on():
            parts += (self.contact_forces(f),)
        return np.concatenate(parts, axis=1)

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> Step:
        xy_after = self._xy(after)
        x_velocity, y_velocity = ((xy_after - self._xy(before)) / self.dt).T
        forward_reward = x_velocity
        healthy_reward = self.healthy_reward(self.is_healthy(after))
        rewards = forward_reward + healthy_reward
        costs = ctrl_cost = self.ctrl_cost(action)
        info = {"reward_forward": forward_reward, "reward_ctrl": -ctrl_cost, "reward_survive": healthy_reward,
                "x_position": xy_after[:, 0].copy(), "y_position": xy_after[:, 1].copy(),
                "distance_from_origin": row_norm(xy_after), "x_velocity": x_velocity, "y_velocity": y_velocity,
                "forward_reward": forward_reward}
        if self.contact_forces_on():
            contact_cost = self.kw["contact_cost_weight"] * np.sum(np.square(self.contact_forces(after)), axis=1)
            costs = costs + contact_cost
            info.update(self._contact_info(ctrl_cost, contact_cost))
        terminated = ~self.is_healthy(after) & bool(self.kw["terminate_when_unhealthy"])
        return rewards - costs, terminated, info

    def _contact_info(self, ctrl_cost: np.ndarray, contact_cost: np.ndarray) -> dict[str, np.ndarray]:
        return {"reward_ctrl": -contact_cost}  # Gymnasium's v4 overwrites reward_ctrl with the contact cost


class AntV3(AntV4):
    """gym 0.21's Ant-v3: contact forces always observed and paid for, with their own info key."""

    task_id = "Ant-v3"
    defaults = {k: v for k, v in AntV4.defaults.items() if k != "use_contact_forces"}
    info_keys = AntV4.info_keys[:2] + ("reward_contact",) + AntV4.info_keys[2:]

    def contact_forces_on(self) -> bool:
        return True

    def _contact_info(self, ctrl_cost: np.ndarray, contact_cost: np.ndarray) -> dict[str, np.ndarray]:
        return {"reward_contact": -contact_cost}


class HumanoidV4(Legacy, Humanoid):
    """v4: every body's cinert, cvel and cfrc_ext rows (the world's too) and all of qfrc_actuator
    observed, no contact cost, v4's info."""

    task_id = "Humanoid-v4"
    defaults = {"xml_file": "humanoid.xml", "frame_skip": 5, **PHYSICS, "forward_reward_weight": 1.25,
                "ctrl_cost_weight": 0.1, "healthy_reward": 5.0, "terminate_when_unhealthy": True,
                "healthy_z_range": (1.0, 2.0), "reset_noise_scale": 1e-2, "exclude_current_positions_from_observation": True}
    fields = ("qpos", "qvel", "xipos", "cinert", "cvel", "qfrc_actuator", "cfrc_ext")
    info_keys = ("reward_linvel", "reward_quadctrl", "reward_alive", "x_position", "y_position", "distance_from_origin",
                 "x_velocity", "y_velocity", "forward_reward")
    vector_info = ()
    contact_cost = False  # gym 0.21's v3 pays it (HumanoidV3)

    def _parts(self) -> tuple[tuple[str, int], ...]:
        return tuple((f, 0) for f in ("qvel", "cinert", "cvel", "qfrc_actuator", "cfrc_ext"))

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> Step:
        xy_after = self._xy(after)
        x_velocity, y_velocity = ((xy_after - self._xy(before)) / self.dt).T
        ctrl_cost = self.ctrl_cost(action)
        forward_reward = self.kw["forward_reward_weight"] * x_velocity
        healthy = self.is_healthy(after)
        healthy_reward = self.healthy_reward(healthy)
        rewards = forward_reward + healthy_reward
        info = {"reward_linvel": forward_reward, "reward_quadctrl": -ctrl_cost, "reward_alive": healthy_reward,
                "x_position": xy_after[:, 0].copy(), "y_position": xy_after[:, 1].copy(),
                "distance_from_origin": row_norm(xy_after), "x_velocity": x_velocity, "y_velocity": y_velocity,
                "forward_reward": forward_reward}
        if self.contact_cost:
            contact_cost = self.kw["contact_cost_weight"] * np.sum(np.square(after["cfrc_ext"]), axis=1)
            contact_cost = np.clip(contact_cost, *self.kw["contact_cost_range"])
            reward = rewards - (ctrl_cost + contact_cost)
            info["reward_impact"] = -contact_cost
        else:
            reward = rewards - ctrl_cost
        terminated = ~healthy & bool(self.kw["terminate_when_unhealthy"])
        return reward, terminated, info


class HumanoidV3(HumanoidV4):
    task_id = "Humanoid-v3"
    defaults = {**HumanoidV4.defaults, "contact_cost_weight": 5e-7, "contact_cost_range": (-np.inf, 10.0)}
    info_keys = HumanoidV4.info_keys[:3] + ("reward_impact",) + HumanoidV4.info_keys[3:]
    contact_cost = True


class HumanoidStandupV4(Legacy, HumanoidStandup):
    """v4 has no kwargs: its weights are constants."""

    task_id = "HumanoidStandup-v4"
    defaults = {"xml_file": "humanoidstandup.xml", "frame_skip": 5, **PHYSICS, "reset_noise_scale": 1e-2,
                "exclude_current_positions_from_observation": True}
    fields = HumanoidV4.fields
    info_keys = ("reward_linup", "reward_quadctrl", "reward_impact")
    vector_info = ()
    _parts = HumanoidV4._parts

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> Step:
        uph_cost = (after["qpos"][:, 2] - 0) / self.timestep
        quad_ctrl_cost = 0.1 * np.square(action.astype(np.float64)).sum(axis=1)
        quad_impact_cost = np.minimum(0.5e-6 * np.square(after["cfrc_ext"]).sum(axis=1), 10)
        reward = uph_cost - quad_ctrl_cost - quad_impact_cost + 1
        info = {"reward_linup": uph_cost, "reward_quadctrl": -quad_ctrl_cost, "reward_impact": -quad_impact_cost}
        return reward, np.zeros(len(reward), bool), info


class InvertedPendulumV4(Legacy, InvertedPendulum):
    """v4 pays 1 on every step, the last one too."""

    task_id = "InvertedPendulum-v4"
    defaults = {**InvertedPendulum.defaults, **PHYSICS}
    info_keys = ()

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> Step:
        obs = self.observe(after)
        terminated = ~np.isfinite(obs).all(axis=1) | (np.abs(obs[:, 1]) > 0.2)
        return np.ones(len(obs)), terminated, {}


class InvertedDoublePendulumV4(Legacy, InvertedDoublePendulum):
    """v4 observes all of qfrc_constraint and pays the alive bonus on the last step too."""

    task_id = "InvertedDoublePendulum-v4"
    defaults = {**InvertedDoublePendulum.defaults, **PHYSICS}
    info_keys = ()

    def observation_size(self) -> int:
        return 1 + 2 * (self.nq - 1) + 2 * self.nv

    def observe(self, f: Fields) -> np.ndarray:
        qpos = f["qpos"]
        angles = np.ascontiguousarray(qpos[:, 1:])
        return np.concatenate((qpos[:, :1], np.sin(angles), np.cos(angles), np.clip(f["qvel"], -10, 10),
                               np.clip(f["qfrc_constraint"], -10, 10)), axis=1)

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> Step:
        x, y = after["site_xpos"][:, 0], after["site_xpos"][:, 2]
        v1, v2 = after["qvel"][:, 1], after["qvel"][:, 2]
        dist_penalty = 0.01 * x**2 + (y - 2) ** 2
        vel_penalty = 1e-3 * v1**2 + 5e-3 * v2**2
        reward = self.kw["healthy_reward"] - dist_penalty - vel_penalty
        return reward, y <= 1, {}


class ReacherV4(Legacy, Reacher):
    """v4 observes the fingertip-to-target vector's z too, and pays for the state before the step."""

    task_id = "Reacher-v4"
    defaults = {"xml_file": "reacher.xml", "frame_skip": 2, **PHYSICS}
    before_fields = ("xpos",)

    def observation_size(self) -> int:
        return super().observation_size() + 1

    def observe(self, f: Fields) -> np.ndarray:
        theta = np.ascontiguousarray(f["qpos"][:, :2])
        vec = self._body(f, self.fingertip) - self._body(f, self.target)
        return np.concatenate((np.cos(theta), np.sin(theta), f["qpos"][:, 2:], f["qvel"][:, :2], vec), axis=1)

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> Step:
        vec = self._body(before, self.fingertip) - self._body(before, self.target)
        reward_dist = -row_norm(vec)
        reward_ctrl = -np.square(action).sum(axis=1)
        return reward_dist + reward_ctrl, np.zeros(len(vec), bool), {"reward_dist": reward_dist, "reward_ctrl": reward_ctrl}


class PusherV4(Legacy, Pusher):
    """v4's model (pusher.xml) and its reward, read before the step with fixed weights."""

    task_id = "Pusher-v4"
    defaults = {"xml_file": "pusher.xml", "frame_skip": 5, **PHYSICS}
    info_keys = ("reward_dist", "reward_ctrl")
    before_fields = ("xpos",)

    def step(self, before: Fields, after: Fields, action: np.ndarray) -> Step:
        obj = self._body(before, self.object)
        reward_near = -row_norm(obj - self._body(before, self.tips_arm))
        reward_dist = -row_norm(obj - self._body(before, self.goal))
        reward_ctrl = -np.square(action).sum(axis=1)
        reward = reward_dist + 0.1 * reward_ctrl + 0.5 * reward_near
        return reward, np.zeros(len(reward), bool), {"reward_dist": reward_dist, "reward_ctrl": reward_ctrl}


def _alias(cls: type[Task], version: str) -> type[Task]:
    """EnvPool's older id of a v4 task: the same task under another name."""
    return type(cls.__name__.replace("V4", version.upper()), (cls,), {"task_id": cls.task_id.replace("-v4", f"-{version}")})


V4 = (AntV4, HalfCheetahV4, HopperV4, HumanoidV4, HumanoidStandupV4, InvertedDoublePendulumV4, InvertedPendulumV4,
      PusherV4, ReacherV4, SwimmerV4, Walker2dV4)
OLDER = (AntV3, _alias(HalfCheetahV4, "v3"), _alias(HopperV4, "v3"), HumanoidV3, _alias(HumanoidStandupV4, "v2"),
         _alias(InvertedDoublePendulumV4, "v2"), _alias(InvertedPendulumV4, "v2"), _alias(PusherV4, "v2"),
         _alias(ReacherV4, "v2"), _alias(SwimmerV4, "v3"), _alias(Walker2dV4, "v3"))
LEGACY_TASKS: dict[str, type[Task]] = {t.task_id: t for t in V4 + OLDER}

"""dm_control's cartpole, pendulum, acrobot and lqr domains over a batch (dm_control/suite/cartpole.py,
pendulum.py, acrobot.py, lqr.py)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any, ClassVar

import numpy as np

from envs.mujoco.dmc import assets
from envs.mujoco.dmc.base import DmcTask, Fields, norm, physics_model, start_state
from envs.mujoco.dmc.rewards import scale, tolerance


class Cartpole(DmcTask):
    domain = "cartpole"
    time_limit = 10
    fields = ("qpos", "qvel", "xmat")
    compiled = "cartpole"
    num_poles: ClassVar[int] = 1
    swing_up: ClassVar[bool]
    sparse: ClassVar[bool]

    def __init__(self, model: Any):
        super().__init__(model)
        self.nbody = model.nbody
        self.slider = int(model.joint("slider").qposadr[0])
        self.hinge = int(model.joint("hinge_1").qposadr[0])

    @classmethod
    def model_xml(cls) -> str:
        return assets.cartpole_xml(cls.num_poles)

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        nv = model.nv
        if self.swing_up:
            data.qpos[self.slider] = .01 * random.randn()
            data.qpos[self.hinge] = np.pi + .01 * random.randn()
            data.qpos[2:] = .1 * random.randn(nv - 2)
        else:
            data.qpos[self.slider] = random.uniform(-.1, .1)
            data.qpos[1:] = random.uniform(-.034, .034, nv - 1)
        data.qvel[:] = 0.01 * random.randn(nv)
        return {"qpos0": data.qpos.copy(), "qvel0": data.qvel.copy()}

    def compiled_params(self) -> list[float]:
        return [self.slider, float(self.sparse), scale("gaussian", 0.1), scale("quadratic", 0.0)]

    def _xmat(self, f: Fields) -> np.ndarray:
        return f["xmat"].reshape(len(f["xmat"]), self.nbody, 9)

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        poles = self._xmat(f)[:, 2:][:, :, [8, 2]].reshape(len(f["qpos"]), -1)  # ['zz', 'xz'] of each pole
        return {"position": np.hstack((f["qpos"][:, self.slider:self.slider + 1], poles)), "velocity": f["qvel"].copy()}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        cart = f["qpos"][:, self.slider]
        cosine = self._xmat(f)[:, 2:, 8]
        if self.sparse:
            cart_in_bounds = tolerance(cart, (-.25, .25))
            angle_in_bounds = tolerance(cosine, (.995, 1)).prod(axis=1)
            return cart_in_bounds * angle_in_bounds
        upright = (cosine + 1) / 2
        centered = (1 + tolerance(cart, margin=2)) / 2
        small_control = (4 + tolerance(action, margin=1, value_at_margin=0, kind="quadratic")[:, 0]) / 5
        small_velocity = (1 + tolerance(f["qvel"][:, 1:], margin=5).min(axis=1)) / 2
        return upright.mean(axis=1) * small_control * small_velocity * centered


class CartpoleBalance(Cartpole):
    task, swing_up, sparse = "balance", False, False


class CartpoleBalanceSparse(Cartpole):
    task, swing_up, sparse = "balance_sparse", False, True


class CartpoleSwingup(Cartpole):
    task, swing_up, sparse = "swingup", True, False


class CartpoleSwingupSparse(Cartpole):
    task, swing_up, sparse = "swingup_sparse", True, True


class CartpoleTwoPoles(Cartpole):
    task, swing_up, sparse, num_poles = "two_poles", True, False, 2


class CartpoleThreePoles(Cartpole):
    task, swing_up, sparse, num_poles = "three_poles", True, False, 3


class PendulumSwingup(DmcTask):
    domain, task = "pendulum", "swingup"
    time_limit = 20
    fields = ("qpos", "qvel", "xmat")
    cosine_bound = np.cos(np.deg2rad(8))

    def __init__(self, model: Any):
        super().__init__(model)
        self.pole = int(model.body("pole").id)
        self.hinge_q = int(model.joint("hinge").qposadr[0])
        self.hinge_v = int(model.joint("hinge").dofadr[0])

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        data.qpos[self.hinge_q] = random.uniform(-np.pi, np.pi)
        return {"qpos0": data.qpos.copy()}

    def _pole(self, f: Fields) -> np.ndarray:
        return f["xmat"][:, 9 * self.pole:9 * self.pole + 9]

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        return {"orientation": self._pole(f)[:, [8, 2]], "velocity": f["qvel"][:, self.hinge_v:self.hinge_v + 1].copy()}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        return tolerance(self._pole(f)[:, 8], (self.cosine_bound, 1))


class Acrobot(DmcTask):
    domain = "acrobot"
    time_limit = 10
    fields = ("qpos", "qvel", "xmat", "site_xpos")
    sparse: ClassVar[bool]

    def __init__(self, model: Any):
        super().__init__(model)
        self.arms = [int(model.body(b).id) for b in ("upper_arm", "lower_arm")]
        self.joints = [int(model.joint(j).qposadr[0]) for j in ("shoulder", "elbow")]
        self.target, self.tip = int(model.site("target").id), int(model.site("tip").id)
        self.target_radius = float(model.site_size[self.target, 0])

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        data.qpos[self.joints] = random.uniform(-np.pi, np.pi, 2)
        return {"qpos0": data.qpos.copy()}

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        xmat = f["xmat"].reshape(len(f["xmat"]), -1, 9)[:, self.arms]
        return {"orientations": np.concatenate((xmat[:, :, 2], xmat[:, :, 8]), axis=1), "velocity": f["qvel"].copy()}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        site = f["site_xpos"].reshape(len(f["site_xpos"]), -1, 3)
        to_target = norm(site[:, self.target] - site[:, self.tip])
        return tolerance(to_target, (0, self.target_radius), margin=0 if self.sparse else 1)


class AcrobotSwingup(Acrobot):
    task, sparse = "swingup", False


class AcrobotSwingupSparse(Acrobot):
    task, sparse = "swingup_sparse", True


def lqr_xml(n_bodies: int, n_actuators: int, random: np.random.RandomState, stiffness_range: tuple = (15, 25),
            damping_range: tuple = (0, 0)) -> str:
    """lqr.xml with a chain of n_bodies sliding masses on springs drawn from `random`, the first
    n_actuators driven, each tied to the next by a tendon (dm_control's `lqr._make_model`)."""
    root = ET.fromstring(assets.read_model("lqr.xml"))
    parent = root.find("./worldbody")
    actuator = ET.SubElement(root, "actuator")
    tendon = ET.SubElement(root, "tendon")
    for body in range(n_bodies):
        child = ET.Element("body", name=f"body_{body}")
        child.set("pos", ".25 0 0")
        joint = ET.SubElement(child, "joint", name=f"joint_{body}")
        child.append(ET.Element("geom", name=f"geom_{body}"))
        joint.set("stiffness", str(random.uniform(stiffness_range[0], stiffness_range[1])))
        joint.set("damping", str(random.uniform(damping_range[0], damping_range[1])))
        child.append(ET.Element("site", name=f"site_{body}"))
        if body == 0:
            child.set("pos", ".25 0 .1")
        if body < n_actuators:
            actuator.append(ET.Element("motor", name=f"motor_{body}", joint=f"joint_{body}"))
        if body < n_bodies - 1:
            spatial = ET.SubElement(tendon, "spatial", name=f"tendon_{body}")
            spatial.append(ET.Element("site", site=f"site_{body}"))
            spatial.append(ET.Element("site", site=f"site_{body + 1}"))
        parent.append(child)
        parent = child
    return ET.tostring(root, encoding="unicode")


class Lqr(DmcTask):
    """A linear-quadratic regulator: no time limit in dm_control (EnvPool's ids stop at 1,000
    steps); the episode ends when the state's norm falls below 1e-6."""

    domain = "lqr"
    time_limit = float("inf")
    fields = ("qpos", "qvel", "act")
    n_bodies: ClassVar[int]
    n_actuators: ClassVar[int]
    control_cost_coef = 0.1
    terminal_tol = 1e-6

    @classmethod
    def model_xml(cls) -> str:
        return lqr_xml(cls.n_bodies, cls.n_actuators, np.random.RandomState(0))

    per_episode_model = True  # its springs, drawn per env

    @classmethod
    def env_model(cls, model: Any, random: np.random.RandomState) -> Any:
        return physics_model(lqr_xml(cls.n_bodies, cls.n_actuators, random), cls.model_assets())

    def initialize_episode(self, model: Any, data: Any, random: np.random.RandomState) -> dict[str, np.ndarray]:
        unit = random.randn(model.nq)
        data.qpos[:] = np.sqrt(2) * unit / np.linalg.norm(unit)
        return {**start_state(data, "qpos0", "qvel0"), "stiffness0": model.jnt_stiffness.copy()}

    def observe(self, f: Fields) -> dict[str, np.ndarray]:
        return {"position": f["qpos"].copy(), "velocity": f["qvel"].copy()}

    def reward(self, f: Fields, action: np.ndarray) -> np.ndarray:
        position = f["qpos"]
        state_cost = 0.5 * np.einsum("ij,ij->i", position, position)
        control_l2_norm = 0.5 * np.einsum("ij,ij->i", action, action)
        return 1 - (state_cost + control_l2_norm * self.control_cost_coef)

    def terminated(self, f: Fields) -> np.ndarray:
        return norm(np.hstack((f["qpos"], f["qvel"], f["act"]))) < self.terminal_tol


class LqrLqr21(Lqr):
    task, n_bodies, n_actuators = "lqr_2_1", 2, 1


class LqrLqr62(Lqr):
    task, n_bodies, n_actuators = "lqr_6_2", 6, 2

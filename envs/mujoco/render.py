"""Frames of the native MuJoCo pool: MuJoCo's own `mujoco.Renderer` over each env's MjData, with
Gymnasium's camera, made to follow the body on the locomotion tasks.

The camera is built as Gymnasium's MujocoRenderer builds it: a free camera looking at the median
of the geoms when the env is first drawn, at the model's extent, then the task's
`default_camera_config` (the Gymnasium env's default; `{}` for none) over it; `camera_id` or
`camera_name` picks a camera of the model instead, `camera_id=-1` the free camera. With neither,
the model's camera named "track" when it has one (every task whose body runs away: a camera that
follows it), else the free camera: Gymnasium's rule up to 1.3 and EnvPool's for the v5 ids.
(Gymnasium 1.4 with MuJoCo >= 3.11 draws the free camera instead, which a running Hopper leaves
by about step 150.) With the same camera the frames are Gymnasium's `rgb_array` pixel for pixel
(tests/test_mujoco_render.py).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from envs.mujoco import gl

CAMERA_KEYS = ("type", "fixedcamid", "trackbodyid", "lookat", "distance", "azimuth", "elevation", "orthographic")


def gymnasium_camera_config(task_id: str) -> dict[str, Any]:
    """The Gymnasium env's own `default_camera_config` (its constructor's default; {} for None)."""
    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator

    creator = load_env_creator(gym.spec(task_id).entry_point)
    parameter = inspect.signature(creator.__init__).parameters.get("default_camera_config")
    if parameter is None:  # a v4 env: its module's DEFAULT_CAMERA_CONFIG, if it has one
        return dict(getattr(sys.modules[creator.__module__], "DEFAULT_CAMERA_CONFIG", {}))
    return dict(parameter.default or {})


ENVPOOL_NAMES = {"render_width": "width", "render_height": "height", "render_camera_id": "camera_id"}


def envpool_render_names(task_id: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """kwargs with EnvPool's render kwargs (`render_width`, `render_height`, `render_camera_id`, the
    names EnvPool's MuJoCo pools take) under Gymnasium's MuJoCo names (`width`, `height`,
    `camera_id`), which this pool takes too; both names of one setting is a ValueError."""
    out = dict(kwargs)
    for theirs, ours in ENVPOOL_NAMES.items():
        if theirs in out:
            if ours in out:
                raise ValueError(f"{task_id}: pass {ours} or EnvPool's {theirs}, not both")
            out[ours] = out.pop(theirs)
    return out


def check_render_kwargs(task_id: str, kw: Mapping[str, Any], model: Any) -> int:
    """ValueError naming a bad rendering kwarg; returns the id of the camera `camera_id`/`camera_name`
    name, with neither the model's "track" camera, -1 (the free camera) when it has none."""
    for name in ("width", "height", "max_geom"):
        v = kw[name]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{task_id}: {name} must be an int >= 1, got {v!r}")
    config = kw["default_camera_config"]
    if config is not None:
        if not isinstance(config, Mapping):
            raise ValueError(f"{task_id}: default_camera_config must be a dict of camera attributes, got {config!r}")
        unknown = sorted(set(config) - set(CAMERA_KEYS))
        if unknown:
            raise ValueError(f"{task_id}: default_camera_config has unknown key(s) {unknown}; a camera has "
                             f"{list(CAMERA_KEYS)}")
    if not isinstance(kw["visual_options"], Mapping):
        raise ValueError(f"{task_id}: visual_options must be a dict of MuJoCo visual flags to bools, got "
                         f"{kw['visual_options']!r}")
    camera_id, camera_name = kw["camera_id"], kw["camera_name"]
    if camera_id is not None and camera_name is not None:
        raise ValueError(f"{task_id}: pass camera_id or camera_name, not both")
    if camera_name is not None:
        names = [model.camera(i).name for i in range(model.ncam)]
        if camera_name not in names:
            raise ValueError(f"{task_id}: camera_name {camera_name!r} is not a camera of the model; it has {names}")
        return names.index(camera_name)
    if camera_id is not None:
        is_int = isinstance(camera_id, (int, np.integer)) and not isinstance(camera_id, bool)
        if not is_int or not -1 <= camera_id < model.ncam:
            raise ValueError(f"{task_id}: camera_id must be -1 (the free camera) or a camera of the model, 0 to "
                             f"{model.ncam - 1}, got {camera_id!r}")
        return int(camera_id)
    import mujoco

    return int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, "track"))  # MujocoRenderer's default


def open_renderer(model: Any, height: int, width: int, max_geom: int = 10000) -> Any:
    """A `mujoco.Renderer` on the chosen GL backend; a GL failure is one RuntimeError saying what to install."""
    import mujoco

    try:
        return mujoco.Renderer(model, height, width, max_geom)
    except Exception as e:  # noqa: BLE001 - a GL failure has many types (FatalError, RuntimeError, GLError)
        why = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        raise RuntimeError(f"MuJoCo cannot render with MUJOCO_GL={gl.choose()} in this process ({why}); "
                           f"{gl.HOW_TO}") from e


def close_renderer(renderer: Any) -> None:
    if renderer is not None:
        try:
            renderer.close()
        except RuntimeError:  # its context is current in another thread (EGL): the process frees it at exit
            pass


class MujocoRenderer:
    """rgb_array frames of a pool's envs, a camera per env (made when the env is first drawn). The
    OpenGL backend is chosen when it is built (an error now rather than at the first frame); the
    GL context is made at the first frame, in the thread that draws."""

    def __init__(self, task_id: str, model: Any, kw: Mapping[str, Any], camera_id: int):
        import mujoco

        gl.choose()
        self._model = model
        self._width, self._height, self._max_geom = int(kw["width"]), int(kw["height"]), int(kw["max_geom"])
        # MujocoEnv._initialize_simulation: the offscreen framebuffer grows to the frame, never shrinks
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, self._width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, self._height)
        config = kw["default_camera_config"]
        self._config = gymnasium_camera_config(task_id) if config is None else dict(config)
        self._camera_id = camera_id
        self._option = mujoco.MjvOption()
        for flag, value in kw["visual_options"].items():
            self._option.flags[flag] = value
        self._cameras: dict[int, Any] = {}
        self._renderer: Any = None

    @property
    def shape(self) -> tuple[int, int, int]:
        return self._height, self._width, 3

    def _open(self) -> Any:
        self._renderer = open_renderer(self._model, self._height, self._width, self._max_geom)
        return self._renderer

    def _camera(self, env: int, data: Any) -> Any:
        cam = self._cameras.get(env)
        if cam is not None:
            return cam
        import mujoco

        cam = self._cameras[env] = mujoco.MjvCamera()
        # OffScreenViewer._init_camera, then MujocoRenderer._set_cam_config, as Gymnasium does
        cam.type, cam.fixedcamid = mujoco.mjtCamera.mjCAMERA_FREE, -1
        cam.lookat[:] = np.median(data.geom_xpos, axis=0)
        cam.distance = self._model.stat.extent
        for key, value in self._config.items():
            if isinstance(getattr(cam, key), np.ndarray):
                getattr(cam, key)[:] = value
            else:
                setattr(cam, key, value)
        # OffScreenViewer.render(camera_id=...)
        cam.type = mujoco.mjtCamera.mjCAMERA_FREE if self._camera_id == -1 else mujoco.mjtCamera.mjCAMERA_FIXED
        cam.fixedcamid = self._camera_id
        return cam

    def frames(self, datas: list[Any], ids: np.ndarray) -> np.ndarray:
        """(len(ids), H, W, 3) uint8 frames of envs ids, each its MjData as it is now."""
        renderer = self._renderer or self._open()
        out = np.empty((len(ids), *self.shape), np.uint8)
        for k, i in enumerate(ids.tolist()):
            renderer.update_scene(datas[i], camera=self._camera(i, datas[i]), scene_option=self._option)
            renderer.render(out=out[k])
        return out

    def close(self) -> None:
        renderer, self._renderer = self._renderer, None
        close_renderer(renderer)

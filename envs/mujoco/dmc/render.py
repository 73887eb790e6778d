"""Frames of the DMC ids: MuJoCo's own `mujoco.Renderer` with dm_control's cameras and scene
options (rangefinder rays not drawn), equal to
dm_control's `physics.render(height, width, camera_id)` for the same state (tests/test_dmc.py).

EnvPool's DMC render kwargs: `render_width` and `render_height` (84 x 84) and `render_camera_id`
(-1: dm_control's free camera, `mjv_defaultFreeCamera` of the model; else a camera of the model).
The frames are drawn with the task's own model (textures included); for a task that changes its
model per episode (`DmcTask.per_episode_model`: its envs hold texture-free copies) the env's
per-episode fields are copied into it before the env is drawn, and quadruped's terrain is uploaded
again, so each env is drawn with its own targets and terrain.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from envs.mujoco import gl
from envs.mujoco.render import close_renderer, open_renderer

RENDER_KWARGS = {"render_width": 84, "render_height": 84, "render_camera_id": -1}  # EnvPool's DMC defaults


def check_render_kwargs(task_id: str, kw: dict[str, Any], model: Any) -> None:
    for name in ("render_width", "render_height"):
        v = kw[name]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{task_id}: {name} must be an int >= 1, got {v!r}")
    camera = kw["render_camera_id"]
    if isinstance(camera, bool) or not isinstance(camera, (int, np.integer)) or not -1 <= camera < model.ncam:
        raise ValueError(f"{task_id}: render_camera_id must be -1 (dm_control's free camera) or a camera of the model, "
                         f"0 to {model.ncam - 1}, got {camera!r}")


class DmcRenderer:
    def __init__(self, model: Any, models: Sequence[Any], kw: dict[str, Any], model_state: Sequence[str]):
        import mujoco

        gl.choose()
        self._model, self._models = model, models
        self._width, self._height = int(kw["render_width"]), int(kw["render_height"])
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, self._width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, self._height)
        self._camera = mujoco.MjvCamera()
        camera_id = int(kw["render_camera_id"])
        if camera_id == -1:  # dm_control's Camera(camera_id=-1)
            mujoco.mjv_defaultFreeCamera(model, self._camera)
        else:
            self._camera.type, self._camera.fixedcamid = mujoco.mjtCamera.mjCAMERA_FIXED, camera_id
        self._option = mujoco.MjvOption()  # dm_control's: MuJoCo's defaults without rangefinder rays
        self._option.flags[mujoco.mjtVisFlag.mjVIS_RANGEFINDER] = False
        # the fields a per-episode task sets in its envs' models (their models, not the drawn one)
        self._fields = [f for f in model_state if any(m is not model for m in models)]
        self._renderer: Any = None

    def _open(self) -> Any:
        self._renderer = open_renderer(self._model, self._height, self._width)
        return self._renderer

    def _take_model_state(self, env_model: Any) -> None:
        import mujoco

        for name in self._fields:
            getattr(self._model, name)[:] = getattr(env_model, name)
        if "hfield_data" in self._fields and self._model.nhfield:  # the terrain lives on the GPU too
            # mujoco.Renderer's own GL and MuJoCo contexts (it has no upload call of its own)
            gl_context, context = self._renderer._gl_context, self._renderer._mjr_context
            gl_context.make_current()
            for h in range(self._model.nhfield):
                mujoco.mjr_uploadHField(self._model, context, h)

    def frames(self, datas: list[Any], ids: np.ndarray) -> np.ndarray:
        renderer = self._renderer or self._open()
        out = np.empty((len(ids), self._height, self._width, 3), np.uint8)
        for k, i in enumerate(ids.tolist()):
            if self._fields:
                self._take_model_state(self._models[i])
            renderer.update_scene(datas[i], camera=self._camera, scene_option=self._option)
            renderer.render(out=out[k])
        return out

    def close(self) -> None:
        renderer, self._renderer = self._renderer, None
        close_renderer(renderer)

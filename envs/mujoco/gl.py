"""The OpenGL backend MuJoCo renders with, chosen so that a headless host renders by itself.

MuJoCo's Python bindings read MUJOCO_GL when `mujoco` is imported and default to GLFW, which
needs a display. `choose()` keeps a MUJOCO_GL the user set; when it is unset it tries EGL, then
OSMesa (then GLFW, when a display is set) and sets MUJOCO_GL (and PYOPENGL_PLATFORM) to the first
that renders. Each is tried in a child process: a backend that fails in this process can leave
PyOpenGL bound to its platform, and the next could not be tried here. When `mujoco` was imported
before the choice, its GL context module is reloaded so that `mujoco.Renderer` uses the chosen one.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import warnings

HEADLESS = ("egl", "osmesa")
HOW_TO = ("install EGL (apt install libegl1; a GPU driver's is fastest) or OSMesa (apt install libosmesa6), or set "
          "MUJOCO_GL to a backend that works here (egl, osmesa; glfw with a display)")
# A model with something to draw, rendered once: what a pool's first frame needs.
_PROBE = """
import mujoco
m = mujoco.MjModel.from_xml_string("<mujoco><worldbody><light pos='0 0 1'/><geom size='.1'/></worldbody></mujoco>")
with mujoco.Renderer(m, 8, 8) as r:
    r.update_scene(mujoco.MjData(m))
    r.render()
"""
_chosen: str | None = None


def _display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def candidates() -> tuple[str, ...]:
    """The backends tried, in order, when MUJOCO_GL is unset."""
    return HEADLESS + (("glfw",) if _display() else ())


def probe(name: str) -> str | None:
    """None if MuJoCo renders a frame with backend `name` (in a child process), else why not (one line)."""
    env = {**os.environ, "MUJOCO_GL": name}
    if name in HEADLESS and not env.get("PYOPENGL_PLATFORM"):
        env["PYOPENGL_PLATFORM"] = name
    try:
        with warnings.catch_warnings():
            # JAX warns at any fork once it runs threads; subprocess's fork goes straight to exec
            warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
            done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "no frame within 120 s"
    if done.returncode == 0:
        return None
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    why = lines[-1] if lines else f"exit status {done.returncode}"
    return why if len(why) <= 160 else why[:157] + "..."


def choose() -> str:
    """The backend MuJoCo renders with in this process (MUJOCO_GL's value, or the first of
    `candidates()` that works, then set in MUJOCO_GL); RuntimeError in one line when none works."""
    global _chosen
    if _chosen is not None:
        return _chosen
    user = os.environ.get("MUJOCO_GL", "").strip().lower()
    if user:
        why = probe(user)
        if why is not None:
            raise RuntimeError(f"MuJoCo cannot render with MUJOCO_GL={user} ({why}): unset MUJOCO_GL to let envs try "
                               f"{' then '.join(candidates())}, or {HOW_TO}")
        name = user
    else:
        failures = []
        for name in candidates():
            why = probe(name)
            if why is None:
                break
            failures.append(f"{name}: {why}")
        else:
            raise RuntimeError(f"MuJoCo cannot render: no OpenGL backend works here ({'; '.join(failures)}); {HOW_TO}")
    use(name)
    _chosen = name
    return name


def use(name: str) -> None:
    """Make `mujoco.Renderer` in this process render with backend `name`."""
    os.environ["MUJOCO_GL"] = name
    if name in HEADLESS and not os.environ.get("PYOPENGL_PLATFORM"):
        os.environ["PYOPENGL_PLATFORM"] = name
    module = sys.modules.get("mujoco.rendering.classic.gl_context")
    if module is not None and getattr(module, "_MUJOCO_GL", name) != name:
        importlib.reload(module)  # it read MUJOCO_GL when mujoco was imported; Renderer reads its GLContext

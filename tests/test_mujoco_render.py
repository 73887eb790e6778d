"""Frames of the native MuJoCo pool (`render_mode="rgb_array"`): equal to Gymnasium's `rgb_array`
pixel for pixel with the same camera, a camera that keeps a running body in the frame (checked on
a real video file, decoded), and an OpenGL backend chosen by itself on a headless host, or one
line saying what to install."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import envs
from envs.mujoco import gl
from tests.support.cli import ROOT, child_env
from tests.support.mujoco_models import cheap_hopper

SIZE = dict(width=96, height=72)  # small frames: the same pixels, less work


def gym_frames(task_id, kw, actions, seed):
    """Gymnasium's rgb_array frames of one seeded episode."""
    gl.choose()  # Gymnasium's own choice tries GLFW first, which crashes without a display
    env = gym.make(task_id, render_mode="rgb_array", **kw)
    env.reset(seed=seed)
    frames = [env.render()]
    for a in actions:
        env.step(a)
        frames.append(env.render())
    env.close()
    return np.stack(frames)


def pool_frames(task_id, kw, actions, seed):
    with envs.make(task_id, num_envs=1, seed=seed, render_mode="rgb_array", **kw) as pool:
        assert pool.config["backend"] == "mujoco"
        pool.reset()
        frames = [pool.render(0)[0]]
        for a in actions:
            pool.step(a[None])
            frames.append(pool.render()[0])
    return np.stack(frames)


def actions_for(task_id, steps, seed=0):
    space = envs.make_spec(task_id).action_space
    return np.random.default_rng(seed).uniform(space.low, space.high, (steps, *space.shape)).astype(np.float32)


# Frames of the locomotion models cost ~0.25 s each here whatever their size (Mesa's software
# EGL draws MuJoCo's 4096x4096 shadow map): their cases are slow, 10 steps each.
SLOW = pytest.mark.slow(seconds=8)


@pytest.mark.parametrize("task_id, kw", [
    pytest.param("Hopper-v5", {"camera_name": "track"}, marks=SLOW),  # a camera of the model (trackcom)
    pytest.param("Hopper-v5", {"camera_id": -1}, marks=SLOW),  # Gymnasium's free camera and the task's config
    ("Pusher-v5", {}),  # a task that does not run away: Gymnasium's camera unchanged
    ("Reacher-v5", {"default_camera_config": {"distance": 1.5, "elevation": -60.0}}),
])
def test_frames_equal_gymnasiums_with_the_same_camera(task_id, kw):
    kw = {**kw, **SIZE}
    actions = actions_for(task_id, 10)
    want = gym_frames(task_id, kw, actions, seed=3)
    got = pool_frames(task_id, kw, actions, seed=3)
    assert got.shape == (11, 72, 96, 3) and got.dtype == np.uint8
    assert want.std() > 10 and np.abs(np.diff(want.astype(int), axis=0)).sum() > 0  # a scene that moves
    np.testing.assert_array_equal(got, want)


@SLOW
@pytest.mark.parametrize("task_id", ["Hopper-v5", "HalfCheetah-v5"])
def test_the_default_camera_is_the_models_track_camera_as_gymnasiums_and_envpools(task_id):
    """No camera named: the model's "track" camera (it follows the running body), Gymnasium's
    default up to 1.3 and EnvPool's for the v5 ids; EnvPool's render_width and render_height name
    the frame's size."""
    actions = actions_for(task_id, 10)
    got = pool_frames(task_id, {"render_width": SIZE["width"], "render_height": SIZE["height"]}, actions, seed=1)
    np.testing.assert_array_equal(got, gym_frames(task_id, {**SIZE, "camera_name": "track"}, actions, seed=1))


def test_render_input_is_checked():
    with pytest.raises(ValueError, match="pass camera_id or camera_name, not both"):
        envs.make("Hopper-v5", camera_id=0, camera_name="track")
    with pytest.raises(ValueError, match=r"camera_name 'side' is not a camera of the model; it has \['track'\]"):
        envs.make("Hopper-v5", camera_name="side")
    with pytest.raises(ValueError, match="camera_id must be -1 .* 0 to 0, got 3"):
        envs.make("Hopper-v5", camera_id=3)
    with pytest.raises(ValueError, match=r"default_camera_config has unknown key\(s\) \['zoom'\]"):
        envs.make("Hopper-v5", default_camera_config={"zoom": 2})
    with pytest.raises(ValueError, match="width must be an int >= 1"):
        envs.make("Hopper-v5", width=0)
    with pytest.raises(ValueError, match="pass height or EnvPool's render_height, not both"):
        envs.make("Hopper-v5", height=48, render_height=48)
    with envs.make("Hopper-v5", num_envs=2, batch_size=1, render_mode="rgb_array", **SIZE) as pool:
        pool.async_reset()
        *_, info = pool.recv()
        pool.send(np.zeros((1, 3), np.float32), info["env_id"])  # that env steps in the kernel
        with pytest.raises(RuntimeError, match="in flight: recv"):
            pool.render([0, 1])


def test_human_mode_shows_one_envs_frame_and_returns_none():
    """EnvPool's render_mode="human": the rgb_array frame of one env (render_env_id's by default)
    goes to the window (OpenCV's, through `_show_human_frame`, EnvPool's hook) and render() returns
    None; more than one env is refused; with no window to open (this headless host) the error is
    one line."""
    with envs.make("Pusher-v5", num_envs=2, seed=0, render_mode="rgb_array", **SIZE) as rgb:
        rgb.reset()
        want = rgb.render([1, 0])  # one pool drawing at a time
    with envs.make("Pusher-v5", num_envs=2, seed=0, render_mode="human", render_env_id=1, **SIZE) as human:
        human.reset()
        assert human.metadata["render_modes"] == ["rgb_array", "human"]
        shown = []
        human._show_human_frame = shown.append
        assert human.render() is None and human.render(0) is None
        np.testing.assert_array_equal(shown[0], want[0])  # render_env_id=1
        np.testing.assert_array_equal(shown[1], want[1])
        assert not np.array_equal(shown[0], shown[1])
        del human._show_human_frame
        with pytest.raises(RuntimeError, match="render_mode='human' (cannot open a window here|shows frames with OpenCV)"):
            human.render()
        with pytest.raises(ValueError, match=r"render_mode='human' shows one env per call .* \[0, 1\]"):
            human.render([0, 1])


def run_child(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=child_env(**env))


RENDER_ONE = ("import os, envs; p = envs.make('Hopper-v5', render_mode='rgb_array', width=64, height=48); p.reset(); "
              "f = p.render(); print(os.environ['MUJOCO_GL'], f.shape, f.std() > 10)")


@pytest.mark.slow(seconds=4)
def test_a_headless_host_renders_without_mujoco_gl():
    """MUJOCO_GL unset and no display: the first headless backend that works is chosen, also when
    mujoco was imported before (its GL module had picked GLFW)."""
    env = {"MUJOCO_GL": "", "DISPLAY": "", "WAYLAND_DISPLAY": "", "PYOPENGL_PLATFORM": ""}
    out = run_child("import mujoco; " + RENDER_ONE, **env)
    assert out.returncode == 0, out.stderr[-3000:]
    name, *rest = out.stdout.split()
    assert name in gl.HEADLESS and " ".join(rest) == "(1, 48, 64, 3) True", out.stdout


@pytest.mark.slow(seconds=5)
def test_no_working_gl_backend_is_one_line():
    """A MUJOCO_GL that cannot work here (OSMesa under PyOpenGL's EGL platform, on any host), and
    no backend at all: one line naming the variable and what to install, raised at make."""
    code = ("import envs\ntry:\n    envs.make('Hopper-v5', render_mode='rgb_array')\n"
            "except RuntimeError as e:\n    print(e)\n")
    out = run_child(code, MUJOCO_GL="osmesa", PYOPENGL_PLATFORM="egl")
    assert out.returncode == 0 and len(out.stdout.strip().splitlines()) == 1, out.stdout + out.stderr[-2000:]
    assert out.stdout.startswith("MuJoCo cannot render with MUJOCO_GL=osmesa (") and "libosmesa6" in out.stdout
    out = run_child(code, MUJOCO_GL="", DISPLAY="", WAYLAND_DISPLAY="", PYOPENGL_PLATFORM="nothing")
    line = out.stdout.strip()
    assert out.returncode == 0 and len(line.splitlines()) == 1, out.stdout + out.stderr[-2000:]
    assert line.startswith("MuJoCo cannot render: no OpenGL backend works here (egl: ") and "; osmesa: " in line
    assert "apt install libegl1" in line and "MUJOCO_GL" in line


# ---------------------------------------------------------------- the body in a real video
def warm_pixels(frames):
    """Mask of the hopper's pixels: its tan (0.8, 0.6, 0.4) is warm; the sky, the checkered floor
    and the text box are grey or blue."""
    f = frames.astype(np.int16)
    return (f[..., 0] - f[..., 2] > 40) & (f[..., 0] > 60)


@pytest.mark.slow(seconds=16)
def test_a_running_body_stays_in_the_frame_of_a_video(tmp_path):
    import io

    import imageio.v3 as iio

    from sebulba.agents.random_agent import RandomAgent
    from sebulba.experiment import video

    # gravity along +x and none down: the body travels about 4 m in 200 steps, whatever the actions
    # (a trained hopper runs as far)
    kw = dict(xml_file=cheap_hopper(tmp_path, gravity="3 0 0"), terminate_when_unhealthy=False, max_episode_steps=200,
              width=160, height=120)
    agent = RandomAgent(envs.make_spec("Hopper-v5", **kw))
    centres = {}
    for camera, extra in [("tracking", {}), ("free", {"camera_id": -1})]:
        path, progress = tmp_path / f"{camera}.gif", io.StringIO()
        _, length = video.record(path, agent, (), "Hopper-v5", {**kw, **extra}, seed=0, progress=progress)
        lines = progress.getvalue().splitlines()  # not a terminal: a line every 100 frames
        assert [line.split(", return")[0] for line in lines] == [f"video: {n} frames of at most 201" for n in (100, 200)]
        frames = iio.imread(path)
        assert length == 200 and frames.shape == (201, 120, 160, 3)
        mask = warm_pixels(frames)
        count = mask.sum(axis=(1, 2))
        cols = np.where(count > 0, (mask * np.arange(160)).sum(axis=(1, 2)) / np.maximum(count, 1), np.nan)
        centres[camera] = (count, cols)
    count, cols = centres["tracking"]
    assert count.min() > 150, count  # the whole body, every frame
    assert np.all(np.abs(cols - 80) < 30), cols  # near the middle
    count, _ = centres["free"]
    assert count[:10].min() > 150 and count[-20:].max() == 0, count  # Gymnasium's camera loses it

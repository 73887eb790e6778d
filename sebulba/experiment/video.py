"""Videos of a trained agent: MP4 (imageio's ffmpeg plugin, which ships its own ffmpeg binary) or
GIF (pillow), frames annotated with the step and the return so far. Frames come from the env
pool's `render` (`render_mode="rgb_array"`): the built-in classic-control tasks are drawn by
Gymnasium's own renderer (pygame), Atari games are ALE's RGB screens; a Gymnasium env that runs
in worker processes (which do not render) is rendered by that env made in this process, whose
observations are the pool's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import jax
import numpy as np

import envs
from sebulba.agent import Agent
from sebulba.loop.evaluator import acting
from sebulba.types import EnvStep

INSTALL = "pip install -e '.[video]'"
FORMATS = (".mp4", ".gif")


def check_video_path(path: str | os.PathLike) -> Path:
    """The path, once it is known a video can be written there: ValueError for a format other than
    MP4 or GIF or a missing directory, ImportError (with the pip command) without the extra."""
    p = Path(path)
    if p.suffix.lower() not in FORMATS:
        raise ValueError(f"--video {p}: the name must end in .mp4 or .gif")
    if not p.parent.is_dir():
        raise ValueError(f"--video {p}: the directory {p.parent} does not exist")
    try:
        import imageio.v2  # noqa: F401
        from PIL import Image, ImageDraw  # noqa: F401

        if p.suffix.lower() == ".mp4":
            import imageio_ffmpeg  # noqa: F401
    except ImportError as e:
        raise ImportError(f"--video needs imageio, imageio-ffmpeg and pillow ({e.name} is missing): {INSTALL}") from None
    return p


def annotate(frame: np.ndarray, step: int, episode_return: float) -> np.ndarray:
    """The frame (H, W, 3 uint8) with 'step N  return R' in its top-left corner."""
    from PIL import Image, ImageDraw

    image = Image.fromarray(frame)
    draw = ImageDraw.Draw(image)
    text = f"step {step}  return {episode_return:.1f}"
    box = draw.textbbox((4, 2), text)
    draw.rectangle((box[0] - 2, box[1] - 1, box[2] + 2, box[3] + 1), fill=(0, 0, 0))
    draw.text((4, 2), text, fill=(255, 255, 255))
    return np.asarray(image)


def _frames_of(env_id: str, env_kwargs: dict[str, Any], seed: int) -> tuple[Any, str]:
    """A one-env source of observations and frames: a rendering pool, or (worker-process tasks)
    Gymnasium's env itself. Returns (source, "pool" | "gym")."""
    backend, _ = envs.resolve(env_id, env_kwargs.get("backend"))
    if backend == "process":
        kwargs = {k: v for k, v in env_kwargs.items() if k not in ("backend", "num_threads")}
        return gym.make(env_id, render_mode="rgb_array", **kwargs), "gym"
    return envs.make(env_id, num_envs=1, seed=seed, render_mode="rgb_array", **env_kwargs), "pool"


def play(agent: Agent, networks: Any, env_id: str, env_kwargs: dict[str, Any], seed: int, greedy: bool = True
         ) -> Iterator[tuple[np.ndarray, int, float, bool]]:
    """One episode with the agent's evaluation policy (or behaviour policy): yields (frame, step,
    return so far, done) from the reset frame to the last."""
    source, kind = _frames_of(env_id, dict(env_kwargs), seed)
    policy = acting(agent, greedy)
    try:
        if kind == "pool":
            obs, _ = source.reset()
            frame = lambda: source.render(0)[0]  # noqa: E731
        else:
            obs, _ = source.reset(seed=seed)
            obs = np.asarray(obs)[None]
            frame = source.render  # noqa: E731
        state = agent.init_step_state(networks, 1, jax.random.key(seed))
        reward, first, total, t = np.zeros(1, np.float32), np.ones(1, bool), 0.0, 0
        yield frame(), t, total, False
        while True:
            env_step = EnvStep(obs, reward, np.zeros(1, bool), np.zeros(1, bool), first)
            action, state = policy(networks, state, env_step)
            action = np.asarray(action)
            if kind == "pool":
                obs, reward, terminated, truncated, _ = source.step(action)
            else:
                o, r, term, trunc, _ = source.step(action[0])
                obs, reward, terminated, truncated = np.asarray(o)[None], np.float32([r]), np.array([term]), np.array([trunc])
            first = np.zeros(1, bool)
            t, total = t + 1, total + float(reward[0])
            done = bool(terminated[0] or truncated[0])
            yield frame(), t, total, done
            if done:
                return
    finally:
        source.close()


def write_video(path: Path, frames: list[np.ndarray], fps: int = 30) -> None:
    """MP4 (H.264) or GIF by the path's suffix. Frames are padded to even sizes (H.264 needs them)."""
    import imageio.v2 as imageio

    h, w = frames[0].shape[:2]
    pad = ((0, h % 2), (0, w % 2), (0, 0))
    frames = [np.pad(f, pad) for f in frames] if (h % 2 or w % 2) else frames
    if path.suffix.lower() == ".gif":
        imageio.mimsave(path, frames, duration=1000 / fps, loop=0)
        return
    with imageio.get_writer(path, fps=fps, codec="libx264", macro_block_size=1, quality=7,
                            ffmpeg_log_level="error") as writer:
        for f in frames:
            writer.append_data(f)


def record(path: Path, agent: Agent, networks: Any, env_id: str, env_kwargs: dict[str, Any], seed: int,
           greedy: bool = True, fps: int = 30) -> tuple[float, int]:
    """Write a video of one episode to path; returns its (return, length)."""
    frames, total, t = [], 0.0, 0
    for frame, t, total, _ in play(agent, networks, env_id, env_kwargs, seed, greedy):
        frames.append(annotate(np.asarray(frame, np.uint8), t, total))
    write_video(path, frames, fps)
    return total, t

"""Videos of a trained agent: MP4 (imageio's ffmpeg plugin, which ships its own ffmpeg binary) or
GIF (pillow), frames annotated with the step and the return so far (a multi-player env's: each
player's, or each team's), written as they come with a progress line. Frames come from the env
pool's `render` (`render_mode="rgb_array"`): the built-in classic-control tasks are drawn by
Gymnasium's own renderer (pygame), Atari games are ALE's RGB screens, MuJoCo tasks MuJoCo's
renderer (headless: envs/mujoco/gl.py chooses EGL or OSMesa), PettingZoo envs and the multi-player
Atari games are drawn in their workers (one frame per env, every player in it); a Gymnasium env
that runs in worker processes (which do not render it) is rendered by that env made in this
process, whose observations are the pool's.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import gymnasium as gym
import jax
import numpy as np

import envs
from envs.mujoco import gl
from sebulba.agent import Agent
from sebulba.experiment.progress import isatty
from sebulba.loop.evaluator import acting
from sebulba.loop.metrics import team_name, teams
from sebulba.loop.state_pool import StatePool
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


def labels(returns: np.ndarray, player_names: Sequence[str] = ()) -> list[str]:
    """The returns' lines of a frame's label: one (`return R`) for a single player; a multi-player
    env's, one per player (`agent_0: R`; unnamed players `player i: R`), or per team when the names
    form teams (`adversary x3: R`, the mean of its players', as the team metrics; a team of one
    by its player's name)."""
    if len(returns) == 1:
        return [f"return {returns[0]:.1f}"]
    names = [n if n and not n.isdigit() else f"player {n or i}" for i, n in enumerate(player_names or [""] * len(returns))]
    team_of = teams(names)
    if not team_of:
        return [f"{name}: {r:.1f}" for name, r in zip(names, returns)]
    lines = []
    for t in sorted(set(team_of), key=team_of.index):
        members = [i for i, k in enumerate(team_of) if k == t]
        name = team_name(names[members[0]]) + f" x{len(members)}" if len(members) > 1 else names[members[0]]
        lines.append(f"{name}: {np.mean(returns[members]):.1f}")
    return lines


def annotate(frame: np.ndarray, step: int, returns: np.ndarray, player_names: Sequence[str] = ()) -> np.ndarray:
    """The frame (H, W, 3 uint8) with 'step N  return R' in its top-left corner; a multi-player
    env's: 'step N', then a line per player or team (`labels`)."""
    from PIL import Image, ImageDraw

    image = Image.fromarray(frame)
    draw = ImageDraw.Draw(image)
    lines = labels(np.atleast_1d(returns), player_names)
    text = "\n".join([f"step {step}  {lines[0]}"] if len(lines) == 1 else [f"step {step}", *lines])
    box = draw.multiline_textbbox((4, 2), text)
    draw.rectangle((box[0] - 2, box[1] - 1, box[2] + 2, box[3] + 1), fill=(0, 0, 0))
    draw.multiline_text((4, 2), text, fill=(255, 255, 255))
    return np.asarray(image)


def _is_mujoco(env: gym.Env) -> bool:
    module = sys.modules.get("gymnasium.envs.mujoco.mujoco_env")  # loaded if env is one
    return module is not None and isinstance(env.unwrapped, module.MujocoEnv)


def _frames_of(env_id: str, env_kwargs: dict[str, Any], seed: int, with_state: bool = False
               ) -> tuple[Any, str, int | None]:
    """A one-env source of observations and frames: a rendering pool, (`with_state`: for an agent
    that plans with the env) a StatePool of the JAX env, or (worker-process tasks) Gymnasium's env
    itself. Returns (source, "pool" | "gym", its episode step limit or None)."""
    if with_state:
        pool = StatePool(env_id, env_kwargs, 1, seed)
        return pool, "pool", pool.env.max_episode_steps
    backend, _ = envs.resolve(env_id, env_kwargs.get("backend"))
    if backend == "process" and not envs.renders_in_workers(env_id):
        kwargs = {k: v for k, v in env_kwargs.items() if k not in ("backend", "num_threads")}
        env = gym.make(env_id, render_mode="rgb_array", **kwargs)
        if _is_mujoco(env):
            try:
                gl.choose()  # before its first frame: Gymnasium reads MUJOCO_GL then
            except Exception:
                env.close()
                raise
        return env, "gym", env.spec.max_episode_steps if env.spec is not None else None
    pool = envs.make(env_id, num_envs=1, seed=seed, render_mode="rgb_array", **env_kwargs)
    return pool, "pool", pool.config["max_episode_steps"]


def play(source: Any, kind: str, agent: Agent, networks: Any, seed: int, greedy: bool = True
         ) -> Iterator[tuple[np.ndarray, int, np.ndarray, bool]]:
    """One episode on a source of `_frames_of` with the agent's evaluation policy (or behaviour
    policy): yields (frame, step, return so far of each player (one for a single-player env),
    done) from the reset frame to the last; closes the source when done. A multi-player env's
    episode is done when every player's is (envs/players.py: a player that left stays final)."""
    policy = acting(agent, greedy)
    try:
        if kind == "pool":
            rows = source.num_players  # a multi-player pool's env is a row per player
            obs, _ = source.reset()
            frame = lambda: source.render(0)[0]  # noqa: E731
        else:
            rows = 1
            obs, _ = source.reset(seed=seed)
            obs = np.asarray(obs)[None]
            frame = source.render  # noqa: E731
        state = agent.init_step_state(networks, rows, jax.random.key(seed))
        reward, first, t, total = np.zeros(rows, np.float32), np.ones(rows, bool), 0, np.zeros(rows)
        terminated, truncated = np.zeros(rows, bool), np.zeros(rows, bool)
        yield frame(), t, total.copy(), False
        while True:
            env_step = EnvStep(obs, reward, terminated, truncated, first, source.state if agent.plans_with_env else ())
            action, state = policy(networks, state, env_step)
            action = np.asarray(action)
            if kind == "pool":
                obs, reward, terminated, truncated, _ = source.step(action)
            else:
                o, r, term, trunc, _ = source.step(action[0])
                obs, reward, terminated, truncated = np.asarray(o)[None], np.float32([r]), np.array([term]), np.array([trunc])
            first = np.zeros(rows, bool)
            t, total = t + 1, total + reward
            done = bool((terminated | truncated).all())
            yield frame(), t, total.copy(), done
            if done:
                return
    finally:
        source.close()


class VideoWriter:
    """Frames to an MP4 (H.264) or a GIF, by the path's suffix, as they come. Frames are padded to
    even sizes (H.264 needs them). A GIF keeps each frame as 8-bit palette colours (pillow's fast
    octree, a third of the RGB frame) until `close` writes them all (pillow writes a GIF at once)."""

    def __init__(self, path: Path, fps: int = 30):
        self.path, self.fps = Path(path), fps
        self.gif = self.path.suffix.lower() == ".gif"
        self._frames: list[Any] = []
        self._mp4: Any = None
        self.count = 0

    def append(self, frame: np.ndarray) -> None:
        h, w = frame.shape[:2]
        if h % 2 or w % 2:
            frame = np.pad(frame, ((0, h % 2), (0, w % 2), (0, 0)))
        self.count += 1
        if self.gif:
            from PIL import Image

            self._frames.append(Image.fromarray(frame).quantize(method=Image.Quantize.FASTOCTREE))
            return
        if self._mp4 is None:
            import imageio.v2 as imageio

            # imageio-ffmpeg starts ffmpeg with a preexec_fn (its own process group), so Python's
            # fork hooks run, and JAX's warns that a fork in a multithreaded process may deadlock.
            # Without it ffmpeg starts by fork + exec alone, with no Python in the child.
            os.environ.setdefault("IMAGEIO_FFMPEG_NO_PREVENT_SIGINT", "1")
            self._mp4 = imageio.get_writer(self.path, fps=self.fps, codec="libx264", macro_block_size=1, quality=7,
                                           ffmpeg_log_level="error")
        self._mp4.append_data(frame)

    def close(self, keep: bool = True) -> None:
        """Finish the file (a GIF is written now); keep=False: remove what was written."""
        if self._mp4 is not None:
            self._mp4.close()
            self._mp4 = None
        frames, self._frames = self._frames, []
        if keep and frames:
            frames[0].save(self.path, save_all=True, append_images=frames[1:], duration=1000 / self.fps, loop=0)
        elif not keep:
            self.path.unlink(missing_ok=True)


class FrameProgress:
    """Progress of a video being recorded: a tqdm bar of frames on a terminal, elsewhere (a log, a
    pipe) a line every `every` frames, as the training progress line does (progress.py)."""

    def __init__(self, total: int | None, file: IO | None = None, every: int = 100, desc: str = "video"):
        self.file = file if file is not None else sys.stderr
        self.total, self.every, self.desc = total, every, desc
        self._start = time.monotonic()
        self._bar: Any = None
        if isatty(self.file):
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, file=self.file, unit=" frames", dynamic_ncols=True,
                             mininterval=0.5)

    def update(self, frames: int, episode_return: float) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(f"return {episode_return:.1f}", refresh=False)
            self._bar.update(frames - self._bar.n)
            return
        if frames % self.every == 0:
            of = f" of at most {self.total:,}" if self.total else ""
            elapsed = time.monotonic() - self._start
            print(f"{self.desc}: {frames:,} frames{of}, return {episode_return:.1f} [{elapsed:.0f} s]", file=self.file,
                  flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def record(path: Path, agent: Agent, networks: Any, env_id: str, env_kwargs: dict[str, Any], seed: int,
           greedy: bool = True, fps: int = 30, progress: IO | None = None) -> tuple[float, int]:
    """Write a video of one episode to path, with progress on `progress` (stderr by default);
    returns its (return, length); a multi-player env's return is the mean of its players' (as
    the evaluation's `eval_return_mean`)."""
    writer = VideoWriter(path, fps)
    source, kind, limit = _frames_of(env_id, dict(env_kwargs), seed, with_state=agent.plans_with_env)
    names = source.spec.player_names if kind == "pool" else ()
    bar = FrameProgress(None if limit is None else limit + 1, progress)
    episode = play(source, kind, agent, networks, seed, greedy)
    total, t, done = np.zeros(1), 0, False
    try:
        for frame, t, total, _ in episode:
            writer.append(annotate(np.asarray(frame, np.uint8), t, total, names))
            bar.update(writer.count, float(total.mean()))
        done = True
    finally:
        episode.close()  # closes the source
        bar.close()
        writer.close(keep=done)  # no half-written video
    return float(total.mean()), t

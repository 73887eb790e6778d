"""Atari without ALE's vector env: one `ale_py.ALEInterface` per env, preprocessed here in numpy.

ALE's C++ vector env has no game mode or difficulty and never hands out the raw screen, so a
pool that asks for `mode`/`difficulty` or `render_mode` runs on this backend instead (see
`envs.atari.task.configure`). It is a port of ALE 0.12.1's `PreprocessedEnv` (the vector env's
per-env preprocessing) and reproduces it exactly, quirks included:

- frame skip, max-pooling the last two frames; a step that ends early (game over, or the frame
  limit) captures no frame after the last one it had, as ALE's does;
- resizing: OpenCV's INTER_AREA, which ALE calls, ported to numpy with the same float32 weights
  and summation order and the same rounding (`AreaResizer`), bit-exact against ALE's frames;
- noop starts: std::mt19937 seeded `seed + i` and libstdc++'s uniform_int_distribution
  (`CppNoopSampler`), so the noop counts are ALE's own, not just the same distribution;
- FIRE once after reset_game (when the action set has it), then the noops;
- the frame limit (`max_episode_steps * frame_skip` frames) counted from the end of the reset.

The envs run one after the other in the caller's thread: `ALEInterface.act` holds the GIL
(measured: two threads stepping two ALEs run no faster than one), so a thread pool would only
add overhead. Unlike the vector backend this one is not lockstep: any subset of envs may be
sent, reset or rendered.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from envs.atari.task import ALE_MAX_SEED, ATARI_INFO, AtariTask, require_ale, rom_default
from envs.contract import Backend
from envs.episodes import EpisodeBook
from envs.ready import Batch, Chunk

_ALL = slice(None)


# --------------------------------------------------------------------------- resizing
@functools.cache
def _area_taps(src: int, dst: int) -> tuple[np.ndarray, np.ndarray]:
    """OpenCV's INTER_AREA taps along one axis (computeResizeAreaTab): for each output pixel,
    the source pixels it covers and their float32 weights, padded with zero weights (adding
    0 * x leaves a float32 sum unchanged, so the padding keeps OpenCV's result exactly)."""
    scale = 1.0 / (dst / src)  # OpenCV's scale: the inverse of the inverse scale, as a double
    rows: list[list[tuple[int, float]]] = []
    for d in range(dst):
        f1 = d * scale
        f2 = f1 + scale
        cell = min(scale, src - f1)
        s2 = min(math.floor(f2), src - 1)
        s1 = min(math.ceil(f1), s2)
        row = []
        if s1 - f1 > 1e-3:
            row.append((s1 - 1, (s1 - f1) / cell))
        row.extend((s, 1.0 / cell) for s in range(s1, s2))
        if f2 - s2 > 1e-3:
            row.append((s2, min(f2 - s2, 1.0, cell) / cell))
        rows.append(row)
    taps = max(len(r) for r in rows)
    index = np.zeros((dst, taps), np.intp)
    weight = np.zeros((dst, taps), np.float32)
    for d, row in enumerate(rows):
        for t, (s, w) in enumerate(row):
            index[d, t], weight[d, t] = s, np.float32(w)
    return index, weight


class AreaResizer:
    """Frames (..., H, W) uint8 resized to (..., h, w) exactly as ALE's `cv::resize(...,
    INTER_AREA)` does (the OpenCV bundled in ale-py 0.12.1); RGB goes channel-first, each channel
    alone, as OpenCV treats channels. Three paths, as OpenCV's: the same size is a copy; integer
    factors sum whole blocks (2x2 rounds half up, as OpenCV's SIMD kernel; other factors multiply
    by float32 1/area and round half to even); any other size accumulates float32 taps, first
    horizontally within each source row, then vertically, and rounds half to even.

    A pip-installed cv2 is deliberately not used: its integer-factor rounding differs between
    OpenCV versions, while this port is checked against ALE's own frames (tests/test_atari_single.py).
    """

    def __init__(self, src_h: int, src_w: int, dst_h: int, dst_w: int):
        if dst_h > src_h or dst_w > src_w:
            raise ValueError(
                f"img_height x img_width = {dst_h} x {dst_w} upscales the {src_h} x {src_w} screen; "
                "this backend (used for mode, difficulty and render_mode) only downscales by area"
            )
        self._dst = (dst_h, dst_w)
        self._copy = (dst_h, dst_w) == (src_h, src_w)
        self._block = (src_h // dst_h, src_w // dst_w) if src_h % dst_h == 0 and src_w % dst_w == 0 else None
        self._rows = _area_taps(src_h, dst_h)
        self._cols = _area_taps(src_w, dst_w)

    def __call__(self, frames: np.ndarray) -> np.ndarray:
        if self._copy:
            return frames.copy()
        if self._block is not None:
            return self._blocks(frames)
        return self._taps(frames)

    def _blocks(self, frames: np.ndarray) -> np.ndarray:
        (h, w), (sy, sx) = self._dst, self._block
        lead = frames.shape[:-2]
        sums = frames.reshape(*lead, h, sy, w, sx).sum(axis=(-3, -1), dtype=np.int32)
        if (sy, sx) == (2, 2):
            return ((sums + 2) >> 2).astype(np.uint8)
        scaled = sums.astype(np.float32) * np.float32(1.0 / (sy * sx))
        return np.rint(scaled).astype(np.uint8)  # at most 255: a mean of uint8s

    def _taps(self, frames: np.ndarray) -> np.ndarray:
        (row_idx, row_w), (col_idx, col_w) = self._rows, self._cols
        # The horizontal pass first (OpenCV's order), on a uint8 (..., W, H) copy: gathering a
        # source column then copies contiguous bytes (measured 2.5x faster than gathering floats
        # along the last axis); uint8 * float32 weights multiplies in float32, as OpenCV does.
        src = np.ascontiguousarray(frames.swapaxes(-1, -2))
        buf = src[..., col_idx[:, 0], :] * col_w[:, 0, None]
        for t in range(1, col_idx.shape[1]):
            buf += src[..., col_idx[:, t], :] * col_w[:, t, None]
        buf = np.ascontiguousarray(buf.swapaxes(-1, -2))  # (..., H, w)
        out = buf[..., row_idx[:, 0], :] * row_w[:, 0, None]
        for t in range(1, row_idx.shape[1]):
            out += buf[..., row_idx[:, t], :] * row_w[:, t, None]
        return np.rint(out).astype(np.uint8)  # weights sum to 1: never outside [0, 255]


# --------------------------------------------------------------------------- noop starts
class CppNoopSampler:
    """ALE's noop counts: `std::uniform_int_distribution<>(0, noop_max - 1)` over
    `std::mt19937(seed)`, as libstdc++ (GCC >= 11, Lemire's method) computes them.

    numpy's legacy `RandomState(seed)` seeds MT19937 exactly as std::mt19937(seed) does, and its
    bit generator's raw outputs are the engine's outputs. (libstdc++ before GCC 11 divides
    instead; for noop_max = 30 the two differ on 262 of the 2^32 engine outputs.)
    """

    def __init__(self, seed: int, noop_max: int):
        key, pos = np.random.RandomState(seed).get_state()[1:3]
        self._mt = np.random.MT19937()
        self._mt.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self._range = max(noop_max, 1)  # ALE: dist(0, max(noop_max - 1, 0))

    def draw(self) -> int:
        n = self._range
        product = int(self._mt.random_raw()) * n
        if product & 0xFFFFFFFF < n:
            threshold = (2**32 - n) % n
            while product & 0xFFFFFFFF < threshold:
                product = int(self._mt.random_raw()) * n
        return product >> 32


# --------------------------------------------------------------------------- one env's frames
# ALE's PreprocessedEnv, per env, for any ALE-like interface: ale_py's ALEInterface (int actions and
# rewards) or multi_agent_ale_py's (an action and a reward per player, envs/atari/multiplayer.py).
def start_game(ale: Any, fire: Any, noop: Any, noops: int, grab: Any, raw: np.ndarray) -> None:
    """ALE's PreprocessedEnv::reset: reset_game, FIRE (fire None: not), `noops` NOOPs in all (FIRE
    counts as one); the screen into raw[0], raw[1] cleared (raw: the env's two frame buffers)."""
    ale.reset_game()
    if fire is not None:
        ale.act(fire)
    for _ in range(noops - (fire is not None)):
        ale.act(noop)
        if ale.game_over():
            ale.reset_game()
    grab(raw[0])
    raw[1] = 0


def skip_frames(ale: Any, action: Any, frame_skip: int, grab: Any, raw: np.ndarray, frames: int,
                limit: int) -> tuple[Any, bool, int]:  # fmt: skip
    """ALE's PreprocessedEnv::step: (summed reward, game over, frames since the reset).

    The last two frames are captured into raw for pooling, but the loop breaks on game over or
    the frame limit before capturing that frame, as ALE's does."""
    reward = 0
    over = False
    for skip in range(frame_skip, 0, -1):
        reward += ale.act(action)
        over = ale.game_over()
        frames += 1
        if over or frames >= limit:
            break
        if skip <= 2:
            grab(raw[skip - 1])
    return reward, over, frames


def push_frames(raw: np.ndarray, stack: np.ndarray, idx: slice | np.ndarray, resize: AreaResizer, rgb: bool) -> np.ndarray:
    """Pools envs idx's last two frames (raw: (n, 2, H, W[, 3])), resizes, pushes onto their stacks
    (n, stack, [3,] h, w); returns those stacks, channel-first (RGB: (k, 3 * stack, h, w))."""
    pooled = np.maximum(raw[idx, 0], raw[idx, 1])
    raw[idx, 0] = pooled  # ALE pools in place: an early-ended step's next pooling starts from it
    frame = resize(pooled.transpose(0, 3, 1, 2) if rgb else pooled)  # RGB: (k, 3, h, w)
    stack[idx, :-1] = stack[idx, 1:]
    stack[idx, -1] = frame
    obs = stack[idx] if isinstance(idx, np.ndarray) else stack.copy()
    return obs.reshape(obs.shape[0], -1, *obs.shape[-2:]) if rgb else obs


# --------------------------------------------------------------------------- the backend
class AtariSingleBackend(Backend):  # not lockstep: any subset of envs can be sent, reset or rendered
    extra_info = ATARI_INFO  # info beyond env_id, elapsed_step
    max_seed = ALE_MAX_SEED  # as the vector env's, so both backends take the same seeds

    def __init__(self, task: AtariTask):
        ale_py = require_ale()
        config = task.config
        o = task.option
        self.observation_space = task.observation_space
        self.action_space = task.action_space
        n = config.num_envs
        self._all_ids = np.arange(n, dtype=np.int32)
        self._frame_skip = int(o("frame_skip"))
        self._max_frames = config.max_episode_steps * self._frame_skip  # ALE counts frames
        self._life_loss = bool(o("episodic_life"))
        self._reward_clip = bool(o("reward_clip"))
        self._rgb = not o("gray_scale")
        rom_path = ale_py.roms.get_rom_path(task.rom)
        ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
        self._new_ale = lambda seed: _make_ale(ale_py, rom_path, seed, o)  # noqa: E731
        self._ales = [self._new_ale(config.seed + i) for i in range(n)]
        first = self._ales[0]
        actions = first.getLegalActionSet() if o("full_action_space") else first.getMinimalActionSet()
        self._actions = list(actions)
        self._fire = ale_py.Action.FIRE if o("use_fire_reset") and ale_py.Action.FIRE in self._actions else None
        self._noop = ale_py.Action.NOOP
        self._noop_max = int(o("noop_max"))
        self._noops = [CppNoopSampler(config.seed + i, self._noop_max) for i in range(n)]

        screen_h, screen_w = first.getScreenDims()
        h, w = int(o("img_height")), int(o("img_width"))
        self._resize = AreaResizer(screen_h, screen_w, h, w)
        color = (3,) if self._rgb else ()
        # ALE's two raw frame buffers per env: [0] the last frame (after pooling: their max), [1] the one before.
        self._raw = np.zeros((n, 2, screen_h, screen_w, *color), np.uint8)
        self._stack = np.zeros((n, int(o("stack_num")), *color, h, w), np.uint8)  # oldest first, channel-first
        self._grab = [ale.getScreenRGB if self._rgb else ale.getScreenGrayscale for ale in self._ales]
        self._frames = [0] * n  # frames since the end of the last reset (ALE's elapsed_steps_)
        self._lives = [0] * n
        self._over = [True] * n  # ALE's is_episode_over: the next step resets instead (fresh envs too)
        self._book = EpisodeBook(n, None)  # truncation is ALE's frame limit; the book counts steps
        self._queued: list[tuple[np.ndarray | None, np.ndarray | None]] = []  # (ids, action or None = reset)

    # ------------------------------------------------------------------ Backend protocol
    def prime_reset(self, ids: np.ndarray, seeds: list[int | None] | None, options: dict | None) -> None:
        """A seeded env gets a fresh ALE and noop sampler of that seed: what env i of a pool made
        with that seed starts from."""
        if seeds is None:
            return
        for i in ids.tolist():
            if seeds[i] is not None:
                ale = self._ales[i] = self._new_ale(seeds[i])
                self._noops[i] = CppNoopSampler(seeds[i], self._noop_max)
                self._grab[i] = ale.getScreenRGB if self._rgb else ale.getScreenGrayscale

    def send(self, ids: np.ndarray | None, action: np.ndarray | None, reset: bool) -> None:
        self._queued.append((ids, None if reset else action))

    def collect(self, block: bool) -> list[Chunk]:
        """Runs every queued send; consecutive sends of one kind run as one batch."""
        queued, self._queued = self._queued, []
        out = []
        i = 0
        while i < len(queued):
            ids, action = queued[i]
            j = i + 1
            if ids is not None:
                while j < len(queued) and queued[j][0] is not None and (queued[j][1] is None) == (action is None):
                    j += 1
                if j > i + 1:
                    ids = np.concatenate([q[0] for q in queued[i:j]])
                    action = None if action is None else np.concatenate([q[1] for q in queued[i:j]])
            out.append(self._reset(ids) if action is None else self._step(ids, action))
            i = j
        return out

    def gather(self, ids: np.ndarray | None) -> Batch:
        raise AssertionError("Atari chunks always carry their batch")

    def render(self, ids: np.ndarray) -> np.ndarray:
        """The raw RGB screens (len(ids), 210, 160, 3) of envs ids, as they stand after the
        sends collected so far."""
        return np.stack([self._ales[i].getScreenRGB() for i in np.asarray(ids).tolist()])

    def close(self) -> None:
        self._queued = []
        self._ales = []
        self._grab = []

    # ------------------------------------------------------------------ batches
    def _reset(self, ids: np.ndarray | None) -> Chunk:
        env_id = self._all_ids.copy() if ids is None else ids  # a copy: it is handed to the user
        for i in env_id.tolist():
            self._reset_env(i)
        idx = _ALL if ids is None else ids
        self._book.reset(idx)
        obs = self._observe(idx)
        n = len(env_id)
        lives = np.array([self._lives[i] for i in env_id.tolist()], np.int32)
        zeros = np.zeros(n, np.float32)
        extra = {"lives": lives, "reward": zeros.copy(), "terminated": np.zeros(n, np.int32)}
        batch = Batch(env_id, obs, zeros, np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, np.int32), extra)
        return Chunk(env_id, batch, ids is None)

    def _step(self, ids: np.ndarray | None, action: np.ndarray) -> Chunk:
        env_id = self._all_ids.copy() if ids is None else ids
        n = len(env_id)
        raw = np.zeros(n, np.float32)
        terminated = np.zeros(n, bool)
        env_truncated = np.zeros(n, bool)
        over = np.zeros(n, np.int32)
        lives = np.empty(n, np.int32)
        for j, (i, a) in enumerate(zip(env_id.tolist(), action.tolist())):
            if self._over[i]:  # EnvPool's rule: the step after an episode's end resets, discarding the action
                self._reset_env(i)
            else:
                raw[j], terminated[j], env_truncated[j], over[j] = self._step_env(i, a)
            lives[j] = self._lives[i]
        idx = _ALL if ids is None else ids
        obs = self._observe(idx)
        # As the vector backend: the book's done (life losses too, with episodic_life) gives elapsed 0.
        resets = self._book.done[idx]
        if not np.count_nonzero(resets):
            resets = None
        terminated, truncated, elapsed = self._book.finish(idx, resets, terminated, env_truncated)
        reward = np.sign(raw) if self._reward_clip else raw
        batch = Batch(env_id, obs, reward, terminated, truncated, elapsed, {"lives": lives, "reward": raw, "terminated": over})
        return Chunk(env_id, batch, ids is None)

    def _observe(self, idx: slice | np.ndarray) -> np.ndarray:
        return push_frames(self._raw, self._stack, idx, self._resize, self._rgb)

    # ------------------------------------------------------------------ one env
    def _reset_env(self, i: int) -> None:
        start_game(self._ales[i], self._fire, self._noop, self._noops[i].draw(), self._grab[i], self._raw[i])
        self._stack[i] = 0
        self._frames[i] = 0
        self._lives[i] = self._ales[i].lives()
        self._over[i] = False

    def _step_env(self, i: int, a: int) -> tuple[int, bool, bool, bool]:
        """(raw reward, terminated, truncated by the frame limit, game over) of one agent step."""
        ale = self._ales[i]
        lives, limit = self._lives[i], self._max_frames
        reward, over, frames = skip_frames(ale, self._actions[a], self._frame_skip, self._grab[i], self._raw[i],
                                           self._frames[i], limit)  # fmt: skip
        now = ale.lives()
        lost = 0 < now < lives
        self._frames[i] = frames
        self._lives[i] = now
        self._over[i] = over or frames >= limit
        terminated = over or (self._life_loss and lost)
        return reward, terminated, frames >= limit and not terminated, over


def _make_ale(ale_py: Any, rom_path: Any, seed: int, o: Any) -> Any:
    """One seeded ALE, set up as ALE's vector env sets up each of its envs (plus mode, difficulty)."""
    ale = ale_py.ALEInterface()
    ale.setFloat("repeat_action_probability", float(o("repeat_action_probability")))
    ale.setInt("random_seed", int(seed))
    ale.loadROM(rom_path)
    if not rom_default(o("mode")):
        ale.setMode(int(o("mode")))
    if not rom_default(o("difficulty")):
        ale.setDifficulty(int(o("difficulty")))
    return ale

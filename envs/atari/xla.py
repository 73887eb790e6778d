"""Atari `xla()`: `step` runs ALE's own compiled XLA step target, with our contract in the same program.

ALE ships native XLA FFI targets (`AtariVectorEnv.xla()`): `atari_vector_xla_step` sends one action
per env of the batch ALE returned last and receives the next batch (there is no separate send or
receive target). `step` calls it and layers EnvPool's contract on it in jnp, in the same compiled
program, with no host callback per step: env ids (actions reordered to ALE's batch order, any
order accepted, as the Python API does), float rewards (sign-clipped with reward_clip; the raw
reward in info), elapsed steps and the auto-reset step (elapsed 0) after an ended episode (a life
loss with episodic_life), truncation never set with termination, channel-first RGB stacks, and
the gym tuple or dm TimeStep with info env_id, elapsed_step, lives, reward, terminated (game over). Results equal the
Python API's for the same seed and actions (tests/test_atari_xla.py).

Where state lives. ALE's envs and its in-flight batch live in ALE, one vectorizer (async: one per
group of envs, below) shared with the Python API. Our per-env bookkeeping lives in the handle
(`AtariHandle`), which each step returns updated: elapsed steps, which envs reset on their next
step, the batch ALE returned last (its send acts on that batch), and ALE's frame counters at each
env's last result. A compiled program cannot read or write the pool's Python state without a host
callback, and one callback per step cost 10-15% of Pong's throughput on 2 cores, more than the
margin over EnvPool. So:
- Hand-over. `xla()`'s handle is *fresh*: the first `step` with it takes the pool's counters over
  (one ordered callback under `lax.cond`, taken once), so `reset()` (async: `async_reset()` and a
  `recv()`) in Python and then a jitted loop works. From then on the pool belongs to the handles
  that step returns: the Python API, `recv`/`send` and another fresh handle raise a RuntimeError
  naming this rule (their counters would be stale). Make a new pool to start over.
- A handle is a state: pass the one the last step returned. An older one (say, a compiled loop run
  twice from the same handle) is caught by ALE's frame counters: an env that was not due to reset
  must have moved exactly frame_skip frames since the handle's last result (fewer only on the step
  that ends its game). The check cannot see envs that were all due to reset at once.
- `recv` and `send` are the generic ordered callbacks into the Python API (envs/xla.py), sharing the
  pool's state as for every backend: seed example 3 drops send's handle and receives with the old
  one, so its actions must pass through the host, and ALE has no send-only target. They return a
  fresh handle, so a `step` after them takes the counters over.
Async pools (batch_size < num_envs) run groups of envs, each group a vector env in sync mode, and
return the groups first in, first out (envs/atari/backend.py, "Fairness"). Their `step` calls
ALE's target once per group of the batch it sends (the handle holds the groups' addresses and
picks the group's one: one target serves them all) and keeps those results in the handle
(`results`, one slot per group), then returns the groups sent longest ago from there: the same
batches, in the same order, as the Python API (tests/test_atari_fairness.py). ALE steps a group
while the program waits, as it has no send-only target; the other groups are done already. The
hand-over takes the groups not held as the Python API left them: their results queued in the pool,
or received from ALE then (still stepping, or waiting for a thread).
Order: each step passes ALE's handle from the previous step's output to the next ALE call, so the
calls run in program order; ALE's targets are side-effecting, so none is removed as dead code.
Misuse inside a program (another pool's handle, an action out of range, env ids that are not the
last batch, a stale handle) is a `lax.cond` into a callback that raises, taken only then; the
first three are checked before ALE is called. Closed pools: a new trace or an eager call raises;
the xla() functions keep ALE alive, so a compiled program run after close() steps a detached ALE
rather than crashing (await programs before closing, as for every backend).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import dm_env
import numpy as np

from envs.atari.task import game_over
from envs.info import dm_observation
from envs.players import PLAYERS
from envs.xla import make_xla as make_generic_xla
from envs.xla import state_template


class AtariHandle(NamedTuple):
    """The state `step` carries from call to call (module docstring); opaque to users."""

    token: Any  # int32 (): names the pool (the generic recv/send handle)
    ale: Any  # uint8 (8,): ALE's own handle (its vectorizer's address), threaded through its calls
    fresh: Any  # bool (): the fields below are still to be taken from the pool
    elapsed: Any  # int32 (num_envs,)
    done: Any  # bool (num_envs,): the env's next step is its reset
    order: Any  # int32 (batch_size,): the batch ALE returned last, in ALE's order
    frame: Any  # int32 (num_envs,): ALE's frame_number at the env's last result; -1: not seen
    episode_frame: Any  # int32 (num_envs,): ALE's episode_frame_number there
    lives: Any  # int32 (num_envs,): the env's lives at its last result (info["terminated"]: game over)
    # Async pools only (None in sync ones): their groups of envs (module docstring).
    fifo: Any = None  # int32 (groups,): the groups in the order they were sent, the held ones last
    results: Any = None  # (obs, raw reward, terminated, truncated, lives, game over), each (groups, g, ...): a group's last result


def make_atari_xla(pool: Any, backend: Any) -> tuple[AtariHandle, Callable, Callable, Callable]:
    """(handle, recv, send, step) for an Atari pool on ALE's vector env; see the module docstring."""
    x = _AtariXla(pool, backend)
    return x.handle, x.recv, x.send, x.step


class _AtariXla:
    def __init__(self, pool: Any, backend: Any):
        import jax.numpy as jnp

        self.pool, self.backend = pool, backend
        self.vecs = list(backend._vecs)  # kept alive while these functions are: a compiled step holds their addresses
        c = pool.config
        self.task, self.n, self.b = c["task_id"], pool.num_envs, pool.batch_size
        self.sync, self.dm = self.n == self.b, c["env_type"] == "dm"
        self.fs, self.clip, self.rgb = int(c["frame_skip"]), bool(c["reward_clip"]), not c["gray_scale"]
        self.episodic_life = bool(c["episodic_life"])
        self.num_actions = int(pool.action_space.n)
        # Groups (envs/atari/backend.py): g envs each, the batch is `held` of them; sync: one of all envs.
        self.g = backend._group_size
        self.groups, self.held = self.n // self.g, self.b // self.g
        ale_handle, _, self.ale_step = self.vecs[0].xla()  # one target: the handle names the vector env
        if not self.sync:
            ale_handle = jnp.stack([jnp.frombuffer(v.ale.handle(), dtype=np.uint8) for v in self.vecs])
        token, self.generic_recv, self.generic_send, _ = make_generic_xla(pool)
        self.token, self.ptr = int(token), np.asarray(ale_handle)
        self.template = state_template(pool, self.b)
        n = self.n
        self.handle = AtariHandle(
            token, ale_handle, jnp.asarray(True), jnp.zeros(n, jnp.int32), jnp.ones(n, bool),
            jnp.arange(self.b, dtype=jnp.int32), jnp.full(n, -1, jnp.int32), jnp.full(n, -1, jnp.int32),
            jnp.zeros(n, jnp.int32),
        )
        if not self.sync:
            self.handle = self.handle._replace(
                fifo=jnp.arange(self.groups, dtype=jnp.int32),
                results=tuple(jnp.zeros(x.shape, x.dtype) for x in self._results_specs()),
            )

    # ------------------------------------------------------------------ recv / send: the generic path
    def recv(self, h: AtariHandle) -> tuple[AtariHandle, Any]:
        import jax.numpy as jnp

        token, state = self.generic_recv(h.token)
        return h._replace(token=token, fresh=jnp.asarray(True)), state

    def send(self, h: AtariHandle, action: Any, env_id: Any = None) -> AtariHandle:
        import jax.numpy as jnp

        return h._replace(token=self.generic_send(h.token, action, env_id), fresh=jnp.asarray(True))

    # ------------------------------------------------------------------ step: ALE's target + the contract
    def step(self, h: AtariHandle, action: Any, env_id: Any = None) -> tuple[AtariHandle, Any]:
        import jax.numpy as jnp
        from jax import lax

        if self.pool.closed:  # a new trace or an eager call; see the module docstring for compiled ones
            raise RuntimeError(f"step() called on a closed EnvPool ({self.task})")
        if not isinstance(h, AtariHandle):
            raise ValueError(f"this handle does not belong to this {self.task} pool's xla() functions (got {type(h).__name__})")
        action, env_id = self._static_checks(action, env_id)
        if not self.sync:
            return self._step_groups(h, action, env_id)
        h = lax.cond(h.fresh, self._take_over, lambda h: h, h)
        ale_action = self._checked_ale_order(h, action, env_id)
        ale, (obs, raw, term, trunc, info) = self.ale_step(h.ale, ale_action)
        ids, fn, efn = info["env_id"], info["frame_number"], info["episode_frame_number"]
        due = h.done[ids]  # these envs' results are their reset (EnvPool's auto-reset)
        # ALE returns a sync batch in the order it was sent: env id order
        stale = self._stale(h.frame, h.episode_frame, ids, due, fn, efn, term | trunc, ids != np.arange(self.n))
        lax.cond(stale.any(), self._raise_stale, lambda *a: None, ids, stale)
        elapsed = jnp.where(due, 0, h.elapsed[ids] + 1)
        truncated = trunc & ~term
        lives = info["lives"]
        over = game_over(term, lives, h.lives[ids], self.episodic_life)
        h = h._replace(
            ale=ale, elapsed=h.elapsed.at[ids].set(elapsed), done=h.done.at[ids].set(term | truncated), order=ids,
            frame=h.frame.at[ids].set(fn), episode_frame=h.episode_frame.at[ids].set(efn), lives=h.lives.at[ids].set(lives),
        )
        return h, self._format(self._obs(obs), raw.astype(jnp.float32), term, truncated, ids, elapsed, lives, over)

    def _step_groups(self, h: AtariHandle, action: Any, env_id: Any) -> tuple[AtariHandle, Any]:
        """Async: one ALE call per held group (its vector env, sync: send and receive) whose
        results the handle keeps, and the groups sent longest ago out of the handle (module docstring)."""
        import jax.numpy as jnp
        from jax import lax

        g, held = self.g, self.held
        h = lax.cond(h.fresh, self._take_over_groups, lambda h: h, h)
        ale_action = self._checked_ale_order(h, action, env_id)  # h.order: the held groups' envs, group by group
        local = np.arange(g, dtype=np.int32)
        ale, results = h.ale, list(h.results)
        elapsed_all, done, frame, episode_frame, lives_all = h.elapsed, h.done, h.frame, h.episode_frame, h.lives
        for p in range(held):
            k = h.fifo[self.groups - held + p]
            new, (obs, raw, term, trunc, info) = self.ale_step(ale[k], ale_action[p * g:(p + 1) * g])
            ids = k * g + info["env_id"]
            fn, efn = info["frame_number"], info["episode_frame_number"]
            due = done[ids]
            stale = self._stale(frame, episode_frame, ids, due, fn, efn, term | trunc, info["env_id"] != local)
            lax.cond(stale.any(), self._raise_stale, lambda *a: None, ids, stale)
            truncated = trunc & ~term
            elapsed_all = elapsed_all.at[ids].set(jnp.where(due, 0, elapsed_all[ids] + 1))
            done, ale = done.at[ids].set(term | truncated), ale.at[k].set(new)
            frame, episode_frame = frame.at[ids].set(fn), episode_frame.at[ids].set(efn)
            over = game_over(term, info["lives"], lives_all[ids], self.episodic_life)
            lives_all = lives_all.at[ids].set(info["lives"])
            for i, x in enumerate((self._obs(obs), raw.astype(jnp.float32), term, truncated, info["lives"], over)):
                results[i] = results[i].at[k].set(x)
        out = h.fifo[:held]  # the groups sent longest ago
        ids = (out[:, None] * g + local).reshape(-1)
        obs, raw, term, truncated, lives, over = (r[out].reshape(self.b, *r.shape[2:]) for r in results)
        h = h._replace(
            ale=ale, elapsed=elapsed_all, done=done, order=ids, frame=frame, episode_frame=episode_frame,
            lives=lives_all, fifo=jnp.roll(h.fifo, -held), results=tuple(results),
        )
        return h, self._format(obs, raw, term, truncated, ids, elapsed_all[ids], lives, over)

    def _results_specs(self) -> tuple[Any, ...]:
        """Shapes of AtariHandle.results: (obs, raw reward, terminated, truncated, lives, game over) per group and env."""
        import jax
        import jax.numpy as jnp

        gg, space = (self.groups, self.g), self.pool.observation_space
        return (
            jax.ShapeDtypeStruct((*gg, *space.shape), space.dtype), jax.ShapeDtypeStruct(gg, jnp.float32),
            jax.ShapeDtypeStruct(gg, bool), jax.ShapeDtypeStruct(gg, bool), jax.ShapeDtypeStruct(gg, jnp.int32),
            jax.ShapeDtypeStruct(gg, jnp.int32),
        )

    def _static_checks(self, action: Any, env_id: Any) -> tuple[Any, Any]:
        """Shapes and dtypes, at trace time: the Python API's checks that need no values."""
        import jax.numpy as jnp

        action = jnp.asarray(action)
        if action.dtype == bool:
            action = action.astype(jnp.int32)
        if action.shape != (self.b,):
            raise ValueError(f"action must have shape {(self.b,)} (one per env), got {action.shape}")
        if action.dtype.kind not in "iu":
            raise ValueError(f"{self.pool.action_space} expects integer actions, got dtype {action.dtype}")
        if env_id is not None:
            env_id = jnp.asarray(env_id)
            if env_id.ndim != 1 or env_id.dtype.kind not in "iu":
                raise ValueError(
                    f"env_id must be a 1-D array of integer env ids, got {env_id.dtype} array of shape {env_id.shape}"
                )
            if env_id.shape != (self.b,):
                raise ValueError(f"env_id must name the {self.b} envs of the last batch, got {env_id.shape[0]} ids")
        return action, env_id  # in their own dtypes, so the checks see values a cast to int32 would wrap

    def _take_over(self, h: AtariHandle) -> AtariHandle:
        """A fresh handle: the pool's counters, read once (ordered callback)."""
        import jax
        import jax.numpy as jnp
        from jax.experimental import io_callback

        n = self.n
        specs = (
            jax.ShapeDtypeStruct((n,), jnp.int32), jax.ShapeDtypeStruct((n,), bool), jax.ShapeDtypeStruct((self.b,), jnp.int32),
            jax.ShapeDtypeStruct((n,), jnp.int32),
        )
        elapsed, done, order, lives = io_callback(self._adopt, specs, h.token, ordered=True)
        unseen = jnp.full(n, -1, jnp.int32)
        return h._replace(fresh=jnp.asarray(False), elapsed=elapsed, done=done, order=order, frame=unseen,
                          episode_frame=unseen, lives=lives)

    def _check_adoptable(self, token: np.ndarray) -> None:
        pool, backend = self.pool, self.backend
        if int(token) != self.token:
            raise ValueError(f"this handle does not belong to this {self.task} pool's xla() functions")
        if pool.closed:
            raise RuntimeError(f"step() called on a closed EnvPool ({self.task})")
        if backend.xla_owner is not None:
            raise RuntimeError(backend.xla_owner)

    def _lock(self) -> None:
        self.backend.xla_owner = (
            f"{self.task}: this pool is stepped through the handles its xla() step returns, which hold its episode "
            "counters: from then on only those handles step it (pass the one the last step returned), not the Python "
            "API, recv/send or a fresh handle. Make a new pool to start over"
        )

    def _adopt(self, token: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Host side of the hand-over (sync): checks the pool can be continued, then locks its Python API."""
        pool, backend = self.pool, self.backend
        self._check_adoptable(token)
        last = backend._ale_ids
        if not backend._started or backend._queued or pool._ready.count or last is None:
            raise RuntimeError(f"{self.task}: step() through xla() continues from the last batch received: call reset() first")
        if pool._num_pending:
            raise RuntimeError(f"{self.task}: envs are still in flight: recv() their results before step() through xla()")
        self._lock()
        book = backend._book
        # ALE returns a sync batch in env id order (checked on every step); `last` may name fewer
        # envs then: after reset(env_id) the pool's last batch is the envs reset.
        return book.elapsed.copy(), book.done.copy(), np.arange(self.n, dtype=np.int32), backend._lives.copy()

    def _take_over_groups(self, h: AtariHandle) -> AtariHandle:
        """Async: a fresh handle takes the pool's counters, its groups' order and the results of the
        groups not held (ordered callback)."""
        import jax
        import jax.numpy as jnp
        from jax.experimental import io_callback

        n = self.n
        specs = (
            jax.ShapeDtypeStruct((n,), jnp.int32), jax.ShapeDtypeStruct((n,), bool),
            jax.ShapeDtypeStruct((n,), jnp.int32), jax.ShapeDtypeStruct((self.groups,), jnp.int32), *self._results_specs(),
        )
        elapsed, done, lives, fifo, *results = io_callback(self._adopt_groups, specs, h.token, ordered=True)
        held_ids = (fifo[self.groups - self.held:, None] * self.g + jnp.arange(self.g, dtype=jnp.int32)).reshape(-1)
        unseen = jnp.full(n, -1, jnp.int32)
        return h._replace(
            fresh=jnp.asarray(False), elapsed=elapsed, done=done, order=held_ids, frame=unseen, episode_frame=unseen,
            lives=lives, fifo=fifo, results=tuple(results),
        )

    def _adopt_groups(self, token: np.ndarray) -> tuple[np.ndarray, ...]:
        """Host side of the async hand-over: the results of every group not held (queued in the pool,
        or received from ALE now), in the order the groups were sent; then locks the Python API."""
        pool, backend = self.pool, self.backend
        self._check_adoptable(token)
        last = pool._last_ids
        if not backend._started or last is None:
            raise RuntimeError(
                f"{self.task}: step() through xla() continues from the last batch received: call async_reset() and recv() first"
            )
        if pool._pending[last].any():
            raise RuntimeError(f"{self.task}: envs are still in flight: recv() their results before step() through xla()")
        if pool._num_pending != self.n - len(last):
            idle = np.setdiff1d(np.flatnonzero(~pool._pending), last)
            raise RuntimeError(
                f"{self.task}: step() through xla() sends the last batch received while every other env is in flight, "
                f"but env_id {idle[:16].tolist()} were received before it and not sent since (make a new pool)"
            )
        g = self.g
        batches = [c.batch for c in pool._ready.take(pool._ready.count)] if pool._ready.count else []
        batches += [c.batch for c in backend._queued]
        backend._queued = []
        while backend._in_ale:  # the groups ALE is stepping, oldest first
            batches += [c.batch for c in backend.collect(True)]
        results = [np.zeros(s.shape, s.dtype) for s in self._results_specs()]
        fifo = []
        for b in batches:
            k = int(b.env_id[0]) // g
            fifo.append(k)
            assert np.array_equal(b.env_id, backend._group_ids[k]), (b.env_id, k)
            extra = b.extra
            for r, x in zip(results, (b.obs, extra["reward"], b.terminated, b.truncated, extra["lives"], extra["terminated"])):
                r[k] = x
        fifo += [int(i) // g for i in last[::g]]
        assert sorted(fifo) == list(range(self.groups)), fifo
        assert np.array_equal(last, np.concatenate([backend._group_ids[k] for k in fifo[len(batches):]])), last
        backend._out = []
        self._lock()
        book = backend._book
        return (book.elapsed.copy(), book.done.copy(), backend._lives.copy(), np.asarray(fifo, np.int32), *results)

    def _checked_ale_order(self, h: AtariHandle, action: Any, env_id: Any) -> Any:
        """The actions in ALE's batch order, after the checks on values (a raising callback on misuse)."""
        import jax.numpy as jnp
        from jax import lax

        foreign = (h.token != self.token) | (h.ale != self.ptr).any()
        bad_action = ((action < 0) | (action >= self.num_actions)).any()
        if env_id is None:
            ale_action, bad_ids, given = (action[h.order] if self.sync else action), jnp.asarray(False), h.order
        else:
            match = env_id[None, :] == h.order[:, None]  # [ALE position, given position]
            bad_ids = ~((match.sum(0) == 1).all() & (match.sum(1) == 1).all())
            ale_action, given = action[jnp.argmax(match, axis=1)], env_id
        bad = foreign | bad_action | bad_ids
        ale_action = ale_action.astype(jnp.int32)
        return lax.cond(bad, self._raise_misuse, lambda a, *_: a, ale_action, foreign, bad_ids, action, given, h.order)

    def _raise_misuse(self, ale_action: Any, *args: Any) -> Any:
        import jax
        from jax.experimental import io_callback

        return io_callback(self._misuse, jax.ShapeDtypeStruct(ale_action.shape, ale_action.dtype), ale_action, *args)

    def _misuse(
        self, _: np.ndarray, foreign: np.ndarray, bad_ids: np.ndarray, action: np.ndarray, given: np.ndarray, order: np.ndarray
    ) -> None:
        if foreign:
            raise ValueError(f"this handle does not belong to this {self.task} pool's xla() functions")
        if bad_ids:
            mode = "only that batch can be sent" if not self.sync else "a sync pool steps all its envs together"
            raise ValueError(
                f"{self.task}: this backend steps exactly the envs of the last batch received (ALE's vector env takes "
                f"one action per env of that batch: {mode}); send actions for env_id {np.sort(order).tolist()} "
                f"(in any order), got env_id {given.tolist()}"
            )
        bad = action[(action < 0) | (action >= self.num_actions)]
        raise ValueError(f"action out of range for {self.pool.action_space}: {bad[:8].tolist()}")

    def _stale(
        self, frame: Any, episode_frame: Any, ids: Any, due: Any, fn: Any, efn: Any, ended: Any, misordered: Any
    ) -> Any:
        """Envs whose ALE frame counters did not move as one step from the handle's last result
        (frame, episode_frame), or that ALE returned out of the order they were sent (misordered)."""
        moved, in_episode = fn - frame[ids], efn - episode_frame[ids]
        # One step: frame_skip frames, or fewer on the step that ends the game (ALE stops there).
        one_step = (moved == in_episode) & ((moved == self.fs) | (ended & (moved >= 1) & (moved < self.fs)))
        return (~due & (frame[ids] >= 0) & ~one_step) | misordered

    def _raise_stale(self, ids: Any, stale: Any) -> None:
        from jax.experimental import io_callback

        io_callback(self._stale_error, None, ids, stale)

    def _stale_error(self, ids: np.ndarray, stale: np.ndarray) -> None:
        if self.pool.closed:
            raise RuntimeError(f"step() called on a closed EnvPool ({self.task})")
        raise RuntimeError(
            f"{self.task}: this handle is older than the pool's state (ALE's frame counters of env_id "
            f"{ids[stale].tolist()} moved on since it was returned): pass the handle the last step returned"
        )

    # ------------------------------------------------------------------ outputs
    def _obs(self, obs: Any) -> Any:
        if not self.rgb:
            return obs
        b, stack, height, width, c = obs.shape  # ALE: (B, stack, H, W, 3); ours: (B, 3 * stack, H, W)
        return obs.transpose(0, 1, 4, 2, 3).reshape(b, stack * c, height, width)

    def _format(self, obs: Any, raw: Any, terminated: Any, truncated: Any, ids: Any, elapsed: Any, lives: Any,
                over: Any) -> Any:
        """The Python API's output structure (envs.xla.state_template) from the step's arrays."""
        import jax.numpy as jnp

        reward = jnp.sign(raw) if self.clip else raw
        extra = {"lives": lives, "reward": raw, "terminated": over, PLAYERS: {"env_id": ids}}
        if self.dm:
            last = jnp.where(terminated | truncated, dm_env.StepType.LAST, dm_env.StepType.MID)
            step_type = jnp.where(elapsed == 0, dm_env.StepType.FIRST, last)
            observation = dm_observation(obs, ids, elapsed, extra, None)
            return dm_env.TimeStep(step_type.astype(jnp.int32), reward, (~terminated).astype(jnp.float32), observation)
        return obs, reward, terminated, truncated, {"env_id": ids, "elapsed_step": elapsed, **extra}

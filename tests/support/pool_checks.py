"""Checks of the EnvPool contract shared by the backends' test files."""

from collections.abc import Callable
from typing import Any

import numpy as np

import envs


def assert_async_matches_sync(
    make: Callable[..., envs.EnvPool], actions: np.ndarray, batch_size: int = 2, shuffle: np.random.Generator | None = None,
    pick: Callable[[Any], np.ndarray] = lambda obs: obs,
) -> None:
    """Async batching changes which envs come back together, never an env's own trajectory:
    env i's observations under recv/send equal its sync ones, for the same per-env actions
    (actions: [num_envs, steps + 1]). `shuffle`: each send names its batch in a random order.
    `pick`: the array compared, of a batch's observation (a key of a Dict observation)."""
    n, steps = actions.shape[0], actions.shape[1] - 1
    with make(num_envs=n, seed=1) as pool:
        sync = np.stack([pick(pool.reset()[0])] + [pick(pool.step(actions[:, t])[0]) for t in range(steps)], 1)
    with make(num_envs=n, batch_size=batch_size, seed=1) as pool:
        pool.async_reset()
        t = np.zeros(n, int)
        traj = [[] for _ in range(n)]
        while min(len(x) for x in traj) < steps + 1:
            obs, _, _, _, info = pool.recv()
            ids = info["env_id"]
            for i, o in zip(ids, pick(obs)):
                traj[i].append(o)
            order = shuffle.permutation(len(ids)) if shuffle is not None else slice(None)
            pool.send(actions[ids, np.minimum(t[ids], steps)][order], ids[order])
            t[ids] += 1
    for i in range(n):
        np.testing.assert_array_equal(np.stack(traj[i][: steps + 1]), sync[i])


def normalized_beside_raw(env, twin, actions: list, **reset_kwargs) -> tuple[list, list]:
    """Step a NormalizeObservation-wrapped `env` and a raw `twin` pool (same task and seed) with the
    same actions, checking at each step that env's observation is (raw - mean) / std over the raw
    ones so far; every raw observation and every normalised one, the resets' included."""
    from gymnasium.wrappers.utils import RunningMeanStd

    rms = RunningMeanStd(shape=twin.observation_space.shape, dtype=np.float32)
    obs, _ = env.reset(**reset_kwargs)
    raw, _ = twin.reset()
    raws, outs = [raw], [obs]
    for action in actions:
        rms.update(raw)
        np.testing.assert_allclose(obs, (raw - rms.mean) / np.sqrt(rms.var + 1e-8), rtol=1e-5, atol=1e-5)
        obs = env.step(action)[0]
        raw = twin.step(action)[0]
        raws.append(raw)
        outs.append(obs)
    return raws, outs

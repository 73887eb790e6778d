"""Craftax's envs (`craftax/Craftax-Classic-Symbolic-v1`, `craftax/Craftax-Symbolic-v1` and their
`-Pixels-` forms) as RawJaxEnvs, over `make_craftax_env_from_name(name, auto_reset=False)`'s
gymnax-style `reset_env`/`step_env`.

Craftax's done merges a true end (death, lava) with its step limit (`state.timestep >=
params.max_timesteps`, read nowhere else): the adapter steps it with that limit lifted and makes
`max_timesteps` our `max_episode_steps`, which truncates at the same step (its timestep = our
elapsed count). Pixel observations (H, W, 3) become channel-first (3, H, W). kwargs: its
`EnvParams` fields (e.g. `max_timesteps`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from envs.jax.gymnax import GymnaxStyleEnv, check_kwargs

IDS = ("Craftax-Classic-Symbolic-v1", "Craftax-Classic-Pixels-v1", "Craftax-Symbolic-v1", "Craftax-Pixels-v1")
_NEVER = 2**30


def ids() -> list[str]:
    return list(IDS)


def make(name: str, **kwargs: Any) -> GymnaxStyleEnv:
    from craftax.craftax_env import make_craftax_env_from_name

    task_id = f"craftax/{name}"
    env = make_craftax_env_from_name(name, auto_reset=False)
    default = env.default_params
    check_kwargs(task_id, kwargs, [f.name for f in dataclasses.fields(default)])
    params = default.replace(**kwargs) if kwargs else default
    limit = int(params.max_timesteps)
    if limit < 1:
        raise ValueError(f"{task_id}: max_timesteps must be a positive int, got {limit}")
    return GymnaxStyleEnv(task_id, env, params, params.replace(max_timesteps=_NEVER), limit)

"""What the off-policy entry points (experiments.dqn, sac, td3) share beyond their flags
(sebulba.experiment.flags: REPLAY_FLAGS, CONTINUOUS_FLAGS): the optimizer steps a learner update
takes, the replay ratio's check, and SAC's and TD3's presets' loop values and preset picker."""

from __future__ import annotations

from collections.abc import Callable

from sebulba.experiment.cli import Experiment
from sebulba.experiment.env_kind import EnvKind, env_kind
from sebulba.experiment.presets import Preset
from sebulba.off_policy import optimizer_steps_per_cycle


def optimizer_steps_per_update(exp: Experiment) -> int:
    """replay_ratio x the env steps of one learner update (a whole number: the error says which
    ratios fit)."""
    return optimizer_steps_per_cycle(exp.agent.replay_ratio, exp.loop.num_envs * exp.loop.steps_per_cycle)


def check_replay_ratio(exp: Experiment) -> None:
    """The replay ratio fits the loop's cycles (one line at the command line, before anything is built)."""
    optimizer_steps_per_update(exp)


def require_box_actions(agent: str, kind: EnvKind) -> None:
    """A ValueError, in one line, for an agent that takes only (bounded) Box actions."""
    if kind.actions != "continuous":
        raise ValueError(f"{agent} needs a continuous (Box) action space; {kind.env_id} has {kind.action_space}")


# The loop values SAC's and TD3's presets share (`Preset(**CONTROL_LOOP, agent=...)`): 4 envs x 8
# steps a cycle, sync, a constant learning rate; 20k env steps on the built-in control tasks, 1M
# on MuJoCo.
CONTROL_LOOP = dict(total_env_steps=20_000, num_envs=4, steps_per_cycle=8, async_mode=False, inferencers_per_device=1,
                    log_every_s=1.0, lr_decay=False)
MUJOCO_LOOP = dict(CONTROL_LOOP, total_env_steps=1_000_000, log_every_s=5.0)


def continuous_preset(agent: str, control: Preset, mujoco: Preset) -> Callable[[str, dict | None], Preset]:
    """An actor-critic entry point's `preset`: `control` for the built-in (and JAX-native) tasks,
    `mujoco` for Gymnasium's; an env without Box actions is refused in one line, before anything
    is built."""

    def preset(env_id: str, env_kwargs: dict | None = None) -> Preset:
        kind = env_kind(env_id, env_kwargs)
        require_box_actions(agent, kind)
        return control if kind.native else mujoco

    return preset

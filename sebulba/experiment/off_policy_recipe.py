"""What every off-policy entry point (experiments.dqn, sac, td3) shares: the replay flags
(`OffPolicyConfig`'s fields) and the optimizer steps a learner update takes."""

from __future__ import annotations

from sebulba.experiment.cli import Experiment
from collections.abc import Callable

from sebulba.experiment.env_kind import EnvKind, env_kind
from sebulba.experiment.recipe import Flag
from sebulba.off_policy import optimizer_steps_per_cycle

REPLAY_FLAGS = {
    "replay_ratio": Flag(float, "Gradient updates per env step (all envs together); a learner call of num_envs x "
                         "steps_per_cycle env steps gets that many times as many optimizer steps."),
    "learning_starts": Flag(int, "Env steps (all envs) in the replay before the first update; the actors act "
                            "uniformly at random until the first update reaches them.", lower_bound=0),
    "replay_capacity": Flag(int, "Transitions per learner device.", lower_bound=1),
    "batch_size": Flag(int, "Transitions per optimizer step, per learner device.", lower_bound=1),
    "n_step": Flag(int, "n of the n-step bootstrapped targets.", lower_bound=1),
    "discount": Flag(float, "Discount gamma."),
    "priority_exponent": Flag(float, "Prioritized replay's exponent on |TD|; 0: uniform sampling.", lower_bound=0),
}


def optimizer_steps_per_update(exp: Experiment) -> int:
    """replay_ratio x the env steps of one learner update (a whole number: the error says which
    ratios fit)."""
    return optimizer_steps_per_cycle(exp.agent.replay_ratio, exp.loop.num_envs * exp.loop.steps_per_cycle)


def check_replay_ratio(exp: Experiment) -> None:
    """The replay ratio fits the loop's cycles (one line at the command line, before anything is built)."""
    optimizer_steps_per_update(exp)


CONTINUOUS_FLAGS = {
    "tau": Flag(float, "Polyak averaging of the targets: target <- tau * online + (1 - tau) * target."),
    "hidden_sizes": Flag(list, "The actor's and each critic's MLP layer sizes, e.g. 256,256."),
}


def require_box_actions(agent: str, kind: EnvKind) -> None:
    """A ValueError, in one line, for an agent that takes only (bounded) Box actions."""
    if kind.actions != "continuous":
        raise ValueError(f"{agent} needs a continuous (Box) action space; {kind.env_id} has {kind.action_space}")


# The loop values SAC's and TD3's presets share: 4 envs x 8 steps a cycle, sync, a constant
# learning rate; 20k env steps on the built-in control tasks, 1M on MuJoCo.
CONTROL_LOOP = dict(total_env_steps=20_000, num_envs=4, steps_per_cycle=8, async_mode=False, inferencers_per_device=1,
                    log_every_s=1.0, lr_decay=False)
MUJOCO_LOOP = dict(CONTROL_LOOP, total_env_steps=1_000_000, log_every_s=5.0)


def continuous_preset(agent: str, control: dict, mujoco: dict) -> Callable[[str, dict | None], dict]:
    """An actor-critic entry point's `preset`: `control` for the built-in (and JAX-native) tasks,
    `mujoco` for Gymnasium's; an env without Box actions is refused in one line, before anything
    is built."""

    def preset(env_id: str, env_kwargs: dict | None = None) -> dict:
        kind = env_kind(env_id, env_kwargs)
        require_box_actions(agent, kind)
        return control if kind.native else mujoco

    return preset

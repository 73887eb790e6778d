"""The recipe every experiment entry point follows (`python -m experiments.<name>`): the loop's
flags and the agent's, presets by env kind plus the flags' overrides into an `Experiment`, the
learning rate's decay over the run's budget, resume, and `main()`. An entry point declares only
what differs, an `Algorithm`:

    ALGORITHM = Algorithm("impala", Impala, preset, presets={"vector/image": CARTPOLE, "Atari": ATARI},
                          flags={"learning_rate": Flag(float, "RMSProp learning rate."), ...},
                          optimizer_steps_per_update=lambda exp: exp.agent.num_minibatches)
    ALGORITHM.define_flags()
    make_experiment = ALGORITHM.make_experiment

    if __name__ == "__main__":
        ALGORITHM.main()
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
from absl import flags

import envs
from sebulba.agent import Agent
from sebulba.experiment import cli, compile_cache
from sebulba.experiment.cli import Experiment
from sebulba.experiment.errors import user_input
from sebulba.experiment.flags import SHARED_FLAGS, Flag, check_core_size, define_flags
from sebulba.experiment.presets import Preset
from sebulba.experiment.resume import adopt_resumed_flags

# The flags define_flags() defines belong to the entry point that calls it (its --help lists them).
flags.disclaim_key_flags()

DEFAULT_ENV = SHARED_FLAGS["env"].default  # CartPole-v1


def check_minibatches(exp: Experiment) -> None:
    """An on-policy agent's minibatches (PPO's, PQN's), said in one line before anything is built:
    without a recurrent core each takes an equal share of every env's steps (num_minibatches must
    divide steps_per_cycle); with one, whole sequences of an equal share of each learner device's envs."""
    minibatches, core = exp.agent.num_minibatches, exp.agent.core
    if core == "none":
        if exp.loop.steps_per_cycle % minibatches:
            raise ValueError(f"--num_minibatches={minibatches} must divide --steps_per_cycle={exp.loop.steps_per_cycle}: "
                             "each minibatch takes an equal share of every env's steps")
        return
    envs_per_learner = exp.loop.num_envs // len(exp.loop.learner_devices)
    if envs_per_learner % minibatches:
        raise ValueError(f"--num_minibatches={minibatches} must divide each learner device's {envs_per_learner} envs "
                         f"(--num_envs / learner devices): with --core {core} a minibatch takes whole envs' sequences")


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """What an entry point's algorithm declares.

    name: the run directories' prefix. agent: `agent(env_spec, config)` builds it. preset: the
    `Preset` for `(env_id, env_kwargs)` (sebulba.experiment.presets: loop values, env kwargs for
    envs.make, the agent's config and whether its learning rate decays). presets: every preset,
    by the kind of env it is for (listed in each flag's --help). flags: the agent's flags
    (`Flag`s, sebulba.experiment.flags).
    optimizer_steps_per_update: optimizer steps per learner update (one per inferencer cycle)
    of an experiment. steps_per_cycle: a config's cycle length; None: the steps_per_cycle flag or
    preset value. minibatches_of_envs: whether a config's num_minibatches splits the envs (the
    default learner devices leave each a multiple of it), not the steps. check: raises a ValueError for
    an experiment the agent cannot run. default_env: --env's default. core_preset: the preset for
    `(env_id, env_kwargs, core)` when the core flag names a recurrent core, where the env's kind has
    one of its own for that (PPO: Atari's, one frame a step); None: the env's preset, with the core.
    over_the_run: the agent's config given the run's learner updates, for a schedule that spans
    the run (PQN: epsilon decays over a fraction of them); None: the config as it is."""

    name: str
    agent: Callable[[envs.EnvSpec, Any], Agent]
    preset: Callable[[str, dict | None], Preset]
    presets: dict[str, Preset]
    flags: dict[str, Flag]
    optimizer_steps_per_update: Callable[[Experiment], int]
    steps_per_cycle: Callable[[Any], int] | None = None
    minibatches_of_envs: Callable[[Any], bool] = lambda config: True
    check: Callable[[Experiment], None] | None = None
    core_preset: Callable[[str, dict | None, str], Preset | None] | None = None
    over_the_run: Callable[[Any, int], Any] | None = None
    default_env: str = DEFAULT_ENV  # the --env a run without it trains on

    @property
    def flag_fields(self) -> dict[str, str]:
        """{agent flag: the field it sets}."""
        return {name: flag.field or name for name, flag in self.flags.items()}

    def define_flags(self) -> None:
        """The loop's flags and the agent's, each agent flag's help ending with its presets' values."""
        cli.define_loop_flags(self.default_env)
        flags.adopt_module_key_flags(cli)  # list the shared flags in --help
        define_flags(self.flags)
        cli.describe_presets(self.presets, self.flag_fields)

    def make_experiment(self, env: str, seed: int = 0, **overrides) -> Experiment:
        """The preset for env with overrides (None values are ignored); what the flags map onto."""
        p = self.preset(env, overrides.get("env_kwargs"))
        if overrides.get("core") not in (None, "none") and self.core_preset is not None:
            p = self.core_preset(env, overrides.get("env_kwargs"), overrides["core"]) or p
        steps_per_cycle = self.steps_per_cycle
        if steps_per_cycle is None:
            T = overrides.get("steps_per_cycle") or p.steps_per_cycle
            steps_per_cycle = lambda config: T  # noqa: E731
        exp = cli.build(env, seed, p, overrides, steps_per_cycle, self.minibatches_of_envs)
        if "core_size" in self.flags:
            check_core_size(overrides.get("core_size"), exp.agent.core)
        if self.check is not None:
            self.check(exp)
        updates = cli.learner_updates(exp, jax.process_count())
        agent = exp.agent
        if p.lr_decay:
            agent = dataclasses.replace(agent, lr_decay_steps=updates * self.optimizer_steps_per_update(exp))
        if self.over_the_run is not None:
            agent = self.over_the_run(agent, updates)
        return exp if agent is exp.agent else dataclasses.replace(exp, agent=agent)

    def main(self) -> None:
        """Run from the command line: the flags (or, with --resume, the run's own) into an
        experiment, then train it (`cli.train`)."""

        def main(argv: list[str]) -> None:
            del argv
            cli.quiet_terminal()  # first: building the env for its kind (brax, Playground) says things
            cli.start_distributed()
            compile_cache.enable(cli.FLAGS.compilation_cache)
            with user_input():
                adopt_resumed_flags()
                exp = self.make_experiment(cli.FLAGS.env, cli.FLAGS.seed, **cli.overrides_from_flags(self.flag_fields))
            cli.train(self.name, exp, self.agent)

        cli.run_main(main)

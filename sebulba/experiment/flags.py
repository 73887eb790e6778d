"""The entry points' flags in one place. A flag is declared once, as data (`Flag`: its type,
default, help, lower bound and what a resumed run does with it), and defined from its
declaration (`Flag.define`, `define_flags`): the flags every training entry point has
(`SHARED_FLAGS`, defined by `cli.define_loop_flags`; `experiments.evaluate` takes a few of
them), the replay flags of the off-policy agents (`REPLAY_FLAGS`), the actor-critics'
(`CONTINUOUS_FLAGS`) and the recurrent core's (`CORE_FLAGS`). An algorithm's own flags stay in its entry point, a table of `Flag`s
(sebulba.experiment.recipe.Algorithm). Counts take the ways people write them: 100000,
100_000, 1e5, 2.5e6 (`define_integer`).

What --resume does with a flag (`Flag.resume`): "run", the resumed run's value (its
flags.json); "override", the run's value unless given on the command line, which then replaces
it (it changes how long the run goes on and what it writes, not what it is: `RESUME_OVERRIDES`);
"command line", always this command line's (`NOT_RESUMED`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from absl import flags

from sebulba.agents.dqn.config import VALUE_HEADS
from sebulba.cores import CORES
from sebulba.experiment.peers import EXIT_PEER_LOST
from sebulba.experiment.wandb_logger import MODES as WANDB_MODES
from sebulba.networks import TORSO_KINDS

flags.disclaim_key_flags()  # the flags defined here belong to the module that asks for them

RESUME_RULES = ("run", "override", "command line")


class CountParser(flags.IntegerParser):
    """absl's IntegerParser, also taking a float literal that is a whole number (1e5, not 1.5)."""

    def convert(self, argument: str | int) -> int:
        if isinstance(argument, str):
            text = argument.strip()
            try:
                return int(text, 0)
            except ValueError:
                pass
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"{argument!r} is not a whole number") from None
            if not value.is_integer():
                raise ValueError(f"{argument!r} is not a whole number")
            return int(value)
        return super().convert(argument)


def define_integer(name: str, default: int | None, help: str, lower_bound: int | None = None,
                   flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """flags.DEFINE_integer with CountParser, listed in --help under the caller's module as
    DEFINE_integer's flags are."""
    flags.DEFINE(CountParser(lower_bound=lower_bound), name, default, help, flag_values=flag_values,
                 serializer=flags.ArgumentSerializer())


@dataclasses.dataclass(frozen=True)
class Flag:
    """A flag's declaration: its type (int, float, bool, str, list for comma-separated ints, or a
    tuple of an enum's choices), its help, the agent-config field it sets (an algorithm's flags:
    default its own name; a loop value such as steps_per_cycle is set the same way), for int and
    float flags a lower bound, its default (None: the preset's value, for the flags a preset
    gives), and what --resume does with it (one of RESUME_RULES)."""

    type: type | tuple[str, ...]
    help: str
    field: str | None = None
    lower_bound: float | None = None
    default: Any = None
    resume: str = "run"

    def __post_init__(self) -> None:
        if not (self.type in (int, float, bool, str, list) or isinstance(self.type, tuple)):
            raise ValueError(f"a flag's type is int, float, bool, str, list or a tuple of choices, got {self.type!r}")
        if self.lower_bound is not None and self.type not in (int, float):
            raise ValueError(f"only int and float flags take a lower bound, not a {self.type!r} flag")
        if self.resume not in RESUME_RULES:
            raise ValueError(f"resume must be one of {', '.join(map(repr, RESUME_RULES))}, got {self.resume!r}")

    def define(self, name: str, flag_values: flags.FlagValues = flags.FLAGS) -> None:
        """Define it as --name, listed in --help under the module that asks for it."""
        if isinstance(self.type, tuple):
            flags.DEFINE_enum(name, self.default, list(self.type), self.help, flag_values=flag_values)
        elif self.type is int:
            define_integer(name, self.default, self.help, lower_bound=self.lower_bound, flag_values=flag_values)
        elif self.type is float:
            flags.DEFINE_float(name, self.default, self.help, lower_bound=self.lower_bound, flag_values=flag_values)
        else:
            define = {bool: flags.DEFINE_bool, str: flags.DEFINE_string, list: flags.DEFINE_list}[self.type]
            define(name, self.default, self.help, flag_values=flag_values)


def define_flags(table: Mapping[str, Flag], flag_values: flags.FlagValues = flags.FLAGS) -> None:
    """Define every flag of a table ({name: Flag}), in its order."""
    for name, flag in table.items():
        flag.define(name, flag_values)


# The flags every training entry point has (defaults None mean: the env's preset); --env's default
# is the entry point's (cli.define_loop_flags).
SHARED_FLAGS = {
    "env": Flag(str, "Task id of the env pool (envs.list_all_envs()), or of a JAX-native env (SUITE/ID, e.g. "
                "gymnax/CartPole-v1), which trains in the Anakin loop.", default="CartPole-v1"),
    "loop": Flag(("auto", "sebulba", "anakin"), "Which loop trains: sebulba (host envs, actor threads), anakin "
                 "(acting, JAX env steps and learning in one compiled program per call: JAX-native envs), or auto: "
                 "anakin for a SUITE/ID env, else sebulba.", default="auto"),
    "num_seeds": Flag(int, "The Anakin loop: train this many independent replicas (seeds --seed, --seed + 1, ...) in "
                      "one program; each replica takes --total_env_steps; metrics are their mean, with each one's "
                      "episode_return_mean_seed<i> and their min and max.", lower_bound=1, default=1),
    "env_kwargs": Flag(str, "The task's own kwargs for envs.make, comma-separated key=value with Python literals "
                       "(strings in quotes), e.g. is_slippery=False or map_name='8x8',is_slippery=False or "
                       "\"drop_observation_keys=['mission','direction']\"."),
    "num_envs": Flag(int, "Envs per inferencer (default: the env's preset).", lower_bound=1),
    "total_env_steps": Flag(int, "Stop after this many env steps (default: the preset's budget).", lower_bound=1,
                            resume="override"),
    "actor_devices": Flag(str, "Comma-separated jax device indices that act (default: 0)."),
    "learner_devices": Flag(str, "Comma-separated device indices that learn (default: the others, or 0)."),
    "inferencers_per_device": Flag(int, "Inferencer threads per actor device.", lower_bound=1),
    "env_threads": Flag(int, "Threads (worker processes for the process backend) of each env pool, i.e. of each "
                        "inferencer's: EnvPool's num_threads (default: the backend's; ALE: min(envs, cores), and at "
                        "most one per core).", lower_bound=0),
    "stack_on_device": Flag(bool, "Atari: the envs send single frames and each inferencer stacks them on its device "
                            "(the agent sees the same stacks; 1/stack_num of the bytes cross to it)."),
    "seed": Flag(int, "Seed of networks, actors and envs.", default=0),
    "logdir": Flag(str, "Parent directory of run directories.", default="runs", resume="command line"),
    "async_mode": Flag(bool, "Sebulba actors in threads (True) or one cycle then one update, reproducible (False)."),
    "log_every_s": Flag(float, "Seconds between metrics rows (CSV, TensorBoard, progress line).", resume="override"),
    "progress": Flag(bool, "Show a live progress line.", default=True, resume="command line"),
    "learning_curve": Flag(bool, "Plot learning_curve.png from metrics.csv at the end of the run (matplotlib: about a "
                           "second of CPU); --nolearning_curve leaves it out, e.g. in a sweep of many short runs.",
                           default=True, resume="command line"),
    "compilation_cache": Flag(bool, "Keep the compiled programs on disk (JAX's persistent compilation cache, in "
                              "$JAX_COMPILATION_CACHE_DIR or ~/.cache/sebulba/jax): a task run before starts "
                              "training in seconds.", default=True),
    "coordinator_address": Flag(str, "Multi-process training: host:port of process 0's coordinator (or "
                                "SEBULBA_COORDINATOR_ADDRESS).", resume="command line"),
    "num_processes": Flag(int, "Multi-process training: how many processes (or SEBULBA_NUM_PROCESSES).",
                          resume="command line"),
    "process_id": Flag(int, "Multi-process training: this process's id (or SEBULBA_PROCESS_ID).",
                       resume="command line"),
    "distributed": Flag(bool, "Multi-process training with JAX's cluster detection (e.g. SLURM).", default=False,
                        resume="command line"),
    "peer_timeout_s": Flag(float, "Multi-process training: when another process has sent no heartbeat for this many "
                           "seconds (it died, hung, or its host cannot be reached), every other process stops with an "
                           f"error naming it (exit status {EXIT_PEER_LOST}); relaunch all with --resume.",
                           lower_bound=1.0, default=60.0, resume="command line"),
    "checkpoint_every": Flag(int, "Learner steps between checkpoints (also saved at the end and on SIGTERM / Ctrl-C); "
                             "0 turns checkpoints off.", default=1000, resume="override"),
    "keep_checkpoints": Flag(int, "How many of the latest checkpoints to keep.", default=3, resume="override"),
    "save_replay": Flag(bool, "Include the agent's replay in checkpoints (default: for the off-policy agents, DQN, "
                        "SAC, TD3 and R2D2, whose replay carries over from cycle to cycle; the run's first lines say "
                        "its size): a resume in sync mode then ends bit-identical to an uninterrupted run. "
                        "--nosave_replay leaves it out: a resume starts with an empty replay. On-policy agents "
                        "(IMPALA, PPO) learn from each cycle's trajectory and need none.", resume="override"),
    "resume": Flag(str, "A run directory to continue from its latest complete checkpoint, with the flags it was "
                   "started with (flags.json).", resume="command line"),
    "profile_after_s": Flag(float, "Record a JAX profiler trace (XProf and Perfetto, in the run directory's profile/) "
                            "starting this many seconds after the loop starts; python -m "
                            "sebulba.experiment.trace_summary RUN_DIR/profile summarizes it.", resume="command line"),
    "profile_seconds": Flag(float, "Length of the profiler trace, in seconds.", default=3.0, resume="command line"),
    "debug": Flag(bool, "Show the whole traceback of a mistake in the run's input (an error message is one line "
                  "without it).", default=False, resume="command line"),
    "eval_every": Flag(int, "Evaluate every this many env steps (0: never): --eval_episodes complete episodes with the "
                       "agent's evaluation policy (greedy; R2D2: epsilon 0.001) on envs of their own, in a thread "
                       "beside training; logged as eval_return_mean/std, eval_length_mean.", lower_bound=0, default=0,
                       resume="override"),
    "eval_episodes": Flag(int, "Episodes per evaluation.", lower_bound=1, default=10, resume="override"),
    "profile_python": Flag(bool, "Also trace every Python call in the profile (names the Python code, but slows it).",
                           default=False, resume="command line"),
    "wandb": Flag(bool, "Also log the run to Weights & Biases: every metrics row, config.json as its config, and the "
                  "learning curve (pip install 'sebulba[wandb]'; `wandb login` first, or --wandb_mode=offline).",
                  default=False, resume="override"),
    "wandb_project": Flag(str, "With --wandb: the W&B project (default: $WANDB_PROJECT, else sebulba).",
                          resume="override"),
    "wandb_entity": Flag(str, "With --wandb: the W&B entity, a user or team (default: your default entity).",
                         resume="override"),
    "wandb_mode": Flag(WANDB_MODES, "With --wandb: online; offline (no network: files in the run directory's wandb/, "
                       "uploaded later by `wandb sync`); disabled (default: $WANDB_MODE, else online).",
                       resume="override"),
}

# Flags a resumed run takes from its own command line.
NOT_RESUMED = tuple(name for name, flag in SHARED_FLAGS.items() if flag.resume == "command line")
# Flags that, given with --resume, replace the run's own: they change how long it runs and what it
# writes, not what it is (its networks, optimizer, envs and layout are in the checkpoint).
RESUME_OVERRIDES = tuple(name for name, flag in SHARED_FLAGS.items() if flag.resume == "override")

# The replay flags of the off-policy entry points (experiments.dqn, sac, td3): OffPolicyConfig's fields.
REPLAY_FLAGS = {
    "replay_ratio": Flag(float, "Gradient updates per env step (all envs together); a learner call of num_envs x "
                         "steps_per_cycle env steps gets that many times as many optimizer steps."),
    "steps_per_cycle": Flag(int, "Env steps of each env per actor cycle, between learner calls (with --num_envs 1 "
                            "and --replay_ratio 1: one env step, then one update, as CleanRL's scripts run).",
                            lower_bound=1),
    "learning_starts": Flag(int, "Env steps (all envs) in the replay before the first update; the actors act "
                            "uniformly at random until the first update reaches them.", lower_bound=0),
    "replay_capacity": Flag(int, "Transitions per learner device.", lower_bound=1),
    "batch_size": Flag(int, "Transitions per optimizer step, per learner device.", lower_bound=1),
    "n_step": Flag(int, "n of the n-step bootstrapped targets.", lower_bound=1),
    "discount": Flag(float, "Discount gamma."),
    "priority_exponent": Flag(float, "Prioritized replay's exponent on |TD|; 0: uniform sampling.", lower_bound=0),
}

# The DQN family's flags (experiments.dqn, rainbow): DQNConfig's fields.
DQN_FLAGS = {
    **REPLAY_FLAGS,
    "learning_rate": Flag(float, "Adam learning rate."),
    "target_update_period": Flag(int, "Optimizer steps between copies of the online network into the target.",
                                 lower_bound=1),
    "double": Flag(bool, "Double Q-learning: the online network picks the bootstrap action."),
    "dueling": Flag(bool, "Dueling head: value + advantage."),
    "value_head": Flag(VALUE_HEADS, "What the network outputs an action: scalar (a Q-value), c51 (a categorical "
                       "distribution over --num_atoms atoms from --v_min to --v_max) or qr (QR-DQN's --num_atoms "
                       "quantiles)."),
    "num_atoms": Flag(int, "c51's atoms or qr's quantiles (QR-DQN used 200 on Atari).", lower_bound=2),
    "v_min": Flag(float, "c51's lowest atom."),
    "v_max": Flag(float, "c51's highest atom."),
    "noisy": Flag(bool, "NoisyNet head layers: learned weight noise explores (with --epsilon_base 0, alone)."),
    "epsilon_base": Flag(float, "Ape-X exploration: env i of N uses epsilon_base ** (1 + 7 i / (N - 1))."),
    "torso": Flag(TORSO_KINDS, "Network torso."),
    "hidden_sizes": Flag(list, "MLP torso layer sizes, e.g. 64,64."),
}

# The actor-critics' flags (experiments.sac, td3).
CONTINUOUS_FLAGS = {
    "tau": Flag(float, "Polyak averaging of the targets: target <- tau * online + (1 - tau) * target."),
    "hidden_sizes": Flag(list, "The actor's and each critic's MLP layer sizes, e.g. 256,256."),
}

# The recurrent core's flags (experiments.ppo, impala): their configs' `core` and `core_size`.
CORE_FLAGS = {
    "core": Flag(CORES, "A recurrent core between the torso and the heads, the memory a partially observed task "
                 "needs: lstm, gru, or none (no memory)."),
    "core_size": Flag(int, "The recurrent core's units (default 128); it needs --core lstm or --core gru.",
                      lower_bound=1),
}


def check_core_size(given_size: int | None, core: str) -> None:
    """A ValueError for --core_size given where the run has no core (--core none, or a preset's)."""
    if given_size is not None and core == "none":
        raise ValueError(f"--core_size {given_size} sizes a recurrent core and this run has none: add --core lstm or "
                         "--core gru")

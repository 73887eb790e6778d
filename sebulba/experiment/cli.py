"""What the experiment entry points share: the loop's flags, presets plus overrides into
configs, and the run itself. sebulba.experiment.recipe puts them together with an algorithm's
presets, agent flags and agent into an entry point."""

from __future__ import annotations

import dataclasses
import gc
import logging
import sys
from collections.abc import Callable
from typing import Any

from absl import app, flags

import envs
from sebulba.agent import Agent
from sebulba.experiment import distributed
from sebulba.experiment.env_kwargs import parse_env_kwargs
from sebulba.experiment.errors import UserError, user_input
from sebulba.experiment.flags import CORE_FLAGS, SHARED_FLAGS, define_flags
from sebulba.experiment.peers import abandon
from sebulba.experiment.presets import Preset
from sebulba.experiment.profiling import ProfileWindow
from sebulba.experiment.run_log import echo, quiet_terminal
from sebulba.experiment.devices import default_devices, parse_devices
from sebulba.experiment.run_lifecycle import log_path
from sebulba.experiment.runner import CheckpointFlags, EvalFlags, RunResult, run
from sebulba.experiment.signals import StoppedBeforeTraining
from sebulba.experiment.wandb_logger import WandbFlags
from sebulba.loop.config import LoopConfig, check_env, uses_anakin
from sebulba.loop.learner import NonFiniteError

FLAGS = flags.FLAGS
# Entry points log at INFO through absl; jax's INFO lines (e.g. "Unable to initialize backend
# 'tpu'" on every CPU host) would read like errors.
logging.getLogger("jax").setLevel(logging.WARNING)
LOOP_FLAGS = ("num_envs", "total_env_steps", "inferencers_per_device", "env_threads", "stack_on_device",
              "async_mode", "log_every_s", "loop", "num_seeds")


def define_loop_flags(default_env: str) -> None:
    """The flags every experiment has (sebulba.experiment.flags.SHARED_FLAGS; defaults None mean:
    the env's preset), --env's default `default_env`."""
    define_flags({**SHARED_FLAGS, "env": dataclasses.replace(SHARED_FLAGS["env"], default=default_env)})


@dataclasses.dataclass(frozen=True)
class Experiment:
    loop: LoopConfig
    agent: Any  # the agent's config dataclass
    total_env_steps: int


def build(env: str, seed: int, preset: Preset, overrides: dict, steps_per_cycle: Callable[[Any], int],
          minibatches_of_envs: Callable[[Any], bool] = lambda config: True) -> Experiment:
    """preset (loop values, `env_kwargs` for envs.make, and `agent`, a config dataclass) updated
    by the non-None overrides;
    agent-config fields among the overrides go to the agent config. `minibatches_of_envs(config)`:
    whether the agent's num_minibatches splits the envs (so the default learner devices must leave
    each a multiple of it), not the steps (PPO without a core)."""
    o = {k: v for k, v in overrides.items() if v is not None}
    get = lambda k: o.get(k, getattr(preset, k))
    fields = {f.name for f in dataclasses.fields(preset.agent)}
    agent = dataclasses.replace(preset.agent, **{k: v for k, v in o.items() if k in fields})
    loop_kind = o.get("loop") or "auto"
    check_env(LoopConfig(env_id=env, loop=loop_kind))
    anakin = uses_anakin(LoopConfig(env_id=env, loop=loop_kind))
    if o.get("num_seeds", 1) > 1 and not anakin:
        raise ValueError(f"--num_seeds {o['num_seeds']} trains replicas in one program: the Anakin loop's (a JAX-native "
                         f"env, SUITE/ID, or --loop anakin); the Sebulba loop trains one seed")
    actors, learners = default_devices(get("num_envs"), getattr(agent, "num_minibatches", 1) if minibatches_of_envs(agent) else 1,
                                       anakin)
    threads = get("env_threads")
    env_kwargs = {**preset.env_kwargs, **o.get("env_kwargs", {}), **({} if threads is None else {"num_threads": threads})}
    loop = LoopConfig(
        env_id=env, env_kwargs=env_kwargs, num_envs=get("num_envs"), steps_per_cycle=steps_per_cycle(agent), seed=seed,
        actor_devices=o.get("actor_devices") or actors, learner_devices=o.get("learner_devices") or learners,
        inferencers_per_device=get("inferencers_per_device"),
        stack_on_device=bool(get("stack_on_device")),
        async_mode=get("async_mode"), log_every_s=get("log_every_s"), loop=loop_kind, num_seeds=o.get("num_seeds") or 1,
    )
    return Experiment(loop, agent, get("total_env_steps"))


def learner_updates(exp: Experiment, processes: int = 1) -> int:
    """The learner updates (one per cycle of an inferencer) the experiment's budget takes, rounded
    up to whole rounds of every inferencer: what a learning-rate schedule spans. The budget counts
    the job's env steps, and each of its `processes` brings num_envs envs to every update."""
    loop = exp.loop
    per_update = loop.num_envs * loop.steps_per_cycle * processes
    rounds = 1 if uses_anakin(loop) else loop.num_inferencers  # Anakin: one update per T steps of all envs
    return -(-exp.total_env_steps // (per_update * rounds)) * rounds


def overrides_from_flags(agent_flags: dict[str, str]) -> dict[str, Any]:
    """Loop flags plus agent flags ({flag name: config field}) as build() overrides."""
    out = {name: FLAGS[name].value for name in LOOP_FLAGS}
    out["env_kwargs"] = parse_env_kwargs(FLAGS.env_kwargs)
    out["actor_devices"] = parse_devices(FLAGS.actor_devices)
    out["learner_devices"] = parse_devices(FLAGS.learner_devices)
    for flag, field in agent_flags.items():
        value = FLAGS[flag].value
        out[field] = _ints(flag, value) if isinstance(value, list) else value
    return out


def _ints(flag: str, values: list[str]) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in values)
    except ValueError:
        raise ValueError(f"--{flag} takes comma-separated integers, e.g. 64,64; got {','.join(values)!r}") from None


def wandb_from_flags() -> WandbFlags | None:
    """--wandb's settings, or None without it (where a --wandb_* flag on the command line is a
    mistake: it would log nothing)."""
    if not FLAGS.wandb:
        given = [f"--{name}" for name in ("wandb_project", "wandb_entity", "wandb_mode") if FLAGS[name].present]
        if given:
            raise ValueError(f"{', '.join(given)} given without --wandb: W&B logging is off unless --wandb turns it "
                             "on; add --wandb")
        return None
    return WandbFlags(FLAGS.wandb_project, FLAGS.wandb_entity, FLAGS.wandb_mode)


def start_distributed() -> bool:
    """Join a multi-process job when the flags or environment describe one (call first)."""
    with user_input():
        return distributed.initialize(FLAGS.coordinator_address, FLAGS.num_processes, FLAGS.process_id, FLAGS.distributed,
                                      FLAGS.peer_timeout_s)


def describe_presets(presets: dict[str, Preset], agent_flags: dict[str, str]) -> None:
    """Append to each flag's help the value every preset gives it, by env kind (what the flag's
    default None stands for), e.g. `[presets: vector/image 0.006; Atari 0.0006]`: a loop value
    the preset sets (`Preset.sets`), else its agent config's field."""
    for flag in (*LOOP_FLAGS, *agent_flags):
        field = agent_flags.get(flag, flag)
        values = []
        for kind, p in presets.items():
            if p.sets(field):
                values.append(f"{kind} {getattr(p, field)}")
            elif hasattr(p.agent, field):
                value = getattr(p.agent, field)
                values.append(f"{kind} {','.join(map(str, value)) if isinstance(value, tuple) else value}")
        if values and "[presets: " not in FLAGS[flag].help:
            FLAGS[flag].help += f" [presets: {'; '.join(values)}]"


HELP_FLAGS = ("--help", "-help", "-h", "--helpshort", "--helpfull", "-?", "--helpxml")


def run_main(main: Callable[[list[str]], None]) -> None:
    """`app.run(main)` for an entry point: a mistake in the run's input (a UserError) prints one
    line, `error: ...`, and exits 2; `--debug` shows its traceback instead. Asking for --help is
    not a failure: it exits 0 (absl's own exit status for it is 1)."""

    def guarded(argv: list[str]) -> None:
        gc.freeze()  # what the imports built lives for the run: the collector skips it from here on
        try:
            main(argv)
        except UserError as e:
            if FLAGS.debug:
                raise
            print(f"error: {e} (--debug shows the traceback)", file=sys.stderr)
            raise SystemExit(2) from None
        except StoppedBeforeTraining as e:
            if FLAGS.debug:
                raise
            print(e, file=sys.stderr)
            raise SystemExit(128 + int(e.signal)) from None
        except (Exception, KeyboardInterrupt) as e:
            watch = distributed.watch()
            if watch is None:
                raise
            # Multi-process: a peer may be gone (this process's collective failed under it), or this
            # process failed alone; say which, and end without JAX's shutdown barrier.
            abandon(watch, e, collective_failure=not isinstance(e, (NonFiniteError, KeyboardInterrupt)))

    def parse(argv: list[str]) -> list[str]:
        try:
            return FLAGS(argv)
        except flags.Error as e:  # a bad flag or value: one line, as any other mistake in the input
            if isinstance(e, flags.UnrecognizedFlagError) and e.flagname in CORE_FLAGS:
                e = (f"--{e.flagname}: this agent takes no recurrent core; experiments.ppo, experiments.impala and "
                     "experiments.pqn take --core lstm or --core gru (experiments.r2d2 has an LSTM of its own)")
            print(f"error: {e} (--helpshort lists the flags)", file=sys.stderr)
            raise SystemExit(2) from None

    try:
        app.run(guarded, flags_parser=parse)
    except SystemExit as e:
        if e.code == 1 and any(arg.split("=")[0] in HELP_FLAGS for arg in sys.argv[1:]):
            raise SystemExit(0) from None
        raise
    finally:
        # The interpreter's exit collects cycles over every object still alive (a run's modules,
        # compiled programs, pools: about 0.7 s of a CLI run's exit on a 2-core host, measured);
        # frozen, they are only freed, as they would be anyway.
        gc.freeze()


def train(name: str, exp: Experiment, make_agent: Callable[[envs.EnvSpec, Any], Agent]) -> RunResult:
    """Run the experiment from the flags' logdir/progress/checkpoints, and print where its outputs are.
    Call `resume.adopt_resumed_flags()` before building `exp` from the flags."""
    logging.getLogger("sebulba").setLevel(logging.INFO)
    quiet_terminal()
    with user_input():
        tracking = wandb_from_flags()
        agent = make_agent(envs.make_spec(exp.loop.env_id, **exp.loop.env_kwargs), exp.agent)
    checkpoints = CheckpointFlags(FLAGS.checkpoint_every, FLAGS.keep_checkpoints, FLAGS.save_replay)
    profile = None if FLAGS.profile_after_s is None else ProfileWindow(FLAGS.profile_after_s, FLAGS.profile_seconds, FLAGS.profile_python)
    with user_input():
        evaluation = EvalFlags(FLAGS.eval_every, FLAGS.eval_episodes)
    result = run(name, agent, exp.loop, exp.total_env_steps, FLAGS.logdir, FLAGS.flag_values_dict(), FLAGS.progress,
                 checkpoints, FLAGS.resume, profile, evaluation, tracking, FLAGS.learning_curve)
    f = result.final
    summary = f"{f['env_steps']:,} env steps, episode_return_mean {f['episode_return_mean']:.1f} (last 20 episodes)"
    if result.finished_before:  # nothing ran, nothing is written: not even to log.txt
        print(f"finished already: {summary}, its whole budget; nothing was trained (pass a larger --total_env_steps "
              f"with --resume to extend it); run directory {result.run_dir.path}")
        return result
    if result.interrupted_by is None and not result.stopped_by_peer:
        say(result, f"done{_whose()}: {summary}; run directory {result.run_dir.path}")
        return result
    say(result, interrupted_message(result, summary, exp.total_env_steps))
    raise SystemExit(result.exit_status)


def _whose() -> str:
    """Whose figures a multi-process job's line gives: the job's (process 0) or a process's own."""
    import jax

    if jax.process_count() == 1:
        return ""
    if jax.process_index() == 0:
        return f" (the job of {jax.process_count()} processes)"
    return f" (process {jax.process_index()} of {jax.process_count()}: its own episodes; the job's are process 0's)"


def say(result: RunResult, text: str) -> None:
    """Print a run's last lines, and append them to its log.txt (this process's)."""
    print(text, flush=True)
    echo(log_path(result.run_dir), *text.splitlines())


def interrupted_message(result: RunResult, summary: str, total_env_steps: int) -> str:
    """What a run stopped by a signal prints: that it is unfinished, its last checkpoint, and the
    command that continues it."""
    by = result.interrupted_by.name if result.interrupted_by is not None else "a signal to another process of the job"
    lines = [f"interrupted by {by} at {summary}, before its budget of {total_env_steps:,}; run directory "
             f"{result.run_dir.path}"]
    if result.checkpoint_step is None:
        lines.append("no checkpoint was written (checkpoint_every=0), so this run cannot be resumed")
    else:
        lines.append(f"last checkpoint: {result.run_dir.checkpoint_dir / str(result.checkpoint_step)} "
                     f"(learner step {result.checkpoint_step:,})")
        if distributed.watch() is not None:
            lines.append(f"continue it by relaunching every process of the job with its own process flags and "
                         f"--resume {result.run_dir.path}")
        else:
            lines.append(f"continue it with: {sys.executable} -m {entry_module()} --resume {result.run_dir.path}")
    return "\n".join(lines)


def entry_module() -> str:
    """The module this process runs as (`experiments.impala` under `python -m`)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return spec.name if spec is not None else "experiments.<name>"

"""Counts on the command line as people write them: 100000, 100_000, 1e5 (issue 36); the flags'
declarations (sebulba.experiment.flags), from which resume's rules are read."""

import pytest
from absl import flags

from sebulba.experiment.flags import NOT_RESUMED, RESUME_OVERRIDES, SHARED_FLAGS, Flag, define_flags, define_integer
from tests.support.cli import run_experiment


def parsed(*argv: str) -> flags.FlagValues:
    values = flags.FlagValues()
    define_integer("steps", None, "a count", lower_bound=1, flag_values=values)
    values(["prog", *argv])
    return values


@pytest.mark.parametrize("text, want", [("100000", 100_000), ("100_000", 100_000), ("1e5", 100_000),
                                        ("2.5e6", 2_500_000), ("1E3", 1000), ("0x10", 16), (" 7 ", 7)])
def test_a_count_takes_ints_and_whole_float_literals(text, want):
    value = parsed(f"--steps={text}").steps
    assert value == want and type(value) is int


@pytest.mark.parametrize("text, error", [("1.5", "'1.5' is not a whole number"), ("lots", "'lots' is not a whole number"),
                                         ("0", "0 is not a positive integer"), ("1e400", "not a whole number")])
def test_anything_else_is_refused_naming_the_value(text, error):
    with pytest.raises(flags.IllegalFlagValueError, match=error):
        parsed(f"--steps={text}")


@pytest.mark.slow(seconds=4)
def test_the_cli_refuses_a_fractional_count_in_one_line(tmp_path):
    out = run_experiment("experiments.ppo", "--total_env_steps=1.5", f"--logdir={tmp_path}", timeout=300)
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode != 0 and len(lines) == 1 and "not a whole number" in lines[0], out.stderr[-2000:]


def test_resumes_rules_are_read_from_the_declarations():
    """The flags a resumed run takes from this command line, and those it may change, as
    resume.py listed them by hand before the declarations said it."""
    assert set(NOT_RESUMED) == {"resume", "progress", "learning_curve", "logdir", "profile_after_s", "profile_seconds",
                                "profile_python", "debug", "coordinator_address", "num_processes", "process_id",
                                "distributed", "peer_timeout_s"}
    assert len(NOT_RESUMED) == 13
    assert RESUME_OVERRIDES == ("total_env_steps", "log_every_s", "checkpoint_every", "keep_checkpoints", "save_replay",
                                "eval_every", "eval_episodes", "wandb", "wandb_project", "wandb_entity", "wandb_mode")
    rest = set(SHARED_FLAGS) - set(NOT_RESUMED) - set(RESUME_OVERRIDES)
    assert {SHARED_FLAGS[name].resume for name in rest} == {"run"}


def test_a_declaration_defines_its_flag():
    values = flags.FlagValues()
    define_flags({"count": Flag(int, "a count", lower_bound=1, default=10), "rate": Flag(float, "a rate"),
                  "on": Flag(bool, "a switch", default=True), "sizes": Flag(list, "sizes"),
                  "torso": Flag(("mlp", "cnn"), "a choice", default="mlp"), "name": Flag(str, "a name")},
                 flag_values=values)
    values(["prog", "--count=1e3", "--rate=0.5", "--noon", "--sizes=64,64", "--torso=cnn"])
    assert (values.count, values.rate, values.on, values.sizes, values.torso, values.name) == (
        1000, 0.5, False, ["64", "64"], "cnn", None)


@pytest.mark.parametrize("kwargs, error", [
    (dict(resume="always"), "resume must be one of 'run', 'override', "),
    (dict(type=dict), "a flag's type is"),
    (dict(type=bool, lower_bound=0), "only int and float flags take a lower bound"),
])
def test_a_declaration_out_of_its_rules_is_refused(kwargs, error):
    with pytest.raises(ValueError, match=error):
        Flag(**{"type": int, "help": "a flag", **kwargs})

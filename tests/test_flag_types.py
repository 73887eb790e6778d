"""Counts on the command line as people write them: 100000, 100_000, 1e5 (issue 36)."""

import pytest
from absl import flags

from sebulba.experiment.flag_types import define_integer
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

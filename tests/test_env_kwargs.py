"""--env_kwargs: Python keyword arguments, strict (a misspelt literal is an error, never a string)."""

import pytest

from sebulba.experiment.env_kwargs import parse_env_kwargs
from tests.support.cli import run_experiment


@pytest.mark.parametrize("text, want", [
    (None, {}),
    ("", {}),
    ("is_slippery=False", {"is_slippery": False}),
    ("map_name='8x8',is_slippery=True", {"map_name": "8x8", "is_slippery": True}),
    ("drop_observation_keys=['mission','direction']", {"drop_observation_keys": ["mission", "direction"]}),
    (" a = 1 , b=(2, 3), c={'k': [1, 2]}, d=None ", {"a": 1, "b": (2, 3), "c": {"k": [1, 2]}, "d": None}),
    ("s='x,y]',t=\"it's\"", {"s": "x,y]", "t": "it's"}),
    ("frame_skip=4,repeat_action_probability=0.25", {"frame_skip": 4, "repeat_action_probability": 0.25}),
])
def test_values_are_python_literals_and_commas_inside_them_stay(text, want):
    got = parse_env_kwargs(text)
    assert got == want and all(type(got[k]) is type(want[k]) for k in want)


@pytest.mark.parametrize("text, error", [
    ("is_slippery=Flase", "--env_kwargs is_slippery=Flase: Flase is not a Python literal; did you mean "
                          "is_slippery=False? A string needs quotes: is_slippery='Flase'"),
    ("map_name=8x8", "--env_kwargs map_name=8x8: 8x8 is not a Python literal; a string needs quotes: map_name='8x8'"),
    ("render=true", "did you mean render=True?"),
    ("a=", "--env_kwargs a= has no value"),
    ("is_slippery", "--env_kwargs takes key=value pairs separated by commas"),
    ("1x=2", "got '1x=2'"),
    ("a=1,a=2", "--env_kwargs gives a twice"),
    ("keys=['a','b'", "keys=['a','b': ['a','b' is not a Python literal"),
])
def test_anything_else_is_an_error_naming_the_key_and_the_fix(text, error):
    with pytest.raises(ValueError) as e:
        parse_env_kwargs(text)
    assert error in str(e.value)


@pytest.mark.slow(seconds=4)
def test_a_misspelt_literal_stops_the_cli_in_one_line_before_anything_runs(tmp_path):
    out = run_experiment("experiments.impala", "--env=FrozenLake-v1", "--env_kwargs=is_slippery=Flase",
                         f"--logdir={tmp_path}", "--noprogress", timeout=300)
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1, out.stderr[-3000:]
    assert "did you mean is_slippery=False?" in lines[0]
    assert not any(tmp_path.iterdir())

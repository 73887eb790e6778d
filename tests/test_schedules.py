"""The one learning-rate schedule (sebulba.schedules.linear_decay), by hand."""

import numpy as np
import pytest

from sebulba.agents.impala import ImpalaConfig
from sebulba.agents.ppo import PPOConfig
from sebulba.agents.r2d2 import R2D2Config
from sebulba.schedules import linear_decay


def test_linear_decay_to_zero_over_the_steps_then_zero():
    schedule = linear_decay(0.01, 4)
    got = [float(schedule(step)) for step in (0, 1, 2, 3, 4, 5, 100)]
    np.testing.assert_allclose(got, [0.01, 0.0075, 0.005, 0.0025, 0.0, 0.0, 0.0], rtol=1e-6, atol=0)


def test_no_decay_steps_is_the_constant_learning_rate():
    assert linear_decay(3e-4, None) == 3e-4


@pytest.mark.parametrize("config", [ImpalaConfig, PPOConfig, R2D2Config])
def test_decay_steps_below_one_are_refused_by_every_config(config):
    with pytest.raises(ValueError, match="lr_decay_steps must be >= 1 or None, got 0"):
        config(lr_decay_steps=0)
    with pytest.raises(ValueError, match="lr_decay_steps must be >= 1 or None, got 0"):
        linear_decay(1e-3, 0)

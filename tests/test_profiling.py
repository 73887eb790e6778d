"""Profiling a window of a run (`--profile_after_s`): a real JAX profiler trace, and its summary."""

import logging
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sebulba.experiment.profiling import ProfileWindow, profiled
from sebulba.experiment.trace_summary import find_trace, markdown, summarize

TIMEOUT_S = 120


@pytest.mark.parametrize("kwargs, problem", [
    (dict(after_s=-1.0), "after_s must be a finite number >= 0"),
    (dict(after_s=float("nan")), "after_s must be a finite number >= 0"),
    (dict(after_s=0.0, seconds=0.0), "seconds must be a finite number > 0"),
    (dict(after_s=0.0, seconds=float("inf")), "seconds must be a finite number > 0"),
])
def test_window_validates_itself(kwargs, problem):
    with pytest.raises(ValueError, match=problem):
        ProfileWindow(**kwargs)


def test_no_window_records_nothing(tmp_path):
    with profiled(None, tmp_path / "profile") as handle:
        assert handle is None
    assert not (tmp_path / "profile").exists()


def test_a_traced_window_names_each_thread_and_its_jitted_calls(tmp_path):
    f = jax.jit(lambda x: jnp.tanh(x @ x))
    x = jnp.ones((64, 64))
    f(x).block_until_ready()  # compiled before the window

    def act():
        for _ in range(200):
            f(x).block_until_ready()

    with profiled(ProfileWindow(after_s=0.0, seconds=3600.0), tmp_path / "profile") as handle:
        assert handle.started.wait(TIMEOUT_S), f"the profiler did not start within {TIMEOUT_S} s"
        worker = threading.Thread(target=act, name="inferencer-test")
        worker.start()
        worker.join(TIMEOUT_S)
        assert not worker.is_alive(), f"the traced thread did not finish within {TIMEOUT_S} s"
    assert handle.written.is_set()  # the block ended inside the window: the trace stops there
    trace = find_trace(tmp_path / "profile")
    assert trace.name == "perfetto_trace.json.gz"
    window_s, rows = summarize(trace, top=3)
    assert 0 < window_s < 3600
    assert all(0 <= r.busy <= 1 + 1e-9 for r in rows)
    assert [r.busy for r in rows] == sorted((r.busy for r in rows), reverse=True)
    jitted = [r for r in rows if any(name.startswith("PjitFunction(<lambda>)") for name, _ in r.top)]
    assert jitted, markdown(trace, window_s, rows)
    assert jitted[0].events >= 200  # one call event (at least) per jitted call
    assert "| process | thread or stream |" in markdown(trace, window_s, rows)


def test_a_run_that_ends_before_the_window_writes_no_trace(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="sebulba"):
        with profiled(ProfileWindow(after_s=3600.0), tmp_path / "profile") as handle:
            pass
    assert not handle.started.is_set() and not handle.written.is_set()
    assert "ended before its profile window" in caplog.text
    with pytest.raises(FileNotFoundError, match="no perfetto_trace.json.gz"):
        find_trace(tmp_path)


@pytest.mark.slow(seconds=7)
def test_a_profiled_run_writes_its_trace_into_the_run_directory(tmp_path):
    import envs
    import sebulba
    from sebulba.agents import RandomAgent
    from sebulba.experiment.runner import CheckpointFlags, run

    cfg = sebulba.LoopConfig(num_envs=8, steps_per_cycle=10, async_mode=True, log_every_s=1e-6)
    result = run("random", RandomAgent(envs.make_spec(cfg.env_id)), cfg, 2000, str(tmp_path), {}, progress=False,
                 checkpoints=CheckpointFlags(every_learner_steps=0), profile=ProfileWindow(after_s=0.0, seconds=3600.0))
    assert result.final["env_steps"] >= 2000
    trace = find_trace(result.run_dir.path / "profile")
    _, rows = summarize(trace)
    assert sum(r.events for r in rows) > 0
    assert np.isfinite([r.busy for r in rows]).all()

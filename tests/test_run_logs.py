"""Library logging goes to RUN_DIR/log.txt; the terminal shows warnings and our own lines, so
orbax's INFO lines (dozens per checkpoint) do not bury the progress line; --verbosity brings
them back. Our own lines are plain on the terminal (no absl `I1126 09:41:07.123 file.py:12]`
prefix), with or without --verbosity."""

import re

import pytest

from tests.support.cli import last_metrics, run_experiment

ARGS = ["--total_env_steps=20000", "--checkpoint_every=20", "--noprogress"]


def orbax_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "checkpoint_manager.py" in line or "orbax" in line]


@pytest.mark.slow(seconds=6)
def test_library_info_lines_go_to_log_txt_not_the_terminal(tmp_path):
    out = run_experiment("experiments.impala", *ARGS, f"--logdir={tmp_path}")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, _ = last_metrics(tmp_path)
    assert orbax_lines(out.stderr) == [], out.stderr[-3000:]
    assert re.search(r"^run directory: ", out.stderr, re.M), out.stderr[-3000:]  # ours stay, plain
    assert re.search(r"^checkpoint at learner step 20 ", out.stderr, re.M), out.stderr[-3000:]
    log = (run_dir / "log.txt").read_text()
    assert len(orbax_lines(log)) >= 10 and "INFO absl" in log
    assert f"run directory: {run_dir}" in log


@pytest.mark.slow(seconds=7)
@pytest.mark.parametrize("flag", ["--verbosity=0", "-v=0"])
def test_verbosity_brings_them_back(tmp_path, flag):
    out = run_experiment("experiments.impala", *ARGS, flag, f"--logdir={tmp_path}")
    assert out.returncode == 0, out.stderr[-3000:]
    assert len(orbax_lines(out.stderr)) >= 10, out.stderr[-3000:]
    assert re.search(r"^run directory: ", out.stderr, re.M), out.stderr[-3000:]  # ours still plain

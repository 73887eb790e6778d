"""W&B logging (`--wandb`, sebulba/experiment/wandb_logger.py) through the real wandb package in
offline mode (no network here): what it wrote is read back from its .wandb file, as wandb's own
protobuf records (tests/support/wandb_files.py)."""

import csv
import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from sebulba.experiment import Outputs, RunDir
from sebulba.experiment.wandb_logger import ID_FILE, WandbFlags, WandbLogger
from tests.support.cli import JAX_CACHE, ROOT, child_env, run_experiment
from tests.support.wandb_files import offline_runs, read_offline_run


@pytest.fixture(autouse=True)
def wandb_home(tmp_path_factory, monkeypatch):
    """wandb's own files (settings, caches) in a temporary directory, and no console capture; a
    child process inherits these."""
    home = tmp_path_factory.mktemp("wandb-home")
    for var in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR"):
        monkeypatch.setenv(var, str(home / var.lower()))
    monkeypatch.setenv("WANDB_CONSOLE", "off")
    for var in ("WANDB_DIR", "WANDB_MODE", "WANDB_PROJECT", "WANDB_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def report(env_steps, ret):
    return {"env_steps": env_steps, "learner_steps": env_steps // 100, "episode_return_mean": ret, "loss": np.float32(0.5)}


def test_outputs_send_rows_axes_and_the_learning_curve_to_an_offline_run(tmp_path):
    import wandb  # here: its import costs every test worker's collection about 1.5 s
    run_dir = RunDir.create(tmp_path, "ppo", "CartPole-v1", 0, {})
    run_dir.write_config({"agent": {"config": {"learning_rate": 0.001}}, "total_env_steps": 300})
    tracker = WandbLogger.start(run_dir, WandbFlags(mode="offline"))
    with Outputs(run_dir, 300, progress=False, evaluation=True, wandb=tracker) as outputs:
        outputs(report(100, math.nan))  # no finished episode yet: left out, not sent as NaN
        outputs(report(200, 21.5))
        outputs({"env_steps": 200, "eval_return_mean": 30.0, "eval_return_std": 1.0, "eval_length_mean": 30.0,
                 "eval_env_steps": 200, "eval_s": 0.1})
        outputs(report(300, 25.0))
    # wandb 0.31's core may still hold the offline records when finish() returns: teardown (what
    # wandb runs at a process's exit) flushes them
    wandb.teardown()
    (offline,) = offline_runs(run_dir.path)
    run_id = (run_dir.path / ID_FILE).read_text().strip()
    assert offline.name.endswith(run_id)
    logged = read_offline_run(offline)
    assert logged["run"].run_id == run_id and logged["run"].display_name == run_dir.name
    assert logged["config"]["agent"]["config"]["learning_rate"] == 0.001

    rows = list(csv.DictReader(run_dir.metrics_csv.open()))
    metric_rows = [r for r in logged["history"] if "learning_curve" not in r]
    assert [r["env_steps"] for r in metric_rows] == [int(r["env_steps"]) for r in rows] == [100, 200, 200, 300]
    assert "episode_return_mean" not in metric_rows[0]
    for sent, written in zip(metric_rows, rows):
        assert {k: float(written[k]) for k in sent} == pytest.approx(sent), "W&B gets the rows metrics.csv gets"
    assert logged["summary"]["episode_return_mean"] == 25.0 and logged["summary"]["env_steps"] == 300
    assert logged["metrics"]["episode_return_mean"] == "env_steps"
    assert logged["metrics"]["eval_return_mean"] == "eval_env_steps"

    (curve,) = [r["learning_curve"] for r in logged["history"] if "learning_curve" in r]
    assert curve["_type"] == "image-file"
    assert (offline / "files" / curve["path"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # a resumed run (from a checkpoint at 200 env steps) goes on in the same W&B run
    with Outputs(run_dir, 400, progress=False, resume_env_steps=200,
                 wandb=WandbLogger.start(run_dir, WandbFlags(mode="offline"))) as outputs:
        outputs(report(300, 26.0))
        outputs(report(400, 27.0))
    wandb.teardown()
    first, second = offline_runs(run_dir.path)
    resumed = read_offline_run(second)
    assert first == offline and resumed["run"].run_id == run_id
    assert [r["env_steps"] for r in resumed["history"] if "env_steps" in r] == [300, 400]
    assert resumed["summary"]["episode_return_mean"] == 27.0


def test_wandb_flags_are_checked(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="wandb_mode must be one of online, offline, disabled, got 'ofline'"):
        WandbFlags(mode="ofline")
    monkeypatch.setenv("WANDB_MODE", "bogus")
    with pytest.raises(ValueError, match="WANDB_MODE must be one of online, offline, disabled .* got 'bogus'"):
        WandbLogger.start(RunDir.create(tmp_path, "ppo", "CartPole-v1", 0, {}), WandbFlags())


# The entry point run in a child process as `python -m` runs it, then whether wandb was imported;
# "no-package" first hides wandb, as on an install without the extra.
IN_PROCESS = textwrap.dedent("""
    import runpy, sys
    if sys.argv[1] == "no-package":
        sys.modules["wandb"] = None  # `import wandb` raises ImportError, find_spec finds nothing
    sys.argv = ["ppo", *sys.argv[2:]]
    code = 0
    try:
        runpy.run_module("experiments.ppo", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code or 0
    print("wandb imported:", sys.modules.get("wandb") is not None)
    sys.exit(code)
""")


def in_process(mode, *args):
    env = child_env(XLA_FLAGS="", JAX_COMPILATION_CACHE_DIR=str(JAX_CACHE), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    return subprocess.run([sys.executable, "-c", IN_PROCESS, mode, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow(seconds=25)
def test_a_cli_run_logs_offline_and_a_run_without_wandb_does_not_import_it(tmp_path):
    out = run_experiment("experiments.ppo", "--wandb", "--wandb_mode=offline", "--learning_rate=0.001",
                         "--total_env_steps=2048", f"--logdir={tmp_path}", "--noprogress", timeout=600,
                         learning_curve=True)
    assert out.returncode == 0, out.stderr[-3000:]
    (run_dir,) = tmp_path.iterdir()
    (offline,) = offline_runs(run_dir)
    logged = read_offline_run(offline)
    assert logged["run"].run_id == (run_dir / ID_FILE).read_text().strip()
    assert logged["config"]["agent"]["config"]["learning_rate"] == 0.001, "config.json is the W&B config"
    assert logged["config"] == json.loads((run_dir / "config.json").read_text())
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    assert len([r for r in logged["history"] if "env_steps" in r]) == len(rows)
    last = rows[-1]
    assert logged["summary"]["env_steps"] == int(last["env_steps"]) >= 2048
    assert logged["summary"]["episode_return_mean"] == pytest.approx(float(last["episode_return_mean"]))
    assert logged["summary"]["learning_curve"]["_type"] == "image-file"

    # the run goes on without W&B (a resume may turn it off): wandb is not even imported
    out = in_process("plain", "--resume", str(run_dir), "--nowandb", "--total_env_steps=3072", "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines()[-1] == "wandb imported: False"
    assert offline_runs(run_dir) == [offline]
    assert int(list(csv.DictReader((run_dir / "metrics.csv").open()))[-1]["env_steps"]) >= 3072


def one_line_error(out, tmp_path, names):
    assert out.returncode == 2, (out.returncode, out.stderr[-3000:])
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and names in lines[0], out.stderr[-3000:]
    assert not any(tmp_path.iterdir()), "a run that cannot start leaves no run directory"


@pytest.mark.slow(seconds=3)
def test_wandb_without_the_package_names_the_extra(tmp_path):
    out = in_process("no-package", "--wandb", f"--logdir={tmp_path}")
    one_line_error(out, tmp_path, 'W&B logging (--wandb) needs the wandb package: pip install -e ".[wandb]"')


@pytest.mark.slow(seconds=3)
@pytest.mark.parametrize("args, names", [
    (["--wandb", "--wandb_mode=ofline"], "flag --wandb_mode=ofline: value should be one of <online|offline|disabled>"),
    (["--wandb_project=mine"], "--wandb_project given without --wandb"),
])
def test_a_wandb_mistake_is_one_line(tmp_path, args, names):
    one_line_error(run_experiment("experiments.ppo", *args, f"--logdir={tmp_path}", timeout=300), tmp_path, names)

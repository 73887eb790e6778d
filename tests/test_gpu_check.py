"""benchmarks/gpu_check.sh, the GPU check in one device call: it parses, its dry run lists its
stages without running anything, and the tests it names by id still exist. (Its CPU mode runs
IMPALA Pong, PPO CartPole and PPO in the Anakin loop, about 2 minutes on 2 cores: too long for the
suite; it is run by hand, `bash benchmarks/gpu_check.sh`, and its summary is in BENCHMARKS.md.)"""

import importlib.util
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"
STAGES = ["install", "env", "pong", "ppo", "tests_gpu", "tests_multi", "offpolicy", "anakin", "planning"]


def dry_run(tmp_path, **extra: str):
    env = {**os.environ, "GPU_CHECK_OUT": str(tmp_path / "out"), **extra}
    env.pop("OUT", None)
    return subprocess.run(["bash", str(SCRIPT), "--dry-run"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)


def test_the_script_parses():
    out = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_a_dry_run_lists_every_stage_in_order_and_runs_nothing(tmp_path):
    out = dry_run(tmp_path)
    assert out.returncode == 0, out.stderr
    assert re.findall(r"^  stage (\w+)", out.stdout, re.M) == STAGES
    assert not (tmp_path / "out").exists()  # no summary, no log: nothing ran


def test_a_stage_list_naming_no_stage_is_refused_before_anything_runs(tmp_path):
    out = dry_run(tmp_path, GPU_CHECK_STAGES="tests_gpu,pongg")
    assert out.returncode == 2 and out.stderr.strip() == "GPU_CHECK_STAGES names no stage 'pongg' (see --dry-run)"
    assert dry_run(tmp_path, GPU_CHECK_STAGES="tests_gpu,pong").returncode == 0


def test_the_tests_it_names_still_exist(tmp_path):
    lines = dry_run(tmp_path).stdout.splitlines()
    named = {kind: [line.split(": ", 1)[1] for line in lines if line.startswith(f"  {kind}: ")]
             for kind in ("multi-device", "cpu-smoke", "device-file")}
    assert named["multi-device"] and named["device-file"]
    assert set(named["cpu-smoke"]) <= set(named["multi-device"])
    for path in named["device-file"]:
        assert (ROOT / path).is_file(), path
    for node in named["multi-device"]:
        path, _, test = node.partition("::")
        assert path in named["device-file"], node  # the GPU run deselects it from those files
        name, _, param = test.partition("[")
        text = (ROOT / path).read_text()
        assert re.search(rf"^def {name}\(", text, re.M), f"{node}: no such test"
        param = param.removesuffix("]")
        assert not param or re.fullmatch(r"[a-z_]+\d+", param) or f'"{param}"' in text, f"{node}: no such case"


def test_returns_are_read_at_a_frame_milestone():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _gpu_check import fmt, returns_at

    rows = [{"env_steps": "100000", "episode_return_mean": "nan"}, {"env_steps": "250000", "episode_return_mean": "-20.5"},
            {"env_steps": "500000", "episode_return_mean": "-19.0"}]
    assert returns_at(rows, 1e6) == -20.5 and returns_at(rows, 2e6) == -19.0 and returns_at(rows, 3e6) is None
    assert fmt(None) == fmt(float("nan")) == "—" and fmt(-13.64) == "-13.6"


def test_off_policy_rates_count_only_rows_past_learning_starts():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _gpu_check import learning_rates

    row = lambda t, steps, env, learning: {"wall_time": str(t), "learner_steps": str(steps),  # noqa: E731
                                           "env_steps": str(env), "learning": str(learning)}
    rows = [row(1, 10, 320, 0.0), row(3, 100, 3200, 1.0), row(5, 150, 4800, 1.0), row(7, 200, 6400, 1.0)]
    ups, eps, live = learning_rates(rows, 32)  # the warm-up row (fast: no optimizer steps) left out
    assert (ups, eps, live) == ((200 - 100) * 32 / 4, (6400 - 3200) / 4, 3)
    assert all(map(math.isnan, learning_rates(rows[:2], 32)[:2]))


@pytest.mark.slow(seconds=5)
def test_the_anakin_stage_says_why_it_skips_playground_or_which_pipeline_it_runs():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _gpu_check import playground_impl

    impl, why = playground_impl("auto")
    if importlib.util.find_spec("mujoco_playground") is None:
        assert impl is None
        assert why.startswith("mujoco_playground does not import here (ModuleNotFoundError: No module named"), why
    else:
        assert impl in ("jax", "warp") and why

"""MuJoCo Playground end to end (the `playground` extra, in dev): a small CartpoleBalance run from
the command line trains, checkpoints (MJX's state holds zero-size arrays, which orbax cannot
write), resumes and evaluates; the suite's own lines (Warp's, MJX's solver warnings) are in the
run's log.txt and not on the terminal."""

import json

import pytest

from tests.support.cli import last_metrics, run_experiment

ARGS = ("--env=playground/CartpoleBalance", "--env_kwargs=episode_length=40", "--num_envs=2", "--steps_per_cycle=16",
        "--num_minibatches=2", "--num_epochs=1", "--hidden_sizes=16,16",
        "--noprogress")
CHATTER = ("Warp", "load on device", "solver iterations", "warn_overflow", "CUDA")


def chatter(text: str) -> list[str]:
    return [line for line in text.splitlines() if any(word in line for word in CHATTER)]


@pytest.mark.slow(seconds=40)
def test_a_playground_run_trains_checkpoints_resumes_and_evaluates(tmp_path):
    out = run_experiment("experiments.ppo", *ARGS, f"--logdir={tmp_path}", "--total_env_steps=64")
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir, row = last_metrics(tmp_path)
    assert int(row["env_steps"]) == 64 and sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["2"]
    assert chatter(out.stdout + out.stderr) == []
    log = (run_dir / "log.txt").read_text()
    assert "Warp" in log and "load on device" in log, log[-3000:]  # its greeting, its kernels' modules

    out = run_experiment("experiments.ppo", f"--resume={run_dir}", "--total_env_steps=128", "--noprogress")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "resumed from checkpoint 2 (64 env steps)" in out.stderr and chatter(out.stdout + out.stderr) == []
    _, row = last_metrics(tmp_path)
    assert int(row["env_steps"]) == 128 and int(row["learner_steps"]) == 4

    out = run_experiment("experiments.evaluate", str(run_dir), "--episodes=2", "--num_envs=2")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("playground/CartpoleBalance, checkpoint 4, 2 episodes") and chatter(out.stdout + out.stderr) == []
    result = json.loads((run_dir / "eval.json").read_text())
    assert result["checkpoint"] == 4 and len(result["returns"]) == 2 and all(n == 40 for n in result["lengths"])

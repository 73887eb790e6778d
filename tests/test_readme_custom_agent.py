"""README's custom-agent example, run as written (in a fresh process, from a scratch directory):
it trains and leaves the same outputs as an entry point's run."""

import json
import re
import subprocess
import sys

import pytest

from tests.support.cli import ROOT, child_env


def readme_example(marker: str = "custom-agent-example") -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(rf"<!-- {marker} -->\n(?:<!-- docs-test: skip: [^\n]* -->\n)?```python\n(.*?)```", text, re.S)
    assert match, f"README lost its {marker}"
    return match.group(1)


@pytest.mark.slow(seconds=14)
def test_the_readme_custom_agent_example_runs_with_the_entry_points_outputs(tmp_path):
    env = child_env(XLA_FLAGS="")
    out = subprocess.run([sys.executable, "-c", readme_example()], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert run_dir.name in out.stdout and re.search(r"env steps [\d,]+(/20,000| \(the 20,000 budget reached\))", out.stderr)  # its print, the progress line
    for name in ("flags.json", "config.json", "metrics.csv", "learning_curve.png", "log.txt"):
        assert (run_dir / name).is_file(), name
    assert any(p.name.startswith("events.out.tfevents") for p in run_dir.iterdir())
    assert json.loads((run_dir / "flags.json").read_text()) == {"note": "first try"}
    assert json.loads((run_dir / "config.json").read_text())["agent"]["class"].endswith("SimplePolicyGradient")
    assert sorted(int(p.name) for p in (run_dir / "checkpoints").iterdir() if p.name.isdigit())[-1] >= 20
    rows = (run_dir / "metrics.csv").read_text().splitlines()
    assert int(rows[-1].split(",")[0]) >= 20_000


@pytest.mark.slow(seconds=30)
def test_the_readme_off_policy_agent_learns_cartpole(tmp_path):
    """The README's DQN on OffPolicyAgent (replay, replay ratio, warm-up, target network from the
    base): under 40 lines of agent, and it learns (the random policy's CartPole return is ~22)."""
    code = readme_example("custom-off-policy-example")
    agent_lines = code[code.index("class MyDQN"):code.index("agent = MyDQN")].strip().splitlines()
    assert len(agent_lines) < 40, len(agent_lines)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=child_env(XLA_FLAGS=""), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    path, final = out.stdout.split()[-2:]
    assert path == f"runs/{run_dir.name}" and float(final) >= 150, out.stdout

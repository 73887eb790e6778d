"""A user's own agent reloads: one defined in a module (tests/support/agents.py) is trained with
`runner.run`, then rebuilt by the name config.json records, through `sebulba.load_policy` and
`python -m experiments.evaluate RUN`, which agree; one defined in a script's `__main__` says at
the start of its run that it cannot be reloaded by name, and reloads with
`load_policy(run_dir, agent=...)`, its class or an object."""

import json
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import envs
import sebulba
from sebulba.experiment.runner import CheckpointFlags, run
from sebulba.experiment.trained import build_agent, open_run
from sebulba.loop.evaluator import Evaluator
from tests.support.agents import LinearPG, LinearPGConfig
from tests.support.cli import child_env, run_experiment

CONFIG = LinearPGConfig(learning_rate=0.02, init_bias=(0.25, -0.25))
LOOP = sebulba.LoopConfig(env_id="CartPole-v1", num_envs=8, steps_per_cycle=16, async_mode=False,
                          inferencers_per_device=1, log_every_s=1e3)


@pytest.mark.slow(seconds=11)
def test_an_agent_of_a_module_trains_reloads_by_name_and_evaluates(tmp_path):
    agent = LinearPG(envs.make_spec("CartPole-v1"), CONFIG)
    result = run("custom", agent, LOOP, total_env_steps=2048, logdir=str(tmp_path), flags={}, progress=False,
                 checkpoints=CheckpointFlags(every_learner_steps=8))
    run_dir = result.run_dir.path
    record = json.loads((run_dir / "config.json").read_text())
    assert record["agent"] == {"class": "tests.support.agents.LinearPG",
                               "config": {"learning_rate": 0.02, "discount": 0.99, "init_bias": [0.25, -0.25]}}
    assert "cannot rebuild" not in (run_dir / "log.txt").read_text()  # no warning at its start

    policy = sebulba.load_policy(run_dir)
    assert type(policy.agent) is LinearPG and policy.agent.config == CONFIG  # rebuilt from config.json
    init = agent.init_networks(jax.random.key(0))
    assert not np.allclose(policy.networks["w"], init["w"])  # the checkpoint's networks, trained
    obs, _ = envs.make("CartPole-v1", num_envs=4, seed=5).reset()
    action, _ = policy.act(obs)
    expected = np.argmax(obs @ np.asarray(policy.networks["w"]) + np.asarray(policy.networks["b"]), -1)
    np.testing.assert_array_equal(action, expected)  # its own evaluation_step: greedy on its logits

    out = run_experiment("experiments.evaluate", str(run_dir), "--episodes=4", "--seed=3", timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    evaluated = json.loads((run_dir / "eval.json").read_text())
    _, record = open_run(run_dir)
    with Evaluator(build_agent(record), "CartPole-v1", {}, 4, seed=3) as evaluator:
        here = evaluator.run(policy.networks, 4, jax.random.key(3))
    assert evaluated["returns"] == here.returns.tolist() and evaluated["checkpoint"] == result.checkpoint_step


SCRIPT = textwrap.dedent("""
    import json, subprocess, sys
    import numpy as np
    import envs, sebulba
    from sebulba.experiment.runner import CheckpointFlags, run
    from tests.support.agents import LinearPG, LinearPGConfig

    class ScriptPG(LinearPG):  # defined in the script: __main__.ScriptPG
        pass

    spec = envs.make_spec("CartPole-v1")
    loop = sebulba.LoopConfig(env_id="CartPole-v1", num_envs=8, steps_per_cycle=16, async_mode=False,
                              inferencers_per_device=1, log_every_s=1e3)
    config = LinearPGConfig(init_bias=(0.5, -0.5))
    result = run("script", ScriptPG(spec, config), loop, total_env_steps=1024, logdir="runs", flags={},
                 progress=False, checkpoints=CheckpointFlags(every_learner_steps=4))
    path = result.run_dir.path
    try:
        sebulba.load_policy(path)
        by_name = None
    except ValueError as e:
        by_name = str(e)
    by_class = sebulba.load_policy(path, agent=ScriptPG)
    by_object = sebulba.load_policy(path, agent=ScriptPG(spec))
    obs, _ = envs.make("CartPole-v1", num_envs=4, seed=5).reset()
    print(json.dumps({
        "run_dir": str(path), "by_name": by_name,
        "class_config": by_class.agent.config == config, "object_config": by_object.agent.config == LinearPGConfig(),
        "same_networks": all(np.array_equal(by_class.networks[k], by_object.networks[k]) for k in ("w", "b")),
        "same_actions": np.array_equal(by_class.act(obs)[0], by_object.act(obs)[0]),
        "bias": np.asarray(by_class.networks["b"]).tolist(),
    }))
""")


@pytest.mark.slow(seconds=16)
def test_an_agent_of_a_script_says_so_at_its_start_and_reloads_when_given(tmp_path):
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=child_env(XLA_FLAGS=""),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.splitlines()[-1])
    how = "move the class into a module that can be imported, or pass it to sebulba.load_policy(run_dir, agent=...)"
    warning = ("experiments.evaluate and sebulba.load_policy cannot rebuild this run's agent by name: __main__.ScriptPG "
               f"cannot be imported by name (it is defined in a script or a function): {how}")
    assert f"warning: {warning}" in out.stderr.splitlines(), out.stderr[-3000:]  # one line, at the start (see log.txt)
    log = (tmp_path / got["run_dir"] / "log.txt").read_text().splitlines()
    assert log[0].endswith(f"run directory: {got['run_dir']}") and log[1].endswith(warning)
    assert got["by_name"] == f"{got['run_dir']}: the run's agent {warning.split('by name: ')[1]}"
    assert got["class_config"] and got["object_config"] and got["same_networks"] and got["same_actions"]
    assert got["bias"] != [0.5, -0.5]  # the checkpoint's (trained) bias, not the config's initial one

    out = run_experiment("experiments.evaluate", str(tmp_path / got["run_dir"]), timeout=300)
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1 and "__main__.ScriptPG cannot be imported by name" in lines[0] \
        and "sebulba.load_policy(run_dir, agent=...)" in lines[0], out.stderr[-3000:]


def test_a_class_that_cannot_be_rebuilt_from_its_config_is_a_clear_error(tmp_path):
    record = {"agent": {"class": "tests.support.agents.LinearPG", "config": {"learning_rate": 0.1, "momentum": 0.9}},
              "loop": {"env_id": "CartPole-v1", "env_kwargs": {}}}
    with pytest.raises(ValueError, match="the run's agent config has momentum, which LinearPG's LinearPGConfig lacks"):
        build_agent(record)

    class TwoArgs(LinearPG):
        def __init__(self, env_spec, width, config: LinearPGConfig = LinearPGConfig()):  # width: not rebuildable
            super().__init__(env_spec, config)

    record["agent"]["config"] = {"learning_rate": 0.1}
    rebuilt = r"cannot be rebuilt as .*TwoArgs\(env_spec, config=config\): .*missing 1 required .*'width'"
    with pytest.raises(ValueError, match=rebuilt):
        build_agent(record, agent=TwoArgs)
    with pytest.raises(ValueError, match="agent must be an Agent subclass or an Agent object, got 3"):
        build_agent(record, agent=3)
    assert build_agent(record, agent=TwoArgs(envs.make_spec("CartPole-v1"), 3)).config == LinearPGConfig()
    assert build_agent(record).config == LinearPGConfig(learning_rate=0.1)

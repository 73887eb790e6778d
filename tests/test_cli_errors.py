"""A user's ordinary mistakes on the CLI print one clear line naming the flag or the package,
with no traceback (`--debug` shows it); a failure that is not the user's keeps its traceback."""

import subprocess
import sys
import textwrap

import pytest

from tests.support.cli import ROOT, child_env, run_experiment

CASES = [
    # (entry point, args, exit status, what the one line must name)
    ("experiments.impala", ["--hidden_sizes=64,abc"], 2, "--hidden_sizes takes comma-separated integers"),
    ("experiments.r2d2", ["--learning_rate=-1"], 2, "learning_rate must be > 0, got -1.0"),
    ("experiments.impala", ["--total_env_steps=0"], 2, "flag --total_env_steps=0: 0 is not a positive integer"),
    ("experiments.r2d2", ["--num_envs=-3"], 2, "flag --num_envs=-3"),
    ("experiments.impala", ["--torso=bogus"], 2, "flag --torso=bogus"),
    ("experiments.impala", ["--no_such_flag=1"], 2, "Unknown command line flag 'no_such_flag'"),
    ("experiments.impala", ["--env=LunarLander-v3"], 2, "gymnasium[box2d]"),
    ("experiments.r2d2", ["--env=Nope-v0"], 2, "unknown task id 'Nope-v0'"),
    ("experiments.r2d2", ["--env=Pendulum-v1"], 2, "R2D2 needs a Discrete action space"),
    ("experiments.impala", ["--resume=/nonexistent/run"], 2, "/nonexistent/run is not a run directory"),
    # an env the loop asked for cannot step: refused before anything is built (no warning, no directory)
    ("experiments.ppo", ["--env=Pong-v5", "--loop=anakin"], 2, "'Pong-v5' has no compiled stateless step yet"),
    ("experiments.ppo", ["--env=pettingzoo/mpe2/simple_spread_v3", "--loop=anakin"], 2,
     "'pettingzoo/mpe2/simple_spread_v3' has no compiled stateless step yet: train it with --loop sebulba"),
    # a run that cannot fit in this machine's memory: the estimate, before anything is built
    ("experiments.impala", ["--num_envs=100000000"], 2, "this run needs at least"),
    ("experiments.ppo", ["--env=gymnax/CartPole-v1", "--num_envs=10000000"], 2, "fewer envs (--num_envs, 10,000,000 now)"),
    ("experiments.dqn", ["--replay_capacity=1e11"], 2, "a smaller replay (--replay_capacity)"),
    # recurrent cores (issue 53): a size without a core, a core on an agent without one, a minibatch
    # count that would cut the envs' sequences unevenly
    ("experiments.ppo", ["--core_size=16"], 2, "--core_size 16 sizes a recurrent core and this run has none: add --core"),
    ("experiments.dqn", ["--core=lstm"], 2, "--core: this agent takes no recurrent core; experiments.ppo, "
                                            "experiments.impala and experiments.pqn take --core lstm or --core gru"),
    ("experiments.ppo", ["--core=gru", "--num_minibatches=3"], 2, "--num_minibatches=3 must divide each learner "
                                                                  "device's 8 envs (--num_envs / learner devices)"),
]


@pytest.mark.slow(seconds=3)
@pytest.mark.parametrize("module, args, status, names", CASES, ids=[f"{m.split('.')[1]}{a[0]}" for m, a, _, _ in CASES])
def test_a_users_mistake_is_one_line(tmp_path, module, args, status, names):
    out = run_experiment(module, *args, f"--logdir={tmp_path}", "--noprogress", timeout=300)
    assert out.returncode == status, (out.returncode, out.stderr[-3000:])
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and names in lines[0], out.stderr[-3000:]
    assert not any(tmp_path.iterdir()), "a run that cannot start leaves no run directory"


@pytest.mark.slow(seconds=3)
def test_debug_shows_the_traceback(tmp_path):
    out = run_experiment("experiments.impala", "--hidden_sizes=64,abc", "--debug", f"--logdir={tmp_path}", timeout=300)
    assert out.returncode == 1 and "Traceback" in out.stderr and "UserError" in out.stderr, out.stderr[-3000:]


SCRIPT = textwrap.dedent("""
    import sys
    from sebulba.experiment import cli

    cli.define_loop_flags("CartPole-v1")

    def main(argv):
        if sys.argv[-1] == "mistake":
            with cli.user_input():
                raise ValueError("learning_rate must be > 0")
        with cli.user_input():
            pass
        raise ValueError("a bug: raised once the run is going, outside user_input")

    cli.run_main(main)
""")


@pytest.mark.parametrize("what", ["mistake", "bug"])
def test_only_the_run_input_is_told_in_one_line(what):
    env = child_env()
    out = subprocess.run([sys.executable, "-c", SCRIPT, what], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    if what == "mistake":
        assert out.returncode == 2 and out.stderr.strip() == "error: learning_rate must be > 0 (--debug shows the traceback)"
    else:
        assert out.returncode == 1 and "Traceback" in out.stderr and "a bug: raised once the run is going" in out.stderr


@pytest.mark.parametrize("module, flag, presets", [
    ("experiments.impala", "--help", "[presets: vector/image mean; MinAtar sum; tabular/structured sum; continuous mean; "
                                        "Atari sum; multi-player Atari sum; memory (CartPoleNoVelocity) mean; Acrobot mean]"),
    ("experiments.ppo", "--help", "[presets: discrete 4; MinAtar 4; built-in continuous 10; MuJoCo 10; Atari 4; multi-"),
    ("experiments.r2d2", "--helpfull", "[presets: vector/image/tabular 20000; MountainCar 20000; CartPoleNoVelocity-v1 2000; "
                                       "Atari 25000]"),
])
@pytest.mark.slow(seconds=3)
def test_help_shows_the_presets_values_and_exits_0(module, flag, presets):
    out = run_experiment(module, flag, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert presets in " ".join((out.stdout + out.stderr).split()), (out.stdout + out.stderr)[-3000:]

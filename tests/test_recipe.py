"""Every entry point (experiments.impala, ppo, r2d2) follows the one recipe
(sebulba.experiment.recipe): it declares an Algorithm, and its make_experiment, flags, --help
and main() are the recipe's; its learning rate decays over the optimizer steps of the run's budget."""

import json
import subprocess
import sys

import pytest

from tests.support.cli import ROOT, child_env

# The entry points define their flags on import, so each is read in a process of its own.
SCRIPT = """
import json, sys
from sebulba.experiment import cli
from sebulba.experiment.presets import Preset
from sebulba.experiment.recipe import Algorithm
module = __import__("experiments." + sys.argv[1], fromlist=["ALGORITHM"])
algorithm = module.ALGORITHM
presets = [v for k, v in vars(module).items() if k.isupper() and isinstance(v, Preset)]
key_flags = {f.name for f in cli.FLAGS.get_key_flags_for_module(module.__name__)}
print(json.dumps({
    "recipe": isinstance(algorithm, Algorithm) and module.make_experiment == algorithm.make_experiment
              and module.preset is algorithm.preset and not hasattr(module, "main"),
    "presets": all(any(p is q for q in presets) for p in algorithm.presets.values()),
    "key_flags": sorted(set(algorithm.flags) - key_flags) + sorted({"env", "seed", "resume"} - key_flags),
    "decay": {env: module.make_experiment(env).agent.lr_decay_steps for env in sys.argv[2:]},
}))
"""

# Optimizer steps of each preset's budget: learner updates (one per inferencer cycle, whole rounds
# of the inferencers) x optimizer steps per update.
CASES = [
    # IMPALA: 400k / (32 envs x 20) = 625 updates x 1 minibatch; Pendulum: 500k / (8 x 8) = 7812.5 -> 7813
    ("impala", {"CartPole-v1": 625, "Pendulum-v1": 7813}),
    # PPO: 200k / (8 x 128) = 195.3 -> 196 updates x 4 epochs x 4 minibatches
    ("ppo", {"CartPole-v1": 196 * 16}),
    # R2D2: 500k / (16 envs x 10 steps) = 3125 updates x 8 optimizer steps; Atari: the paper's constant rate
    ("r2d2", {"CartPole-v1": 25_000, "CartPoleNoVelocity-v1": 25_000, "Pong-v5": None}),
]


@pytest.mark.parametrize("agent, decay", CASES, ids=[c[0] for c in CASES])
def test_every_entry_point_follows_the_recipe(agent, decay):
    env = child_env()
    out = subprocess.run([sys.executable, "-c", SCRIPT, agent, *decay], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["recipe"] and got["presets"]
    assert got["key_flags"] == [], "flags missing from the entry point's --help"
    assert got["decay"] == decay


def test_learner_updates_count_the_jobs_env_steps():
    """A learning-rate schedule spans the job's budget: in a job of P processes each update takes
    P x num_envs x T env steps, so it spans 1/P of the updates of one process."""
    from sebulba.experiment.cli import Experiment, learner_updates
    from sebulba.loop.config import LoopConfig

    exp = Experiment(LoopConfig(env_id="CartPole-v1", num_envs=8, steps_per_cycle=128), None, 204_800)
    assert learner_updates(exp) == 200
    assert learner_updates(exp, processes=2) == 100
    assert exp.loop.num_inferencers == 2
    assert learner_updates(exp, processes=3) == 68  # 66.7 rounded up to whole rounds of both inferencers

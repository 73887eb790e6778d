"""One process of a 2-process training job (tests/test_multihost.py): joins through
jax.distributed on 127.0.0.1, trains SPG on CartPole with its own inferencers and env pools and
the learner over both processes' learner devices, then writes its networks and counters."""

import json
import sys

from sebulba.experiment import distributed


def main(address: str, process_id: int, out: str, async_mode: bool) -> None:
    assert distributed.initialize(address, 2, process_id)
    import jax
    import numpy as np

    import envs
    import sebulba
    from sebulba.agents import SimplePolicyGradient, SPGConfig

    assert jax.process_count() == 2 and len(jax.local_devices()) == 2 and len(jax.devices()) == 4
    cfg = sebulba.LoopConfig(num_envs=4, steps_per_cycle=10, actor_devices=(0,), learner_devices=(0, 1),
                             inferencers_per_device=1, async_mode=async_mode, seed=3, log_every_s=1000.0)
    agent = SimplePolicyGradient(envs.make_spec("CartPole-v1"), SPGConfig(hidden_sizes=(16,)))
    with sebulba.GymnasiumLoop(agent, cfg) as loop:
        assert loop.sharding.num_devices == 4
        ctx = loop.run(max_cycles=6)
        nets = {"/".join(str(k) for k in path): np.asarray(x.addressable_data(0)).tolist()
                for path, x in jax.tree_util.tree_leaves_with_path(loop.learner.networks)}
        report = loop.reports[-1]
    with open(out, "w") as f:
        json.dump({"networks": nets, "env_steps": ctx.env_steps, "learner_steps": ctx.learner_steps,
                   "loss": report.get("loss"), "episodes": report["episodes"]}, f)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "async")

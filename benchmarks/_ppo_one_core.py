"""`python -m experiments.ppo` with PureJaxRL ppo_rnn.py's network shape, for
benchmarks/bench_recurrent_speed.py: one torso shared by the policy and the value (so one core,
not one per torso) and relu, PPOConfig's `separate_critic=False, activation="relu"`, which no
flag sets; set here on the env's preset (as ATARI's preset does), every flag as in
experiments.ppo.

    python -m benchmarks._ppo_one_core --env gymnax/CartPole-v1 --core gru ...
"""

import dataclasses

from experiments import ppo


def preset(env_id: str, env_kwargs: dict | None = None):
    p = ppo.preset(env_id, env_kwargs)
    return p.replace(agent=dataclasses.replace(p.agent, separate_critic=False, activation="relu"))


if __name__ == "__main__":
    dataclasses.replace(ppo.ALGORITHM, preset=preset).main()

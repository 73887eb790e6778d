"""What a trained MuZero's model says each action is worth, against what it is worth: along the
greedy trajectory of a gymnax MinAtar run (issue 57's Breakout-MinAtar plateau), each step's
one-step model Q-values, r(s, a) + gamma v(g(s, a)), beside the true Q-values of the greedy policy
(the env's state branched, action a taken, then the greedy policy followed to the episode's end,
discounted by the run's gamma). A diagnostic: it prints the steps and a summary, writes nothing.

    python benchmarks/probe_muzero_q.py runs/<a MuZero gymnax/*-MinAtar run> [--seed 0] [--gap 0.5]

The summary counts the states where another action is worth at least --gap more than the greedy
one under the greedy policy itself (where one step of policy improvement would gain), and how often
the model ranks that better action above the greedy one there.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sebulba.agents.muzero.networks import MuZeroNet  # noqa: E402
from sebulba.agents.r2d2.returns import signed_parabolic  # noqa: E402
from sebulba.experiment.trained import load_policy  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--seed", type=int, default=0, help="the episode's reset key")
    parser.add_argument("--gap", type=float, default=0.5, help="a true Q gap that counts as a better action")
    parser.add_argument("--max_steps", type=int, default=2000)
    args = parser.parse_args()
    import gymnax

    flags = json.loads((args.run_dir / "flags.json").read_text())
    if not flags["env"].startswith("gymnax/"):
        parser.error(f"{args.run_dir} trained on {flags['env']}: the probe branches a gymnax env's state")
    policy = load_policy(args.run_dir, greedy=True, seed=args.seed)
    agent, params = policy.agent, policy.networks.online
    gamma, eps = agent.config.discount, agent.config.rescaling_eps
    env, env_params = gymnax.make(flags["env"].removeprefix("gymnax/"))
    num_actions = agent.num_actions
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))

    def pool_obs(obs) -> np.ndarray:  # gymnax's [B, H, W, C] as the pool serves MinAtar: [B, C, H, W] float32
        return np.transpose(np.asarray(obs, np.float32), (0, 3, 1, 2))

    @jax.jit
    def model_q(obs):
        latent = agent.net.apply(params, obs, method=MuZeroNet.represent)
        q = []
        for a in range(num_actions):
            nxt, r = agent.net.apply(params, latent, jnp.full(obs.shape[0], a), method=MuZeroNet.dynamics)
            v = agent.net.apply(params, nxt, method=MuZeroNet.predict).value
            q.append(signed_parabolic(r, eps) + gamma * signed_parabolic(v, eps))
        return jnp.stack(q, -1)

    def true_q(state, key) -> np.ndarray:
        """Each action's discounted return: taken in `state`, then the greedy policy to the end."""
        states = jax.tree.map(lambda x: jnp.repeat(x, num_actions, 0), state)
        total, discount = np.zeros(num_actions), np.ones(num_actions)
        alive, actions, acting = np.ones(num_actions, bool), np.arange(num_actions), None
        for _ in range(args.max_steps):
            key, k = jax.random.split(key)
            obs, states, r, terminated, truncated, _ = step(jax.random.split(k, num_actions), states,
                                                             jnp.asarray(actions), env_params)
            total += discount * np.asarray(r) * alive
            discount *= gamma
            alive &= ~(np.asarray(terminated) | np.asarray(truncated))
            if not alive.any():
                break
            actions, acting = policy.act(pool_obs(obs), acting)
        return total

    key, k = jax.random.split(jax.random.key(args.seed))
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k, 1), env_params)
    acting, ret, better, ranked = None, 0.0, 0, 0
    for t in range(args.max_steps):
        action, acting = policy.act(pool_obs(obs), acting)
        a = int(action[0])
        truth = true_q(state, jax.random.key(t))
        model = np.asarray(model_q(jnp.asarray(pool_obs(obs)))[0])
        best = int(np.argmax(truth))
        mark = ""
        if truth[best] - truth[a] >= args.gap:
            better += 1
            ranked += int(model[best] > model[a])
            mark = " <- better: " + ("the model ranks it above" if model[best] > model[a] else "the model does not")
        print(f"t {t:4d} return {ret:5.1f} action {a} model Q {np.round(model, 2)} true Q {np.round(truth, 2)}{mark}")
        key, k = jax.random.split(key)
        obs, state, r, terminated, truncated, _ = step(jax.random.split(k, 1), state, jnp.asarray(action), env_params)
        ret += float(r[0])
        if bool(terminated[0] | truncated[0]):
            break
    print(f"\nreturn {ret:.1f} in {t + 1} steps; {better} states where another action is worth >= {args.gap} more "
          f"than the greedy one under the greedy policy; the model ranks it above the greedy one at {ranked}")


if __name__ == "__main__":
    main()

"""Evaluation episodes: an agent's evaluation policy (`Agent.evaluation_step`) playing complete
episodes on an env pool of its own, never the training envs (whose episodes must not be cut).

Each of the pool's N envs plays its share of the K episodes (env i plays (K + i) // N, as SB3's
`evaluate_policy`), so short episodes are not over-represented when N > 1. An episode that hits
the task's `max_episode_steps` counts as finished (truncated): an evaluation always ends. In a
multi-player pool K counts the envs' episodes, each one an episode of every player: its rows
(env, player) each read their player's episode once (`sebulba.episodes.ends`), and the result
holds every player's return in each episode, its teams' returns and win rates
(`sebulba.loop.opponents`). `opponent="random"` evaluates one team against random players:
every row acts with the policy (its step state goes on as in self-play), then the other teams'
rows take uniformly random legal actions instead; `opponent="mcts"` has a pure Monte-Carlo tree
search play them (`sebulba.loop.mcts_player`, on a turn-based JAX game's true model). Where a
player needs the envs' own states (that opponent, or an agent that `plans_with_env`), the
episodes are played on a `StatePool` of the JAX env, the same envs as the pool's.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np

import envs
import envs.players
from sebulba.episodes import advance, ends
from sebulba.agent import Agent
from sebulba.game_model import GameModel
from sebulba.loop.mcts_player import PureMCTS
from sebulba.loop.opponents import RandomOpponent, check_opponent, team_partition, team_returns, wins
from sebulba.loop.state_pool import StatePool
from sebulba.types import EnvStep


@dataclasses.dataclass(frozen=True)
class EvalResult:
    """The returns and lengths of the complete episodes one evaluation played; in a multi-player pool,
    also every player's return per episode and its teams."""

    returns: np.ndarray  # float64 [K x P], each player's episodes, in the order they finished
    lengths: np.ndarray  # int64 [K x P]
    players: np.ndarray | None = None  # int64 [K x P]: whose episode each is (multi-player pools)
    episode_returns: np.ndarray | None = None  # float64 [K, P]: every player's return in each episode (multi-player)
    player_names: tuple[str, ...] = ()
    team_of: tuple[int, ...] = ()  # each player's team (sebulba.loop.opponents.team_partition)
    team_names: tuple[str, ...] = ()
    trained_team: str | None = None  # opponent="random": the team that played the policy
    cooperative: bool = False  # the players share one goal (envs.players.cooperative): nobody wins

    def team_returns(self) -> np.ndarray:
        """[K, T]: each team's return (its players' mean) in each episode."""
        return team_returns(self.episode_returns, self.team_of)

    def summary(self) -> dict[str, float]:
        """The return's mean, std, min and max over every player's episodes, the mean length and
        the episode count; in a multi-player pool also each player's mean return
        (`eval_return_mean_player{i}`), each team's (`eval_return_mean_{team}`), and unless the
        task is cooperative each team's win rate (`eval_win_rate_{team}`: the share of episodes it
        won) and the draws' (no winner)."""
        r, n = self.returns, self.lengths
        out = {"eval_return_mean": float(r.mean()), "eval_return_std": float(r.std()),
               "eval_return_min": float(r.min()), "eval_return_max": float(r.max()),
               "eval_length_mean": float(n.mean()), "eval_episodes": float(len(r))}
        if self.episode_returns is None:
            return out
        out["eval_episodes"] = float(len(self.episode_returns))
        out.update({f"eval_return_mean_player{i}": float(m) for i, m in enumerate(self.episode_returns.mean(axis=0))})
        team = self.team_returns()
        for t, name in enumerate(self.team_names):
            out[f"eval_return_mean_{name}"] = float(team[:, t].mean())
        if not self.cooperative:
            won = wins(team)
            out.update({f"eval_win_rate_{name}": float(won[:, t].mean()) for t, name in enumerate(self.team_names)})
            out["eval_draw_rate"] = float((~won.any(axis=1)).mean())
        return out


def acting(agent: Agent, greedy: bool = True) -> Callable[[Any, Any, EnvStep], tuple[jax.Array, Any]]:
    """The jitted `(networks, step_state, env_step) -> (action, step_state)` of the agent's
    evaluation policy (greedy) or its behaviour policy (`step`)."""
    policy = agent.evaluation_step if greedy else agent.step

    def act(networks, step_state, env_step):
        out, step_state = policy(networks, step_state, env_step)
        return agent.as_actor_output(out).action, step_state

    return jax.jit(act)


# on_step(obs, reward, terminated, truncated, episode_returns_so_far): after every pool step
StepCallback = Callable[[Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray], None]


class Evaluator:
    """Plays evaluation episodes with `agent` on a sync pool of `num_envs` envs of `env_id`.
    `opponent`: "self" (every player acts with the agent), "random" or "mcts" (a multi-player env:
    the team `run` names acts with the agent, the others at random or by pure MCTS with
    `mcts_simulations`; sebulba.loop.opponents)."""

    def __init__(self, agent: Agent, env_id: str, env_kwargs: Mapping[str, Any] | None = None, num_envs: int = 1,
                 seed: int = 0, greedy: bool = True, device: jax.Device | None = None, opponent: str = "self",
                 mcts_simulations: int = 200):
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        check_opponent(opponent, 2, env_id)  # the name first, before a pool is built
        self.agent = agent
        self.num_envs = num_envs
        self.device = device or jax.local_devices()[0]
        kwargs = {k: v for k, v in dict(env_kwargs or {}).items() if k not in ("num_envs", "batch_size", "seed")}
        self._with_state = agent.plans_with_env or opponent == "mcts"
        # the pure-MCTS player first: a game it cannot play is refused before a pool is built
        self._mcts = PureMCTS(GameModel.of(env_id), mcts_simulations) if opponent == "mcts" else None
        with jax.default_device(self.device):
            self.pool = (StatePool(env_id, kwargs, num_envs, seed) if self._with_state
                         else envs.make(env_id, num_envs=num_envs, seed=seed, **kwargs))
        try:
            self.cooperative = self.pool.num_players > 1 and envs.players.cooperative(env_id)
            self.opponent = check_opponent(opponent, self.pool.num_players, env_id, self.cooperative)
            names = tuple(self.pool.spec.player_names or ()) or tuple(f"player {i}" for i in range(self.pool.num_players))
            self.player_names = names
            team_of, team_names = team_partition(names)
            self.team_of, self.team_names = tuple(team_of), tuple(team_names)
            self._random = (RandomOpponent(self.pool.action_space, self.pool.observation_space, seed)
                            if opponent == "random" else None)
        except BaseException:
            self.pool.close()
            raise
        self._act = acting(agent, greedy)

    def _opponents(self, obs: Any, rows: np.ndarray) -> np.ndarray:
        """The opponents' actions for these rows: random, or the pure-MCTS player's."""
        if self._mcts is None:
            return self._random(obs, rows)
        self._mcts_key, key = jax.random.split(self._mcts_key)
        return np.asarray(self._mcts(self.pool.state, obs, key))[rows]

    def _trained_rows(self, team: str | None) -> np.ndarray | None:
        """Rows whose player is in `team` (bool [rows]); None: every row plays the policy."""
        if self.opponent == "self":
            if team is not None:
                raise ValueError(f"team={team!r} names the side that plays random players: it needs opponent='random'")
            return None
        if team not in self.team_names:
            raise ValueError(f"opponent='random' needs the team that plays the policy, one of "
                             f"{', '.join(map(repr, self.team_names))}; got {team!r}")
        trained = np.asarray(self.team_of) == self.team_names.index(team)
        return np.tile(trained, self.num_envs)

    def run(self, networks: Any, episodes: int, key: jax.Array, on_step: StepCallback | None = None,
            team: str | None = None) -> EvalResult:
        """`episodes` complete episodes (a fresh reset of every env first) with these networks;
        with opponent="random", `team`'s players play them against random players."""
        if not isinstance(episodes, int) or episodes < 1:
            raise ValueError(f"episodes must be a positive int, got {episodes!r}")
        trained = self._trained_rows(team)
        self._mcts_key = jax.random.fold_in(key, 1)  # the pure-MCTS player's searches (the agent's key unchanged)
        p = self.pool.num_players
        n = self.num_envs * p  # rows
        env_targets = np.array([(episodes + e) // self.num_envs for e in range(self.num_envs)])
        targets = np.repeat(env_targets, p) if p > 1 else np.array([(episodes + i) // n for i in range(n)])
        by_row: list[list[float]] = [[] for _ in range(n)]
        with jax.default_device(self.device):
            networks = jax.device_put(networks, self.device)
            step_state = self.agent.init_step_state(networks, n, key)
            obs, info = self.pool.reset()
            reward, terminated, truncated = np.zeros(n, np.float32), np.zeros(n, bool), np.zeros(n, bool)
            final = np.zeros(n, bool)
            first = info["elapsed_step"] == 0
            running, length, counts = np.zeros(n), np.zeros(n, np.int64), np.zeros(n, np.int64)
            returns, lengths, players = [], [], []
            while (counts < targets).any():
                env_step = EnvStep(obs, reward, terminated, truncated, first,
                                   self.pool.state if self.agent.plans_with_env else ())
                action, step_state = self._act(networks, step_state, env_step)
                action = np.asarray(action)
                if trained is not None:
                    action = action.copy()
                    action[~trained] = self._opponents(obs, np.flatnonzero(~trained))
                obs, reward, terminated, truncated, info = self.pool.step(action)
                first = info["elapsed_step"] == 0
                running, length = advance(running, length, reward, first, np)
                done = ends(terminated | truncated, final)
                final = terminated | truncated
                for i in np.flatnonzero(done & (counts < targets)):
                    returns.append(running[i])
                    lengths.append(length[i])
                    players.append(i % p)
                    by_row[i].append(running[i])
                    counts[i] += 1
                if on_step is not None:
                    on_step(obs, reward, terminated, truncated, running)
        result = EvalResult(np.asarray(returns, np.float64), np.asarray(lengths, np.int64))
        if p == 1:
            return result
        per_episode = [[by_row[e * p + q][j] for q in range(p)] for e in range(self.num_envs) for j in range(env_targets[e])]
        return dataclasses.replace(result, players=np.asarray(players, np.int64),
                                   episode_returns=np.asarray(per_episode, np.float64), player_names=self.player_names,
                                   team_of=self.team_of, team_names=self.team_names, trained_team=team,
                                   cooperative=self.cooperative)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class PeriodicEvaluation:
    """Evaluation during training, as middleware (DI-engine's `interaction_evaluator`): every
    `every` env steps, `evaluator.run` with the networks the actors would take from the staging
    area, in a thread of its own on the evaluator's (actor) device, so learning goes on meanwhile.
    Each result goes to `report` (the run's metrics sink) as a row of its own, from the loop's
    thread, with the env step its networks belong to (`eval_env_steps`) and its cost in seconds
    (`eval_s`). In async mode an evaluation
    that comes due while the last still runs waits for the next iteration (learning never
    stalls); in sync mode the loop waits for it instead, so every evaluation is of the networks
    at its due step and a run stays reproducible. With `total_env_steps`, the last evaluation is
    awaited when the budget is reached, so the final report has it. A failure in the thread is
    raised in the loop's thread at the next iteration."""

    KEYS = ("eval_return_mean", "eval_return_std", "eval_length_mean", "eval_env_steps", "eval_s")

    def __init__(self, staging: Any, evaluator: Evaluator, every: int, episodes: int, seed: int, block: bool,
                 report: Callable[[dict], None], total_env_steps: int | None = None,
                 start_env_steps: int | None = None):
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"eval_every must be a positive number of env steps, got {every!r}")
        self.staging, self.evaluator, self.every, self.episodes = staging, evaluator, every, episodes
        self.block, self.total, self.report = block, total_env_steps, report
        self._key = jax.random.key(seed)
        # the first due step: after where the run starts (or resumes), when known; else after the
        # first iteration's count
        self._next: int | None = None if start_env_steps is None else (start_env_steps // every + 1) * every
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._results: list[dict[str, float]] = []
        self._error: BaseException | None = None

    def _evaluate(self, env_steps: int, networks: Any, key: jax.Array) -> None:
        try:
            start = time.perf_counter()
            summary = self.evaluator.run(networks, self.episodes, key).summary()
            result = {k: summary[k] for k in self.KEYS[:3]}
            result.update(eval_env_steps=env_steps, eval_s=time.perf_counter() - start)
            with self._lock:
                self._results.append(result)
        except BaseException as e:  # noqa: BLE001 - re-raised in the loop's thread
            self._error = e

    def _check(self, env_steps: int) -> None:
        """Raise a failure of the thread."""
        if self._error is not None:
            error, self._error = self._error, None
            raise RuntimeError(f"evaluation failed: {error!r}") from error

    def _report(self, env_steps: int) -> None:
        """Report the results the thread finished."""
        with self._lock:
            results, self._results = self._results, []
        for result in results:
            self.report({"env_steps": env_steps, **result})

    def _busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __call__(self, ctx: Any):
        """A generator middleware: results are reported after the iteration's own metrics row
        (its later middleware), so the run's first metrics row, which fixes metrics.csv's columns,
        is never an evaluation's (an Anakin call can reach its first due step in the first
        iteration)."""
        self._check(ctx.env_steps)
        if self._next is None:  # the first due step after where the run starts (or resumes)
            self._next = (ctx.env_steps // self.every + 1) * self.every if ctx.env_steps else self.every
        final = self.total is not None and ctx.env_steps >= self.total
        if ctx.env_steps >= self._next and (self.block or final or not self._busy()):
            if self._thread is not None:
                self._thread.join()
                self._check(ctx.env_steps)
            version, networks = self.staging.latest(self.evaluator.device)
            self._key, key = jax.random.split(self._key)
            self._thread = threading.Thread(target=self._evaluate, args=(ctx.env_steps, networks, key),
                                            name="evaluator", daemon=True)
            self._thread.start()
            self._next = (ctx.env_steps // self.every + 1) * self.every
        if final and self._thread is not None:
            self._thread.join()
            self._check(ctx.env_steps)
        yield
        self._report(ctx.env_steps)

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join()
        self.evaluator.close()

"""The benchmark suites of `python -m benchmarks.suite` (issue 55), declared as data: each a grid
of tasks x agents x seeds x budget, where each cell is one CLI run (`python -m experiments.AGENT
--env TASK --seed S`, at the agent's preset for the task unless the suite sets a budget), so what
is measured is what users run.

A task holds the score it is held against (`reference`) and where that comes from; a uniformly
random policy's score, the other end of the normalisation, is measured by the runner itself.
"""

from __future__ import annotations

import dataclasses
import re


@dataclasses.dataclass(frozen=True)
class Agent:
    """An entry point and the flags that make it this suite's variant (e.g. `--core none`)."""

    label: str
    module: str  # experiments.<agent>, or a peer's cell (benchmarks.peers.cleanrl_cell)
    args: tuple[str, ...] = ()
    peer_of: str | None = None  # a peer's run: the label of our agent it is held against

    def __post_init__(self):
        if not re.fullmatch(r"[A-Za-z0-9_.+-]+", self.label):
            raise ValueError(f"agent label {self.label!r}: letters, digits and _.+- only (it names directories)")


@dataclasses.dataclass(frozen=True)
class Task:
    """An env id, the agents run on it, and the published or solved score it is held against."""

    env: str
    agents: tuple[Agent, ...]
    reference: float
    source: str  # where `reference` comes from
    args: tuple[str, ...] = ()  # flags every agent's run of this task takes (e.g. --loop=anakin)
    # (agent label, reference, source) where an agent has its own published figure (Cleanba's IMPALA and PPO)
    agent_references: tuple[tuple[str, float, str], ...] = ()

    def __post_init__(self):
        labels = {a.label for a in self.agents}
        for label, _, _ in self.agent_references:
            if label not in labels:
                raise ValueError(f"{self.env}: a reference for {label!r}, which does not run on it")

    def reference_of(self, label: str) -> tuple[float, str]:
        """The score agent `label` is held against on this task, and its source."""
        for name, value, source in self.agent_references:
            if name == label:
                return value, source
        return self.reference, self.source


@dataclasses.dataclass(frozen=True)
class Cell:
    """One run of the grid."""

    agent: Agent
    task: Task
    seed: int
    budget: int | None  # env steps; None: the preset's

    @property
    def key(self) -> str:
        """The cell's directory name: agent, env and seed."""
        return f"{self.agent.label}--{re.sub(r'[^A-Za-z0-9_.-]', '_', self.task.env)}--s{self.seed}"

    def argv(self) -> list[str]:
        """The entry point's flags (without --logdir)."""
        budget = [] if self.budget is None else [f"--total_env_steps={self.budget}"]
        return [f"--env={self.task.env}", f"--seed={self.seed}", *budget, *self.task.args, *self.agent.args]


@dataclasses.dataclass(frozen=True)
class Suite:
    name: str
    description: str
    tasks: tuple[Task, ...]
    seeds: tuple[int, ...]
    budget: int | None = None  # env steps of every cell; None: each preset's
    cost: str = ""  # what a run of the whole suite takes, as measured (or estimated, said so)
    peer_target: float | None = None  # our median over seeds / the peer's, per task, to meet

    def __post_init__(self):
        if not self.tasks or not self.seeds:
            raise ValueError(f"suite {self.name!r} has no tasks or no seeds")
        keys = [c.key for c in self.cells()]
        if len(keys) != len(set(keys)):
            raise ValueError(f"suite {self.name!r} has two cells of the same agent, task and seed")
        for task in self.tasks:
            labels = {a.label for a in task.agents}
            for a in task.agents:
                if a.peer_of is not None and a.peer_of not in labels:
                    raise ValueError(f"suite {self.name!r}: {a.label} on {task.env} is the peer of {a.peer_of}, "
                                     "which does not run there")

    def cells(self, seeds: tuple[int, ...] | None = None) -> list[Cell]:
        return [Cell(agent, task, seed, self.budget) for task in self.tasks for agent in task.agents
                for seed in (seeds if seeds is not None else self.seeds)]

    def agents(self) -> list[str]:
        return list(dict.fromkeys(a.label for t in self.tasks for a in t.agents))


def agent(name: str, *args: str, label: str | None = None) -> Agent:
    return Agent(label or name, f"experiments.{name}", tuple(args))


def cleanrl(algo: str) -> Agent:
    """CleanRL's script of `algo` (benchmarks/peers/cleanrl_cell.py), run beside our agent of that name."""
    return Agent(f"cleanrl-{algo}", "benchmarks.peers.cleanrl_cell", (f"--algo={algo}",), peer_of=algo)


GYMNASIUM = "Gymnasium's reward_threshold"
DISCRETE = tuple(agent(a) for a in ("ppo", "impala", "dqn", "pqn", "r2d2"))
DISCRETE_JAX = tuple(agent(a) for a in ("ppo", "impala", "dqn", "pqn"))
CONTINUOUS = tuple(agent(a) for a in ("ppo", "sac", "td3"))
CLEANRL = tuple(cleanrl(a) for a in ("ppo", "sac", "td3"))

CLASSIC = Suite(
    "classic", "Classic control at each agent's preset: the built-in tasks in the Sebulba loop, their gymnax twins "
    "in the Anakin loop.",
    tasks=(
        Task("CartPole-v1", DISCRETE, 475.0, GYMNASIUM),
        Task("Acrobot-v1", DISCRETE, -100.0, GYMNASIUM),
        Task("MountainCar-v0", DISCRETE, -110.0, GYMNASIUM),
        Task("Pendulum-v1", CONTINUOUS, -200.0, "the usual solved score (Gymnasium has none)"),
        Task("gymnax/CartPole-v1", DISCRETE_JAX, 475.0, GYMNASIUM),
        Task("gymnax/Acrobot-v1", DISCRETE_JAX, -100.0, GYMNASIUM),
        Task("gymnax/Pendulum-v1", (agent("ppo"),), -200.0, "the usual solved score (Gymnasium has none)"),
    ),
    seeds=(0, 1, 2, 3, 4),
    cost="~1 hour here for the 135 runs, 2 side by side (2026-11-30; R2D2's are the longest, 3-4 minutes each)",
)

GYMNAX_PPO = "gymnax's published PPO at 1e7 env steps (gymnax README)"
MINATAR = Suite(
    "minatar", "gymnax's four MinAtar games at 1e7 env steps, each agent's MINATAR preset, in the Anakin loop.",
    tasks=tuple(Task(f"gymnax/{game}-MinAtar", tuple(agent(a) for a in ("ppo", "pqn", "dqn", "impala")), ref, GYMNAX_PPO)
                for game, ref in (("Asterix", 15.0), ("Breakout", 28.0), ("Freeway", 58.0), ("SpaceInvaders", 131.0))),
    seeds=(0,),
    cost="PPO's, IMPALA's and PQN's runs ~11-29 minutes here, DQN's ~2.3 hours (625k updates of batch 128; Asterix's took 8,324 s beside other runs): ~13 hours for the 16 runs of one seed",
)

MEMORY = Suite(
    "memory", "Partially observed tasks with each one's preset core (ppo, impala: GRU or LSTM, as the preset "
    "says), and the same runs without it (ppo-none, impala-none: --core none).",
    tasks=(
        Task("gymnax/MemoryChain-bsuite", (agent("ppo"), agent("ppo", "--core=none", label="ppo-none")),
             1.0, "the task's best return (a recalled bit every episode)"),
        Task("CartPoleNoVelocity-v1", (agent("ppo"), agent("ppo", "--core=none", label="ppo-none"), agent("impala"),
                                       agent("impala", "--core=none", label="impala-none")),
             475.0, GYMNASIUM + " (CartPole-v1's)"),
        Task("xminigrid/MiniGrid-Empty-6x6", (agent("ppo"), agent("ppo", "--core=none", label="ppo-none")),
             0.8, "XLand-MiniGrid's debug config (configs/debug/single.yaml)"),
    ),
    seeds=(0, 1, 2),
    cost="~8 minutes here (benchmarks/bench_recurrent.py runs the same grid)",
)

CLEANRL_TD3_1M = "CleanRL's TD3 at 1M env steps (its docs, td3_continuous_action)"
MUJOCO = Suite(
    "mujoco", "Gymnasium's MuJoCo v5 locomotion at 300k env steps on this host (1M where a GPU is lent), each agent "
    "beside CleanRL's script of the same algorithm (cleanrl-*: its defaults, same host, same budget).",
    tasks=(
        Task("HalfCheetah-v5", CONTINUOUS + CLEANRL, 9583.0, CLEANRL_TD3_1M),
        Task("Hopper-v5", CONTINUOUS + CLEANRL, 3135.0, CLEANRL_TD3_1M),
        Task("Walker2d-v5", CONTINUOUS + CLEANRL, 4058.0, CLEANRL_TD3_1M),
        Task("Ant-v5", CONTINUOUS + CLEANRL, 6000.0, GYMNASIUM),
    ),
    seeds=(0, 1, 2),
    budget=300_000,
    cost="not yet run whole here (SAC/TD3 at 300k: ~1-2 hours a run on 2 cores)",
    peer_target=0.9,
)

TDMPC2_SAC_500K = ("TD-MPC2's published SAC runs at 500k env steps, the median of its 3 seeds "
                   "(github.com/nicklashansen/tdmpc2, results/sac/<task>.csv)")
DMC = Suite(
    "dmc", "dm_control's suite on the native pool (EnvPool's DMC ids), SAC at its MuJoCo preset (CleanRL's settings), "
    "500k env steps.",
    tasks=(
        Task("CartpoleSwingup-v1", (agent("sac"),), 828.3, TDMPC2_SAC_500K),
        Task("CheetahRun-v1", (agent("sac"),), 671.0, TDMPC2_SAC_500K),
        Task("WalkerWalk-v1", (agent("sac"),), 953.0, TDMPC2_SAC_500K),
    ),
    seeds=(0,),
    budget=500_000,
    cost="~50 minutes a run here (SAC at ~170 env steps/s; its 100k runs took 10-11 minutes): ~2.5 hours",
)

# Cleanba's published runs (github.com/vwxyzjn/cleanba, static/cleanba/main_10CPU.csv: "Cleanba IMPALA" and
# "Cleanba PPO (Sync)", 1 A100 and 10 CPUs, the mean of 3 seeds at its scripts' 50M env steps = 200M frames)
CLEANBA = "Cleanba's published {} at 50M env steps (200M frames; static/cleanba/main_10CPU.csv, mean of 3 seeds)"
ATARI5 = Suite(
    "atari5", "The Atari-5 games (Aitchison et al. 2022: their scores predict the Atari-57 median) at Cleanba's budget, "
    "IMPALA and PPO at their Atari presets through the Sebulba loop, each against Cleanba's own run of the same "
    "algorithm; for a GPU host, one game a call (`--envs Qbert-v5`).",
    tasks=tuple(Task(f"{game}-v5", (agent("impala"), agent("ppo")), impala, CLEANBA.format("IMPALA"),
                     agent_references=(("ppo", ppo, CLEANBA.format("PPO (Sync)")),))
                for game, impala, ppo in (("BattleZone", 30306.72, 38075.10), ("DoubleDunk", -2.94, 4.44),
                                          ("NameThisGame", 15197.89, 12088.56), ("Phoenix", 43733.67, 37108.76),
                                          ("Qbert", 22198.59, 17049.57))),
    seeds=(0,),
    budget=50_000_000,
    cost="not run here: a GPU host's; IMPALA's Pong preset ran at ~59k frames/s on one H200 (2026-11-27), so a "
         "run of 200M frames takes ~1 hour there and the 10 runs of one seed ~10 hours; a CPU host cannot",
)

SUITES = {s.name: s for s in (CLASSIC, MINATAR, MEMORY, MUJOCO, DMC, ATARI5)}

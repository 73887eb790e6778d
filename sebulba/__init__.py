"""sebulba: Sebulba-style actor-learner RL in JAX."""

from sebulba.agent import Agent
from sebulba.loop.anakin import AnakinLoop
from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer
from sebulba.loop.config import LoopConfig
from sebulba.loop.loop import GymnasiumLoop, InferencerError
from sebulba.sharding import LEARNER_AXIS, LearnerSharding
from sebulba.types import ActorOutput, EnvStep, ExperienceLayout, Trajectory



def __getattr__(name: str):
    if name == "load_policy":  # the experiment kit, imported only when asked for
        from sebulba.experiment.trained import load_policy

        return load_policy
    raise AttributeError(f"module 'sebulba' has no attribute {name!r}")


__all__ = [
    "LEARNER_AXIS",
    "ActorOutput",
    "Agent",
    "AnakinLoop",
    "CheckpointConfig",
    "Checkpointer",
    "EnvStep",
    "ExperienceLayout",
    "GymnasiumLoop",
    "InferencerError",
    "LearnerSharding",
    "LoopConfig",
    "Trajectory",
    "load_policy",
]

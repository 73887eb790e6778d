"""sebulba: Sebulba-style actor-learner RL in JAX."""

from sebulba.agent import Agent
from sebulba.loop.checkpoint import CheckpointConfig, Checkpointer
from sebulba.loop.config import LoopConfig
from sebulba.loop.loop import GymnasiumLoop, InferencerError
from sebulba.sharding import LEARNER_AXIS, LearnerSharding
from sebulba.types import ActorOutput, EnvStep, ExperienceLayout, Trajectory

__all__ = [
    "LEARNER_AXIS",
    "ActorOutput",
    "Agent",
    "CheckpointConfig",
    "Checkpointer",
    "EnvStep",
    "ExperienceLayout",
    "GymnasiumLoop",
    "InferencerError",
    "LearnerSharding",
    "LoopConfig",
    "Trajectory",
]

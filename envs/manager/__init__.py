"""DI-engine's env managers (di-engine-docs.readthedocs.io) over the env pool's worker machinery (envs.process)."""

from envs.manager.base import BaseEnvManager
from envs.manager.config import ManagerConfig
from envs.manager.subprocess import AsyncSubprocessEnvManager, SyncSubprocessEnvManager
from envs.manager.types import BaseEnvTimestep, EnvState

__all__ = [
    "AsyncSubprocessEnvManager",
    "BaseEnvManager",
    "BaseEnvTimestep",
    "EnvState",
    "ManagerConfig",
    "SyncSubprocessEnvManager",
]

"""TD3: config, networks, losses and optimizer, and the agent on the off-policy base."""

from sebulba.agents.td3.agent import TD3
from sebulba.agents.td3.config import TD3Config
from sebulba.agents.td3.losses import exploration_action, td3_loss
from sebulba.agents.td3.networks import TD3Networks, TD3Params, make_networks
from sebulba.agents.td3.optimizer import follow_targets, make_optimizer

__all__ = ["TD3", "TD3Config", "TD3Networks", "TD3Params", "exploration_action", "follow_targets", "make_networks",
           "make_optimizer", "td3_loss"]

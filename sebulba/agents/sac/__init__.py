"""SAC: config, networks, losses and optimizer, and the agent on the off-policy base."""

from sebulba.agents.sac.agent import SAC
from sebulba.agents.sac.config import SACConfig
from sebulba.agents.sac.losses import sac_loss
from sebulba.agents.sac.networks import SACNetworks, SACParams, make_networks
from sebulba.agents.sac.optimizer import make_optimizer

__all__ = ["SAC", "SACConfig", "SACNetworks", "SACParams", "make_networks", "make_optimizer", "sac_loss"]

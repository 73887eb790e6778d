"""PPO's actor-critic: a torso (or one per head) with a policy head (categorical logits, one
categorical per dimension of a MultiDiscrete space, or a Gaussian) and a value head, initialised
as CleanRL's PPO: orthogonal weights, gain sqrt(2) in the MLP torsos, 0.01 for the policy's
output (a near-uniform first policy) and 1 for the value's. With `critic_state` (MAPPO), the
observation is a Dict {"obs", "state"}: the policy reads "obs" (the player's own), the value the
whole Dict (the env's global state next to the player's observation: MAPPO's agent-specific
global state). An observation that carries PettingZoo's `action_mask` (a Dict with an
"action_mask" of one entry per action of a Discrete space: the classic board games) masks the
policy's logits with it (`sebulba.distributions.masked_logits`): illegal moves are never sampled
nor the mode; the torso reads the mask as any other input.

With a recurrent core (`PPOConfig.core`, sebulba/cores.py), each torso is followed by a core of
its own (the critic's too, where it has a torso of its own) and the heads read the cores'
outputs; the state is the actor core's, or (actor's, critic's). The network takes one step of a
batch, or (`sequence=True`) a [T, B] sequence, the torsos and heads applied to all T x B rows at
once and only the cores stepped in order; with core "none" both are the feed-forward network."""

from __future__ import annotations

import math

import flax.linen as nn
import gymnasium as gym
import jax

from sebulba import observations
from sebulba.agents.ppo.config import PPOConfig
from sebulba.cores import initial_states, through_cores
from sebulba.distributions import Categorical, Distribution, MultiCategorical, masked_logits
from sebulba.networks import GaussianHead, MLPTorso, torso_for
from sebulba.types import PyTree


class PPONet(nn.Module):
    torso: nn.Module
    critic_torso: nn.Module | None  # None: the value head shares the policy's torso
    num_outputs: int  # actions of a Discrete space, dims of a Box one, or sum(nvec) of a MultiDiscrete one
    continuous: bool
    log_std_init: float = 0.0
    nvec: tuple[int, ...] | None = None  # a MultiDiscrete space's: the logits split per dimension
    actor_key: str | None = None  # the policy reads obs[actor_key] (MAPPO: "obs"), the critic all of obs
    mask_key: str | None = None  # the policy's observation's action mask (its legal actions), if any

    core: str = "none"  # the cores' kind (sebulba.cores.CORES; "none": no memory) ...
    core_size: int = 1  # ... and units
    head: nn.Module | None = None  # each head's hidden layers (a copy per head), or None: linear heads

    def initial_state(self, batch: int) -> PyTree:
        """The recurrent state an episode starts from, for `batch` rows: `()` without a core."""
        return initial_states(self.core, self.core_size, batch, 1 + (self.critic_torso is not None))

    @nn.compact
    def __call__(self, obs: jax.Array, state: PyTree = (), first: jax.Array | None = None,
                 sequence: bool = False) -> tuple[Distribution, jax.Array, PyTree]:
        """obs [B, ...] (normalised if the agent normalises), the state before it and `first` [B]
        (the rows that start an episode: their state resets) -> (policy [B], values [B], state
        after it). With `sequence`, obs and first are [T, B, ...] and the policy and values [T, B]."""
        lead = jax.tree.leaves(obs)[0].shape[:2] if sequence else None
        rows = observations.merge_leading(obs) if sequence else obs
        actor_obs = rows if self.actor_key is None else rows[self.actor_key]
        features = (self.torso(actor_obs),) + (() if self.critic_torso is None else (self.critic_torso(rows),))
        state, features = through_cores(self.core, self.core_size, state, features, first, lead,
                                        names=("core", "critic_core"))
        h, hv = features[0], features[-1]
        if self.head is not None:
            h, hv = self.head.copy(name="policy_hidden")(h), self.head.copy(name="value_hidden")(hv)
        small = nn.initializers.orthogonal(0.01)
        if self.continuous:
            policy = GaussianHead(self.num_outputs, self.log_std_init, small, name="policy")(h)
        else:
            logits = nn.Dense(self.num_outputs, kernel_init=small, name="policy")(h)
            if self.mask_key is not None:
                logits = masked_logits(logits, actor_obs[self.mask_key])
            policy = Categorical(logits) if self.nvec is None else MultiCategorical.from_flat(logits, self.nvec)
        value = nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0), name="value")(hv)[:, 0]
        if sequence:
            policy, value = jax.tree.map(lambda x: x.reshape(*lead, *x.shape[1:]), (policy, value))
        return policy, value, state


MASK_KEY = "action_mask"  # PettingZoo's name for the legal actions in a Dict observation


def action_mask_key(observation_space: gym.spaces.Space, action_space: gym.spaces.Space) -> str | None:
    """MASK_KEY where the observation is a Dict that has it, else None; a ValueError where that mask
    cannot mask these actions (a Discrete space of as many actions as the mask has entries)."""
    if not (isinstance(observation_space, gym.spaces.Dict) and MASK_KEY in observation_space.spaces):
        return None
    mask = observation_space[MASK_KEY]
    if not (isinstance(action_space, gym.spaces.Discrete) and isinstance(mask, gym.spaces.Box)
            and mask.shape == (int(action_space.n),)):
        raise ValueError(f"the observation's {MASK_KEY!r} ({mask}) does not mask the action space {action_space}: "
                         f"PPO masks a Discrete(n) space with an {MASK_KEY!r} of shape (n,); action_mask=False "
                         "ignores it")
    return MASK_KEY


def make_network(observation_space: gym.spaces.Space, action_space: gym.spaces.Space, config: PPOConfig) -> PPONet:
    activation = {"tanh": nn.tanh, "relu": nn.relu}[config.activation]

    def mlp_settings(torso: nn.Module, sizes: tuple[int, ...] = config.hidden_sizes) -> nn.Module:
        if not isinstance(torso, MLPTorso):
            return torso
        return torso.clone(hidden_sizes=sizes, activation=activation,
                           kernel_init=nn.initializers.orthogonal(math.sqrt(2.0)))

    actor_key = None
    if config.critic_state:
        space = observation_space
        if not (isinstance(space, gym.spaces.Dict) and set(space.spaces) == {"obs", "state"}):
            raise ValueError(f"critic_state=True (MAPPO) needs a Dict observation of 'obs' and 'state' (a PettingZoo "
                             f"pool's global_state=True), got {space}")
        actor_key = "obs"
        torso = mlp_settings(torso_for(space["obs"], config.torso))
        critic = mlp_settings(torso_for(space, "mlp"))
    else:
        torso = mlp_settings(torso_for(observation_space, config.torso))
        critic = torso.clone() if config.separate_critic else None
    continuous = isinstance(action_space, gym.spaces.Box)
    nvec = tuple(map(int, action_space.nvec)) if isinstance(action_space, gym.spaces.MultiDiscrete) else None
    outputs = action_space.shape[0] if continuous else sum(nvec) if nvec else int(action_space.n)
    actor_space = observation_space if actor_key is None else observation_space[actor_key]
    mask_key = action_mask_key(actor_space, action_space) if config.action_mask else None
    head = mlp_settings(MLPTorso(()), config.head_sizes) if config.head_sizes else None
    return PPONet(torso, critic, outputs, continuous, config.log_std_init, nvec, actor_key, mask_key,
                  config.core, config.core_size, head)

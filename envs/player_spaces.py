"""The spaces of a multi-player env's rows, from its players' own spaces (PettingZoo's in worker
processes, JaxMARL's in JAX): one space every player shares, 1-D observations zero-padded to the
largest, and the player's one-hot appended. The option names are the backends' env kwargs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

PAD_KWARG = "pad_observations"
ID_KWARG = "add_player_id"
STATE_KWARG = "global_state"
OWN_KWARGS = (PAD_KWARG, ID_KWARG, STATE_KWARG)  # the multi-player backends' options, not an env constructor's


def common_space(task_id: str, what: str, spaces: dict[str, gym.spaces.Space]) -> gym.spaces.Space:
    """The one space every player shares, or a ValueError naming the players of each space."""
    groups: list[tuple[gym.spaces.Space, list[str]]] = []
    for agent, space in spaces.items():
        for known, agents in groups:
            if known == space:
                agents.append(agent)
                break
        else:
            groups.append((space, [agent]))
    if len(groups) == 1:
        return groups[0][0]
    described = "; ".join(f"{', '.join(agents)}: {space}" for space, agents in groups)
    raise ValueError(
        f"{task_id!r}: its players' {what} spaces differ ({described}); a multi-player pool needs one {what} "
        "space shared by every player (each row of a batch is one player)"
        + (f"; {PAD_KWARG}=True zero-pads 1-D observations to the largest" if what == "observation" else "")
    )


def padded_space(task_id: str, spaces: dict[str, gym.spaces.Space]) -> gym.spaces.Box:
    """The 1-D Box every player's observation fits in, zero-padded at the end."""
    boxes = [s for s in spaces.values() if isinstance(s, gym.spaces.Box) and len(s.shape) == 1]
    if len(boxes) != len(spaces) or len({b.dtype for b in boxes}) != 1:
        raise ValueError(
            f"{PAD_KWARG}=True: {task_id!r} needs every player's observation to be a 1-D Box of one dtype, got "
            f"{', '.join(f'{a}: {s}' for a, s in spaces.items())}"
        )
    size = max(b.shape[0] for b in boxes)
    low = np.min([np.pad(b.low, (0, size - b.shape[0])) for b in boxes], axis=0)  # padded entries are 0
    high = np.max([np.pad(b.high, (0, size - b.shape[0])) for b in boxes], axis=0)
    return gym.spaces.Box(low, high, dtype=boxes[0].dtype)


def with_player_ids(task_id: str, space: gym.spaces.Space, num_players: int) -> gym.spaces.Box:
    """The 1-D Box `space` widened by a one-hot of the player (num_players entries in [0, 1])."""
    if not (isinstance(space, gym.spaces.Box) and len(space.shape) == 1):
        raise ValueError(f"{ID_KWARG}=True: {task_id!r} needs 1-D Box observations to append the player's one-hot to, "
                         f"got {space}")
    low = np.concatenate([space.low, np.zeros(num_players, space.dtype)])
    high = np.concatenate([space.high, np.ones(num_players, space.dtype)])
    return gym.spaces.Box(low, high, dtype=space.dtype)

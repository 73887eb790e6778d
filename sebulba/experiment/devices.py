"""Which jax devices act and which learn, by default and from the --actor_devices and
--learner_devices flags."""

from __future__ import annotations

import jax


def default_devices(num_envs: int, minibatches: int = 1, anakin: bool = False) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Separate actor and learner devices when there is more than one: device 0 acts and the
    most of the others that split num_envs evenly (into `minibatches` per device) learn; on one
    device both share it. Anakin (acting on the learner devices): the most of all devices that
    split num_envs evenly."""
    n = len(jax.local_devices())
    if anakin:
        fits = [k for k in range(1, n + 1) if num_envs % (k * minibatches) == 0]
        return (0,), tuple(range(max(fits) if fits else 1))
    if n == 1:
        return (0,), (0,)
    learners = max(k for k in range(1, n) if num_envs % (k * minibatches) == 0) if num_envs % minibatches == 0 else 1
    return (0,), tuple(range(1, 1 + learners))


def parse_devices(text: str | None) -> tuple[int, ...] | None:
    """'0,1' -> (0, 1); None or '' -> None (use the default)."""
    if not text:
        return None
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"devices must be comma-separated indices like '0,1', got {text!r}") from None

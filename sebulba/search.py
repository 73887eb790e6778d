"""Tree search for the planning agents (AlphaZero, MuZero; issue 57), on DeepMind's `mctx`: one
frozen config, one call, the outputs the agents act on and learn from.

Two of mctx's policies, chosen by `SearchConfig.algorithm`:
- "gumbel" (the default): Gumbel MuZero (Danihelka et al. 2022): Gumbel-top-k sampling of the
  root actions considered, sequential halving over them, and its policy improvement, the
  softmax of prior logits plus the completed Q-values (`qtransform_completed_by_mix_value`),
  which improves the policy even with few simulations (2-16), the regime of a 2-core host; at
  `gumbel_scale=0` the search is deterministic (evaluation).
- "puct": MuZero's PUCT search with Dirichlet noise at the root and visit counts as the policy.

The batch is mctx's: `root` holds [B] values, [B, A] prior logits and a [B, ...] embedding;
`recurrent_fn(params, key, action [B], embedding)` returns (mctx.RecurrentFnOutput, embedding).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, NamedTuple

import jax

Array = jax.Array
ALGORITHMS = ("gumbel", "puct")


def _mctx():
    try:
        import mctx
    except ImportError as e:  # the planning extra
        raise ImportError("the planning agents search with mctx: pip install -e '.[planning]'") from e
    return mctx


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    algorithm: str = "gumbel"
    num_simulations: int = 16
    max_depth: int | None = None  # None: as deep as the simulations reach
    # gumbel
    max_num_considered_actions: int = 16
    gumbel_scale: float = 1.0  # 0: deterministic (evaluation)
    value_scale: float = 0.1  # sigma(q) = (maxvisit_init + max visits) * value_scale * q, q rescaled to [0, 1]
    maxvisit_init: float = 50.0
    # q rescaled to [0, 1] by the root's min and max completed Q (the paper's); False: q as the values are, so
    # the improved policy leans on Q differences by their size, not by their rank among the root's
    rescale_values: bool = True
    # puct
    dirichlet_fraction: float = 0.25
    dirichlet_alpha: float = 0.3
    pb_c_init: float = 1.25
    temperature: float = 1.0  # of the visit-count policy

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        if self.num_simulations < 1:
            raise ValueError(f"num_simulations must be >= 1, got {self.num_simulations}")
        if self.max_depth is not None and self.max_depth < 1:
            raise ValueError(f"max_depth must be >= 1 or None, got {self.max_depth}")
        if self.max_num_considered_actions < 1:
            raise ValueError(f"max_num_considered_actions must be >= 1, got {self.max_num_considered_actions}")
        if self.gumbel_scale < 0:
            raise ValueError(f"gumbel_scale must be >= 0, got {self.gumbel_scale}")
        if self.value_scale <= 0 or self.maxvisit_init < 0:
            raise ValueError(f"value_scale must be > 0 and maxvisit_init >= 0, got {self.value_scale}, {self.maxvisit_init}")
        if not isinstance(self.rescale_values, bool):
            raise ValueError(f"rescale_values must be a bool, got {self.rescale_values!r}")
        if not 0 <= self.dirichlet_fraction <= 1 or self.dirichlet_alpha <= 0:
            raise ValueError(f"dirichlet_fraction must be in [0, 1] and dirichlet_alpha > 0, got "
                             f"{self.dirichlet_fraction}, {self.dirichlet_alpha}")
        if self.pb_c_init <= 0 or self.temperature <= 0:
            raise ValueError(f"pb_c_init and temperature must be > 0, got {self.pb_c_init}, {self.temperature}")


@dataclasses.dataclass(frozen=True)
class GumbelKnobs:
    """The Gumbel search's knobs as a planning agent's config holds them (MuZero's, AlphaZero's
    configs subclass it): its search for acting, and for evaluation without Gumbel noise
    (deterministic)."""

    num_simulations: int = 16
    max_num_considered_actions: int = 16
    gumbel_scale: float = 1.0
    value_scale: float = 0.1
    maxvisit_init: float = 50.0
    rescale_values: bool = True

    def gumbel_search(self, evaluation: bool = False, num_simulations: int | None = None) -> SearchConfig:
        """The SearchConfig of these knobs (`num_simulations` overrides the config's); its rules
        raise each its own ValueError."""
        return SearchConfig(num_simulations=num_simulations or self.num_simulations,
                            max_num_considered_actions=self.max_num_considered_actions,
                            gumbel_scale=0.0 if evaluation else self.gumbel_scale, value_scale=self.value_scale,
                            maxvisit_init=self.maxvisit_init, rescale_values=self.rescale_values)


def root_output(prior_logits: Array, value: Array, embedding: Any) -> Any:
    """The search's root: [B, A] prior logits, [B] values, a [B, ...] embedding (mctx.RootFnOutput)."""
    return _mctx().RootFnOutput(prior_logits=prior_logits, value=value, embedding=embedding)


def model_output(reward: Array, discount: Array, prior_logits: Array, value: Array) -> Any:
    """What a model step gives the search for its [B] new states (mctx.RecurrentFnOutput); a
    `recurrent_fn(params, key, action, embedding)` returns it with the new embedding."""
    return _mctx().RecurrentFnOutput(reward=reward, discount=discount, prior_logits=prior_logits, value=value)


class SearchOutput(NamedTuple):
    action: Array  # [B] int32: the action to take
    policy: Array  # [B, A]: the improved policy, the policy target
    value: Array  # [B]: the root's search value (a value target's bootstrap)
    visit_counts: Array  # [B, A] the root's children's visits


def search(config: SearchConfig, params: Any, key: Array, root: Any, recurrent_fn: Callable,
           invalid_actions: Array | None = None) -> SearchOutput:
    """One batched search from `root` (an mctx.RootFnOutput): jittable, under vmap or shard_map."""
    mctx = _mctx()
    if config.algorithm == "gumbel":
        qtransform = functools.partial(mctx.qtransform_completed_by_mix_value, value_scale=config.value_scale,
                                       maxvisit_init=config.maxvisit_init, rescale_values=config.rescale_values)
        out = mctx.gumbel_muzero_policy(
            params, key, root, recurrent_fn, config.num_simulations, invalid_actions=invalid_actions,
            max_depth=config.max_depth, qtransform=qtransform,
            max_num_considered_actions=config.max_num_considered_actions, gumbel_scale=config.gumbel_scale)
    else:
        out = mctx.muzero_policy(
            params, key, root, recurrent_fn, config.num_simulations, invalid_actions=invalid_actions,
            max_depth=config.max_depth, dirichlet_fraction=config.dirichlet_fraction,
            dirichlet_alpha=config.dirichlet_alpha, pb_c_init=config.pb_c_init, temperature=config.temperature)
    summary = out.search_tree.summary()
    return SearchOutput(out.action.astype(jax.numpy.int32), out.action_weights, summary.value, summary.visit_counts)

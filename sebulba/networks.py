"""Torsos shared by the agents: flax.linen modules mapping observations [B, ...] to features [B, F].

Image layout. The env pool presents images CHANNEL-FIRST, as uint8 [B, C, H, W] (Atari: [B, 4, 84,
84], stacked frames as channels). The image torsos (`NatureCNN`, `ImpalaResNet`) take exactly that:
inside the module they cast to float32, divide by 255 and transpose to NHWC for flax's convs.
Flax silently accepts channel-last data fed by mistake ([B, 84, 84, 4] reads as 84 channels of
84x4 images: the ResNet runs on it, and NatureCNN's VALID convs leave 0 pixels, a 0-feature Dense),
so the image torsos validate their input: rank 4, and a channel dim no larger than the smaller
spatial dim (C <= min(H, W)); anything else raises a `ValueError`. Shapes are static, so the check
costs nothing under `jit`. (An input with more channels than pixels per side is rejected too.)

`torso_for(observation_space, kind)` picks a torso for a Gymnasium observation space. A Dict or
Tuple space (a pytree observation) gets an `MLPTorso` that encodes each leaf (one-hot for
discrete leaves, a CNN for image leaves) and concatenates the features. An image smaller than
NatureCNN's 36x36 (a grid world's view: XLand-MiniGrid's [2, 7, 7], Navix's [3, 5, 5]) gets the
same small CNN as an image leaf of a Dict (`ImageEncoder`), then the MLP.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from sebulba.distributions import DiagGaussian, squash

Activation = Callable[[jax.Array], jax.Array]


@dataclasses.dataclass(frozen=True)
class Leaf:
    """How one leaf of a structured (Dict/Tuple) observation is encoded into features:
    "float" (flattened as numbers: Box, MultiBinary), "one_hot" (Discrete, MultiDiscrete: each
    entry one-hot over `size` values after subtracting `start`), "image" (a channel-first uint8
    image through a CNN: `ImageEncoder`)."""

    kind: str
    size: int = 0
    start: tuple[int, ...] = ()  # per entry (MultiDiscrete) or one value (Discrete)


def leaf_encoding(space: gym.spaces.Space, path: str = "observation") -> Leaf:
    if isinstance(space, gym.spaces.Discrete):
        return Leaf("one_hot", int(space.n), (int(space.start),))
    if isinstance(space, gym.spaces.MultiDiscrete):
        return Leaf("one_hot", int(np.max(space.nvec)), tuple(int(s) for s in np.ravel(space.start)))
    if isinstance(space, gym.spaces.MultiBinary):
        return Leaf("float")
    if isinstance(space, gym.spaces.Box):
        if is_image_space(space):
            return Leaf("image")
        return Leaf("float")
    raise ValueError(f"no encoding for leaf {path!r} of space {space}: the torsos take Box, Discrete, MultiDiscrete "
                     "and MultiBinary leaves")


def is_image_space(space: gym.spaces.Space) -> bool:
    """A channel-first uint8 image [C, H, W] (C <= min(H, W)), as the pool presents images."""
    return (isinstance(space, gym.spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3
            and space.shape[0] <= min(space.shape[1:]))


def _encode(leaf: Leaf, x: jax.Array) -> jax.Array:
    """A [B, ...] leaf as float32 features [B, F] (images excepted: they go through a CNN)."""
    b = x.shape[0]
    if leaf.kind == "one_hot":
        start = np.asarray(leaf.start, np.int32).reshape(-1) if len(leaf.start) > 1 else leaf.start[0]
        flat = x.reshape(b, -1).astype(jnp.int32) - start
        return jax.nn.one_hot(flat, leaf.size, dtype=jnp.float32).reshape(b, -1)
    return x.reshape(b, -1).astype(jnp.float32)


NATURE_CNN_MIN = 36  # NatureCNN's smallest image side (its VALID convs leave a pixel)
SMALL_CNN_MIN = 7  # ImageEncoder's small CNN's smallest side (7 -> 6 -> 3 -> 2 -> 1 pixels)


class ImageEncoder(nn.Module):
    """An image (a leaf of a structured observation, or a whole one smaller than 36x36): `NatureCNN`
    for images of at least 36x36, else a small CNN for grid observations (MiniGrid's 7x7 views;
    the rl-starter-files architecture: conv 16 2x2, max pool 2x2, conv 32 2x2, conv 64 2x2, all
    VALID, relu; it needs 7x7, smaller grids are flattened), then flattened. Pixels are read as
    0..255 values (scaled by 1/255)."""

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        if min(obs.shape[2:]) >= 36:
            return NatureCNN()(obs)
        x = _to_nhwc(obs)
        if min(x.shape[1:3]) >= SMALL_CNN_MIN:
            x = nn.relu(ShiftedConv(16, (2, 2), name="conv1")(x))
            x = max_pool_2x2(x)
            x = nn.relu(ShiftedConv(32, (2, 2), name="conv2")(x))
            x = nn.relu(ShiftedConv(64, (2, 2), name="conv3")(x))
        return x.reshape(x.shape[0], -1)


def valid_conv(x: jax.Array, kernel: jax.Array, bias: jax.Array) -> jax.Array:
    """A VALID, stride-1 convolution of channel-last images x [B, H, W, C] with `kernel`
    [kh, kw, C, F] (Flax's layout) plus `bias` [F], written as the kernel's kh x kw shifted views of
    x times the kernel (one einsum): the function of `nn.Conv(F, (kh, kw), padding="VALID")`, but
    XLA:CPU runs a convolution's gradient 10-15x slower inside a loop body (jax-ml/jax#12868), and
    the Anakin program and the learner's epochs are loop bodies. For small kernels on small
    images (grid worlds, MinAtar), where the views cost little memory."""
    kh, kw, c, f = kernel.shape
    _, h, w, _ = x.shape
    views = jnp.stack([x[:, i:i + h - kh + 1, j:j + w - kw + 1, :] for i in range(kh) for j in range(kw)], -2)
    return jnp.einsum("bhwkc,kco->bhwo", views, kernel.reshape(kh * kw, c, f)) + bias


def max_pool_2x2(x: jax.Array) -> jax.Array:
    """`nn.max_pool(x, (2, 2), strides=(2, 2))` (VALID: an odd last row or column is dropped) of
    channel-last images, as a reshape and a max: the same values, and on XLA:CPU a gradient ~1.5x
    faster inside a loop body than reduce_window's. The gradient of an exact tie is split between
    the tied inputs (reduce_window's goes to one of them)."""
    b, h, w, c = x.shape
    return x[:, :h // 2 * 2, :w // 2 * 2].reshape(b, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


class ShiftedConv(nn.Module):
    """`nn.Conv(features, kernel_size, padding="VALID")` computed by `valid_conv`: the same
    parameters ('kernel' [kh, kw, C, F], 'bias' [F]) with Flax's initialisers (lecun normal, zeros),
    so its initial values, checkpoints and function are nn.Conv's; XLA:CPU trains it ~10x faster."""

    features: int
    kernel_size: tuple[int, int]

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        kernel = self.param("kernel", nn.initializers.lecun_normal(), (*self.kernel_size, x.shape[-1], self.features))
        bias = self.param("bias", nn.initializers.zeros_init(), (self.features,))
        return valid_conv(x, kernel, bias)


class MLPTorso(nn.Module):
    """Flattens each observation to float32 and applies Dense + activation per hidden size.

    With `num_categories` set, integer observations [B] (a `Discrete` space) are one-hot encoded
    (value - `category_start`) first instead of being used as a magnitude. With `leaves` set, the
    observation is a pytree (a Dict/Tuple space): each leaf, in `jax.tree_util` order, is encoded
    as its `Leaf` says (images through an `ImageEncoder` each) and the features concatenated.
    """

    hidden_sizes: Sequence[int]
    activation: Activation = nn.relu
    layer_norm: bool = False  # a LayerNorm after each hidden layer's Dense, before the activation (PQN)
    num_categories: int | None = None
    category_start: int = 0
    kernel_init: Callable[..., jax.Array] = nn.initializers.lecun_normal()  # flax's Dense default
    leaves: tuple[Leaf, ...] | None = None

    @nn.compact
    def __call__(self, obs: Any) -> jax.Array:
        if self.leaves is not None:
            values = jax.tree_util.tree_leaves(obs)
            if len(values) != len(self.leaves):
                raise ValueError(f"the torso takes observations of {len(self.leaves)} leaves, got {len(values)}")
            images = iter(range(len(values)))
            x = jnp.concatenate(
                [ImageEncoder(name=f"image{next(images)}")(v) if leaf.kind == "image" else _encode(leaf, v)
                 for leaf, v in zip(self.leaves, values)], -1)
        else:
            if self.num_categories is not None:
                obs = jax.nn.one_hot(obs - self.category_start, self.num_categories, dtype=jnp.float32)
            x = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
        for i, size in enumerate(self.hidden_sizes):
            x = nn.Dense(size, kernel_init=self.kernel_init, name=f"dense{i + 1}")(x)
            if self.layer_norm:
                x = nn.LayerNorm(name=f"norm{i + 1}")(x)
            x = self.activation(x)
        return x


class GaussianHead(nn.Module):
    """A diagonal Gaussian policy: the mean from the features, a state-independent log std
    (a learned vector, CleanRL's PPO choice: DESIGN.md, "Continuous actions"). With `bounds`
    ((low, ...), (high, ...)), the mean is kept inside them by a tanh (samples may still fall
    outside, and are clipped for the env)."""

    action_dim: int
    log_std_init: float = 0.0
    kernel_init: Callable[..., jax.Array] = nn.initializers.lecun_normal()
    bounds: tuple[tuple[float, ...], tuple[float, ...]] | None = None

    @nn.compact
    def __call__(self, features: jax.Array) -> DiagGaussian:
        mean = nn.Dense(self.action_dim, kernel_init=self.kernel_init, name="mean")(features)
        if self.bounds is not None:
            low, high = (jnp.asarray(b, jnp.float32) for b in self.bounds)
            mean = squash(mean, low, high)
        log_std = self.param("log_std", nn.initializers.constant(self.log_std_init), (self.action_dim,))
        return DiagGaussian(mean, jnp.broadcast_to(log_std, mean.shape))


def check_channel_first(shape: Sequence[int], what: str = "input") -> None:
    """Raises ValueError unless `shape` is one channel-first image [C, H, W] with C <= min(H, W).

    The second rule catches channel-last data fed by mistake: [84, 84, 4] would read as C=84.
    """
    if len(shape) != 3:
        raise ValueError(f"image torsos take channel-first images [C, H, W]; {what} has image shape {tuple(shape)}")
    c, h, w = shape
    if c > min(h, w):
        raise ValueError(
            f"{what} has image shape {tuple(shape)}: its channel dim ({c}) is larger than a spatial dim, "
            f"so it looks channel-last [H, W, C]; image torsos take channel-first [C, H, W] "
            f"(e.g. [4, 84, 84]), as the env pool presents them"
        )


def _to_nhwc(obs: jax.Array) -> jax.Array:
    """Channel-first pixels [B, C, H, W] (0..255) -> float32 NHWC in [0, 1], after validation."""
    if obs.ndim != 4:
        raise ValueError(f"image torsos take a batch of channel-first images [B, C, H, W]; got shape {obs.shape}")
    check_channel_first(obs.shape[1:])
    return jnp.transpose(obs.astype(jnp.float32) / 255.0, (0, 2, 3, 1))


class NatureCNN(nn.Module):
    """Mnih et al. 2015: conv 32 8x8/4, conv 64 4x4/2, conv 64 3x3/1 (VALID), Dense 512; relu.

    Input: uint8 [B, C, H, W] channel-first (see the module docstring). Output: float32 [B, 512].
    On 84x84 the conv stack ends at 7x7x64 = 3136 features before the Dense; it needs H, W >= 36.
    layer_norm: a LayerNorm after each layer, before its relu (PQN's, purejaxql's Atari network).
    """

    layer_norm: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = _to_nhwc(obs)
        if min(x.shape[1:3]) < NATURE_CNN_MIN:  # VALID convs would leave no pixels (a silent 0-feature Dense)
            raise ValueError(f"NatureCNN needs images of at least 36x36; got shape {obs.shape}")

        def act(x: jax.Array, i: int) -> jax.Array:
            return nn.relu(nn.LayerNorm(name=f"norm{i}")(x) if self.layer_norm else x)

        x = act(nn.Conv(32, (8, 8), strides=(4, 4), padding="VALID", name="conv1")(x), 1)
        x = act(nn.Conv(64, (4, 4), strides=(2, 2), padding="VALID", name="conv2")(x), 2)
        x = act(nn.Conv(64, (3, 3), strides=(1, 1), padding="VALID", name="conv3")(x), 3)
        x = x.reshape(x.shape[0], -1)
        return act(nn.Dense(512, name="dense")(x), 4)


class MinAtarCNN(nn.Module):
    """MinAtar's reference torso (Young & Tian 2019): conv 16 3x3/1 (VALID), flattened, Dense 128;
    relu. Input: channel-first [B, C, H, W] planes (gymnax's MinAtar games: [C, 10, 10] of 0/1
    floats), read as they are, not as 0..255 pixels. Output: float32 [B, 128]. layer_norm: a
    LayerNorm after the conv (over its channels) and after the Dense, before each relu (PQN's,
    purejaxql's MinAtar network).

    The conv is `valid_conv` (its 9 shifted views times the kernel): the function and parameters
    of `nn.Conv`, ~13x faster to train on XLA:CPU: a batch of 1,024 took 307 ms a step as a conv
    inside the Anakin program, 22.6 ms so (measured 2026-11-29)."""

    layer_norm: bool = False
    kernel_init: Callable[..., jax.Array] = nn.initializers.lecun_normal()  # flax's default

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        if obs.ndim != 4:
            raise ValueError(f"the minatar torso takes a batch of channel-first planes [B, C, H, W]; got {obs.shape}")
        check_channel_first(obs.shape[1:])
        x = jnp.transpose(obs.astype(jnp.float32), (0, 2, 3, 1))
        b = x.shape[0]
        kernel = self.param("conv_kernel", self.kernel_init, (3, 3, x.shape[-1], 16))
        x = valid_conv(x, kernel, self.param("conv_bias", nn.initializers.zeros_init(), (16,)))
        if self.layer_norm:
            x = nn.LayerNorm(name="norm1")(x)
        x = nn.relu(x).reshape(b, -1)
        x = nn.Dense(128, kernel_init=self.kernel_init, name="dense")(x)
        if self.layer_norm:
            x = nn.LayerNorm(name="norm2")(x)
        return nn.relu(x)


class ResidualBlock(nn.Module):
    """x + conv(relu(conv(relu(x)))), both convs 3x3 SAME with the input's channel count."""

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        channels = x.shape[-1]
        y = nn.Conv(channels, (3, 3), padding="SAME")(nn.relu(x))
        y = nn.Conv(channels, (3, 3), padding="SAME")(nn.relu(y))
        return x + y


class ImpalaResNet(nn.Module):
    """Espeholt et al. 2018, the "deep" IMPALA torso.

    Per section: conv 3x3 (SAME), max pool 3x3 stride 2 (SAME), `num_blocks` residual blocks;
    then relu, flatten, Dense(`hidden`), relu. Input: uint8 [B, C, H, W] channel-first (see the
    module docstring). Output: float32 [B, hidden]. On 84x84 the sections give 42, 21, 11 pixels.
    """

    channels: Sequence[int] = (16, 32, 32)
    num_blocks: int = 2
    hidden: int = 256

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        x = _to_nhwc(obs)
        for channels in self.channels:
            x = nn.Conv(channels, (3, 3), padding="SAME")(x)
            x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
            for _ in range(self.num_blocks):
                x = ResidualBlock()(x)
        x = nn.relu(x).reshape(x.shape[0], -1)
        return nn.relu(nn.Dense(self.hidden)(x))


TORSO_KINDS = ("auto", "mlp", "nature_cnn", "impala_resnet", "minatar")


def structured_leaves(space: gym.spaces.Space) -> tuple[Leaf, ...]:
    """The `Leaf` of each leaf of a Dict/Tuple space, in `jax.tree_util`'s leaf order (dict keys
    sorted), the order the torso meets them in an observation."""
    def walk(s: gym.spaces.Space, path: str) -> Any:
        if isinstance(s, gym.spaces.Dict):
            return {k: walk(v, f"{path}/{k}") for k, v in s.spaces.items()}
        if isinstance(s, gym.spaces.Tuple):
            return tuple(walk(v, f"{path}/{i}") for i, v in enumerate(s.spaces))
        return leaf_encoding(s, path)

    return tuple(jax.tree_util.tree_leaves(walk(space, "observation")))


def torso_for(observation_space: gym.spaces.Space, kind: str = "auto", **kwargs: Any) -> nn.Module:
    """A torso for `observation_space`; `kwargs` go to the torso's constructor.

    "auto": `NatureCNN` for a rank-3 uint8 `Box` (a channel-first image) of at least 36x36, the
    small CNN of `ImageEncoder` then `MLPTorso(hidden_sizes=(64, 64))` for a smaller one (a grid
    world's view, XLand-MiniGrid's [2, 7, 7]: NatureCNN's convs would leave no pixels), and
    `MLPTorso(hidden_sizes=(64, 64))` for a `Discrete` (one-hot), a rank-1 `Box` or a non-uint8
    `Box` of any rank (flattened: e.g. MinAtar's [C, 10, 10] 0/1 planes, as PureJaxRL learns
    them); uint8 pixels in another layout are refused. "mlp" (any `Box` or `Discrete`),
    "nature_cnn", "impala_resnet" and "minatar" (`MinAtarCNN`; a channel-first rank-3 `Box`)
    force one. Raises ValueError,
    naming the space, for a space the chosen torso cannot take.
    """
    if kind not in TORSO_KINDS:
        raise ValueError(f"unknown torso kind {kind!r}; expected one of {TORSO_KINDS}")
    space = observation_space
    if isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple)):
        if kind not in ("auto", "mlp"):
            raise ValueError(f"a structured observation space {space} takes the 'mlp' torso (image leaves get a CNN "
                             f"each), not {kind!r}")
        return MLPTorso(**{"hidden_sizes": (64, 64), **kwargs, "leaves": structured_leaves(space)})
    is_box = isinstance(space, gym.spaces.Box)
    if kind == "auto":
        if is_box and len(space.shape) == 3 and space.dtype == np.uint8:
            check_channel_first(space.shape, what=f"observation space {space}")
            if min(space.shape[1:]) < NATURE_CNN_MIN:  # a small image: the MLP over the small CNN's features
                return MLPTorso(**{"hidden_sizes": (64, 64), **kwargs, "leaves": (Leaf("image"),)})
            kind = "nature_cnn"
        elif isinstance(space, gym.spaces.Discrete) or (is_box and (space.dtype != np.uint8 or len(space.shape) == 1)):
            kind = "mlp"
        else:  # uint8 pixels in another layout (channel-last, rank 2): a mistake, not an MLP's input
            raise ValueError(f"no automatic torso for observation space {space}: 'auto' takes Discrete, a float or "
                             f"rank-1 Box, or a rank-3 uint8 image Box [C, H, W]; pass kind= one of {TORSO_KINDS[1:]}")

    if kind == "mlp":
        if isinstance(space, gym.spaces.Discrete):
            kwargs = {"num_categories": int(space.n), "category_start": int(space.start), **kwargs}
        elif not is_box:
            raise ValueError(f"the mlp torso takes Box or Discrete observations, not {space}")
        return MLPTorso(**{"hidden_sizes": (64, 64), **kwargs})

    if not is_box:
        raise ValueError(f"the {kind} torso takes image Box observations [C, H, W], not {space}")
    check_channel_first(space.shape, what=f"observation space {space}")
    return {"nature_cnn": NatureCNN, "impala_resnet": ImpalaResNet, "minatar": MinAtarCNN}[kind](**kwargs)

"""The shared torsos: shapes, parameter counts, the channel-first layout and torso_for's choices."""

import re

import flax.linen as nn
import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sebulba.networks import ImpalaResNet, MinAtarCNN, MLPTorso, NatureCNN, ShiftedConv, max_pool_2x2, torso_for

B = 2
SMALL_NATURE = (4, 36, 44)  # the smallest NatureCNN input (1x2 after conv3); non-square to catch an H/W swap
SMALL_IMPALA = dict(channels=(8, 16), num_blocks=1, hidden=32)


def key(seed: int) -> jax.Array:
    """An rbg key: initializing conv stacks with threefry keys compiles ~10x slower on CPU."""
    return jax.random.key(seed, impl="rbg")


def images(shape, seed=0, batch=B):
    return np.random.default_rng(seed).integers(0, 256, (batch, *shape), dtype=np.uint8)


def init_apply(net, x):
    params = jax.jit(net.init)(key(0), x)
    return params, jax.jit(net.apply)(params, x)


def n_params(tree) -> int:
    return sum(int(np.prod(p.shape)) for p in jax.tree.leaves(tree))


# --- MLPTorso -----------------------------------------------------------------------------------


def test_mlp_flattens_and_outputs_float32_features():
    x = np.arange(B * 3 * 5, dtype=np.int32).reshape(B, 3, 5)
    params, y = init_apply(MLPTorso(hidden_sizes=(32, 16)), x)
    assert y.shape == (B, 16) and y.dtype == jnp.float32
    assert params["params"]["dense1"]["kernel"].shape == (15, 32)
    assert params["params"]["dense2"]["kernel"].shape == (32, 16)
    assert (np.asarray(y) >= 0).all()  # relu after every layer


def test_mlp_activation_is_configurable():
    x = np.random.default_rng(0).normal(size=(B, 7)).astype(np.float32) * 100
    _, y = init_apply(MLPTorso(hidden_sizes=(8,), activation=nn.tanh), x)
    assert (np.abs(np.asarray(y)) <= 1).all() and (np.asarray(y) < 0).any()


def test_mlp_one_hot_for_categorical_observations():
    net = MLPTorso(hidden_sizes=(8,), num_categories=5, category_start=-2)
    x = np.array([-2, 2], np.int64)
    params = jax.jit(net.init)(key(0), x)
    assert params["params"]["dense1"]["kernel"].shape == (5, 8)
    y = net.apply(params, x)
    assert y.shape == (B, 8) and y.dtype == jnp.float32
    k, b = params["params"]["dense1"]["kernel"], params["params"]["dense1"]["bias"]
    np.testing.assert_allclose(np.asarray(y), np.maximum(np.asarray(k)[[0, 4]] + np.asarray(b), 0), rtol=1e-6)


# --- NatureCNN ----------------------------------------------------------------------------------


def test_nature_cnn_on_atari_frames():
    x = images((4, 84, 84))
    params, y = init_apply(NatureCNN(), x)
    assert y.shape == (B, 512) and y.dtype == jnp.float32
    p = params["params"]
    assert n_params(p["conv1"]) == 8 * 8 * 4 * 32 + 32 == 8224
    assert n_params(p["conv2"]) == 4 * 4 * 32 * 64 + 64 == 32832
    assert n_params(p["conv3"]) == 3 * 3 * 64 * 64 + 64 == 36928
    assert p["dense"]["kernel"].shape == (7 * 7 * 64, 512) == (3136, 512)


def test_nature_cnn_rejects_too_small_images():
    with pytest.raises(ValueError, match="36x36"):
        jax.jit(NatureCNN().init)(key(0), images((4, 35, 40)))


# --- ImpalaResNet -------------------------------------------------------------------------------


@pytest.mark.slow(seconds=4)
def test_impala_resnet_on_atari_frames():
    x = images((4, 84, 84))
    params, y = init_apply(ImpalaResNet(), x)
    assert y.shape == (B, 256) and y.dtype == jnp.float32
    # 84 -> 42 -> 21 -> 11 pixels after the three stride-2 SAME pools, 32 channels.
    assert params["params"]["Dense_0"]["kernel"].shape == (11 * 11 * 32, 256)
    convs = [k for k in jax.tree_util.tree_leaves_with_path(params) if "kernel" in jax.tree_util.keystr(k[0])]
    assert len(convs) == 3 * (1 + 2 * 2) + 1  # per section: 1 conv + 2 blocks x 2 convs; + the dense


@pytest.mark.slow(seconds=2)
def test_impala_resnet_configurable():
    params, y = init_apply(ImpalaResNet(**SMALL_IMPALA), images((3, 16, 12)))
    assert y.shape == (B, 32) and y.dtype == jnp.float32
    assert params["params"]["Dense_0"]["kernel"].shape == (4 * 3 * 16, 32)  # 16x12 -> 8x6 -> 4x3


# --- channel-first layout (both image torsos) ---------------------------------------------------

IMAGE_TORSOS = [
    pytest.param(NatureCNN(), SMALL_NATURE, "conv1", "VALID", (4, 4), id="nature_cnn"),
    pytest.param(ImpalaResNet(**SMALL_IMPALA), (4, 16, 12), "Conv_0", "SAME", (1, 1), id="impala_resnet"),
]


@pytest.mark.slow(seconds=4)
@pytest.mark.parametrize("net, shape, first_conv, padding, strides", IMAGE_TORSOS)
def test_first_conv_sees_channel_first_pixels_scaled_to_unit(net, shape, first_conv, padding, strides):
    """The first conv's output equals a reference conv that reads x / 255 as NCHW."""
    x = images(shape)
    params = jax.jit(net.init)(key(0), x)
    _, state = net.apply(params, x, capture_intermediates=True, mutable=["intermediates"])
    got = state["intermediates"][first_conv]["__call__"][0]  # NHWC
    conv = params["params"][first_conv]
    nchw = jnp.asarray(x, jnp.float32) / 255.0
    layout = ("NCHW", "HWIO", "NHWC")
    want = jax.lax.conv_general_dilated(nchw, conv["kernel"], strides, padding, dimension_numbers=layout) + conv["bias"]
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)


@pytest.mark.slow(seconds=3)
@pytest.mark.parametrize("net, shape, first_conv, padding, strides", IMAGE_TORSOS)
def test_each_input_channel_reaches_the_output(net, shape, first_conv, padding, strides):
    zeros = np.zeros((B, *shape), np.uint8)
    params = jax.jit(net.init)(key(1), zeros)
    base = np.asarray(net.apply(params, zeros))
    for c in range(shape[0]):
        x = zeros.copy()
        x[:, c] = 255  # only channel c is non-zero
        assert not np.allclose(np.asarray(net.apply(params, x)), base), f"channel {c} has no effect"


@pytest.mark.slow(seconds=3)
@pytest.mark.parametrize("net, shape, first_conv, padding, strides", IMAGE_TORSOS)
def test_uint8_and_float_pixels_agree_and_jit(net, shape, first_conv, padding, strides):
    x = images(shape)
    params = jax.jit(net.init)(key(0), x)
    y_uint8 = jax.jit(net.apply)(params, x)
    y_float = net.apply(params, x.astype(np.float32))
    np.testing.assert_allclose(np.asarray(y_uint8), np.asarray(y_float), rtol=1e-5, atol=1e-6)


@pytest.mark.slow(seconds=2)
@pytest.mark.parametrize("net", [NatureCNN(), ImpalaResNet()], ids=["nature_cnn", "impala_resnet"])
def test_channel_last_input_is_rejected(net):
    """NHWC data by mistake ([B, 84, 84, 4]) raises a clear ValueError, at init and at apply (jitted
    or not): flax alone would read it as 84 channels of 84x4 images."""
    nhwc = np.zeros((B, 84, 84, 4), np.uint8)
    with pytest.raises(ValueError, match="channel-last"):
        jax.jit(net.init)(key(0), nhwc)
    params = jax.jit(net.init)(key(0), np.zeros((1, 4, 84, 84), np.uint8))
    with pytest.raises(ValueError, match="channel-last"):
        net.apply(params, nhwc)
    with pytest.raises(ValueError, match="channel-last"):
        jax.jit(net.apply)(params, nhwc)


@pytest.mark.parametrize("net", [NatureCNN(), ImpalaResNet()], ids=["nature_cnn", "impala_resnet"])
def test_image_torsos_need_a_batch_of_images(net):
    with pytest.raises(ValueError, match=r"\[B, C, H, W\]"):
        jax.jit(net.init)(key(0), np.zeros((4, 84, 84), np.uint8))  # one image, no batch axis


# --- torso_for ----------------------------------------------------------------------------------


def test_torso_for_auto():
    vec = torso_for(gym.spaces.Box(-1, 1, (6,)))
    assert isinstance(vec, MLPTorso) and tuple(vec.hidden_sizes) == (64, 64) and vec.num_categories is None
    disc = torso_for(gym.spaces.Discrete(5, start=1))
    assert isinstance(disc, MLPTorso) and (disc.num_categories, disc.category_start) == (5, 1)
    assert isinstance(torso_for(gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)), NatureCNN)


def test_torso_for_forced_kinds_and_kwargs():
    img = gym.spaces.Box(0, 255, (3, 16, 12), np.uint8)
    assert isinstance(torso_for(img, "nature_cnn"), NatureCNN)
    impala = torso_for(img, "impala_resnet", **SMALL_IMPALA)
    assert isinstance(impala, ImpalaResNet) and impala.hidden == 32
    mlp = torso_for(img, "mlp", hidden_sizes=(8,))
    assert isinstance(mlp, MLPTorso) and tuple(mlp.hidden_sizes) == (8,)
    assert isinstance(torso_for(gym.spaces.Box(-1, 1, (3, 2)), "mlp"), MLPTorso)  # any Box flattens
    assert tuple(torso_for(gym.spaces.Box(-1, 1, (3,)), hidden_sizes=(4,)).hidden_sizes) == (4,)


@pytest.mark.parametrize(
    "space, kind, features",
    [
        (gym.spaces.Box(-1, 1, (6,), np.float32), "auto", 64),
        (gym.spaces.Discrete(4), "auto", 64),
        (gym.spaces.Box(0, 255, SMALL_NATURE, np.uint8), "auto", 512),
        (gym.spaces.Box(0, 255, (3, 16, 12), np.uint8), "impala_resnet", 256),
        (gym.spaces.Box(0.0, 1.0, (7, 10, 10), np.float32), "minatar", 128),
    ],
    ids=["box", "discrete", "image", "impala", "minatar"],
)
def test_torso_for_runs_on_samples_of_its_space(space, kind, features):
    space.seed(0)
    obs = np.stack([space.sample() for _ in range(B)])
    _, y = init_apply(torso_for(space, kind), obs)
    assert y.shape == (B, features) and y.dtype == jnp.float32


@pytest.mark.parametrize(
    "space, kind",
    [
        (gym.spaces.Box(0, 255, (84, 84), np.uint8), "nature_cnn"),  # rank-2 with an image torso
        (gym.spaces.Box(0, 255, (84, 84), np.uint8), "impala_resnet"),
        (gym.spaces.Box(0, 255, (84, 84), np.uint8), "auto"),  # rank 2: no automatic choice
        (gym.spaces.Box(0, 255, (84, 84, 4), np.uint8), "auto"),  # channel-last image
        (gym.spaces.Box(0, 255, (84, 84, 3), np.uint8), "impala_resnet"),
        (gym.spaces.Discrete(3), "nature_cnn"),
        (gym.spaces.MultiDiscrete([2, 3]), "auto"),
        (gym.spaces.Dict({"a": gym.spaces.Discrete(2)}), "nature_cnn"),  # structured: mlp torso only
    ],
)
def test_torso_for_rejects_unsupported_spaces_naming_them(space, kind):
    with pytest.raises(ValueError, match=re.escape(str(space))):
        torso_for(space, kind)


STRUCTURED = gym.spaces.Dict({
    "pos": gym.spaces.Box(-1, 1, (3,), np.float32),
    "flag": gym.spaces.Discrete(4, start=1),
    "cells": gym.spaces.MultiDiscrete([3, 3, 3]),
    "seen": gym.spaces.MultiBinary(5),
    "nested": gym.spaces.Tuple((gym.spaces.Box(0, 255, (3, 8, 8), np.uint8), gym.spaces.Discrete(2))),
})


@pytest.mark.slow(seconds=3)
def test_auto_torso_flattens_float_grids_into_its_mlp():
    """MinAtar's [C, 10, 10] 0/1 planes (gymnax) are not uint8 pixels: the MLP takes them flat."""
    space = gym.spaces.Box(0.0, 1.0, (4, 10, 10), np.float32)
    torso = torso_for(space)
    assert isinstance(torso, MLPTorso)
    _, y = init_apply(torso, np.stack([space.sample() for _ in range(B)]))
    assert y.shape == (B, 64)


@pytest.mark.parametrize("shape", [(2, 7, 7), (3, 5, 5), (3, 6, 6), (2, 3, 3), (3, 3, 7), (3, 19, 19), (3, 35, 40)])
def test_auto_torso_convolves_images_too_small_for_nature_cnn(shape):
    """A grid world's view, channel-first uint8 (XLand-MiniGrid's [2, 7, 7], Navix's [3, 5, 5]):
    NatureCNN's convs would leave no pixels, so "auto" gives the small CNN of an image leaf
    (convolving from 7x7 up, flattening below: 5x5 and 6x6 used to leave it 0 features) then the
    MLP, and the image reaches its features."""
    space = gym.spaces.Box(0, 255, shape, np.uint8)
    torso = torso_for(space)
    assert isinstance(torso, MLPTorso) and [leaf.kind for leaf in torso.leaves] == ["image"]
    obs = images(shape, batch=4)
    params, y = init_apply(torso, obs)
    assert y.shape == (4, 64) and np.isfinite(np.asarray(y)).all()
    assert ("image0" in params["params"]) == (min(shape[1:]) >= 7)  # the small CNN's params, or none
    assert not np.allclose(torso.apply(params, images(shape, seed=1, batch=4)), y)  # the image reaches them


def test_torso_for_a_structured_space_encodes_every_leaf():
    """Dict/Tuple observations: one MLP over the concatenated leaf encodings (one-hot discrete
    leaves, a CNN per image leaf); each leaf changes the features."""
    torso = torso_for(STRUCTURED)
    assert isinstance(torso, MLPTorso) and [leaf.kind for leaf in torso.leaves] == [
        "one_hot", "one_hot", "image", "one_hot", "float", "float"]  # cells, flag, nested/0, nested/1, pos, seen
    STRUCTURED.seed(0)
    batch = lambda: jax.tree.map(lambda *x: np.stack(x), *[STRUCTURED.sample() for _ in range(16)])
    obs, other = batch(), batch()
    params, y = init_apply(torso, obs)
    assert y.shape == (16, 64) and y.dtype == jnp.float32 and np.isfinite(np.asarray(y)).all()
    leaves, tree = jax.tree.flatten(obs)
    for i, new in enumerate(jax.tree.leaves(other)):  # each leaf alone changes the features
        changed = jax.tree.unflatten(tree, leaves[:i] + [new] + leaves[i + 1:])
        assert not np.allclose(torso.apply(params, changed), y), torso.leaves[i]


def test_torso_for_names_an_unbatchable_leaf_by_path():
    space = gym.spaces.Dict({"ok": gym.spaces.Discrete(2), "mission": gym.spaces.Text(8)})
    with pytest.raises(ValueError, match="leaf 'observation/mission'"):
        torso_for(space)


@pytest.mark.parametrize("layer_norm", [False, True])
def test_the_minatar_torso_is_minatars_conv_and_dense(layer_norm):
    """Its 9 shifted views times the kernel equal nn.Conv(16, 3x3, VALID) with the same kernel and
    bias (on channel-last planes), then Dense 128; with layer_norm, a LayerNorm after each."""
    planes = np.random.default_rng(0).integers(0, 2, (3, 4, 10, 9)).astype(np.float32)  # non-square
    torso = MinAtarCNN(layer_norm=layer_norm)
    params = torso.init(key(0), planes)
    p = params["params"]
    assert p["conv_kernel"].shape == (3, 3, 4, 16) and p["dense"]["kernel"].shape == (8 * 7 * 16, 128)
    conv = nn.Conv(16, (3, 3), padding="VALID").apply({"params": {"kernel": p["conv_kernel"], "bias": p["conv_bias"]}},
                                                       jnp.transpose(planes, (0, 2, 3, 1)))
    if layer_norm:
        conv = nn.LayerNorm().apply({"params": p["norm1"]}, conv)
    x = nn.Dense(128).apply({"params": p["dense"]}, nn.relu(conv).reshape(3, -1))
    if layer_norm:
        x = nn.LayerNorm().apply({"params": p["norm2"]}, x)
    np.testing.assert_allclose(torso.apply(params, planes), nn.relu(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel_size", [(2, 2), (3, 2)])
def test_a_shifted_conv_is_flaxs_valid_conv_with_its_parameters_and_initial_values(kernel_size):
    """ShiftedConv (the small grid CNN's convs): the parameter tree and initial values of
    nn.Conv(F, kernel_size, VALID) under the same name and key, and its function on them."""
    x = np.random.default_rng(0).normal(size=(3, 7, 6, 5)).astype(np.float32)  # non-square, odd
    ours = ShiftedConv(8, kernel_size).init(key(2), x)
    flax_conv = nn.Conv(8, kernel_size, padding="VALID")
    theirs = flax_conv.init(key(2), x)
    assert jax.tree.structure(ours) == jax.tree.structure(theirs)
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(ShiftedConv(8, kernel_size).apply(ours, x), flax_conv.apply(ours, x), rtol=1e-5, atol=1e-5)


def test_the_2x2_max_pool_is_flaxs():
    x = np.random.default_rng(1).normal(size=(2, 7, 6, 3)).astype(np.float32)  # an odd row is dropped
    np.testing.assert_array_equal(max_pool_2x2(x), nn.max_pool(x, (2, 2), strides=(2, 2)))


def test_torso_for_rejects_unknown_kinds():
    with pytest.raises(ValueError, match="unknown torso kind 'resnet50'"):
        torso_for(gym.spaces.Box(-1, 1, (3,)), "resnet50")

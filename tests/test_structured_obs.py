"""Dict and Tuple observations through the pool: the worker-process backend (one shared-memory
buffer per leaf), the native SignalCorridor-v0 task, every output format, xla(), the env
managers, snapshots, and the refusal of leaves the pool cannot batch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import jax
import numpy as np
import pytest

import envs
from envs.process.mission import decode_mission, encode_mission
from envs import SyncSubprocessEnvManager
from envs.native.signal_corridor import LENGTH, SignalCorridorEnv
from tests.support import toy_envs
from tests.support.job import assert_trees_equal

pytestmark = pytest.mark.timeout(180)
ROOT = Path(__file__).resolve().parents[1]
toy_envs.register_structured_envs()


def expected_obs(who: int, t: int) -> dict:
    """DictObsEnv's observation (as the pool presents it: the image channel-first)."""
    img = np.zeros((3, 8, 6), np.uint8)
    img[0], img[2] = t, who % 256
    return {
        "pos": np.array([who, t, 0.5], np.float32),
        "flag": t % 4,
        "img": img,
        "extra": (np.array([t % 2, 1], np.int8), np.array([t % 3, who % 5])),
    }


def assert_obs_row(obs: dict, row: int, want: dict) -> None:
    np.testing.assert_array_equal(obs["pos"][row], want["pos"])
    assert obs["flag"][row] == want["flag"]
    np.testing.assert_array_equal(obs["img"][row], want["img"])
    np.testing.assert_array_equal(obs["extra"][0][row], want["extra"][0])
    np.testing.assert_array_equal(obs["extra"][1][row], want["extra"][1])


def test_process_backend_batches_every_leaf_in_shared_memory():
    seed = 10
    with envs.make("ToyDictObs-v0", num_envs=4, num_threads=2, seed=seed) as pool:
        space = pool.observation_space
        assert isinstance(space, gym.spaces.Dict) and space["img"].shape == (3, 8, 6)  # channel-first
        assert space == envs.make_spec("ToyDictObs-v0", num_envs=4).observation_space
        fields = {f.name: f.shape for f in pool._backend._shm.layout.fields}
        assert fields["obs/img"] == (4, 3, 8, 6) and fields["obs/extra/1"] == (4, 2) and fields["obs/flag"] == (4,)
        obs, info = pool.reset()
        assert obs["flag"].dtype == np.int64 and obs["extra"][0].dtype == np.int8 and obs["img"].dtype == np.uint8
        assert isinstance(obs["extra"], tuple) and obs["pos"].shape == (4, 3)
        for t in range(1, 7):
            obs, reward, term, trunc, info = pool.step(np.full(4, 2))
            step = t % 5  # 4-step episodes; the step after the last is the reset (EnvPool's rule)
            for i in range(4):
                assert_obs_row(obs, i, expected_obs(seed + i, step))
            assert term.tolist() == [step == 4] * 4
            assert space.contains({k: (v[0] if k != "extra" else (v[0][0], v[1][0])) for k, v in obs.items()})
        # results are copies: the next step does not change what the caller holds
        held = obs["img"].copy()
        pool.step(np.zeros(4, int))
        np.testing.assert_array_equal(obs["img"], held)


def test_async_dict_batches_and_the_dm_output():
    with envs.make("ToyDictObs-v0", num_envs=6, batch_size=2, num_threads=3, seed=0) as pool:
        pool.async_reset()
        steps = np.zeros(6, int)
        for _ in range(30):
            obs, _, _, _, info = pool.recv()
            for row, g in enumerate(info["env_id"].tolist()):
                assert_obs_row(obs, row, expected_obs(g, steps[g] % 5))
                steps[g] += 1
            pool.send(np.ones(2, int), info["env_id"])
    with envs.make_dm("ToyDictObs-v0", num_envs=2, seed=5) as pool:
        spec = pool.observation_spec().obs
        assert spec["img"].shape == (3, 8, 6) and spec["extra"][1].name == "obs/extra/1"
        assert spec["flag"].num_values == 4
        ts = pool.step(np.zeros(2, int))
        assert_obs_row(ts.observation.obs, 1, expected_obs(6, 0))
        ts = pool.step(np.zeros(2, int))
        assert_obs_row(ts.observation.obs, 0, expected_obs(5, 1))


def test_xla_carries_dict_observations():
    with envs.make("ToyDictObs-v0", num_envs=2, seed=0) as pool, envs.make("ToyDictObs-v0", num_envs=2, seed=0) as ref:
        handle, recv, send, step = pool.xla()
        pool.async_reset()
        ref.reset()
        handle, out = jax.jit(recv)(handle)
        for _ in range(3):
            handle, out = jax.jit(step)(handle, np.ones(2, np.int32))
            want = ref.step(np.ones(2, int))
            got = jax.tree_util.tree_map(np.asarray, out[0])
            assert set(got) == set(want[0])
            for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want[0])):
                np.testing.assert_array_equal(a, b)


def test_env_managers_pass_dict_observations():
    with SyncSubprocessEnvManager([toy_envs.DictObsEnv] * 2, dict(retry_waiting_time=0.0)) as mgr:
        mgr.seed(3, dynamic_seed=False)
        mgr.launch()
        obs = mgr.ready_obs
        assert sorted(obs) == [0, 1] and obs[0]["img"].shape == (8, 6, 3)  # the env's own layout
        ts = mgr.step({0: 1, 1: 1})
        assert ts[1].obs["pos"].tolist() == [4.0, 1.0, 0.5] and ts[1].obs["extra"][1].tolist() == [1, 4]


def test_leaves_the_pool_cannot_batch_are_named():
    with pytest.raises(ValueError, match=r"'ToyTextObs-v0' has an observation space leaf 'note' Text .*drop_observation_keys=\['note'\]"):
        envs.make_spec("ToyTextObs-v0")
    spec = envs.make_spec("ToyTextObs-v0", drop_observation_keys=["note"])
    assert list(spec.observation_space.spaces) == ["x"]
    with pytest.raises(ValueError, match=r"no observation keys \['nope'\]; its keys: \['note', 'x'\]"):
        envs.make_spec("ToyTextObs-v0", drop_observation_keys=["nope"])
    with pytest.raises(ValueError, match="has no Dict observation"):
        envs.make_spec("ToyImage-v0" if "ToyImage-v0" in gym.registry else "FrozenLake-v1", drop_observation_keys=["x"])
    with pytest.raises(ValueError, match="drop_observation_keys must be a list"):
        envs.make_spec("ToyTextObs-v0", drop_observation_keys=[1])


def test_tuple_observations_of_a_gymnasium_env():
    """Gymnasium's Blackjack under an id of its own: a Tuple of Discretes, batched leaf by leaf."""
    gym.register("TupleBlackjack-v0", entry_point="gymnasium.envs.toy_text.blackjack:BlackjackEnv")
    try:
        with envs.make("TupleBlackjack-v0", num_envs=3, seed=0) as pool:
            assert isinstance(pool.observation_space, gym.spaces.Tuple)
            obs, _ = pool.reset()
            ref = [gym.make("TupleBlackjack-v0").reset(seed=i)[0] for i in range(3)]
            assert isinstance(obs, tuple)
            assert [tuple(int(leaf[i]) for leaf in obs) for i in range(3)] == [tuple(map(int, r)) for r in ref]
    finally:
        gym.registry.pop("TupleBlackjack-v0")


def test_blackjack_v1_is_served_as_envpool_serves_it():
    """EnvPool's Blackjack-v1 (blackjack.h): one int32 [3] observation, Gymnasium's game and rules;
    gymnasium.make's own Blackjack-v1 is left as Gymnasium registers it."""
    with envs.make("Blackjack-v1", num_envs=3, seed=0) as pool:
        assert pool.observation_space == gym.spaces.Box(0, 31, (3,), np.int32)
        obs, _ = pool.reset()
        ref = [gym.make("Blackjack-v1").reset(seed=i)[0] for i in range(3)]
        assert obs.dtype == np.int32 and obs.tolist() == [list(map(int, r)) for r in ref]
    assert isinstance(gym.make("Blackjack-v1").observation_space, gym.spaces.Tuple)


# ---------------------------------------------------------------- SignalCorridor-v0 (native)


def test_signal_corridor_native_equals_gymnasium_reference_step_for_step():
    """The native task against its Gymnasium env in worker processes over seeded random runs
    with auto-resets (EnvPool's rule: the step after an episode's end is the reset)."""
    rng = np.random.default_rng(0)
    for seed in (3, 100):
        with envs.make("SignalCorridor-v0", num_envs=8, seed=seed) as a, envs.make(
            "SignalCorridor-v0", num_envs=8, seed=seed, backend="process", num_threads=2
        ) as b:
            assert a.spec.config["backend"] == "native" and b.spec.config["backend"] == "process"
            assert a.observation_space == b.observation_space
            outputs = [(a.reset(), b.reset())]
            outputs += [(a.step(act), b.step(act)) for act in rng.integers(0, 2, (300, 8))]
            for ra, rb in outputs:
                assert_trees_equal(ra, rb, "native and process outputs")
                assert [x.dtype for x in jax.tree.leaves(ra)] == [y.dtype for y in jax.tree.leaves(rb)]
            assert sum(int(ra[2].sum()) for ra, _ in outputs[1:]) > 50  # many episode ends


def test_signal_corridor_rewards_need_both_leaves():
    env = SignalCorridorEnv()
    for seed in range(6):
        obs, _ = env.reset(seed=seed)
        assert obs["position"].tolist() == [0.5]
        go = int(obs["signal"])  # walk towards the signalled end: +1 in LENGTH // 2 + 1 steps
        for t in range(LENGTH // 2 + 1):
            obs, r, term, trunc, _ = env.step(go)
        assert (r, term, trunc) == (1.0, True, False)
    with envs.make("SignalCorridor-v0", num_envs=16, seed=0) as pool:
        obs, _ = pool.reset()
        assert 0 < obs["signal"].sum() < 16  # both signals drawn
        wrong = 1 - obs["signal"]
        for _ in range(LENGTH // 2 + 1):
            obs2, r, term, _, _ = pool.step(wrong)
        assert term.all() and (r == -1).all()


def test_signal_corridor_snapshot_resumes_exactly_and_renders():
    with envs.make("SignalCorridor-v0", num_envs=4, seed=1) as pool:
        pool.reset()
        pool.step(np.ones(4, int))
        snap = pool.snapshot()
        first = [pool.step(np.array([1, 0, 1, 1])) for _ in range(6)]
        pool.restore(snap)
        again = [pool.step(np.array([1, 0, 1, 1])) for _ in range(6)]
        for x, y in zip(first, again):
            np.testing.assert_array_equal(x[0]["position"], y[0]["position"])
            np.testing.assert_array_equal(x[0]["signal"], y[0]["signal"])
            np.testing.assert_array_equal(x[1], y[1])
    with envs.make("SignalCorridor-v0", num_envs=2, seed=0, render_mode="rgb_array") as pool:
        pool.reset()
        frame = pool.render(1)
        assert frame.shape == (1, 32, 32 * (LENGTH + 2), 3) and frame.dtype == np.uint8
        centre = frame[0, 16, 16 + 32 * (1 + LENGTH // 2)]
        assert centre.tolist() == [40, 80, 200]  # the agent, blue, in the middle cell


# ---------------------------------------------------------------- MiniGrid's missions (EnvPool's bytes)


def test_missions_encode_to_envpool_bytes_and_decode_back():
    row = encode_mission("go to the red ball", 8)
    assert row.dtype == np.uint8 and row.tolist() == list(b"go to t") + [0]  # nbytes - 1 bytes, then a zero
    assert decode_mission(encode_mission("reach the goal", 96)) == "reach the goal"
    assert decode_mission(encode_mission("caf\u00e9", 5)) == "caf"  # cut at a character's boundary
    batch = np.stack([encode_mission(m, 16) for m in ("a", "", "open the door")]).reshape(3, 1, 16)
    assert decode_mission(batch).tolist() == [["a"], [""], ["open the door"]]
    with pytest.raises(ValueError, match="mission_bytes must be an int >= 2"):
        envs.make_spec("MiniGrid-Empty-5x5-v0", mission_bytes=1)


def test_minigrid_and_babyai_missions_are_served_as_envpool_serves_them():
    """The minigrid package's envs through worker processes: the mission as EnvPool's uint8 bytes
    (96 for MiniGrid ids, 512 for BabyAI's, or mission_bytes), the same missions as Gymnasium's
    envs under the same seeds; an env without a mission refuses mission_bytes in one line."""
    pytest.importorskip("minigrid")
    for task_id, nbytes in (("MiniGrid-Empty-5x5-v0", 96), ("BabyAI-GoToObj-v0", 512)):
        with envs.make(task_id, num_envs=3, seed=0) as pool:
            assert pool.observation_space["mission"] == gym.spaces.Box(0, 255, (nbytes,), np.uint8)
            obs, _ = pool.reset()
            refs = [gym.make(task_id).reset(seed=i)[0] for i in range(3)]
            assert envs.decode_mission(obs["mission"]).tolist() == [r["mission"] for r in refs]
            np.testing.assert_array_equal(obs["image"], np.stack([r["image"].transpose(2, 0, 1) for r in refs]))
    with envs.make("BabyAI-GoToObj-v0", num_envs=1, seed=0, mission_bytes=8) as pool:
        mission = gym.make("BabyAI-GoToObj-v0").reset(seed=0)[0]["mission"]
        assert envs.decode_mission(pool.reset()[0]["mission"][0]) == mission[:7]
    with pytest.raises(ValueError, match="mission_bytes: 'CartPole-v1' has no mission"):
        envs.make_spec("CartPole-v1", backend="process", mission_bytes=16)


# ---------------------------------------------------------------- Gymnasium's own ids


FIRST_CALL = """
import envs, numpy as np
with envs.make("ALE/Pong-v5", num_envs=2, seed=0) as pool:   # ale_py registers it on import
    obs, _ = pool.reset()
    print("ale", obs.shape, pool.spec.config["backend"])
with envs.make("MiniGrid-Empty-5x5-v0", num_envs=2, drop_observation_keys=["mission"]) as pool:
    obs, _ = pool.reset()
    print("minigrid", sorted(obs), obs["image"].shape)
with envs.make("tests.support.toy_envs:ToyModuleForm-v0", num_envs=2) as pool:
    print("module", pool.reset()[0].shape)
"""


def test_ids_of_packages_that_register_on_import_work_on_the_first_call():
    pytest.importorskip("ale_py")
    pytest.importorskip("minigrid")
    out = subprocess.run([sys.executable, "-c", FIRST_CALL], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [line for line in out.stdout.splitlines() if line.split()[0] in ("ale", "minigrid", "module")]
    assert lines == [
        "ale (2, 3, 210, 160) process",  # Gymnasium's own ALE env (channel-first), not Pong-v5's preprocessing
        "minigrid ['direction', 'image'] (2, 3, 7, 7)",
        "module (2, 1)",
    ], out.stdout


def test_module_form_errors_are_one_line():
    with pytest.raises(ValueError, match="module 'no_such_module' cannot be imported"):
        envs.make_spec("no_such_module:Thing-v0")
    with pytest.raises(ValueError, match="importing 'gymnasium' registered no id 'Thing-v0'"):
        envs.make_spec("gymnasium:Thing-v0")

"""The learning environment of examples/python/arm_env.py: determinism and sensor rates."""

import os
import sys

import numpy as np
import pytest

import simsync

pytestmark = pytest.mark.skipif(not simsync.HAVE_MUJOCO, reason="simsync built without the mujoco adapter")

SOURCE_DIR = os.environ.get("SIMSYNC_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "examples", "python"))

import arm_env  # noqa: E402


def actions(n, seed=1):
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, 2))


def test_same_seed_same_actions_bit_identical_observations():
    a = actions(40)
    assert arm_env.episode(3, a) == arm_env.episode(3, a)


def test_another_seed_another_episode():
    a = actions(5)
    assert arm_env.episode(3, a) != arm_env.episode(4, a)


def test_sensors_observe_at_their_own_instants():
    env = arm_env.ArmEnv()
    try:
        first, info = env.reset(seed=1)
        assert info["time"] == 0
        assert sorted((name, t) for name, t, _ in first) == [("camera", 0), ("joints", 0)]
        samples = []
        for action in actions(10):
            observations, reward, terminated, truncated, info = env.step(action)
            samples += observations
            assert isinstance(reward, float) and not terminated and not truncated
        assert info["time"] == simsync.ms(100)
        joints = [t for name, t, _ in samples if name == "joints"]
        camera = [t for name, t, _ in samples if name == "camera"]
        assert joints == [k * simsync.ms(2) for k in range(1, 51)]  # 500 Hz, up to 100 ms
        assert camera == [simsync.ms(33), simsync.ms(67), simsync.ms(100)]  # 30 Hz on the 1 ms grid
        assert all(a.shape == (4,) for name, _, a in samples if name == "joints")
    finally:
        env.close()


def test_step_before_reset_is_an_error():
    with pytest.raises(simsync.InvalidState):
        arm_env.ArmEnv().step([0.0, 0.0])

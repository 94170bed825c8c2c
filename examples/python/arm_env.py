#!/usr/bin/env python3
"""A deterministic learning environment over the MuJoCo host's arm (issue 27 point 6).

``ArmEnv(model_path)``, ``reset(seed)``, ``step(action)``: the Gymnasium call shapes
without depending on Gymnasium (it is not in Debian):

* ``reset(seed) -> (observations, info)``;
* ``step(action) -> (observations, reward, terminated, truncated, info)``, where
  ``action`` is the two motor controls (shoulder, elbow) held for one control period
  (10 ms of simulated time);
* ``observations`` is a list of ``(sensor, time_ns, numpy array)``: every sample the
  sensors took since the last call, each at its own instant. The sensors run at their
  own rates, not the control step's: ``joints`` (shoulder and elbow angle and velocity)
  at 500 Hz and ``camera`` (every position of the scene) at 30 Hz (granted at 0, 33, 67
  ms ...). A Gymnasium wrapper would flatten them (e.g. the latest sample of each).

Underneath: the handler starts paused; each ``step`` writes the controls in the
controller's exclusive access, runs the handler until the next control instant
(``run_until``) and asks for it in one operation (``release_and_request``). The sensors
are inline systems (shared accesses) called on the stepping thread at their instants,
ordered before the controller at a shared instant (priority), so a step's observations
end at the instant its action starts from. Time never moves outside ``step``: two runs
with the same seed and the same actions give bit-identical observations.

Run it: ``PYTHONPATH=build/default/python python3 examples/python/arm_env.py``
"""

import os
import random
from fractions import Fraction

import numpy as np

import simsync

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODEL = os.path.join(HERE, "..", "mujoco_host", "arm.xml")

CONTROL_PERIOD = simsync.ms(10)
SENSORS = {
    "joints": simsync.ms(2),  # 500 Hz
    "camera": Fraction(simsync.seconds(1), 30),  # 30 Hz, exact: n / 30 s
}
SHOULDER, ELBOW = 0, 1  # the arm's hinge joints come first in qpos (free bodies after)
TARGET = np.array([1.0, -0.5])  # joint angles the reward asks for


class ArmEnv:
    def __init__(self, model_path=DEFAULT_MODEL, episode_steps=200):
        self.model_path = model_path
        self.episode_steps = episode_steps
        self.handler = None
        self.access = None

    # -------------------------------------------------------------- the API
    def reset(self, seed):
        """Starts a new episode from the model's initial state, its arm joints perturbed by
        ``seed``; returns (observations at time 0, info)."""
        self.close()
        self.rng = random.Random(seed)
        self.world = simsync.MujocoWorld(path=self.model_path)
        self.handler = simsync.Handler(self.world, step=self.world.timestep, start_paused=True, stall_timeout=0)
        self.samples = []
        self.controller = self.handler.register_accessor("controller")
        self.access = self.controller.request(0)  # at the current instant: served while paused
        qpos = self.access.world.qpos.copy()
        qpos[[SHOULDER, ELBOW]] += [self.rng.uniform(-0.1, 0.1) for _ in range(2)]
        self.access.world.qpos = qpos
        self.sensors = []
        for name, period in SENSORS.items():
            sensor = self.handler.register_accessor(name, mode="shared", priority=1)
            sensor.run_system(0, self._sensor(name, period))
            self.sensors.append(sensor)
        # Asking again for 0 queues the controller behind the sensors, which have not
        # had that instant yet: they sample the perturbed state first.
        self.access = self.controller.release_and_request(self.access, 0)
        self.steps = 0
        return self._take(), {"time": 0}

    def step(self, action):
        """Holds ``action`` (shoulder, elbow controls) for one control period."""
        if self.access is None:
            raise simsync.InvalidState("call reset(seed) first", simsync.Errc.invalid_state)
        self.access.world.ctrl = np.asarray(action, dtype=float)
        next_time = self.access.granted_time + CONTROL_PERIOD
        self.handler.run_until(next_time)  # time moves only here, and pauses at next_time
        self.access = self.controller.release_and_request(self.access, next_time)
        if not self.access:
            raise RuntimeError(f"the controller's request was refused: {self.access.refusal}")
        self.steps += 1
        angles = self.access.world.qpos[[SHOULDER, ELBOW]]
        reward = -float(np.sum((angles - TARGET) ** 2))
        truncated = self.steps >= self.episode_steps
        return self._take(), reward, False, truncated, {"time": self.access.granted_time}

    def close(self):
        if self.access is not None:
            self.access.release(simsync.NEVER)
            self.access = None
        if self.handler is not None:
            self.handler.close()
            self.handler = None

    # -------------------------------------------------------------- inside
    def _sensor(self, name, period):
        n = [0]

        def system(access):
            if not access:
                return None  # the handler stopped: the episode is over
            view = access.world
            if name == "joints":
                sample = np.concatenate([view.qpos[[SHOULDER, ELBOW]], view.qvel[[SHOULDER, ELBOW]]])
            else:
                sample = view.qpos
            self.samples.append((name, access.granted_time, sample))
            n[0] += 1
            wanted = int(round(n[0] * Fraction(period)))
            return simsync.next_instant_after(access.granted_time, wanted, self.world.timestep)

        return system

    def _take(self):
        samples, self.samples = self.samples, []
        return samples


def fingerprint(observations):
    """The observations as bytes: equal exactly when bit-identical."""
    return b"".join(name.encode() + t.to_bytes(8, "little", signed=True) + a.tobytes() for name, t, a in observations)


def episode(seed, actions):
    env = ArmEnv()
    try:
        observations, _ = env.reset(seed)
        trace = [fingerprint(observations)]
        for action in actions:
            observations, reward, _, _, _ = env.step(action)
            trace.append(fingerprint(observations) + np.float64(reward).tobytes())
        return trace
    finally:
        env.close()


if __name__ == "__main__":
    rng = np.random.default_rng(1)
    actions = rng.uniform(-1, 1, size=(50, 2))
    first, second = episode(7, actions), episode(7, actions)
    print(f"50 steps, {sum(len(t) for t in first)} bytes of observations; "
          f"same seed and actions, bit-identical: {first == second}")

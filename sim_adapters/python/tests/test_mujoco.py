"""The MuJoCo world from Python: qpos/qvel/ctrl as numpy arrays inside an access.

Chosen rule (documented on simsync.MujocoWorld): arrays are read-only *copies*, and
writes go through assignment on the view, which checks that the exclusive access is
still held. So an array obtained in an access can never write the world after it."""

import numpy as np
import pytest

import simsync

pytestmark = pytest.mark.skipif(not simsync.HAVE_MUJOCO, reason="simsync built without the mujoco adapter")

PENDULUM = """
<mujoco model="pendulum">
  <option timestep="0.002"/>
  <worldbody>
    <body name="pole" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.02" mass="1"/>
    </body>
  </worldbody>
  <actuator><motor joint="hinge" gear="1"/></actuator>
  <sensor><jointpos joint="hinge"/></sensor>
</mujoco>
"""


@pytest.fixture
def world():
    return simsync.MujocoWorld(xml=PENDULUM)


def test_state_as_arrays(world):
    assert world.timestep == simsync.ms(2)
    assert (world.nq, world.nv, world.nu) == (1, 1, 1)
    with simsync.Handler(world, step=world.timestep, stall_timeout=0) as h:
        controller = h.register_accessor("controller")
        with controller.request(0) as access:
            view = access.world
            assert isinstance(view.qpos, np.ndarray) and view.qpos.shape == (1,)
            view.qpos = [0.3]
            view.ctrl = np.array([0.5])
            assert view.ctrl[0] == 0.5
        with controller.request(simsync.ms(20)) as access:
            view = access.world
            assert view.time == simsync.ms(20)
            assert view.qpos[0] != 0.3  # it moved in 10 steps
            assert view.sensordata.shape == (1,)  # computed by mj_step before it integrates: one step behind qpos
            assert abs(view.sensordata[0] - view.qpos[0]) < 0.01


def test_arrays_obtained_in_an_access_cannot_write_the_world_after_it(world):
    with simsync.Handler(world, step=world.timestep, stall_timeout=0) as h:
        controller = h.register_accessor("controller")
        with controller.request(0) as access:
            view = access.world
            qpos = view.qpos
            ctrl = view.ctrl
            with pytest.raises(ValueError, match="read-only"):
                qpos[0] = 1.0  # a read-only copy: writing it is refused, even inside
        # After the release: the view refuses, and the copies are not the world.
        with pytest.raises(simsync.InvalidState, match="released"):
            view.ctrl = [1.0]
        with pytest.raises(simsync.InvalidState):
            _ = view.qpos
        writable = qpos.copy()
        writable[0] = 42.0
        ctrl.setflags(write=True)  # allowed: it owns its memory ...
        ctrl[0] = 42.0             # ... which is not mjData's
        with controller.request(0) as access:
            assert access.world.qpos[0] == 0.0
            assert access.world.ctrl[0] == 0.0


def test_shared_access_reads_but_does_not_write(world):
    with simsync.Handler(world, step=world.timestep, stall_timeout=0) as h:
        sensor = h.register_accessor("sensor", mode="shared")
        with sensor.request(0) as access:
            assert access.world.qvel.shape == (1,)
            with pytest.raises(simsync.InvalidState, match="shared"):
                access.world.ctrl = [1.0]


def test_shape_and_model_errors(world):
    with simsync.Handler(world, step=world.timestep, stall_timeout=0) as h:
        controller = h.register_accessor("controller")
        with controller.request(0) as access:
            with pytest.raises(simsync.InvalidArgument, match=r"ctrl must have shape \(1,\)"):
                access.world.ctrl = [1.0, 2.0]
    with pytest.raises(simsync.InvalidArgument):
        simsync.MujocoWorld(xml="<mujoco><worldbody><body></mujoco>")
    with pytest.raises(simsync.InvalidArgument, match="exactly one"):
        simsync.MujocoWorld()


def test_same_controls_same_trajectory():
    def run():
        world = simsync.MujocoWorld(xml=PENDULUM)
        hashes = []
        with simsync.Handler(world, step=world.timestep, stall_timeout=0) as h:
            controller = h.register_accessor("controller")
            access = controller.request(0)
            for k in range(1, 50):
                access.world.ctrl = [np.sin(k / 5.0)]
                hashes.append(access.world.state_hash)
                access = controller.release_and_request(access, k * simsync.ms(10))
            access.release()
        return hashes

    assert run() == run()

"""The Bullet world from Python: per-body arrays as read-only copies, writes checked."""

import numpy as np
import pytest

import simsync

pytestmark = pytest.mark.skipif(not simsync.HAVE_BULLET, reason="simsync built without the bullet adapter")

BODIES = [
    dict(name="ball", shape="sphere", radius=0.1, mass=1.0, position=(0, 0, 1)),
    dict(name="box", half_extents=(0.2, 0.2, 0.2), mass=2.0, position=(1, 0, 0.2)),
]


def run(pushes):
    world = simsync.BulletWorld(BODIES)
    hashes = []
    with simsync.Handler(world, step=simsync.ms(1), stall_timeout=0) as h:
        controller = h.register_accessor("controller")
        access = controller.request(0)
        for k, push in enumerate(pushes, start=1):
            access.world.apply_central_force("box", (push, 0, 0))
            hashes.append(access.world.state_hash)
            access = controller.release_and_request(access, k * simsync.ms(10))
        positions = access.world.positions
        access.release()
    return hashes, positions


def test_falling_ball_and_pushed_box():
    hashes, positions = run([50.0] * 20)
    assert positions.shape == (2, 3)
    assert positions[0, 2] < 1.0  # the ball fell
    assert positions[1, 0] > 1.0  # the box was pushed along x
    assert run([50.0] * 20)[0] == hashes  # same pushes, same trajectory


def test_arrays_and_view_after_release():
    world = simsync.BulletWorld(BODIES)
    with simsync.Handler(world, step=simsync.ms(1), stall_timeout=0) as h:
        a = h.register_accessor("a")
        with a.request(0) as access:
            view = access.world
            positions = view.positions
            with pytest.raises(ValueError, match="read-only"):
                positions[0, 0] = 5.0
        with pytest.raises(simsync.InvalidState):
            view.apply_central_impulse("ball", (0, 0, 1))
        with pytest.raises(simsync.InvalidState):
            _ = view.positions
        s = h.register_accessor("sensor", mode="shared")
        with s.request(0) as access:
            assert np.array_equal(access.world.positions, positions)
            with pytest.raises(simsync.InvalidState, match="shared"):
                access.world.set_linear_velocity(0, (1, 0, 0))


def test_bad_bodies_name_the_field():
    with pytest.raises(simsync.InvalidArgument, match="shape"):
        simsync.BulletWorld([dict(name="x", shape="cone")])
    with pytest.raises(simsync.InvalidArgument, match="position"):
        simsync.BulletWorld([dict(name="x", position=(0, 0))])

"""Refusals as values (a falsy Access with a Refusal), bad input as Error subclasses naming the field."""

import pytest

import simsync
from simsync import Refusal

from conftest import MS, Worker, wait_until_waiting


# ---------------------------------------------------------------- caller errors

def test_step_must_be_positive(world):
    with pytest.raises(simsync.InvalidArgument, match="step") as e:
        simsync.Handler(world, step=0)
    assert e.value.code == simsync.Errc.invalid_argument
    assert isinstance(e.value, ValueError) and isinstance(e.value, simsync.Error)


def test_float_times_are_refused_naming_the_field(world):
    with pytest.raises(simsync.InvalidArgument, match="^step must be an int of nanoseconds"):
        simsync.Handler(world, step=0.001)
    with simsync.Handler(world, step=MS, stall_timeout=0) as h:
        a = h.register_accessor("a")
        with pytest.raises(simsync.InvalidArgument, match="^t must be an int"):
            a.request(1.0)
        with pytest.raises(simsync.InvalidArgument, match="^first_request must be"):
            h.register_accessor("b", first_request=0.5)


def test_bad_enum_names_list_the_choices(world):
    with pytest.raises(simsync.InvalidArgument, match="rounding must be one of nearest, up, down"):
        simsync.Handler(world, rounding="sideways")
    with simsync.Handler(world, stall_timeout=0) as h:
        with pytest.raises(simsync.InvalidArgument, match="kind must be one of lockstep, free"):
            h.register_accessor("a", kind="eager")


def test_registration_errors(handler):
    a = handler.register_accessor("a")  # an Accessor dropped is deregistered: keep it
    with pytest.raises(simsync.DuplicateName, match="'a'"):
        handler.register_accessor("a")
    with pytest.raises(simsync.InvalidArgument, match="lookahead"):
        handler.register_accessor("b", lookahead=-1)
    with pytest.raises(simsync.InvalidArgument, match="name"):
        handler.register_accessor("")
    with a.request(simsync.ms(5)):
        pass
    with pytest.raises(simsync.InvalidArgument, match="first_request"):
        handler.register_accessor("c", first_request=simsync.ms(1))


def test_busy_while_holding(handler):
    a = handler.register_accessor("a")
    with a.request(0) as access:
        assert access
        with pytest.raises(simsync.Busy):
            a.request(MS)


def test_release_before_the_granted_time_keeps_the_access(handler):
    a = handler.register_accessor("a")
    access = a.request(simsync.ms(3))
    with pytest.raises(simsync.InvalidArgument, match="before"):
        access.release(simsync.ms(2))
    assert access  # still held
    with pytest.raises(simsync.InvalidArgument, match="before the granted time"):
        a.release_and_request(access, simsync.ms(1))
    assert access
    access.release(simsync.ms(4))
    assert not access


def test_release_and_request_of_another_accessors_access(handler):
    a = handler.register_accessor("a")
    b = handler.register_accessor("b")
    access = a.request(0)
    with pytest.raises(simsync.InvalidArgument, match="another accessor"):
        b.release_and_request(access, MS)
    assert access
    access.release()


def test_world_of_a_released_access_raises_invalid_state(handler):
    a = handler.register_accessor("a")
    with a.request(0) as access:
        view = access.world
        view.value = 7
    assert not access
    with pytest.raises(simsync.InvalidState, match="released"):
        view.value = 8
    with pytest.raises(simsync.InvalidState):
        _ = view.value
    with pytest.raises(simsync.InvalidState):
        _ = access.world


def test_shared_access_is_read_only(handler):
    a = handler.register_accessor("a", mode="shared")
    with a.request(0) as access:
        assert access.world.value == 0
        with pytest.raises(simsync.InvalidState, match="shared"):
            access.world.value = 1


# ---------------------------------------------------------------- refusals

def test_time_passed_is_a_falsy_access(handler):
    a = handler.register_accessor("a", kind="free")
    with a.request(simsync.ms(5)):
        pass
    access = a.request(simsync.ms(4))
    assert not access
    assert access.refusal is Refusal.time_passed
    assert access.requested_time == simsync.ms(4)
    with pytest.raises(simsync.InvalidState, match="refused"):
        _ = access.world
    # exactly now is granted
    with a.request(handler.now) as now_access:
        assert now_access.granted_time == simsync.ms(5)


def test_stopped(handler):
    a = handler.register_accessor("a")
    b = handler.register_accessor("b")
    waiter = Worker(lambda: b.request(simsync.ms(10)).refusal)
    held = a.request(0)  # a holds time at 0: b waits
    waiter.start()
    wait_until_waiting(handler, "b")
    handler.stop()
    assert waiter.join_result() is Refusal.stopped
    held.release()
    assert a.request(simsync.ms(1)).refusal is Refusal.stopped


def test_timed_out(handler):
    a = handler.register_accessor("a")
    b = handler.register_accessor("b")
    held = a.request(0)
    access = b.request(simsync.ms(1), timeout=0.05)
    assert access.refusal is Refusal.timed_out
    held.release()


def test_would_block(handler):
    a = handler.register_accessor("a")
    b = handler.register_accessor("b")
    held = a.request(0)
    assert b.try_request(simsync.ms(1)).refusal is Refusal.would_block
    held.release(simsync.ms(50))
    # b alone can step the world itself: granted without waiting for another thread
    access = b.try_request(simsync.ms(1))
    assert access and access.granted_time == simsync.ms(1)
    access.release()


def test_not_registered_after_deregister_and_revoke(handler):
    a = handler.register_accessor("a")
    b = handler.register_accessor("b")
    held = a.request(0)
    waiter = Worker(lambda: b.request(simsync.ms(5)).refusal)
    waiter.start()
    wait_until_waiting(handler, "b")
    b.deregister()
    assert waiter.join_result() is Refusal.not_registered
    assert not b.registered
    # revoke of a held access: it turns falsy and says so
    assert handler.revoke("a")
    assert not held and held.revoked
    assert not handler.revoke("nobody")


def test_cancelled_from_another_thread(handler):
    a = handler.register_accessor("a")
    b = handler.register_accessor("b")
    held = a.request(0)
    waiter = Worker(lambda: b.request(simsync.ms(5)).refusal)
    waiter.start()
    wait_until_waiting(handler, "b")
    b.cancel()
    assert waiter.join_result() is Refusal.cancelled
    held.release()


class FailingWorld(simsync.World):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def step(self, dt):
        self.steps += 1
        if self.steps == 3:
            raise ZeroDivisionError("the engine blew up")


def test_world_failed_and_failure():
    world = FailingWorld()
    with simsync.Handler(world, step=MS, stall_timeout=0) as h:
        a = h.register_accessor("a")
        access = a.request(simsync.ms(10))
        assert access.refusal is Refusal.world_failed
        assert h.state == simsync.HandlerState.stopped
        failure = h.failure()
        assert "ZeroDivisionError" in str(failure) and "the engine blew up" in str(failure)
        assert world.steps == 3


def test_refusal_names():
    assert [r.name for r in Refusal] == [
        "time_passed", "stopped", "timed_out", "not_registered", "would_block", "world_failed", "cancelled"]
    assert str(Refusal.stopped) == "stopped"


def test_timed_out_and_busy_off_the_main_thread(handler):
    """Worker threads wait in C++'s blocking request itself: same refusals and errors."""
    a = handler.register_accessor("a")
    b = handler.register_accessor("b")
    held = a.request(0)
    timed = Worker(lambda: b.request(simsync.ms(1), timeout=0.05).refusal)
    timed.start()
    assert timed.join_result() is Refusal.timed_out

    def fused_before_grant():
        access = b.request(0)
        try:
            b.release_and_request(access, -MS)
        except simsync.InvalidArgument:
            return bool(access)  # still held
        return None

    held.release(simsync.NEVER)
    w = Worker(fused_before_grant)
    w.start()
    assert w.join_result() is True

"""Inline systems written in Python: called on the stepping thread, the GIL held for the call only."""

import threading

import pytest

import simsync
from simsync import Refusal

from conftest import MS, Worker, wait_for


def test_system_runs_at_its_instants_and_ends_with_none(handler, world):
    calls = []
    a = handler.register_accessor("system")

    def system(access):
        calls.append((access.granted_time, world.steps, threading.get_ident()))
        access.world.value += 1
        if access.granted_time < simsync.ms(30):
            return access.granted_time + simsync.ms(10)
        access.release(simsync.NEVER)  # a plain end would hold time at 30 ms (+ lookahead 0)
        return None

    a.run_system(0, system)
    b = handler.register_accessor("reader", mode="shared")
    with b.request(simsync.ms(40)) as access:
        assert access.world.value == 4
    assert [c[0] for c in calls] == [0, simsync.ms(10), simsync.ms(20), simsync.ms(30)]
    assert [c[1] for c in calls] == [0, 10, 20, 30]  # right after the step that reached it


def test_the_lent_access_is_gone_after_the_call(handler):
    kept = []
    a = handler.register_accessor("system")

    def system(access):
        kept.append((access, access.world))
        access.release(simsync.NEVER)
        return None

    a.run_system(0, system)
    wait_for(lambda: kept, "the system's call")
    access, view = kept[0]
    assert not access
    with pytest.raises(simsync.InvalidState):
        view.value = 1


def test_last_call_says_why_it_ended(handler):
    ended = []
    blocker = handler.register_accessor("blocker")
    a = handler.register_accessor("system")

    def system(access):
        if not access:
            ended.append(access.refusal)
            return None
        return access.granted_time + MS

    held = blocker.request(0)
    a.run_system(simsync.ms(1), system)
    handler.stop()
    held.release()
    wait_for(lambda: ended, "the system's last call")
    assert ended == [Refusal.stopped]


def test_an_exception_in_a_system_stops_the_handler(handler):
    a = handler.register_accessor("system")

    def system(access):
        if access.granted_time == simsync.ms(2):
            raise KeyError("bad sensor")
        return access.granted_time + MS

    a.run_system(0, system)
    b = handler.register_accessor("b", kind="free")
    refusal = b.request(simsync.ms(5)).refusal
    assert refusal in (Refusal.stopped, Refusal.world_failed)
    assert "KeyError" in str(handler.failure()) and "bad sensor" in str(handler.failure())


def test_systems_and_threads_share_the_gil(handler, world):
    """A system runs on whichever thread steps; Python threads waiting meanwhile do not hold the GIL."""
    system_threads = set()
    a = handler.register_accessor("system", priority=1)

    def system(access):
        system_threads.add(threading.get_ident())
        return access.granted_time + MS if access.granted_time < simsync.ms(200) else simsync.NEVER

    workers = []
    for k in range(3):
        acc = handler.register_accessor(f"thread{k}")  # before the system runs: they hold time at 0

        def body(acc=acc):
            access = acc.request(0)
            for t in range(1, 201):
                access = acc.release_and_request(access, t * MS)
                assert access
            access.release(simsync.NEVER)

        workers.append(Worker(body, f"thread{k}"))
    a.run_system(0, system)
    for w in workers:
        w.start()
    for w in workers:
        w.join_result()
    assert world.steps == 200
    assert system_threads  # called, on the stepping threads

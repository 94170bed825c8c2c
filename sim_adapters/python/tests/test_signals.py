"""Ctrl-C while the main thread waits for a grant: the request is withdrawn and
KeyboardInterrupt raised; the GIL is released while waiting."""

import signal
import threading

import pytest

import simsync

from conftest import MS, Worker, activity, wait_for, wait_until_waiting


def test_ctrl_c_withdraws_the_request_and_raises(handler):
    blocker = handler.register_accessor("blocker")
    a = handler.register_accessor("a")
    held = blocker.request(0)
    main = threading.main_thread().ident
    assert threading.get_ident() == main

    def interrupt():
        wait_until_waiting(handler, "a")
        signal.pthread_kill(main, signal.SIGINT)

    sender = Worker(interrupt, "sigint")
    sender.start()
    with pytest.raises(KeyboardInterrupt):
        a.request(simsync.ms(5))
    sender.join_result()
    assert activity(handler, "a") == "idle"  # withdrawn
    held.release(simsync.NEVER)
    with a.request(simsync.ms(5)) as access:  # not busy: the accessor is usable again
        assert access.granted_time == simsync.ms(5)


def test_the_gil_is_released_while_waiting(handler):
    """A Python thread runs (and releases the blocker) while the main thread waits."""
    blocker = handler.register_accessor("blocker")
    a = handler.register_accessor("a")
    held = blocker.request(0)
    counter = []

    def spin_then_release():
        wait_until_waiting(handler, "a")
        for k in range(10000):
            counter.append(k)  # Python bytecode: needs the GIL
        held.release(simsync.NEVER)

    worker = Worker(spin_then_release)
    worker.start()
    with a.request(simsync.ms(2)) as access:
        assert access.granted_time == simsync.ms(2)
    worker.join_result()
    assert len(counter) == 10000


def test_timed_request_on_the_main_thread(handler):
    blocker = handler.register_accessor("blocker")
    a = handler.register_accessor("a")
    held = blocker.request(0)
    assert a.request(MS, timeout=0.12).refusal is simsync.Refusal.timed_out
    assert activity(handler, "a") == "idle"
    held.release()

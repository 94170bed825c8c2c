"""Shared helpers of the simsync Python tests.

No sleeps to fix races: a test that needs another thread to have reached a state
waits for that state (bounded, through Handler.snapshot()); every assertion runs
on the test thread.
"""

import threading
import time

import pytest

import simsync

MS = simsync.ms(1)


def wait_for(predicate, what, timeout=10.0):
    """Waits (bounded) until predicate() is true; fails naming `what` otherwise."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.0005)


def activity(handler, name):
    for status in handler.snapshot().accessors:
        if status.name == name:
            return status.activity
    return None


def wait_until_waiting(handler, name):
    wait_for(lambda: activity(handler, name) == "waiting", f"accessor {name!r} to wait")


class Worker(threading.Thread):
    """A thread that runs `body` and keeps its result or exception for the test thread."""

    def __init__(self, body, name=None):
        super().__init__(name=name, daemon=True)
        self.body = body
        self.result = None
        self.error = None

    def run(self):
        try:
            self.result = self.body()
        except BaseException as e:  # reported on the test thread
            self.error = e

    def join_result(self, timeout=30.0):
        self.join(timeout)
        assert not self.is_alive(), f"thread {self.name} did not finish in {timeout} s"
        if self.error is not None:
            raise self.error
        return self.result


@pytest.fixture
def world():
    return simsync.CountingWorld()


@pytest.fixture
def handler(world):
    with simsync.Handler(world, step=MS, stall_timeout=0) as h:
        yield h

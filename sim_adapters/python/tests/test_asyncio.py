"""asyncio: grants complete on the running loop; cancelling the task withdraws the request."""

import asyncio
import threading

import pytest

import simsync
from simsync import Refusal

from conftest import MS, wait_until_waiting


def test_grant_completes_on_the_loop_thread(handler):
    a = handler.register_accessor("a", first_request=simsync.ms(3))
    other = handler.register_accessor("other")

    async def main():
        loop_thread = threading.get_ident()
        held = other.request(0)  # holds time at 0: a's grant comes from another thread's release
        task = asyncio.ensure_future(a.request_async(simsync.ms(3)))
        await asyncio.sleep(0)
        releaser = threading.Thread(target=held.release, args=(simsync.ms(10),))
        releaser.start()
        access = await task
        releaser.join()
        assert threading.get_ident() == loop_thread
        return access.granted_time, bool(access)

    assert asyncio.run(main()) == (simsync.ms(3), True)


def test_cancelling_the_task_withdraws_the_request(handler):
    blocker = handler.register_accessor("blocker")  # first: a lockstep accessor registered before
    a = handler.register_accessor("a")  # it could still ask for 0, and blocker's grant would wait

    async def main():
        held = blocker.request(0)
        task = asyncio.ensure_future(a.request_async(simsync.ms(5)))
        for _ in range(100_000):  # bounded: the request is pending once the task has started
            if any(s.name == "a" and s.activity == "waiting" for s in handler.snapshot().accessors):
                break
            await asyncio.sleep(0)
        else:
            pytest.fail("the request never became pending")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        status = {s.name: s.activity for s in handler.snapshot().accessors}
        assert status["a"] == "idle"  # withdrawn, not waiting any more
        held.release(simsync.NEVER)  # blocker asks no more
        again = await a.request_async(simsync.ms(5))  # not busy: the old request is gone
        assert again.granted_time == simsync.ms(5)
        again.release()

    asyncio.run(main())


def test_refusals_are_values_in_asyncio_too(handler):
    a = handler.register_accessor("a", kind="free")

    async def main():
        with await a.request_async(simsync.ms(2)):
            pass
        late = await a.request_async(simsync.ms(1))
        return late.refusal

    assert asyncio.run(main()) is Refusal.time_passed


def test_a_thousand_tasks_on_one_loop(handler, world):
    n_tasks, n_grants = 1000, 5
    accessors = [handler.register_accessor(f"t{k:04}", mode="shared" if k % 2 else "exclusive") for k in range(n_tasks)]
    grants = []

    async def task(k, a):
        access = await a.request_async(0)
        for i in range(1, n_grants):
            grants.append((access.sequence, k, access.granted_time))
            access = await a.release_and_request_async(access, i * MS)
        grants.append((access.sequence, k, access.granted_time))
        access.release(simsync.NEVER)

    async def main():
        await asyncio.gather(*(task(k, a) for k, a in enumerate(accessors)))

    asyncio.run(main())
    grants.sort()
    assert len(grants) == n_tasks * n_grants
    # every instant in registration order (all priority 0), instants in order
    assert [(t, k) for _, k, t in grants] == [(i * MS, k) for i in range(n_grants) for k in range(n_tasks)]
    assert world.steps == n_grants - 1



def _first_grant_then_blocker(handler):
    """a's grant at 1 ms from a loop that is finished on return, and a lockstep
    accessor registered after it (holding time at 1 ms) whose thread lets time go
    on once a's access is released: a's next grant comes from that thread, so
    the future of a's next request is still pending when it is awaited."""
    a = handler.register_accessor("a")

    async def first():
        return await a.request_async(simsync.ms(1))

    access = asyncio.run(first())
    assert access.granted_time == simsync.ms(1)
    blocker = handler.register_accessor("blocker")
    unblocker = threading.Thread(target=lambda: blocker.request(simsync.ms(1)).release(simsync.NEVER))
    return a, access, unblocker


def test_an_access_from_a_finished_loop_is_passed_on_in_the_next_loop(handler):
    # release_and_request_async finds its task's loop through the Access of the
    # previous grant only while that loop runs on the calling thread: an Access
    # kept from an earlier asyncio.run() completes on the loop running now.
    a, access, unblocker = _first_grant_then_blocker(handler)

    async def second():
        unblocker.start()
        following = await a.release_and_request_async(access, simsync.ms(2))
        return following.granted_time, bool(following), threading.get_ident()

    result = asyncio.run(second())
    unblocker.join()
    assert result == (simsync.ms(2), True, threading.get_ident())


def test_an_access_passed_to_a_loop_on_another_thread_completes_there(handler):
    a, access, unblocker = _first_grant_then_blocker(handler)
    results = []

    async def second():
        unblocker.start()
        following = await a.release_and_request_async(access, simsync.ms(2))
        results.append((following.granted_time, threading.get_ident()))
        following.release()

    other = threading.Thread(target=lambda: asyncio.run(second()))
    other.start()
    other.join(timeout=60)
    unblocker.join(timeout=60)
    assert not other.is_alive()
    assert results == [(simsync.ms(2), other.ident)]

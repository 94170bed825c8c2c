"""asyncio requests: ``await accessor.request_async(t)``.

The grant completes on the running event loop: simsync's completion (on whichever
thread granted it, with the GIL taken for that moment only) hands the Access to the
loop with ``loop.call_soon_threadsafe``; granted on the loop's own thread (a task's
release or request made it possible), it resolves the future there directly, which
schedules the task through the loop without waking its selector. Either way the
awaiting task resumes on its loop, never on a simsync thread. Cancelling
the task withdraws the request (Refusal.cancelled); a grant that raced with the
cancellation is released.
"""

import asyncio


def _deliver(future, access):
    if future.done():  # the task was cancelled meanwhile: give the grant back
        access.release()
    else:
        future.set_result(access)


async def _await(accessor, future):
    try:
        return await future
    except asyncio.CancelledError:
        accessor.cancel()
        raise


async def request_async(accessor, t):
    """Asks for the access at ``t`` (ns); resolves to an Access (falsy if refused)."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    accessor._start_async(t, loop, _deliver, future)
    return await _await(accessor, future)


async def release_and_request_async(accessor, access, next_time):
    """Releases ``access`` and asks for ``next_time`` in one operation; resolves to the next Access."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    accessor._start_async(next_time, loop, _deliver, future, access)
    return await _await(accessor, future)

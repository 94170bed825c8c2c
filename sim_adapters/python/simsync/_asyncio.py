"""asyncio requests: ``await accessor.request_async(t)``.

The grant completes on the running event loop: simsync's completion (on whichever
thread granted it, with the GIL taken for that moment only) hands the Access to the
loop with ``loop.call_soon_threadsafe``; granted on the loop's own thread (a task's
release or request made it possible), it resolves the future there directly, which
schedules the task through the loop without waking its selector. Either way the
awaiting task resumes on its loop, never on a simsync thread. Cancelling
the task withdraws the request (Refusal.cancelled); a grant that raced with the
cancellation is released.

Per grant: one coroutine frame and one future (a _GrantFuture, made by the binding on
the loop that delivered the previous grant of the task when it still runs on this
thread, else on asyncio.get_running_loop()); on the loop's thread the binding does
what _deliver does itself, from another thread it posts _deliver to the loop.
"""

import asyncio


class _GrantFuture(asyncio.Future):
    """The future of one asynchronous request. Cancelling it (what cancelling the
    task awaiting it does) withdraws the request."""

    __slots__ = ("_accessor",)  # set by the binding right after making it

    def cancel(self, msg=None):
        # Cancelled first, withdrawn after: a completion that the withdrawal runs
        # at once finds the future done and releases what it carries.
        if not super().cancel(msg=msg):
            return False
        self._accessor.cancel()
        return True


def _deliver(future, access):
    if future.done():  # the task was cancelled meanwhile: give the grant back
        access.release()
    else:
        future.set_result(access)


async def request_async(accessor, t):
    """Awaitable request: ``access = await accessor.request_async(t)``.

    Completes on the running asyncio loop (never on a simsync thread); cancelling the
    awaiting task withdraws the request. Resolves to an Access (falsy if refused)."""
    return await accessor._start_async(t, _GrantFuture, _deliver)


async def release_and_request_async(accessor, access, next):
    """Awaitable fused release and request: ``access = await
    accessor.release_and_request_async(access, next)``."""
    return await accessor._start_async(next, _GrantFuture, _deliver, access)

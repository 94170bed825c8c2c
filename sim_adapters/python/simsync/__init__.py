"""simsync: one deterministic clock for a physics simulation and every thread that touches it.

The Python face of the C++ library (include/simsync/*/*.hpp), with the same contract:

* simulated time is an ``int`` of nanoseconds (no float inside); :func:`seconds`,
  :func:`ms`, :func:`us` make one, :func:`to_seconds` reads one;
* a :class:`Handler` owns simulated time and grants timestamped access to its world;
* an :class:`Accessor` asks for access at a time: ``with accessor.request(t) as access:``
  (the GIL is released while it waits; Ctrl-C withdraws the request), ``await
  accessor.request_async(t)`` on an asyncio loop, or ``accessor.run_system(first, fn)``
  for an inline system called on the stepping thread;
* a refusal is a value: a falsy :class:`Access` whose ``refusal`` is a :class:`Refusal`;
  bad input raises an :class:`Error` subclass naming the field.

Example::

    import simsync
    world = simsync.CountingWorld()
    with simsync.Handler(world, step=simsync.ms(1)) as handler:
        camera = handler.register_accessor("camera", mode="shared")
        for n in range(3):
            with camera.request(simsync.seconds(n / 30)) as access:
                print(access.granted_time, access.world.steps)   # 0, 33 ms, 67 ms
"""

from fractions import Fraction as _Fraction
from decimal import Decimal as _Decimal

from ._errors import (  # noqa: F401
    Busy,
    ConfigError,
    DuplicateName,
    Errc,
    Error,
    InvalidArgument,
    InvalidState,
    Refusal,
)
from ._data import (  # noqa: F401
    AccessorStatus,
    ClockMessage,
    Diagnostic,
    HandlerEvent,
    Snapshot,
    TimerTick,
)
from ._simsync import *  # noqa: F401,F403
from ._simsync import (  # noqa: F401
    NEVER,
    BEFORE_EVERYTHING,
    Access,
    AccessMode,
    Accessor,
    AccessorKind,
    CountingWorld,
    Handler,
    HAVE_MUJOCO,
    Rounding,
    World,
    format_seconds,
    next_instant_after,
    round_to_grid,
)
from . import _asyncio

NANOSECONDS_PER_SECOND = 1_000_000_000


def _exact_ns(value, scale, name):
    if type(value) is int:  # the common case, exact and fast
        result = value * scale
        if not -(2**63) <= result < 2**63:
            raise InvalidArgument(f"{name} = {value!r} is out of the int64 nanosecond range", Errc.invalid_argument)
        return result
    if isinstance(value, bool) or not isinstance(value, (int, float, _Fraction, _Decimal)):
        raise InvalidArgument(f"{name} must be a number, got {value!r}", Errc.invalid_argument)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise InvalidArgument(f"{name} must be finite, got {value!r}", Errc.invalid_argument)
        value = _Fraction(value)  # exact binary value of the float
    result = round(_Fraction(value) * scale)  # nearest ns, ties to even
    if not -(2**63) <= result < 2**63:
        raise InvalidArgument(f"{name} = {value!r} is out of the int64 nanosecond range", Errc.invalid_argument)
    return result


def seconds(value):
    """Seconds (int, float, Fraction or Decimal) as an int of nanoseconds, rounded to the nearest ns.

    ``seconds(1/30)`` is 33333333; ``seconds(Fraction(1, 30))`` too. Use exact types
    (int, Fraction) to compute schedules: ``seconds(Fraction(n, 30))``.
    """
    return _exact_ns(value, NANOSECONDS_PER_SECOND, "seconds")


def ms(value):
    """Milliseconds as an int of nanoseconds (``ms(1)`` is 1000000)."""
    return _exact_ns(value, 1_000_000, "ms")


def us(value):
    """Microseconds as an int of nanoseconds."""
    return _exact_ns(value, 1_000, "us")


def to_seconds(t):
    """Nanoseconds as float seconds (for display and plotting; never feed it back as a time)."""
    return t / NANOSECONDS_PER_SECOND


# Coroutine functions of simsync._asyncio, bound as methods (no wrapper frame per grant).
Accessor.request_async = _asyncio.request_async
Accessor.release_and_request_async = _asyncio.release_and_request_async

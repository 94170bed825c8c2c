"""Errors and refusals of simsync, as in C++ (include/simsync/core/error.hpp).

Three kinds of failure are kept apart:

* an expected outcome of a request (time passed, stopped, timed out, ...) is a
  value: a falsy :class:`simsync.Access` whose ``refusal`` is a :class:`Refusal`;
* bad input from the caller (a negative step, a duplicate name, a release time
  in the past) raises a :class:`Error` subclass whose message names the
  offending field and value;
* a broken internal invariant aborts (an assertion in the C++ library).
"""

import enum


class Refusal(enum.IntEnum):
    """Why a request was not granted (C++ ``simsync::errc``, values 1-7)."""

    def __str__(self):
        return self.name

    time_passed = 1
    """The requested (rounded) time lies before the current time."""
    stopped = 2
    """The handler was stopped before the access could be granted."""
    timed_out = 3
    """The wall-clock deadline of a timed request passed."""
    not_registered = 4
    """The accessor was deregistered or revoked."""
    would_block = 5
    """A try-request could not be granted without waiting."""
    world_failed = 6
    """The world's step raised; the handler stopped (see Handler.failure())."""
    cancelled = 7
    """Withdrawn: Ctrl-C, Accessor.cancel(), or a cancelled asyncio task."""


class Errc(enum.IntEnum):
    """Every code of C++ ``simsync::errc``: the refusals and the caller errors."""

    def __str__(self):
        return self.name

    time_passed = 1
    stopped = 2
    timed_out = 3
    not_registered = 4
    would_block = 5
    world_failed = 6
    cancelled = 7
    invalid_argument = 100
    duplicate_name = 101
    busy = 102
    invalid_state = 103


class Error(Exception):
    """The base of simsync's exceptions (C++ ``simsync::Error``).

    ``code`` is the :class:`Errc`; ``str(e)`` is the C++ message, which names
    the offending field and value.
    """

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = Errc(code) if code is not None else None


class InvalidArgument(Error, ValueError):
    """A value out of range or of the wrong type; the message names the field."""


class DuplicateName(Error, ValueError):
    """An accessor of that name is already registered."""


class Busy(Error, RuntimeError):
    """An accessor used by two requests at once, or asked while holding an access."""


class InvalidState(Error, RuntimeError):
    """An operation the current state forbids (e.g. the world of a released access)."""


class ConfigError(InvalidArgument):
    """A scenario file error: ``file``, ``line``, ``column`` (1-based) and ``key``."""

    def __init__(self, message, code=None, file="", line=0, column=0, key=""):
        super().__init__(message, code)
        self.file = file
        self.line = line
        self.column = column
        self.key = key


_BY_CODE = {
    Errc.invalid_argument: InvalidArgument,
    Errc.duplicate_name: DuplicateName,
    Errc.busy: Busy,
    Errc.invalid_state: InvalidState,
}


def _error_for(code, message):
    try:
        code = Errc(code)
    except ValueError:
        return Error(message)
    return _BY_CODE.get(code, Error)(message, code)

"""simsync: one deterministic clock for a physics simulation and every thread that touches it."""

from decimal import Decimal
from fractions import Fraction
from typing import Union

from ._data import AccessorStatus as AccessorStatus, ClockMessage as ClockMessage, Diagnostic as Diagnostic
from ._data import HandlerEvent as HandlerEvent, Snapshot as Snapshot, TimerTick as TimerTick
from ._errors import Busy as Busy, ConfigError as ConfigError, DuplicateName as DuplicateName
from ._errors import Errc as Errc, Error as Error, InvalidArgument as InvalidArgument
from ._errors import InvalidState as InvalidState, Refusal as Refusal
from ._simsync import *

NANOSECONDS_PER_SECOND: int

_Number = Union[int, float, Fraction, Decimal]

def seconds(value: _Number) -> int: ...
def ms(value: _Number) -> int: ...
def us(value: _Number) -> int: ...
def to_seconds(t: int) -> float: ...

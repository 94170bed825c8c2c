"""Plain data the handler reports: snapshots, events, diagnostics, clock messages.

Every time is an int of nanoseconds (simulation time, or a time source's
reading); every wall-clock duration is an int of nanoseconds too (``*_ns``).
"""

from dataclasses import dataclass, field
from typing import List, Optional


@dataclass(frozen=True)
class AccessorStatus:
    """One accessor in a :class:`Snapshot` (C++ ``simsync::AccessorStatus``)."""

    name: str
    kind: str  # "lockstep" or "free"
    mode: str  # "exclusive" or "shared"
    priority: int
    registered: bool
    activity: str  # "idle", "waiting" or "holding"
    time: int
    """idle lockstep: its bound; waiting: the rounded requested time; holding:
    the granted time; idle free: the time of its last grant (or start)."""
    for_how_long_ns: int
    grants: int


@dataclass(frozen=True)
class Snapshot:
    """A consistent picture of the handler at one moment (C++ ``simsync::Snapshot``)."""

    now: int
    state: str  # "running", "paused" or "stopped"
    steps: int
    grants: int
    pause_at: Optional[int]
    accessors: List[AccessorStatus] = field(default_factory=list)
    waiting_for: List[str] = field(default_factory=list)
    """Who simulated time is waiting for (holders, or the lockstep accessors
    whose bound is the earliest), when a request is pending beyond now and the
    simulation is not paused."""
    waiting_for_how_long_ns: int = 0


@dataclass(frozen=True)
class HandlerEvent:
    """A change of how simulated time runs (C++ ``simsync::HandlerEvent``)."""

    kind: str  # paused, resumed, stepping, running_until, target_reached, stopped
    generation: int
    at: int
    pause_at: Optional[int]


@dataclass(frozen=True)
class Diagnostic:
    """A stall, its end, or an accessor's end (C++ ``simsync::Diagnostic``)."""

    kind: str  # stall, stall_over, accessor_ended
    at: int
    waiting_for: List[str]
    for_how_long_ns: int
    accessor: str
    reason: Optional[str]
    message: str


@dataclass(frozen=True)
class ClockMessage:
    """What a clock publisher publishes (C++ ``simsync::ClockMessage``)."""

    sequence: int
    time: int
    """The selected time source's reading, ns since its epoch."""
    sim_time: int
    paused: bool


@dataclass(frozen=True)
class TimerTick:
    """One call of a periodic timer (C++ ``simsync::TimerTick``)."""

    index: int
    real_time_ns: int
    """UNIX-epoch wall time of the tick (ns)."""
    sim_time: int
    skipped: int
    access: Optional[object] = None
    """A simulated timer's Access during the call (its world is reachable through it);
    lent for the call only: falsy afterwards. None for a real-time timer."""

#!/usr/bin/env python3
"""simsync-bullet-host's controller in Python, in a process of its own.

The same program as the C++ ``simsync-remote-controller`` (examples/bullet_host/
remote_controller.cpp over examples/host_kit/remote_participant.cpp): it joins the
host's Bridge over Cyclone DDS as the lockstep, exclusive accessor
``controller_100hz`` (priority 1, first request at 0) through
``simsync.RemoteAccessor``, and at each 100 Hz instant decodes the host's observation
(the pushed body's state), computes the impulse with the same control law
(examples/bullet_host/controller.cpp, push_impulse) and sends it back with the
release, declaring its next instant in the same message (``release_and_request``).
Same law, same wire encoding (examples/host_kit/remote_wire.hpp with the Bullet
host's values, examples/bullet_host/controller_wire.hpp), every double bit for bit:
the host prints the in-process ``trajectory_hash``::

    simsync-bullet-host --remote-controller wait --remote-tag T &
    PYTHONPATH=build/default/python python3 examples/python/remote_controller.py --tag T

Exit status: 0 done, 1 could not join or refused an observation, 2 bad option,
3 the host stopped the simulation before the end, or Ctrl-C / SIGTERM.
"""

import argparse
import ctypes
import ctypes.util
import math
import random
import signal
import struct
import sys
import time

import simsync

NAME = "remote_controller.py"
CONTROLLER_NAME = "controller_100hz"  # host_kit.hpp kControllerName
CONTROLLER_PRIORITY = 1  # kControllerPriority
CONTROLLER_HZ = 100  # kControllerHz
SIM_TIME_MAX = 2**63 - 1  # kSimTimeMax

# The wire (remote_wire.hpp, version 1; controller_wire.hpp: magic SSBC, 14 values
# out, 3 back, flag bit 1 awake). Little-endian; doubles as their IEEE 754 bits.
MAGIC = b"SSBC"
VERSION = 1
OBSERVATION, COMMAND = 1, 2
FINAL_FLAG, AWAKE_FLAG = 0x01, 0x02
OBSERVATION_VALUES, COMMAND_VALUES = 14, 3
OBSERVATION_SIZE = 32 + 8 * OBSERVATION_VALUES  # 144
COMMAND_SIZE = 16 + 8 * COMMAND_VALUES  # 40

# C's hypot (what std::hypot calls), not math.hypot, whose algorithm may round
# differently in the last bit: the impulse must be the C++ controller's, bit for bit.
_libm_name = ctypes.util.find_library("m")
if _libm_name:
    _libm = ctypes.CDLL(_libm_name)
    _libm.hypot.restype = ctypes.c_double
    _libm.hypot.argtypes = [ctypes.c_double, ctypes.c_double]
    hypot = _libm.hypot
else:  # pragma: no cover (every Linux has libm)
    hypot = math.hypot


class WireError(Exception):
    """A refused observation; str() is the C++ WireError's name."""


def decode_observation(data):
    """(granted_ns, end_ns, final, values) of an observation, or WireError naming why not."""
    if len(data) != OBSERVATION_SIZE:
        raise WireError("wrong_size")
    magic, version, kind, granted, end, flags = struct.unpack_from("<4sHHqqB", data, 0)
    if magic != MAGIC:
        raise WireError("bad_magic")
    if version != VERSION:
        raise WireError("unsupported_version")
    if kind != OBSERVATION:
        raise WireError("wrong_type")
    if flags & ~(FINAL_FLAG | AWAKE_FLAG) or any(data[25:32]):
        raise WireError("reserved_bits")
    values = struct.unpack_from(f"<{OBSERVATION_VALUES}d", data, 32)
    if not all(math.isfinite(v) for v in values):
        raise WireError("not_finite")
    return granted, end, bool(flags & FINAL_FLAG), values


def encode_command(granted, impulse):
    return struct.pack(f"<4sHHq{COMMAND_VALUES}d", MAGIC, VERSION, COMMAND, granted, *impulse)


def push_impulse(values):
    """controller.cpp push_impulse: the impulse (N s) that steers the pushed body
    towards a circle of radius 2 m at 1.5 m/s, at most 0.5 m/s of change per push.
    values: mass, position xyz, orientation xyzw, linear velocity xyz, angular xyz."""
    mass, x, y = values[0], values[1], values[2]
    vx, vy = values[8], values[9]
    r = hypot(x, y)
    ux = x / r if r > 1e-9 else 1.0
    uy = y / r if r > 1e-9 else 0.0
    radial = 1.0 * (2.0 - r)
    want_x = -uy * 1.5 + ux * radial
    want_y = ux * 1.5 + uy * radial
    jx = 0.3 * (want_x - vx)
    jy = 0.3 * (want_y - vy)
    norm = hypot(jx, jy)
    max_delta_v = 0.5  # m/s per push
    if norm > max_delta_v:
        jx *= max_delta_v / norm
        jy *= max_delta_v / norm
    return (mass * jx, mass * jy, 0.0)


def nth_instant(n):
    return n * 1_000_000_000 // CONTROLLER_HZ


def controller_instant(n, end):
    """host_kit.cpp controller_instant: the n-th 100 Hz instant while before the end,
    then the end itself, then never."""
    at = nth_instant(n)
    if at < end:
        return at
    return SIM_TIME_MAX if n > 0 and nth_instant(n - 1) >= end else end


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog=NAME,
        description="simsync-bullet-host's controller (100 Hz, pushes the scene's first body) in a Python "
        "process of its own: start the host with --remote-controller wait and the same --remote-domain / "
        "--remote-network / --remote-tag / --remote-partition.")
    parser.add_argument("--domain", type=int, default=0, metavar="ID", help="DDS domain id, 0..232")
    parser.add_argument("--network", choices=("loopback", "system"), default="loopback",
                        help="loopback (this machine only) or system (Cyclone's defaults)")
    parser.add_argument("--tag", default="", help="Cyclone discovery tag: only a host with the same tag is seen")
    parser.add_argument("--partition", default=simsync.REMOTE_PARTITION if hasattr(simsync, "REMOTE_PARTITION")
                        else "simsync", metavar="P", help="DDS partition of the remote participants' topics")
    parser.add_argument("--random-delay-us", type=int, default=0, metavar="MAX",
                        help="sleep a random 0..MAX us before each request and inside each access")
    parser.add_argument("--seed", type=int, metavar="S", help="seed of the random delays (default: fresh each run)")
    parser.add_argument("--join-timeout", type=float, default=30.0, metavar="SECONDS",
                        help="how long to wait for the host")
    args = parser.parse_args(argv)
    if not 0 <= args.domain <= 232:
        parser.error("--domain: expected 0..232")
    if args.random_delay_us < 0:
        parser.error("--random-delay-us: must be >= 0")
    if not args.join_timeout > 0:
        parser.error("--join-timeout: must be > 0")
    if args.seed is not None and args.seed < 0:
        parser.error("--seed: must be >= 0")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if not hasattr(simsync, "RemoteAccessor"):
        print(f"{NAME}: this simsync was built without the dds adapter (no simsync.RemoteAccessor)",
              file=sys.stderr)
        return 1
    seed = args.seed if args.seed is not None else random.SystemRandom().getrandbits(64)
    rng = random.Random(seed)

    def delay():
        if args.random_delay_us > 0:
            time.sleep(rng.randint(0, args.random_delay_us) / 1e6)

    # SIGTERM as Ctrl-C: the pending request is withdrawn, the accessor leaves the host.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    print(f"{NAME}: waiting up to {args.join_timeout:g} s for a host (DDS domain {args.domain}, {args.network}, "
          f"partition {args.partition}, tag '{args.tag}')", flush=True)
    try:
        accessor = simsync.RemoteAccessor(
            CONTROLLER_NAME, domain=args.domain, network=args.network, tag=args.tag, partition=args.partition,
            kind=simsync.AccessorKind.lockstep, mode=simsync.AccessMode.exclusive,
            priority=CONTROLLER_PRIORITY, first_request=0, join_timeout=args.join_timeout)
    except simsync.Error as e:
        print(f"{NAME}: could not join: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{NAME}: interrupted while waiting for the host: exiting, not joined", file=sys.stderr)
        return 3
    commands = 0
    with accessor:
        try:  # Ctrl-C / SIGTERM anywhere once joined: leave the host (the with block), exit 3
            print(f"{NAME}: joined as {CONTROLLER_NAME} (dt {accessor.step_size} ns, random delay 0.."
                  f"{args.random_delay_us} us, seed {seed})", flush=True)
            end = None
            access = None
            command = b""
            n = 0
            while True:
                at = controller_instant(n, end) if end is not None else 0
                if access:
                    # Release with the command and ask for the next instant in one message.
                    access = accessor.release_and_request(access, at, command)
                else:
                    delay()
                    access = accessor.request(at)
                if not access:
                    print(f"{NAME}: request at {at} ns refused: {access.refusal}", file=sys.stderr)
                    return 3 if access.refusal == simsync.Refusal.stopped else 1
                delay()
                try:
                    granted, end_ns, final, values = decode_observation(access.payload)
                    if granted != access.granted_time:
                        raise WireError("stale_observation")
                except WireError as e:
                    print(f"{NAME}: observation at {access.granted_time} ns refused: {e}", file=sys.stderr)
                    return 1
                end = end_ns
                if final:
                    access.release()  # the last access: no command is due
                    break
                command = encode_command(granted, push_impulse(values))
                commands += 1  # sent with the next request
                delay()
                n += 1
        except KeyboardInterrupt:
            print(f"{NAME}: interrupted, {commands} commands sent", flush=True)
            return 3
    print(f"{NAME}: done, {commands} commands sent, 0 observations refused", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

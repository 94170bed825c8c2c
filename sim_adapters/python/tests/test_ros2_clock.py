"""ClockPublisher.add_ros2_sink: ROS 2 /clock over Cyclone DDS, read by simsync-clock-echo.

simsync-clock-echo (the dds adapter's tool, a separate process) is the ROS 2-side
reader here: it subscribes to rt/clock as rmw_cyclonedds does and prints every time
it receives. Each test takes a DDS domain id as the C++ tests do (a lock file in
/tmp/simsync-dds-domains, ids 215..232) and a Cyclone discovery tag of its own, on
the loopback network: parallel runs never meet. Bounded: every wait has a timeout,
every process a wall-clock limit. Skipped, saying why, without the dds adapter.
"""

import contextlib
import fcntl
import os
import pathlib
import re
import subprocess

import pytest

import simsync

ECHO = pathlib.Path(os.environ.get("SIMSYNC_CLOCK_ECHO", ""))
LIMIT = 60  # s, wall clock of any process here

pytestmark = [
    pytest.mark.skipif(not hasattr(simsync.ClockPublisher, "add_ros2_sink"),
                       reason="simsync was built without the dds adapter (no ClockPublisher.add_ros2_sink)"),
]

needs_echo = pytest.mark.skipif(not ECHO.is_file(),
                                reason=f"no simsync-clock-echo in the build tree (SIMSYNC_CLOCK_ECHO={str(ECHO)!r})")


@contextlib.contextmanager
def domain_lease():
    """A DDS domain id no other test process uses meanwhile (the C++ tests' DomainLease)."""
    directory = "/tmp/simsync-dds-domains"
    os.makedirs(directory, exist_ok=True)
    ids = range(215, 233)
    start = os.getpid() % len(ids)
    for k in range(len(ids)):
        domain = ids[(start + k) % len(ids)]
        handle = open(f"{directory}/{domain}.lock", "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        try:
            yield domain
        finally:
            handle.close()
        return
    pytest.skip("every DDS test domain id 215..232 is taken by other test processes")


def echo_times(output):
    """The times simsync-clock-echo printed, as integer nanoseconds."""
    return [int(s) * 1_000_000_000 + int(ns) for s, ns in re.findall(r"^clock (\d+)\.(\d{9})$", output, re.MULTILINE)]


@needs_echo
def test_a_ros2_node_receives_the_publishers_time():
    tag = f"pytest-ros2-{os.getpid()}"
    with domain_lease() as domain:
        # Reliable and transient local, as the sink offers: the last time written
        # reaches the reader. The four times are written within microseconds and
        # both histories keep one sample (the sink's, and rclcpp's ClockQoS, which
        # the echo copies), so earlier ones may be replaced before they are read:
        # what arrives is in order, from what was published, and ends with the last.
        echo = subprocess.Popen([str(ECHO), "--network", "loopback", "--domain", str(domain), "--tag", tag,
                                 "--reliability", "reliable", "--durability", "transient_local",
                                 "--duration", "5", "--timeout", "30"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            world = simsync.CountingWorld()
            with simsync.Handler(world, step=simsync.ms(1)) as handler:
                source = simsync.make_time_source("sim", handler=handler)
                publisher = simsync.ClockPublisher(handler, source, period=simsync.ms(10))
                sink = publisher.add_ros2_sink(domain=domain, network="loopback", tag=tag)
                matched = sink.wait_for_readers(1, timeout=30)
                a = handler.register_accessor("a")
                publisher.start()
                with a.request(simsync.ms(30)) as access:
                    assert access
                publisher.stop()
                counts = (sink.written, sink.dropped, sink.out_of_range, sink.last_error, sink.topic)
            out, err = echo.communicate(timeout=LIMIT)
        finally:
            if echo.poll() is None:
                echo.kill()
                echo.communicate()
    assert matched, f"simsync-clock-echo never matched the sink:\n{err}"
    assert counts == (4, 0, 0, "", "rt/clock")
    assert echo.returncode == 0, f"simsync-clock-echo failed ({echo.returncode}):\n{out}\n{err}"
    times = echo_times(out)
    assert times and times[-1] == simsync.ms(30), out
    assert times == sorted(set(times)), out
    assert set(times) <= {0, simsync.ms(10), simsync.ms(20), simsync.ms(30)}, out


def test_bad_options_are_refused_by_name():
    world = simsync.CountingWorld()
    with simsync.Handler(world, step=simsync.ms(1)) as handler:
        publisher = simsync.ClockPublisher(handler, simsync.make_time_source("sim", handler=handler))
        with pytest.raises(simsync.InvalidArgument, match="domain"):
            publisher.add_ros2_sink(domain=999, network="loopback")
        with pytest.raises(simsync.InvalidArgument, match="domain"):
            publisher.add_ros2_sink(domain=2.5, network="loopback")
        with pytest.raises(simsync.InvalidArgument, match="sundial"):
            publisher.add_ros2_sink(domain=215, network="sundial")
        with pytest.raises(simsync.InvalidArgument, match="topic|'/'"):
            publisher.add_ros2_sink(domain=215, network="loopback", topic="/")
        with pytest.raises(simsync.InvalidArgument, match="security"):
            publisher.add_ros2_sink(domain=215, network="loopback", security={"identity_ca": "x"})

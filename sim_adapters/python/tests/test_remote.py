"""simsync.RemoteAccessor against simsync-bullet-host --remote-controller wait.

Every test starts its own host on the loopback network with a Cyclone discovery tag
of its own (pid and test name), as the C++ remote tests do: parallel runs never
meet. Bounded: the host's and the controller's join timeouts, and a wall-clock
limit on every process. Skipped, saying why, without the dds adapter (no
simsync.RemoteAccessor) or without the Bullet host in the build tree.
"""

import os
import pathlib
import re
import signal
import subprocess
import sys

import pytest

import simsync

sys.path.insert(0, str(pathlib.Path(os.environ.get("SIMSYNC_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[3]))
                       / "examples" / "python"))
import remote_controller  # noqa: E402  (the example's wire encoding)

SOURCE = pathlib.Path(os.environ.get("SIMSYNC_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[3]))
HOST = pathlib.Path(os.environ.get("SIMSYNC_BULLET_HOST", ""))
CONTROLLER = SOURCE / "examples" / "python" / "remote_controller.py"
LIMIT = 120  # s, wall clock of any process here

pytestmark = [
    pytest.mark.skipif(not hasattr(simsync, "RemoteAccessor"),
                       reason="simsync was built without the dds adapter (no simsync.RemoteAccessor)"),
    pytest.mark.skipif(not HOST.is_file(),
                       reason=f"no simsync-bullet-host in the build tree (SIMSYNC_BULLET_HOST={str(HOST)!r}: "
                              "built without Bullet or not built)"),
]


def tag_of(name):
    return f"pytest-remote-{os.getpid()}-{name}"


def hash_of(output):
    found = re.findall(r"^trajectory_hash=([0-9a-f]{16})$", output, re.MULTILINE)
    assert len(found) == 1, f"no single trajectory_hash in the host's output:\n{output}"
    return found[0]


def start_host(tag, *args):
    return subprocess.Popen([str(HOST), *args, "--remote-controller", "wait", "--remote-tag", tag,
                             "--remote-join-timeout", "30"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process):
    try:
        out, err = process.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"{process.args[0]} did not finish in {LIMIT} s:\n{out}\n{err}")
    return process.returncode, out, err


@pytest.mark.parametrize("host_args,delay", [(("--duration", "1", "--scale", "0"), 0),
                                             (("--duration", "1", "--scale", "0", "--sensors", "threads"), 300)])
def test_python_controller_gives_the_in_process_hash(host_args, delay):
    reference = subprocess.run([str(HOST), "--no-threads", *[a for a in host_args if a != "threads"
                                                             and a != "--sensors"]],
                               stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=LIMIT)
    assert reference.returncode == 0, reference.stderr
    want = hash_of(reference.stdout)
    tag = tag_of(f"hash{delay}")
    host = start_host(tag, *host_args)
    try:
        controller = subprocess.run(
            [sys.executable, str(CONTROLLER), "--network", "loopback", "--tag", tag, "--random-delay-us",
             str(delay), "--seed", "27", "--join-timeout", "30"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=LIMIT)
    finally:
        status, out, err = finish(host)
    assert controller.returncode == 0, f"controller:\n{controller.stdout}\n{controller.stderr}\nhost:\n{out}\n{err}"
    assert status == 0, f"host exited {status}:\n{out}\n{err}"
    assert "remote controller: 101 observations sent, 100 commands applied, 0 refused" in out, out
    assert hash_of(out) == want, f"host:\n{out}\n{err}"


def test_binding_contract_bytes_payload_and_refusals_by_name():
    tag = tag_of("contract")
    host = start_host(tag, "--duration", "0.2", "--scale", "0")
    try:
        with simsync.RemoteAccessor("controller_100hz", network="loopback", tag=tag, priority=1, first_request=0,
                                    join_timeout=30) as accessor:
            assert accessor.name == "controller_100hz"
            assert accessor.step_size == simsync.ms(1)
            with pytest.raises(simsync.InvalidArgument, match="commands must be bytes"):
                accessor.release_and_request(None, 0, "not bytes")
            access = accessor.request(0, timeout=30)
            assert access and access.refusal is None and access.granted_time == 0
            payload = access.payload
            assert isinstance(payload, bytes) and len(payload) == 144 and payload[:4] == b"SSBC"
            with pytest.raises(simsync.Busy):
                accessor.request(simsync.ms(10))
            with pytest.raises(simsync.InvalidArgument):
                access.release(commands="text")
            assert access.held  # still held after the refused release
            # The example's command for this instant (bytes, as the host's wire wants), and the next tick.
            command = remote_controller.encode_command(0, (0.0, 0.0, 0.0))
            access = accessor.release_and_request(access, simsync.ms(10), command, timeout=30)
            assert access and access.granted_time == simsync.ms(10)
            with pytest.raises(simsync.InvalidArgument, match="before the granted time"):
                accessor.release_and_request(access, simsync.ms(5), b"")
            assert access.held
            access.release(simsync.ms(20))
            refused = accessor.request(simsync.ms(5), timeout=30)
            assert not refused and refused.refusal == simsync.Refusal.time_passed, refused
            assert refused.payload == b""
            held = accessor.request(simsync.ms(20), timeout=30)
            assert held
        # Closed (left the host) with an access still held: releasing it later sends nothing, safely.
        assert held.held
        held.release(commands=b"late")
        assert not held.held
        with pytest.raises(simsync.InvalidState):
            accessor.request(simsync.ms(30))
    finally:
        status, out, err = finish(host)
    # The host saw the command sent with the fused release (the first tick's) applied.
    assert re.search(r"^remote controller: \d+ observations sent, [1-9]\d* commands applied", out, re.MULTILINE), \
        f"host:\n{out}\n{err}"


def test_join_without_host_times_out_and_bad_options_are_refused_by_name():
    with pytest.raises(simsync.Error, match="within the join timeout") as info:
        simsync.RemoteAccessor("controller_100hz", network="loopback", tag=tag_of("nohost"), join_timeout=0.2)
    assert info.value.code == simsync.Errc.timed_out
    with pytest.raises(simsync.InvalidArgument, match="'bogus'"):
        simsync.RemoteAccessor("x", network="bogus")
    with pytest.raises(simsync.InvalidArgument, match="missing 'identity_ca'"):
        simsync.RemoteAccessor("x", network="loopback", security={"certificate": "c.pem"})
    with pytest.raises(simsync.InvalidArgument, match="join_timeout"):
        simsync.RemoteAccessor("x", network="loopback", join_timeout=-1)


def test_ctrl_c_once_joined_leaves_the_host_and_exits_3():
    # A paced host (scale 1, 1000 s): the controller spends nearly all its time
    # waiting in release_and_request, so SIGINT (Ctrl-C) nearly always withdraws a
    # pending request there (KeyboardInterrupt out of the wait); the accessor
    # leaves the host, the example exits 3 and the host ends early (exit 1).
    tag = tag_of("sigint")
    host = start_host(tag, "--duration", "1000", "--scale", "1")
    controller = subprocess.Popen(
        [sys.executable, "-u", str(CONTROLLER), "--network", "loopback", "--tag", tag, "--join-timeout", "30"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        for line in controller.stdout:  # bounded: the join timeout ends it, and the pipe with it
            lines.append(line)
            if "joined as controller_100hz" in line:
                break
        assert lines and "joined as" in lines[-1], "".join(lines)
        controller.send_signal(signal.SIGINT)
        rest, _ = controller.communicate(timeout=20)
    finally:
        if controller.poll() is None:
            controller.kill()
            controller.communicate()
        status, out, err = finish(host)
    assert controller.returncode == 3, "".join(lines) + rest
    assert "interrupted," in rest, rest
    assert status == 1, f"host exited {status}, not 1 (its controller left early):\n{out}\n{err}"


def test_timed_request_ends_timed_out_by_name():
    # A paced host (scale 1) cannot reach 100 s within 0.2 s of wall time.
    tag = tag_of("timed")
    host = start_host(tag, "--duration", "1000", "--scale", "1")
    try:
        with simsync.RemoteAccessor("controller_100hz", network="loopback", tag=tag, priority=1, first_request=0,
                                    join_timeout=30) as accessor:
            access = accessor.request(0, timeout=30)
            assert access
            command = remote_controller.encode_command(0, (0.0, 0.0, 0.0))
            late = accessor.release_and_request(access, simsync.seconds(100), command, timeout=0.2)
            assert not late and late.refusal == simsync.Refusal.timed_out, late
            assert not access.held  # released with the command in the fused message
    finally:
        status, out, err = finish(host)
    assert status == 1, f"host exited {status}, not 1 (its controller left early):\n{out}\n{err}"

"""Time sources, time scale, pacer, clock publisher (callback and UDP), periodic timer, scenarios."""

import socket
import struct

import pytest

import simsync

from conftest import MS, wait_for


def test_clock_publisher_callback_and_udp(handler):
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(10)
    source = simsync.make_time_source("sim", handler=handler)
    publisher = simsync.ClockPublisher(handler, source, period=simsync.ms(10))
    messages = []
    publisher.add_callback(messages.append)
    publisher.add_udp_sink("127.0.0.1", receiver.getsockname()[1])
    a = handler.register_accessor("a")  # before start(): it holds time at 0 until it asks
    publisher.start()
    with a.request(simsync.ms(30)) as access:
        assert access
    publisher.stop()
    assert [(m.sequence, m.sim_time, m.time) for m in messages] == [
        (k, k * simsync.ms(10), k * simsync.ms(10)) for k in range(4)]
    datagrams = [receiver.recv(1500) for _ in range(4)]
    assert all(len(d) > 0 for d in datagrams)
    assert publisher.published == 4 and publisher.sink_failures == 0
    assert publisher.last_message().sim_time == simsync.ms(30)


def test_time_sources():
    external = simsync.make_time_source("external")
    external.set(simsync.seconds(5))
    assert external.now() == simsync.seconds(5)
    scale = simsync.TimeScale(2.0)
    assert simsync.make_time_source("simulation", time_scale=scale).now() >= 0
    with pytest.raises(simsync.InvalidArgument, match="sim"):
        simsync.make_time_source("sundial")
    with pytest.raises(simsync.InvalidState):
        simsync.make_time_source("ros").set(0)


def test_time_scale():
    scale = simsync.TimeScale(1.0)
    scale.value = 4.0
    assert scale.value == 4.0 and scale.generation == 1
    with pytest.raises(simsync.InvalidArgument, match="scale"):
        scale.set(0.0)


def test_pacer_on_a_manual_wall_clock(handler):
    clock = simsync.ManualWallClock()
    loop = simsync.EventLoop(clock=clock)  # the loop moves the clock to each deadline
    scale = simsync.TimeScale(1.0, clock=clock)
    a = handler.register_accessor("a", priority=1)  # first: holds time at 0 until it asks
    pacer = simsync.RealTimePacer(handler, scale, period=simsync.ms(10), loop=loop)
    with a.request(simsync.ms(100)) as access:
        assert access
    pacer.stop()
    stats = pacer.stats()
    assert stats["grants"] >= 10
    # paced: 100 ms of simulated time took (at least) 90 ms on the wall clock at scale 1
    assert clock.steady_now >= simsync.ms(90)


def test_periodic_timer_on_simulated_time(handler):
    ticks = []

    def tick(t):
        t.access.world.value += 1  # a simulated tick holds its access for the call
        ticks.append(t)

    timer = simsync.PeriodicTimer(period=simsync.ms(20), offset=simsync.ms(5), clock="simulated", handler=handler)
    a = handler.register_accessor("a")
    timer.start_async(tick)
    with a.request(simsync.ms(70)) as access:
        assert access
    wait_for(lambda: len(ticks) >= 4, "four ticks")
    timer.stop()
    assert [t.sim_time for t in ticks[:4]] == [simsync.ms(5), simsync.ms(25), simsync.ms(45), simsync.ms(65)]
    assert [t.index for t in ticks[:4]] == [0, 1, 2, 3]
    assert not ticks[0].access  # lent for the call only
    with a.request(simsync.ms(70)) as access:
        assert access.world.value == len(ticks)


SCENARIO = """
handler:
  step: 1ms
  rounding: nearest
accessors:
  - name: camera
    rate: 30 Hz
    mode: shared
"""


def test_scenario_as_plain_data():
    scenario = simsync.load_scenario_string(SCENARIO, "scenario.yaml")
    assert scenario["handler"]["step"] == MS
    assert scenario["accessors"][0]["name"] == "camera"
    assert scenario["accessors"][0]["period"] == 33_333_333


def test_scenario_errors_name_file_line_and_key(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("handler:\n  step: -1ms\n")
    with pytest.raises(simsync.ConfigError) as e:
        simsync.load_scenario_file(str(path))
    assert e.value.file.endswith("bad.yaml")
    assert (e.value.line, e.value.key) == (2, "handler.step")
    assert isinstance(e.value, simsync.InvalidArgument)

// simsync-clock-echo against simsync's own /clock, in another process: times,
// rate and jitter printed; exit status 1 when nothing arrives; a simulation
// with another discovery tag is never seen; ROS 2's names (ROS_DOMAIN_ID, the
// topic /clock) understood; SIGTERM ends it with its summary.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "dds_testing.hpp"

#include <simsync/dds/dds.hpp>
#include <simsync/simsync.hpp>

#include <chrono>
#include <csignal>
#include <optional>
#include <string>
#include <vector>

using namespace std::chrono_literals;
namespace sd = simsync::dds;

namespace {

std::vector<std::string> echo_args(const sd::testing::DomainLease& lease, const std::string& tag,
                                   std::vector<std::string> more)
{
    std::vector<std::string> args{SIMSYNC_CLOCK_ECHO, "--network", "loopback", "--domain", std::to_string(lease.id()),
                                  "--tag", tag};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

} // namespace

TEST_CASE("ClockEcho.Cyclone.PrintsTimesRateAndJitter" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    sd::testing::ChildProcess echo(echo_args(lease, lease.tag(), {"--count", "30", "--timeout", "30"}));

    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::TimeScale scale(1.0);
    simsync::RealTimePacer pacer(handler, scale, {.period = 10ms});
    simsync::SimTimeSource source(handler);
    simsync::ClockPublisher clock(handler, source, {.schedule = simsync::PeriodicSchedule::from_period(10ms)});
    auto sink = std::make_unique<sd::Ros2ClockSink>(participant);
    sd::Ros2ClockSink& dds_sink = *sink;
    clock.add_sink(std::move(sink));
    REQUIRE(dds_sink.wait_for_readers(1, 30s));
    clock.start();
    handler.resume();
    REQUIRE(echo.read_to_end(60s));
    const auto status = echo.wait(30s);
    clock.stop();
    handler.stop();
    REQUIRE(status.has_value());
    CHECK(*status == 0);

    std::vector<double> times;
    std::string summary;
    for (const std::string& line : echo.lines()) {
        if (starts_with(line, "clock ")) times.push_back(std::stod(line.substr(6)));
        if (starts_with(line, "received ")) summary = line;
    }
    CHECK(times.size() >= 30);
    for (std::size_t i = 1; i < times.size(); ++i) CHECK(times[i] > times[i - 1]);
    CHECK(summary.find("received ") == 0);
    CHECK(summary.find("rate ") != std::string::npos);
    CHECK(summary.find("jitter (std dev) ") != std::string::npos);
    CHECK(summary.find("clock/wall ") != std::string::npos);
}

TEST_CASE("ClockEcho.Timeout.NonZeroWhenNothingArrives" * doctest::timeout(60))
{
    sd::testing::DomainLease lease;
    const simsync::WallTime start = simsync::WallClock::now();
    sd::testing::ChildProcess echo(echo_args(lease, lease.tag(), {"--timeout", "1"}));
    const auto status = echo.wait(30s);
    REQUIRE(status.has_value());
    CHECK(*status == 1);
    CHECK(simsync::WallClock::now() - start >= 1s); // it waited its timeout, no less
}

TEST_CASE("ClockEcho.Tag.AnotherSimulationIsNeverSeen" * doctest::timeout(60))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    sd::Ros2ClockSink sink(participant);
    sd::testing::ChildProcess echo(echo_args(lease, lease.tag() + "-other", {"--timeout", "3"}));
    // Publish for as long as the echo listens: the same domain, another tag.
    std::optional<int> status;
    std::int64_t t = 0;
    const simsync::WallTime deadline = simsync::WallClock::now() + 30s;
    while (!status && simsync::WallClock::now() < deadline) {
        sink.write(simsync::SourceTime{std::chrono::milliseconds(t += 10)});
        CHECK(sink.matched_readers() == 0);
        status = echo.wait(10ms);
    }
    REQUIRE(status.has_value());
    CHECK(*status == 1);
}

namespace {

// Publishes /clock on `sink` for as long as `echo` runs (at most 60 s), 10 ms of
// clock time per write; returns the echo's exit status.
std::optional<int> publish_until_exit(sd::Ros2ClockSink& sink, sd::testing::ChildProcess& echo)
{
    std::optional<int> status;
    std::int64_t t = 0;
    const simsync::WallTime deadline = simsync::WallClock::now() + 60s;
    while (!status && simsync::WallClock::now() < deadline) {
        sink.write(simsync::SourceTime{std::chrono::milliseconds(t += 10)});
        status = echo.wait(10ms);
    }
    return status;
}

} // namespace

TEST_CASE("ClockEcho.RosNames.DomainFromRosDomainIdAndTopicSlashClock" * doctest::timeout(120))
{
    // Before: the echo listened on domain 0 whatever ROS_DOMAIN_ID said (while
    // simsync-demo --ros2-clock reads it), and --topic /clock subscribed to a
    // DDS topic "/clock" that nobody writes: both timed out, exit 1.
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    sd::Ros2ClockSink sink(participant);
    sd::testing::ChildProcess echo({"/usr/bin/env", "ROS_DOMAIN_ID=" + std::to_string(lease.id()), SIMSYNC_CLOCK_ECHO,
                                    "--network", "loopback", "--tag", lease.tag(), "--topic", "/clock", "--count",
                                    "5", "--timeout", "30s"});
    const auto status = publish_until_exit(sink, echo);
    REQUIRE(status.has_value());
    CHECK(*status == 0);

    // It says where it listens, and where the domain id came from.
    sd::testing::ChildProcess said({"/bin/sh", "-c",
                                    "ROS_DOMAIN_ID=" + std::to_string(lease.id()) + " " + SIMSYNC_CLOCK_ECHO +
                                        " --network loopback --tag " + lease.tag() + "-nobody --timeout 200ms 2>&1"});
    REQUIRE(said.read_to_end(60s));
    std::string out;
    for (const std::string& l : said.lines()) out += l + "\n";
    CAPTURE(out);
    CHECK(out.find("waiting for /clock (DDS topic rt/clock) on domain " + std::to_string(lease.id()) +
                   ", loopback network") != std::string::npos);
    CHECK(out.find("domain id from ROS_DOMAIN_ID") != std::string::npos);
    CHECK(said.wait(30s) == std::optional<int>(1));
}

TEST_CASE("ClockEcho.Signals.SigtermEndsWithTheSummary" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    sd::Ros2ClockSink sink(participant);
    sd::testing::ChildProcess echo(echo_args(lease, lease.tag(), {"--timeout", "30", "--duration", "10min"}));
    std::optional<std::string> first;
    std::int64_t t = 0;
    const simsync::WallTime deadline = simsync::WallClock::now() + 60s;
    while (!first && simsync::WallClock::now() < deadline) {
        sink.write(simsync::SourceTime{std::chrono::milliseconds(t += 10)});
        first = echo.read_line(10ms);
    }
    REQUIRE(first);
    echo.signal(SIGTERM);
    REQUIRE(echo.read_to_end(30s));
    CHECK(echo.wait(30s) == std::optional<int>(0));
    bool summary = false;
    for (const std::string& line : echo.lines()) summary = summary || starts_with(line, "received ");
    CHECK(summary);
}

TEST_CASE("ClockEcho.Options.BadValueExitsTwo" * doctest::timeout(60))
{
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{SIMSYNC_CLOCK_ECHO, "--domain", "233"},
          std::vector<std::string>{SIMSYNC_CLOCK_ECHO, "--network", "lan"},
          std::vector<std::string>{SIMSYNC_CLOCK_ECHO, "--reliability", "sometimes"},
          std::vector<std::string>{SIMSYNC_CLOCK_ECHO, "--timeout", "0"},
          std::vector<std::string>{SIMSYNC_CLOCK_ECHO, "--timeout", "5sec"},
          std::vector<std::string>{SIMSYNC_CLOCK_ECHO, "--duration", "-1"},
          std::vector<std::string>{SIMSYNC_CLOCK_ECHO, "--topic", "/"},
          std::vector<std::string>{"/usr/bin/env", "ROS_DOMAIN_ID=300", SIMSYNC_CLOCK_ECHO},
          std::vector<std::string>{SIMSYNC_CLOCK_ECHO, "--no-such-option"}}) {
        CAPTURE(args[1]);
        sd::testing::ChildProcess echo(args); // exits before opening any domain
        CHECK(echo.wait(30s) == std::optional<int>(2));
    }
}

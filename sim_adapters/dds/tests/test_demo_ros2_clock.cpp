// simsync-demo publishing ROS 2 /clock, in another process: from the command
// line (--ros2-clock DOMAIN) and from a scenario file (clock.sinks[i].ros2),
// running and paused, read by the adapter's follower in this process; bad
// values rejected with the option or file:line:column named.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "dds_testing.hpp"

#include <simsync/dds/dds.hpp>
#include <simsync/simsync.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

using namespace std::chrono_literals;
namespace sd = simsync::dds;

namespace {

// Every time the follower received, in order (collected on its thread, checked here).
struct Received {
    std::mutex mutex;
    std::vector<std::int64_t> ns;
    std::vector<std::int64_t> snapshot()
    {
        std::lock_guard lock(mutex);
        return ns;
    }
};

sd::Ros2ClockFollowerConfig recording(Received& r)
{
    sd::Ros2ClockFollowerConfig c;
    c.on_sample = [&r](const sd::ClockSample& s) {
        std::lock_guard lock(r.mutex);
        r.ns.push_back(std::int64_t{s.time.sec} * 1'000'000'000 + s.time.nanosec);
    };
    return c;
}

bool non_decreasing(const std::vector<std::int64_t>& v)
{
    for (std::size_t i = 1; i < v.size(); ++i) {
        if (v[i] < v[i - 1]) return false;
    }
    return true;
}

std::string status(sd::testing::ChildProcess& demo)
{
    demo.write_line("status");
    const auto line = demo.read_until([](const std::string& l) { return l.rfind("status ", 0) == 0; }, 30s);
    REQUIRE(line);
    return *line;
}

void write_file(const std::string& path, const std::string& text)
{
    std::ofstream out(path);
    REQUIRE(out);
    out << text;
}

// Whether a line the child printed contains `text`.
bool said(const sd::testing::ChildProcess& child, const std::string& text)
{
    for (const std::string& line : child.lines()) {
        if (line.find(text) != std::string::npos) return true;
    }
    return false;
}

// Runs `command` through the shell with stderr on stdout; returns the output and the exit status.
std::pair<std::string, int> run_shell(const std::string& command)
{
    sd::testing::ChildProcess child({"/bin/sh", "-c", command + " 2>&1"});
    REQUIRE(child.read_to_end(60s));
    std::string out;
    for (const std::string& l : child.lines()) out += l + "\n";
    const auto code = child.wait(30s);
    REQUIRE(code);
    return {out, *code};
}

} // namespace

TEST_CASE("DemoRos2Clock.Option.RunningPausedResumed" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    simsync::ExternalTimeSource followed;
    Received received;
    sd::Ros2ClockFollower follower(sd::Participant::create(lease.config(false)), followed, recording(received));
    sd::testing::ChildProcess demo({SIMSYNC_DEMO, "--ros2-clock", std::to_string(lease.id()), "--ros2-network",
                                    "loopback"});
    REQUIRE(follower.wait_for_writers(1, 30s));
    REQUIRE(follower.wait_for_time(simsync::source_time(100ms), 30s)); // running: time moves

    demo.write_line("pause");
    const std::string paused = status(demo);
    REQUIRE(paused.find("state=paused") != std::string::npos);
    // Whatever was in flight when the pause took effect (under load, more than
    // a few samples: a fixed count failed under ThreadSanitizer), the clock then
    // stands still and keeps arriving: five samples in a row with one frozen
    // time, within 30 s and 1000 samples.
    auto last_five_equal = [](const std::vector<std::int64_t>& v) {
        return v.size() >= 5 && std::all_of(v.end() - 5, v.end(), [&](std::int64_t t) { return t == v.back(); });
    };
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    std::vector<std::int64_t> during = received.snapshot();
    for (std::uint64_t next = follower.received() + 1, n = 0; n < 1000 && !last_five_equal(during); ++next, ++n) {
        const auto left = deadline - std::chrono::steady_clock::now();
        if (left <= 0s || !follower.wait_for_samples(next, std::chrono::duration_cast<simsync::WallClock::duration>(left))) {
            break;
        }
        during = received.snapshot();
    }
    REQUIRE(last_five_equal(during));
    const std::int64_t frozen = during.back();
    // Frozen at or before the instant the status line says time stands at.
    const std::size_t at = paused.find("sim_time=");
    REQUIRE(at != std::string::npos);
    const double paused_s = std::stod(paused.substr(at + 9));
    CHECK(frozen <= static_cast<std::int64_t>(paused_s * 1e9) + 1);

    demo.write_line("resume");
    CHECK(follower.wait_for_time(simsync::source_time(std::chrono::nanoseconds(frozen) + 50ms), 30s)); // continues after the frozen time
    demo.write_line("quit");
    REQUIRE(demo.read_to_end(30s));
    CHECK(demo.wait(30s) == 0);
    follower.stop();
    // It says where /clock goes (before: not a word on the domain or network).
    CHECK(said(demo, "clock: time source 'sim', every 0.010000000 s of simulated time, to udp 127.0.0.1:15555; ROS 2 "
                     "/clock (DDS topic rt/clock) on domain " + std::to_string(lease.id()) + ", loopback network"));

    const std::vector<std::int64_t> all = received.snapshot();
    CHECK(non_decreasing(all));
    CHECK(all.front() >= 0);
    CHECK(followed.backward_jumps() == 0);
}

TEST_CASE("DemoRos2Clock.Scenario.SinkFromTheFile" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    const std::string file = "simsync_demo_ros2_" + std::to_string(lease.id()) + ".yaml";
    write_file(file, "clock:\n  rate: 100\n  sinks:\n    - ros2: {domain: " + std::to_string(lease.id()) +
                         ", network: loopback, reliability: best_effort}\n");
    simsync::ExternalTimeSource followed;
    Received received;
    sd::Ros2ClockFollower follower(sd::Participant::create(lease.config(false)), followed, recording(received));
    // Long enough to be seen (the end is asked for on stdin once it was).
    sd::testing::ChildProcess demo({SIMSYNC_DEMO, "--config", file});
    REQUIRE(follower.wait_for_writers(1, 30s));
    CHECK(follower.wait_for_time(simsync::source_time(200ms), 30s));
    demo.write_line("quit");
    REQUIRE(demo.read_to_end(30s));
    CHECK(demo.wait(30s) == 0);
    follower.stop();
    std::remove(file.c_str());
    CHECK(non_decreasing(received.snapshot()));
}

TEST_CASE("DemoRos2Clock.Errors.NameTheOptionOrThePlace" * doctest::timeout(120))
{
    const std::string demo = SIMSYNC_DEMO;
    {
        const auto [out, code] = run_shell(demo + " --ros2-clock 233");
        CAPTURE(out);
        CHECK(code == 2);
        CHECK(out.find("--ros2-clock: expected a DDS domain id 0..232") != std::string::npos);
    }
    {
        const auto [out, code] = run_shell(demo + " --ros2-clock 1 --ros2-network lan");
        CAPTURE(out);
        CHECK(code == 2);
        CHECK(out.find("--ros2-network: expected system or loopback, got 'lan'") != std::string::npos);
    }
    {
        const auto [out, code] = run_shell("ROS_DOMAIN_ID=x " + demo + " --ros2-clock");
        CAPTURE(out);
        CHECK(code == 2);
        CHECK(out.find("ROS_DOMAIN_ID='x'") != std::string::npos);
    }
    {
        const auto [out, code] = run_shell(demo + " --ros2-network loopback");
        CAPTURE(out);
        CHECK(code == 2);
        CHECK(out.find("--ros2-network: only with --ros2-clock") != std::string::npos);
    }
    const std::string file = "simsync_demo_ros2_bad.yaml";
    write_file(file, "clock:\n  sinks:\n    - ros2: {domain: 7, network: lan}\n");
    {
        const auto [out, code] = run_shell(demo + " --config " + file);
        CAPTURE(out);
        CHECK(code == 2);
        CHECK(out.find(file + ":3:34: clock.sinks[0].ros2.network") != std::string::npos);
    }
    std::remove(file.c_str());
}

#if defined(SIMSYNC_BULLET_HOST) || defined(SIMSYNC_MUJOCO_HOST)
namespace {

// A physics host (host_kit) run with --ros2-clock on a domain of the test's
// own: a follower sees its /clock advance, and the host says where it publishes.
void host_publishes_its_clock(const char* program)
{
    sd::testing::DomainLease lease;
    simsync::ExternalTimeSource followed;
    Received received;
    sd::Ros2ClockFollower follower(sd::Participant::create(lease.config(false)), followed, recording(received));
    sd::testing::ChildProcess host({program, "--ros2-clock", std::to_string(lease.id()), "--ros2-network", "loopback",
                                    "--duration", "1000"});
    REQUIRE(follower.wait_for_writers(1, 30s));
    CHECK(follower.wait_for_time(simsync::source_time(200ms), 30s));
    host.write_line("quit");
    REQUIRE(host.read_to_end(60s));
    CHECK(host.wait(30s) == 0);
    follower.stop();
    CHECK(said(host, "ROS 2 /clock (DDS topic rt/clock) on domain " + std::to_string(lease.id()) + ", loopback network"));
    CHECK(non_decreasing(received.snapshot()));
}

} // namespace
#endif

#ifdef SIMSYNC_BULLET_HOST
TEST_CASE("DemoRos2Clock.BulletHost.PublishesItsClock" * doctest::timeout(120))
{
    host_publishes_its_clock(SIMSYNC_BULLET_HOST);
}
#endif

#ifdef SIMSYNC_MUJOCO_HOST
TEST_CASE("DemoRos2Clock.MujocoHost.PublishesItsClock" * doctest::timeout(120))
{
    host_publishes_its_clock(SIMSYNC_MUJOCO_HOST);
}
#endif

// ------------------------------------------------------------ DDS Security

namespace {

// simsync-demo's /clock over DDS Security, started with `args` (its --config
// or --ros2-* options): a follower with a certificate that may read /clock
// follows it; simsync-clock-echo without a certificate is never matched and
// reads nothing.
void secured_clock_is_followed(const sd::testing::TestCertificates& certs, const sd::testing::DomainLease& lease,
                               std::vector<std::string> args)
{
    simsync::ExternalTimeSource followed;
    Received received;
    sd::Ros2ClockFollower follower(sd::Participant::create(certs.secured(lease, "reader")), followed,
                                   recording(received));
    args.insert(args.begin(), SIMSYNC_DEMO);
    sd::testing::ChildProcess demo(args);
    sd::testing::ChildProcess stranger({SIMSYNC_CLOCK_ECHO, "--network", "loopback", "--domain",
                                        std::to_string(lease.id()), "--count", "1", "--timeout", "3"});
    REQUIRE(follower.wait_for_writers(1, 30s));
    CHECK(follower.wait_for_time(simsync::source_time(200ms), 30s));
    REQUIRE(stranger.read_to_end(30s));
    CHECK(stranger.wait(30s) == 1); // no sample within its timeout
    CHECK(std::none_of(stranger.lines().begin(), stranger.lines().end(),
                       [](const std::string& l) { return l.rfind("clock ", 0) == 0; }));
    demo.write_line("quit");
    REQUIRE(demo.read_to_end(30s));
    CHECK(demo.wait(30s) == 0);
    follower.stop();
    CHECK(non_decreasing(received.snapshot()));
}

} // namespace

TEST_CASE("DemoRos2Clock.Security.OptionSecuresTheClock" * doctest::timeout(120))
{
    const sd::testing::TestCertificates certs({"clock-writer:sim", "clock-reader:reader"});
    sd::testing::DomainLease lease(sd::testing::kFirstTestDomain, sd::testing::kLastSecuredTestDomain);
    secured_clock_is_followed(certs, lease, {"--ros2-clock", std::to_string(lease.id()), "--ros2-network", "loopback",
                                             "--ros2-security", certs.security_file("sim")});
}

TEST_CASE("DemoRos2Clock.Security.ScenarioSinkWithASecurityKey" * doctest::timeout(120))
{
    const sd::testing::TestCertificates certs({"clock-writer:sim", "clock-reader:reader"});
    sd::testing::DomainLease lease(sd::testing::kFirstTestDomain, sd::testing::kLastSecuredTestDomain);
    // Relative to the scenario's directory.
    const std::string file = certs.dir() + "/scenario.yaml";
    write_file(file, "clock:\n  rate: 100\n  sinks:\n    - ros2: {domain: " + std::to_string(lease.id()) +
                         ", network: loopback, security: sim/security.yaml}\n");
    secured_clock_is_followed(certs, lease, {"--config", file});
}

TEST_CASE("DemoRos2Clock.Security.BadFilesAreNamedAtStart" * doctest::timeout(120))
{
    const sd::testing::TestCertificates certs({"clock-writer:sim"});
    const std::string demo = SIMSYNC_DEMO;
    const std::string good = certs.security_file("sim");
    {
        const auto [out, code] = run_shell(demo + " --ros2-security " + good);
        CAPTURE(out);
        CHECK(code == 2);
        CHECK(out.find("--ros2-security: only with --ros2-clock") != std::string::npos);
    }
    {
        const auto [out, code] = run_shell(demo + " --ros2-clock 1 --ros2-security " + certs.dir() + "/none.yaml");
        CAPTURE(out);
        CHECK(code == 2);
        CHECK(out.find("--ros2-security: " + certs.dir() + "/none.yaml") != std::string::npos);
    }
    {
        const auto [out, code] = run_shell(demo + " --ros2-clock 231 --ros2-security " + good);
        CAPTURE(out);
        CHECK(code == 2);
        CHECK(out.find("--ros2-clock: expected a DDS domain id 0..230 with --ros2-security") != std::string::npos);
    }
    const std::string file = certs.dir() + "/bad.yaml";
    write_file(file, "clock:\n  sinks:\n    - ros2: {domain: 7, security: nobody/security.yaml}\n");
    {
        const auto [out, code] = run_shell(demo + " --config " + file);
        CAPTURE(out);
        CHECK(code == 2);
        CHECK(out.find(file + ":3:35: clock.sinks[0].ros2.security: the DDS security file '" + certs.dir() +
                       "/nobody/security.yaml' cannot be read: no such file") != std::string::npos);
    }
}

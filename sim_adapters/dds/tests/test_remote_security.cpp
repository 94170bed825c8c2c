// Remote participants over DDS Security (docs/security.md): a Bridge on a
// participant authenticated by a certificate, participants in child processes
// (simsync_remote_participant) with certificates of their own, and an attacker
// (simsync_dds_forger: a plain Cyclone program on the types of remote.idl).
// Every case makes its own throwaway CAs, certificates and signed documents
// (scripts/make-dds-certs through TestCertificates), on a leased loopback
// domain. Each proof has its control: the same attack against a host without
// DDS Security succeeds, so the test can tell.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "dds_testing.hpp"

#include <simsync/dds/bridge.hpp>
#include <simsync/dds/remote_accessor.hpp>
#include <simsync/simsync.hpp>

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace sd = simsync::dds;
namespace r = simsync::dds::remote;
using sd::testing::ChildProcess;

namespace {

constexpr auto kWait = 30s;

std::string random_marker(const std::string& prefix)
{
    std::random_device rd;
    return prefix + std::to_string(rd()) + std::to_string(rd());
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// The identities every case uses: the host, two participants, and one that
// may only read /clock (a certificate with no permission for the remote topics).
const std::vector<std::string> kRoles = {"host:host", "participant:controller", "participant:camera",
                                         "clock-reader:reader"};

// A host on a leased loopback domain, secured as "host" or open, with a
// Bridge that sends `observation` with every grant and records what every
// release carries, by participant.
struct SecurityHost {
    explicit SecurityHost(bool secured, sd::BridgeConfig config = {})
        : domain(secured ? certs.secured(lease, "host") : lease.config(false)), handler(world, {.step = 1ms})
    {
        config.grant_payload = [this](const sd::RemoteParticipantInfo&, simsync::Access&) {
            return std::vector<std::uint8_t>(observation.begin(), observation.end());
        };
        config.apply_release = [this](const sd::RemoteParticipantInfo& who, simsync::Access&,
                                      std::span<const std::uint8_t> b) {
            std::lock_guard<std::mutex> guard(mutex);
            applied.emplace_back(who.name, std::string(b.begin(), b.end()));
        };
        config.on_joined = [this](const sd::RemoteParticipantInfo& who) {
            std::lock_guard<std::mutex> guard(mutex);
            incarnations[who.name] = who.incarnation;
        };
        participant = sd::Participant::create(domain);
        bridge.emplace(handler, participant, config);
    }
    ~SecurityHost() { bridge.reset(); }

    // What a participant child process is started with.
    std::vector<std::string> participant_args(const std::string& name, const std::string& identity, int count,
                                              const std::string& payload) const
    {
        std::vector<std::string> a = {SIMSYNC_REMOTE_PARTICIPANT, "--domain", std::to_string(lease.id()), "--name",
                                      name, "--count", std::to_string(count), "--payload", payload,
                                      "--join-timeout", "20"};
        if (!identity.empty()) a.insert(a.end(), {"--security", certs.security_file(identity)});
        return a;
    }
    // What the forger is started with.
    std::vector<std::string> forger_args(const std::string& identity, const std::vector<std::string>& more) const
    {
        std::vector<std::string> a = {SIMSYNC_DDS_FORGER, "--domain", std::to_string(lease.id())};
        if (!identity.empty()) a.insert(a.end(), {"--identity", certs.identity_dir(identity)});
        a.insert(a.end(), more.begin(), more.end());
        return a;
    }
    std::vector<std::pair<std::string, std::string>> applied_releases()
    {
        std::lock_guard<std::mutex> guard(mutex);
        return applied;
    }
    std::uint64_t incarnation_of(const std::string& name)
    {
        std::lock_guard<std::mutex> guard(mutex);
        return incarnations[name];
    }

    sd::testing::TestCertificates certs{kRoles};
    sd::testing::DomainLease lease{sd::testing::kFirstTestDomain, sd::testing::kLastSecuredTestDomain};
    sd::DomainConfig domain;
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler;
    std::string observation = random_marker("OBS-");
    std::shared_ptr<sd::Participant> participant;
    std::optional<sd::Bridge> bridge;
    std::mutex mutex;
    std::vector<std::pair<std::string, std::string>> applied;
    std::map<std::string, std::uint64_t> incarnations;
};

// Runs a participant child to its end; returns whether it printed "done"
// (else says what it printed).
bool run_participant(ChildProcess& child)
{
    const bool ended = child.read_to_end(kWait);
    const auto status = child.wait(kWait);
    const bool done = ended && status == 0 && !child.lines().empty() && child.lines().back() == "done";
    if (!done) {
        std::string out;
        for (const std::string& l : child.lines()) out += "\n  " + l;
        MESSAGE("the participant ended " << (status ? std::to_string(*status) : "?") << " after:" << out);
    }
    return done;
}

std::vector<std::string> lines_from(const std::vector<std::string>& lines, const std::string& prefix)
{
    std::vector<std::string> out;
    for (const std::string& l : lines) {
        if (starts_with(l, prefix)) out.push_back(l);
    }
    return out;
}

// What the forger said, line by line, once it ended (its stdin closed).
std::vector<std::string> finish(ChildProcess& forger)
{
    forger.close_stdin();
    forger.read_to_end(kWait);
    forger.wait(kWait);
    return forger.lines();
}

bool said(const std::vector<std::string>& lines, const std::string& prefix)
{
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return starts_with(l, prefix); });
}

} // namespace

// ---------------------------------------------------------- not matched at all

// Without a certificate the forger's writer matches no reader of the secured
// host: it writes an announce, a request, a release and a leave for
// "controller" into the partition the host believes controller's, and none
// reaches the Bridge; the real controller then joins and runs as if the forger
// were not there. The control: the same forger against an open host is
// believed (registered as controller, its release applied).
TEST_CASE("Remote.Security.AForgerWithoutACertificateReachesNothing" * doctest::timeout(240))
{
    SecurityHost host(true);
    ChildProcess forger(host.forger_args("", {"--partition", "simsync/controller", "--name", "controller",
                                              "--match-timeout", "4"}));
    REQUIRE(forger.read_until([](const std::string& l) { return starts_with(l, "wrote"); }, kWait));
    ChildProcess controller(host.participant_args("controller", "controller", 5, "cmd"));
    REQUIRE(run_participant(controller));
    const std::vector<std::string> said_by_forger = finish(forger);
    CHECK(said(said_by_forger, "unmatched"));
    CHECK(said(said_by_forger, "wrote 4"));
    REQUIRE(host.bridge->wait_until([](const sd::BridgeStats& s) { return s.leaves == 1; }, kWait));
    const sd::BridgeStats s = host.bridge->stats();
    CHECK(s.announces == 1); // the real controller only
    CHECK(s.refused_announces == 0);
    CHECK(s.rejected.total() == 0); // not even refused: nothing arrived
    CHECK(s.releases == 5);
    for (const auto& [who, payload] : host.applied_releases()) CHECK(payload == "cmd");
    CHECK(lines_from(controller.lines(), "grant").size() == 5);
}

TEST_CASE("Remote.Security.OpenDomainControl.AForgerIsBelieved" * doctest::timeout(240))
{
    SecurityHost host(false);
    ChildProcess forger(host.forger_args("", {"--partition", "simsync/controller", "--name", "controller",
                                              "--match-timeout", "20"}));
    REQUIRE(forger.read_until([](const std::string& l) { return starts_with(l, "acked"); }, kWait));
    REQUIRE(host.bridge->wait_until([](const sd::BridgeStats& s) { return s.leaves == 1; }, kWait));
    const std::vector<std::string> said_by_forger = finish(forger);
    CHECK(said(said_by_forger, "matched 1"));
    const sd::BridgeStats s = host.bridge->stats();
    CHECK(s.announces == 1);
    CHECK(s.releases == 1);
    const auto applied = host.applied_releases();
    REQUIRE(applied.size() == 1);
    CHECK(applied[0] == std::pair<std::string, std::string>{"controller", "forged"});
}

// ------------------------------------------------- speaking for another name

// "camera" holds a valid certificate, and permissions for its own partition:
// what it writes for "controller" (even with controller's incarnation and next
// sequence number, as if it knew them) comes from camera's partition, so the
// Bridge refuses it (not_its_name), counts it and applies nothing; controller
// goes on. Writing in controller's partition is refused by camera's own access
// control (its permissions do not grant it). The control: without DDS Security
// the same forger, in controller's partition, releases and leaves for it.

TEST_CASE("Remote.Security.ACertifiedParticipantCannotSpeakForAnother" * doctest::timeout(240))
{
    SecurityHost host(true);
    std::vector<std::string> args = host.participant_args("controller", "controller", 3, "cmd");
    args.insert(args.end(), {"--hold-at", "1", "--hold-until-input"});
    ChildProcess controller(args);
    REQUIRE(controller.read_until([](const std::string& l) { return starts_with(l, "holding"); }, kWait));
    const std::uint64_t inc = host.incarnation_of("controller");
    REQUIRE(inc != 0);

    // Its announce was 1, its request 2: the forger releases (3) and leaves (4).
    ChildProcess camera(host.forger_args("camera", {"--partition", "simsync/camera", "--name", "controller",
                                                    "--incarnation", std::to_string(inc), "--first-seq", "3",
                                                    "--send", "release,leave", "--match-timeout", "20"}));
    REQUIRE(camera.read_until([](const std::string& l) { return starts_with(l, "acked"); }, kWait));
    REQUIRE(host.bridge->wait_until(
        [](const sd::BridgeStats& s) { return s.rejected[r::Rejection::not_its_name] == 2; }, kWait));
    CHECK(said(finish(camera), "matched 1"));

    // In controller's own partition, camera gets no writer at all.
    ChildProcess intruder(host.forger_args("camera", {"--partition", "simsync/controller", "--name", "controller"}));
    const std::vector<std::string> intruder_said = finish(intruder);
    CHECK(said(intruder_said, "writer-refused"));

    CHECK(host.bridge->participants() == std::vector<std::string>{"controller"});
    controller.write_line("go");
    REQUIRE(run_participant(controller));
    const sd::BridgeStats s = host.bridge->stats();
    CHECK(s.leaves == 1); // controller's own, at its end
    CHECK(s.rejected.total() == 2);
    CHECK(s.releases == 3);
    for (const auto& [who, payload] : host.applied_releases()) CHECK(payload == "cmd");
}

TEST_CASE("Remote.Security.OpenDomainControl.AnotherParticipantSpeaksForController" * doctest::timeout(240))
{
    SecurityHost host(false);
    std::vector<std::string> args = host.participant_args("controller", "", 3, "cmd");
    args.insert(args.end(), {"--hold-at", "1", "--hold-until-input"});
    ChildProcess controller(args);
    REQUIRE(controller.read_until([](const std::string& l) { return starts_with(l, "holding"); }, kWait));
    const std::uint64_t inc = host.incarnation_of("controller");
    ChildProcess camera(host.forger_args("", {"--partition", "simsync/controller", "--name", "controller",
                                              "--incarnation", std::to_string(inc), "--first-seq", "3", "--send",
                                              "release,leave", "--match-timeout", "20"}));
    REQUIRE(camera.read_until([](const std::string& l) { return starts_with(l, "acked"); }, kWait));
    REQUIRE(host.bridge->wait_until([](const sd::BridgeStats& s) { return s.leaves == 1; }, kWait));
    finish(camera);
    CHECK(host.bridge->participants().empty()); // the forged leave was applied
    const auto applied = host.applied_releases();
    REQUIRE(applied.size() == 1);
    CHECK(applied[0].second == "forged");
}

// ------------------------------------------- no permission for the topic

// "reader" holds a valid certificate whose permissions grant reading /clock
// and nothing else: Cyclone refuses it a writer of the host's topic, in any
// partition, so nothing it could write is matched; the host sees nothing.
TEST_CASE("Remote.Security.ACertificateWithoutPermissionForTheTopicGetsNoWriter" * doctest::timeout(240))
{
    SecurityHost host(true);
    ChildProcess own(host.forger_args("reader", {"--partition", "simsync/reader", "--name", "reader"}));
    ChildProcess other(host.forger_args("reader", {"--partition", "simsync/controller", "--name", "controller"}));
    CHECK(said(finish(own), "writer-refused"));
    CHECK(said(finish(other), "writer-refused"));
    // Nor can a simsync participant with that certificate join, under any name.
    ChildProcess participant(host.participant_args("reader", "reader", 1, "cmd"));
    participant.read_to_end(kWait);
    CHECK(participant.wait(kWait) == 1);
    CHECK(said(participant.lines(), "join-failed"));
    const sd::BridgeStats s = host.bridge->stats();
    CHECK(s.announces == 0);
    CHECK(s.rejected.total() == 0);
}

// ------------------------------------------------------------- on the wire

namespace {

// Every packet on the loopback interface while it lives (AF_PACKET: needs
// CAP_NET_RAW), searched for markers; only the counts are kept.
class LoopbackCapture {
public:
    explicit LoopbackCapture(std::vector<std::string> markers) : markers_(std::move(markers)), hits_(markers_.size())
    {
        fd_ = ::socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
        if (fd_ < 0) {
            why_not_ = std::string("no packet socket: ") + std::strerror(errno);
            return;
        }
        sockaddr_ll addr{};
        addr.sll_family = AF_PACKET;
        addr.sll_protocol = htons(ETH_P_ALL);
        addr.sll_ifindex = static_cast<int>(::if_nametoindex("lo"));
        if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            why_not_ = std::string("cannot bind to lo: ") + std::strerror(errno);
            ::close(fd_);
            fd_ = -1;
            return;
        }
        thread_ = std::thread([this] { run(); });
    }
    ~LoopbackCapture() { stop(); }
    const std::string& why_not() const noexcept { return why_not_; }
    void stop()
    {
        stop_.store(true);
        if (thread_.joinable()) thread_.join();
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    // After stop().
    std::uint64_t packets() const { return packets_; }
    std::uint64_t hits(std::size_t i) const { return hits_[i]; }

private:
    void run()
    {
        std::vector<char> buffer(1 << 17);
        while (!stop_.load()) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) continue;
            const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
            if (n <= 0) continue;
            ++packets_;
            for (std::size_t i = 0; i < markers_.size(); ++i) {
                if (std::search(buffer.data(), buffer.data() + n, markers_[i].begin(), markers_[i].end()) !=
                    buffer.data() + n) {
                    ++hits_[i];
                }
            }
        }
    }
    std::vector<std::string> markers_;
    std::vector<std::uint64_t> hits_;
    std::uint64_t packets_ = 0;
    int fd_ = -1;
    std::string why_not_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

struct WireResult {
    std::uint64_t packets = 0;
    std::uint64_t observation_hits = 0;
    std::uint64_t command_hits = 0;
    std::string eavesdropped; // what a reader without keys read: "read N marker K"
};

// A participant runs 20 steps whose releases carry a marker, the host's grants
// another, while loopback is captured. From its first grant on, a reader
// without a certificate listens to both topics in every partition (once it
// says whether it matched, the participant goes on, so that what follows is
// all there to be read).
std::optional<WireResult> run_on_the_wire(bool secured, std::string& why_not)
{
    SecurityHost host(secured);
    const std::string command = random_marker("CMD-");
    LoopbackCapture capture({host.observation, command});
    if (!capture.why_not().empty()) {
        why_not = capture.why_not();
        return std::nullopt;
    }
    std::vector<std::string> args = host.participant_args("controller", secured ? "controller" : "", 20, command);
    args.insert(args.end(), {"--hold-at", "1", "--hold-until-input"});
    ChildProcess controller(args);
    REQUIRE(controller.read_until([](const std::string& l) { return starts_with(l, "holding"); }, kWait));
    ChildProcess eavesdropper(host.forger_args(
        "", {"--eavesdrop", "--partition", "simsync", "--payload", command, "--match-timeout", secured ? "3" : "20"}));
    const auto matched = eavesdropper.read_until([](const std::string& l) { return l.find("matched") != std::string::npos; },
                                                 kWait);
    REQUIRE(matched);
    CHECK(*matched == (secured ? "unmatched" : "matched"));
    controller.write_line("go");
    REQUIRE(run_participant(controller));
    REQUIRE(host.bridge->wait_until([](const sd::BridgeStats& s) { return s.leaves == 1; }, kWait));
    capture.stop();
    WireResult result;
    result.packets = capture.packets();
    result.observation_hits = capture.hits(0);
    result.command_hits = capture.hits(1);
    const auto said = finish(eavesdropper);
    const auto read = lines_from(said, "read ");
    result.eavesdropped = read.empty() ? "" : read.back();
    // The run itself worked: every grant carried the observation.
    const auto grants = lines_from(controller.lines(), "grant");
    CHECK(grants.size() == 20);
    for (const std::string& g : grants) CHECK(g.find(host.observation) != std::string::npos);
    return result;
}

} // namespace

// Observations (the host's grant payloads) and commands (a participant's
// release payloads) never cross loopback in clear with DDS Security, and a
// reader without a certificate reads nothing; without it, both are in the
// packets and the same reader reads them (the control, in the same test).
TEST_CASE("Remote.Security.ObservationsAndCommandsAreNotReadableOnTheWire" * doctest::timeout(300))
{
    std::string why_not;
    const std::optional<WireResult> open = run_on_the_wire(false, why_not);
    if (!open) {
        MESSAGE("skipped: no packet capture on loopback here (" << why_not << "; needs CAP_NET_RAW)");
        return;
    }
    MESSAGE("open: packets " << open->packets << ", observation in " << open->observation_hits << ", command in "
                          << open->command_hits << ", eavesdropper: " << open->eavesdropped);
    CHECK(open->observation_hits > 0);
    CHECK(open->command_hits > 0);
    CHECK(starts_with(open->eavesdropped, "read "));
    CHECK(open->eavesdropped.find(" marker 0") == std::string::npos);

    const std::optional<WireResult> secured = run_on_the_wire(true, why_not);
    REQUIRE(secured);
    MESSAGE("secured: packets " << secured->packets << ", observation in " << secured->observation_hits
                             << ", command in " << secured->command_hits << ", eavesdropper: "
                             << secured->eavesdropped);
    CHECK(secured->packets > 100);
    CHECK(secured->observation_hits == 0);
    CHECK(secured->command_hits == 0);
    CHECK(secured->eavesdropped == "read 0 marker 0");
}

// ---------------------------------------------- allowed names and the limit

// Without DDS Security too: the Bridge admits only the names it allows and
// at most max_participants; the others are refused in their welcome (the
// constructor throws, naming why) and counted by reason.
TEST_CASE("Remote.Security.OnlyAllowedNamesJoinAndAtMostTheLimit" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    sd::BridgeConfig config;
    config.allowed_names = std::vector<std::string>{"controller", "camera", "lidar"};
    config.max_participants = 2;
    sd::Bridge bridge(handler, participant, config);
    sd::RemoteAccessorConfig rc;
    rc.join_timeout = 10s;

    std::string refused;
    try {
        sd::RemoteAccessor stranger(participant, "stranger", {}, rc);
        FAIL("a name that is not allowed joined");
    } catch (const simsync::Error& e) {
        CHECK(e.code() == simsync::errc::invalid_state);
        refused = e.what();
    }
    CHECK(refused.find("does not allow a participant named 'stranger'") != std::string::npos);

    sd::RemoteAccessor controller(participant, "controller", {}, rc);
    sd::RemoteAccessor camera(participant, "camera", {}, rc);
    try {
        sd::RemoteAccessor lidar(participant, "lidar", {}, rc);
        FAIL("a third participant joined beyond the limit of 2");
    } catch (const simsync::Error& e) {
        CHECK(e.code() == simsync::errc::invalid_state);
        refused = e.what();
    }
    CHECK(refused.find("its limit") != std::string::npos);

    sd::BridgeStats s = bridge.stats();
    CHECK(s.announces == 2);
    CHECK(s.refused_announces == 2);
    CHECK(s.rejected[r::Rejection::name_not_allowed] == 1);
    CHECK(s.rejected[r::Rejection::participant_limit] == 1);
    CHECK(handler.snapshot().accessors.size() == 2);
    {
        std::vector<std::string> names = bridge.participants();
        std::sort(names.begin(), names.end());
        CHECK(names == std::vector<std::string>{"camera", "controller"});
    }
    // The ones admitted work as ever.
    sd::RemoteAccess a = controller.request_access(simsync::kSimStart);
    CHECK(a);
}

// Two machines, as far as one machine can show it: the host and a participant
// in two network namespaces joined by a veth pair, with addresses of their own,
// talking over that link only (discovery by unicast peer, no loopback between
// them). Needs root and `ip netns`; where either is missing the test says that
// it was skipped and why, and passes.

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "dds_testing.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

using namespace std::chrono_literals;
namespace sdt = simsync::dds::testing;

namespace {

int sh(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

// Two namespaces and a veth pair between them; deleted (with the pair) on destruction.
class TwoNamespaces {
public:
    TwoNamespaces()
    {
        const std::string id = std::to_string(::getpid());
        host_ = "simsync-h" + id;
        part_ = "simsync-p" + id;
        const int subnet = 1 + static_cast<int>(::getpid() % 250);
        host_addr_ = "10.213." + std::to_string(subnet) + ".1";
        part_addr_ = "10.213." + std::to_string(subnet) + ".2";
        const std::string vh = "svh" + std::to_string(::getpid() % 100000);
        const std::string vp = "svp" + std::to_string(::getpid() % 100000);
        host_if_ = vh;
        part_if_ = vp;
        const std::vector<std::string> steps{
            "ip netns add " + host_,
            "ip netns add " + part_,
            "ip link add " + vh + " type veth peer name " + vp,
            "ip link set " + vh + " netns " + host_,
            "ip link set " + vp + " netns " + part_,
            "ip -n " + host_ + " addr add " + host_addr_ + "/24 dev " + vh,
            "ip -n " + part_ + " addr add " + part_addr_ + "/24 dev " + vp,
            "ip -n " + host_ + " link set " + vh + " up",
            "ip -n " + part_ + " link set " + vp + " up",
            "ip -n " + host_ + " link set lo up",
            "ip -n " + part_ + " link set lo up",
        };
        for (const std::string& step : steps) {
            if (sh(step) != 0) {
                failed_ = step;
                return;
            }
        }
    }
    ~TwoNamespaces()
    {
        sh("ip netns del " + host_);
        sh("ip netns del " + part_);
    }
    TwoNamespaces(const TwoNamespaces&) = delete;
    TwoNamespaces& operator=(const TwoNamespaces&) = delete;

    // The step that failed, if setting up did.
    const std::optional<std::string>& failed() const { return failed_; }
    std::vector<std::string> in_host(std::vector<std::string> argv) const { return in(host_, std::move(argv)); }
    std::vector<std::string> in_participant(std::vector<std::string> argv) const { return in(part_, std::move(argv)); }
    const std::string& host_addr() const { return host_addr_; }
    const std::string& part_addr() const { return part_addr_; }

private:
    static std::vector<std::string> in(const std::string& ns, std::vector<std::string> argv)
    {
        argv.insert(argv.begin(), {"/usr/bin/env", "ip", "netns", "exec", ns});
        return argv;
    }
    std::string host_, part_, host_addr_, part_addr_, host_if_, part_if_;
    std::optional<std::string> failed_;
};

} // namespace

TEST_CASE("Remote.TwoMachines.HostAndParticipantInTwoNetworkNamespaces" * doctest::timeout(120))
{
    if (::geteuid() != 0) {
        MESSAGE("skipped: creating network namespaces needs root (this test runs as uid " << ::geteuid() << ")");
        return;
    }
    if (sh("ip netns list") != 0) {
        MESSAGE("skipped: `ip netns` is not available here");
        return;
    }
    TwoNamespaces ns;
    if (ns.failed()) {
        MESSAGE("skipped: this machine does not allow network namespaces and veth pairs ('" << *ns.failed()
                                                                                            << "' failed)");
        return;
    }
    // The lease only fences the domain id among this machine's tests; the
    // namespaces have networks of their own.
    sdt::DomainLease lease;
    const std::string domain = std::to_string(lease.id());
    sdt::ChildProcess host(ns.in_host({SIMSYNC_REMOTE_HOST, "--domain", domain, "--interface", ns.host_addr(), "--peer",
                                       ns.part_addr(), "--expect", "far", "--timeout", "60"}));
    REQUIRE(host.read_until([](const std::string& l) { return l == "ready"; }, 60s));
    sdt::ChildProcess far(ns.in_participant({SIMSYNC_REMOTE_PARTICIPANT, "--domain", domain, "--interface",
                                             ns.part_addr(), "--peer", ns.host_addr(), "--name", "far", "--count", "20",
                                             "--period-ns", "1000000", "--join-timeout", "60"}));
    REQUIRE(far.read_to_end(90s));
    REQUIRE(host.read_to_end(90s));
    CHECK(far.wait(10s) == 0);
    CHECK(host.wait(10s) == 0);
    // Every grant, in order, at its instant, across the link.
    std::vector<std::string> grants;
    for (const std::string& l : far.lines()) {
        if (l.rfind("grant ", 0) == 0) grants.push_back(l);
    }
    REQUIRE(grants.size() == 20);
    for (int k = 0; k < 20; ++k) {
        const std::string t = std::to_string(static_cast<long long>(k) * 1'000'000);
        CHECK(grants[static_cast<std::size_t>(k)].rfind("grant " + t + " " + t + " ", 0) == 0);
    }
    bool done = false;
    for (const std::string& l : host.lines()) done |= l.rfind("done grants=20 releases=20 leaves=1 rejected=0", 0) == 0;
    CHECK(done);
}

// simsync_remote_host: a host with a Bridge in a process of its own, for the
// tests of remote participants across network namespaces (test_remote_netns
// starts it in one namespace and simsync_remote_participant in another).
//
// A SimSyncHandler (a CountingWorld, 1 ms step) starts paused; its Bridge waits
// for `--expect` participants, starts them together (start_together), and
// serves them until they have all left, then stops. Prints on stdout:
//   ready                              the Bridge is up
//   started now_ns=<t>                 every expected participant has joined
//   done grants=<n> releases=<n> leaves=<n> rejected=<n>
// Exit status 0 when every participant left, 1 on a timeout, 2 for bad options.

#include "test_programs.hpp"

#include <simsync/dds/bridge.hpp>
#include <simsync/dds/remote_scenario.hpp>
#include <simsync/simsync.hpp>

#include <boost/program_options.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace po = boost::program_options;
namespace sd = simsync::dds;

int main(int argc, char** argv)
{
    std::uint32_t domain = 0;
    std::string interface;
    std::vector<std::string> peers;
    std::string tag;
    std::string security;
    std::vector<std::string> expect;
    double timeout_s = 0;
    po::options_description options("simsync_remote_host: a host of remote participants for tests");
    options.add_options()
        ("help", "this text")
        ("domain", po::value(&domain)->required(), "DDS domain id")
        ("interface", po::value(&interface)->default_value(""), "network interface (name or address); empty: loopback")
        ("peer", po::value(&peers)->composing(), "a unicast discovery peer (repeatable)")
        ("tag", po::value(&tag)->default_value(""), "Cyclone discovery tag")
        ("security", po::value(&security)->default_value(""),
         "DDS Security: a YAML file with the security block (scripts/make-dds-certs writes one)")
        ("expect", po::value(&expect)->composing()->required(), "a participant to start with (repeatable)")
        ("timeout", po::value(&timeout_s)->default_value(60.0), "seconds to wait for the participants, and for them to leave");
    po::variables_map vm;
    try {
        po::store(po::parse_command_line(argc, argv, options), vm);
        if (vm.count("help")) {
            std::cout << options << "\n";
            return 0;
        }
        po::notify(vm);
    } catch (const po::error& e) {
        std::cerr << "simsync_remote_host: " << e.what() << "\n" << options << "\n";
        return 2;
    }
    try {
        auto participant = sd::Participant::create(sd::test_programs::domain_of(domain, interface, peers, tag, security));
        simsync::CountingWorld world;
        simsync::SimSyncHandler handler(world, {.step = std::chrono::milliseconds(1), .start_paused = true});
        const auto timeout = std::chrono::duration_cast<simsync::WallClock::duration>(std::chrono::duration<double>(timeout_s));
        sd::BridgeStats stats;
        bool all_left = false;
        {
            sd::Bridge bridge(handler, participant);
            std::printf("ready\n");
            std::fflush(stdout);
            sd::start_together(handler, bridge, expect, timeout);
            std::printf("started now_ns=%lld\n", static_cast<long long>(handler.now().time_since_epoch().count()));
            std::fflush(stdout);
            all_left = bridge.wait_until([&](const sd::BridgeStats& s) { return s.leaves >= expect.size(); }, timeout);
            stats = bridge.stats();
        }
        handler.stop();
        std::printf("done grants=%llu releases=%llu leaves=%llu rejected=%llu\n",
                    static_cast<unsigned long long>(stats.grants), static_cast<unsigned long long>(stats.releases),
                    static_cast<unsigned long long>(stats.leaves),
                    static_cast<unsigned long long>(stats.rejected.total()));
        std::fflush(stdout);
        return all_left ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "simsync_remote_host: %s\n", e.what());
        return 1;
    }
}

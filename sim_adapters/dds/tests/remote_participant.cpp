// simsync_remote_participant: a RemoteAccessor in a process of its own, for the
// tests of remote participants (test_remote.cpp starts it as a child).
//
// Joins the host's Bridge on a loopback DDS domain, then asks for access at
// first, first + period, ... (`--count` times), releasing each with the next
// request's time and `--name` (or `--payload`) as the release's payload. Prints one line per
// event on stdout:
//   joined <name> step_ns=<dt> now_ns=<t> state=<state>
//   grant <requested_ns> <granted_ns> <sequence> <payload bytes>
//   refused <requested_ns> <error>
//   holding <granted_ns> <sequence>     (--hold-at)
//   stalled <bound_ns>                  (--stall-after)
//   done
// Exit status 0 after `--count` grants (or a refusal that ends it: stopped),
// 1 if it could not join, 2 for bad options.
//
// For the liveness tests, it can stand still where a test then kills it:
// `--hold-at K` keeps its K-th access (1-based) held and sleeps until killed
// (with `--hold-until-input`: until a line on stdin, then goes on); `--stall-after
// K` releases its K-th access declaring its next request (a lockstep
// participant's bound then holds time) and sleeps instead of asking. `--lease-ms`
// is its writer's liveliness lease (RemoteAccessorConfig::lease). `--quiet`
// prints no grant lines (a participant that runs for long, unread).
//
// `--host` makes it the other side instead: a paused SimSyncHandler (1 ms step)
// with a Bridge whose writer offers `--lease-ms`; it prints
//   hosting <bridge incarnation>
// and stands still until killed (a test of what participants do when their
// host dies). `--name` is then unused.

#include <simsync/dds/bridge.hpp>
#include "test_programs.hpp"

#include <simsync/core/error.hpp>
#include <simsync/dds/remote_accessor.hpp>
#include <simsync/simsync.hpp>

#include <boost/program_options.hpp>

#include <chrono>
#include <thread>
#include <cstdint>
#include <memory>
#include <span>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace po = boost::program_options;
namespace sd = simsync::dds;

int main(int argc, char** argv)
{
    std::uint32_t domain = 0;
    std::string tag;
    std::string security;
    std::string interface;
    std::vector<std::string> peers;
    std::string partition;
    std::string name;
    std::string release_payload;
    std::string kind;
    int priority = 0;
    std::int64_t first_ns = 0;
    std::int64_t period_ns = 0;
    std::int64_t lookahead_ns = 0;
    std::uint64_t count = 0;
    double join_timeout_s = 0;
    std::int64_t lease_ms = 0;
    std::uint64_t hold_at = 0;

    std::uint64_t stall_after = 0;
    po::options_description options("simsync_remote_participant: a remote participant for tests");
    options.add_options()
        ("help", "this text")
        ("host", "be a host (a Bridge on a paused handler) instead of a participant")
        ("domain", po::value(&domain)->required(), "DDS domain id (loopback network)")
        ("tag", po::value(&tag)->default_value(""), "Cyclone discovery tag")
        ("security", po::value(&security)->default_value(""),
         "DDS Security: a YAML file with the security block (scripts/make-dds-certs writes one)")
        ("interface", po::value(&interface)->default_value(""), "network interface (name or address); empty: loopback")
        ("peer", po::value(&peers)->composing(), "a unicast discovery peer (repeatable)")
        ("partition", po::value(&partition)->default_value("simsync"), "DDS partition")
        ("name", po::value(&name)->default_value(""), "the participant's name")
        ("payload", po::value(&release_payload), "what each release carries (default: the name)")
        ("kind", po::value(&kind)->default_value("lockstep"), "lockstep or free")
        ("priority", po::value(&priority)->default_value(0), "order at one instant")
        ("first-ns", po::value(&first_ns)->default_value(0), "the first request, ns")
        ("period-ns", po::value(&period_ns)->default_value(1'000'000), "between requests, ns")
        ("lookahead-ns", po::value(&lookahead_ns)->default_value(0), "lockstep lookahead, ns")
        ("count", po::value(&count)->default_value(10), "number of grants")
        ("join-timeout", po::value(&join_timeout_s)->default_value(20.0), "seconds to wait for the host")
        ("lease-ms", po::value(&lease_ms)->default_value(1000), "liveliness lease of its writer, ms")
        ("hold-at", po::value(&hold_at)->default_value(0), "keep the K-th access held and sleep (0: never)")
        ("hold-until-input", "with --hold-at: hold it until a line (or the end) on stdin, then go on")
        ("stall-after", po::value(&stall_after)->default_value(0),
         "after releasing the K-th access (declaring the next request), sleep instead of asking (0: never)")
        ("quiet", "print no grant lines")
        ("fused", "go from one access to the next with release_and_request (one message) instead of "
                  "release(next) then request_access");
    po::variables_map vm;
    try {
        po::store(po::parse_command_line(argc, argv, options), vm);
        if (vm.count("help")) {
            std::cout << options << "\n";
            return 0;
        }
        po::notify(vm);
        if (kind != "lockstep" && kind != "free") throw po::error("--kind must be lockstep or free");
        if (period_ns <= 0) throw po::error("--period-ns must be > 0");
        if (lease_ms <= 0) throw po::error("--lease-ms must be > 0");
        if (!vm.count("host") && name.empty()) throw po::error("--name is required");
    } catch (const po::error& e) {
        std::cerr << "simsync_remote_participant: " << e.what() << "\n" << options << "\n";
        return 2;
    }

    try {
        auto participant = sd::Participant::create(sd::test_programs::domain_of(domain, interface, peers, tag, security));
        if (vm.count("host")) {
            simsync::CountingWorld world;
            simsync::SimSyncHandler handler(world, {.step = std::chrono::milliseconds(1), .start_paused = true});
            sd::BridgeConfig bc;
            bc.partition = partition;
            bc.lease = std::chrono::milliseconds(lease_ms);
            sd::Bridge bridge(handler, participant, bc);
            std::printf("hosting %llu\n", static_cast<unsigned long long>(bridge.incarnation()));
            std::fflush(stdout);
            std::this_thread::sleep_for(std::chrono::minutes(5));
            return 3;
        }
        simsync::AccessorOptions ao;
        ao.kind = kind == "lockstep" ? simsync::AccessorKind::lockstep : simsync::AccessorKind::free;
        ao.priority = priority;
        ao.first_request = simsync::SimTime{simsync::SimDuration{first_ns}};
        ao.lookahead = simsync::SimDuration{lookahead_ns};
        sd::RemoteAccessorConfig rc;
        rc.partition = partition;
        rc.join_timeout = std::chrono::duration_cast<simsync::WallClock::duration>(std::chrono::duration<double>(join_timeout_s));
        rc.lease = std::chrono::milliseconds(lease_ms);
        // Stands still until the test kills it (bounded, should nobody do so).
        const auto stand_still = [] { std::this_thread::sleep_for(std::chrono::minutes(5)); };
        std::unique_ptr<sd::RemoteAccessor> accessor;
        try {
            accessor = std::make_unique<sd::RemoteAccessor>(participant, name, ao, rc);
        } catch (const simsync::Error& e) {
            std::printf("join-failed %s: %s\n", e.code().message().c_str(), e.what());
            std::fflush(stdout);
            return 1;
        }
        std::printf("joined %s step_ns=%lld now_ns=%lld state=%s\n", name.c_str(),
                    static_cast<long long>(accessor->step_size().count()),
                    static_cast<long long>(accessor->now().time_since_epoch().count()),
                    simsync::to_string(accessor->state()));
        std::fflush(stdout);
        const std::string commands = vm.count("payload") ? release_payload : name;
        std::uint64_t granted = 0;
        const bool fused = vm.count("fused") != 0;
        sd::RemoteAccess held; // --fused: released with the next request
        for (std::uint64_t k = 0; granted < count; ++k) {
            const simsync::SimTime t{simsync::SimDuration{first_ns + static_cast<std::int64_t>(k) * period_ns}};
            const std::span<const std::uint8_t> held_bytes(reinterpret_cast<const std::uint8_t*>(commands.data()),
                                                           commands.size());
            sd::RemoteAccess a = held ? accessor->release_and_request(std::move(held), t, held_bytes)
                                      : accessor->request_access(t);
            if (!a) {
                std::printf("refused %lld %s\n", static_cast<long long>(t.time_since_epoch().count()),
                            a.error().message().c_str());
                std::fflush(stdout);
                if (a.error() == simsync::errc::time_passed) continue;
                break;
            }
            ++granted;
            const std::string payload(a.payload().begin(), a.payload().end());
            if (!vm.count("quiet")) {
                std::printf("grant %lld %lld %llu %s\n", static_cast<long long>(a.requested_time().time_since_epoch().count()),
                            static_cast<long long>(a.granted_time().time_since_epoch().count()),
                            static_cast<unsigned long long>(a.sequence()), payload.c_str());
                std::fflush(stdout);
            }
            if (granted == hold_at) {
                std::printf("holding %lld %llu\n", static_cast<long long>(a.granted_time().time_since_epoch().count()),
                            static_cast<unsigned long long>(a.sequence()));
                std::fflush(stdout);
                if (!vm.count("hold-until-input")) {
                    stand_still();
                    return 3;
                }
                std::string line;
                std::getline(std::cin, line);
            }
            const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(commands.data()), commands.size());
            if (granted < count && fused && granted != stall_after) {
                held = std::move(a); // its next request is t + period, the bound release(next) would declare
            } else if (granted < count) {
                a.release(t + simsync::SimDuration{period_ns}, bytes);
                if (granted == stall_after) {
                    std::printf("stalled %lld\n", static_cast<long long>((t + simsync::SimDuration{period_ns}).time_since_epoch().count()));
                    std::fflush(stdout);
                    stand_still();
                    return 3;
                }
            } else {
                a.release(bytes);
            }
        }
        std::printf("done\n");
        std::fflush(stdout);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "simsync_remote_participant: %s\n", e.what());
        return 1;
    }
}

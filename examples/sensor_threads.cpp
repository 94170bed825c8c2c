// Sensor threads: three shared readers and one exclusive controller, each on its
// own thread at its own rate, all on one simulated clock.
//
// Every thread asks for access at the simulated instants it wants; the handler
// rounds them to the 1 ms step grid, steps the world and grants in a fixed
// order. Run it twice: the grant times and counts are the same every time.
//
// Usage: simsync-sensor-threads [DURATION]   (default 3 s of simulated time; --help)

#include "command_line.hpp"
#include "stop_signals.hpp"

#include <simsync/simsync.hpp>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

struct Participant {
    std::string name;
    int rate_hz;
    simsync::AccessMode mode;
    int priority;
    std::uint64_t grants = 0;
    std::vector<simsync::SimTime> first_grants;
    std::int64_t last_value_seen = 0;
};

// n-th request of a participant at rate_hz, in exact integer nanoseconds.
simsync::SimTime nth_instant(int rate_hz, std::int64_t n)
{
    return simsync::SimTime{simsync::SimDuration{n * 1'000'000'000 / rate_hz}};
}

} // namespace

int main(int argc, char** argv)
{
    namespace po = simsync::examples::po;
    simsync::examples::CommandLine cli;
    cli.program = "simsync-sensor-threads";
    cli.synopsis = "[DURATION]";
    cli.summary = "Three shared readers and one exclusive controller on one simulated clock; the same grants every run.";
    cli.options.add_options()("duration",
                              po::value<simsync::examples::DurationArgument>()
                                  ->value_name("DURATION")
                                  ->default_value(simsync::examples::DurationArgument{3s}, "3s"),
                              (std::string(simsync::examples::kDurationHelp) + "; also the one positional argument")
                                  .c_str());
    cli.positional.add("duration", 1);
    int exit_code = 0;
    const auto values = simsync::examples::parse_command_line(argc, argv, cli, exit_code,
                                                              simsync::examples::check_duration_option);
    if (!values) return exit_code;
    const simsync::SimTime end{*simsync::examples::duration_option(*values, "duration")};

    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});

    std::vector<Participant> participants{
        {"lidar_200hz", 200, simsync::AccessMode::shared, 0, 0, {}, 0},
        {"camera_30hz", 30, simsync::AccessMode::shared, 0, 0, {}, 0},
        {"gps_10hz", 10, simsync::AccessMode::shared, 0, 0, {}, 0},
        {"controller_100hz", 100, simsync::AccessMode::exclusive, 1, 0, {}, 0},
    };

    std::vector<simsync::Accessor> accessors;
    for (auto& p : participants) {
        accessors.push_back(handler.register_accessor(
            p.name, {.kind = simsync::AccessorKind::lockstep, .mode = p.mode, .priority = p.priority,
                     .first_request = simsync::kSimStart}));
    }

    // SIGINT / SIGTERM: stop the handler; every thread's request returns
    // `stopped`, and the summary shows how far the run got.
    simsync::examples::StopOnSignals signals([&](int) { handler.stop(); });
    std::fprintf(stderr, "running to %s s simulated (SIGINT/SIGTERM end it with the summary)\n",
                 simsync::format_seconds(end).c_str());

    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < participants.size(); ++i) {
        threads.emplace_back([&, i] {
            Participant& p = participants[i];
            simsync::Accessor& accessor = accessors[i];
            for (std::int64_t n = 0;; ++n) {
                const simsync::SimTime at = nth_instant(p.rate_hz, n);
                if (at > end) break;
                simsync::Access access = accessor.request_access(at);
                if (!access) break;
                auto& w = access.world_as<simsync::CountingWorld>();
                if (access.mode() == simsync::AccessMode::exclusive) {
                    ++w.value; // the controller acts on the world
                } else {
                    p.last_value_seen = w.value;
                }
                ++p.grants;
                if (p.first_grants.size() < 8) p.first_grants.push_back(access.granted_time());
                access.release(nth_instant(p.rate_hz, n + 1)); // hold time at our next instant
            }
            accessor.deregister(); // let the others finish without us
        });
    }
    for (auto& t : threads) t.join();

    if (const int number = signals.received()) {
        std::printf("ended by %s at %s s\n", simsync::examples::signal_name(number),
                    simsync::format_seconds(handler.now()).c_str());
    }
    std::printf("simulated %s s in %llu steps of 1 ms, world value %lld\n",
                simsync::format_seconds(handler.now()).c_str(),
                static_cast<unsigned long long>(handler.steps()), static_cast<long long>(world.value));
    std::printf("%-18s %-9s %7s  first grants (ms)\n", "accessor", "mode", "grants");
    for (const auto& p : participants) {
        std::printf("%-18s %-9s %7llu ", p.name.c_str(), simsync::to_string(p.mode),
                    static_cast<unsigned long long>(p.grants));
        for (auto t : p.first_grants) {
            std::printf(" %lld", static_cast<long long>(
                                     std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count()));
        }
        std::printf("\n");
    }
    return 0;
}

// The host kit's remote controller program (remote_participant.hpp).

#include "remote_participant.hpp"

#include "host_kit.hpp"
#include "dds_security.hpp"
#include "remote_link.hpp" // xmit_loss_xml
#include "stop_signals.hpp"

#include <simsync/core/error.hpp>
#include <simsync/dds/domain.hpp>
#include <simsync/dds/remote_accessor.hpp>
#include <simsync/dds/scenario.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <thread>

namespace simsync::examples::host {

namespace {

namespace sd = simsync::dds;

CommandLine command_line(const RemoteControllerProgram& program)
{
    CommandLine cli;
    cli.program = program.program;
    cli.synopsis = "[--domain ID] [--network loopback|system] [--tag TAG] [--partition P]\n"
                   "       [--security FILE] [--random-delay-us MAX] [--seed S] [--join-timeout SECONDS]" +
                   program.synopsis_tail;
    cli.summary = program.summary +
        "\nA remote participant over Cyclone DDS. Start the host with --remote-controller wait and the same\n"
        "--remote-domain / --remote-network / --remote-tag / --remote-partition, or let the host start it\n"
        "(--remote-controller spawn). The host's trajectory_hash is the in-process controller's.";
    cli.options.add_options()
        ("domain", po::value<std::uint32_t>()->value_name("ID")->default_value(0), "DDS domain id, 0..232")
        ("network", po::value<std::string>()->value_name("NET")->default_value("loopback"),
         "loopback (this machine only) or system (Cyclone's defaults: the network, multicast discovery)")
        ("tag", po::value<std::string>()->value_name("TAG")->default_value(""),
         "Cyclone discovery tag: only a host with the same tag is seen")
        ("partition", po::value<std::string>()->value_name("P")->default_value(sd::remote::kPartition),
         "DDS partition of the remote participants' topics")
        ("random-delay-us", po::value<std::int64_t>()->value_name("MAX")->default_value(0),
         "sleep a random 0..MAX us before each request and inside each access")
        ("seed", po::value<std::string>()->value_name("S"), "seed of the random delays (default: fresh each run)")
        ("join-timeout", po::value<double>()->value_name("SECONDS")->default_value(30.0),
         "how long to wait for the host");
    add_dds_security_option(cli.options, "security",
                            std::string("DDS Security for this controller (identity ") + kControllerName + ")");
    cli.hidden.add_options()
        ("corrupt-command-at", po::value<std::int64_t>(), "test hook: at this tick, send a bad command")
        ("corruption", po::value<std::string>()->default_value("version"),
         "test hook: version (wire version 99), stale (for the previous tick's instant), missing (none)")
        ("xmit-loss", po::value<int>()->value_name("PER_MILLE"),
         "fault test hook: Cyclone DDS drops this many of every 1000 packets this process sends")
        ("lease", po::value<double>()->value_name("SECONDS"), "fault test hook: its liveliness lease (default 1 s)");
    cli.epilogue = "SIGINT / SIGTERM: leave the host (once joined) and exit 3.\n"
                   "Exit status: 0 done, 1 could not join or refused an observation, 2 bad option,\n"
                   "3 the host stopped the simulation before the end, or SIGINT / SIGTERM.";
    if (program.add_options) program.add_options(cli);
    return cli;
}

std::uint64_t fresh_seed()
{
    std::random_device device;
    return (std::uint64_t{device()} << 32) | std::uint64_t{device()};
}

} // namespace

int run_remote_controller(const RemoteControllerProgram& program, int argc, char** argv)
{
    const char* name = program.program.c_str();
    int exit_code = 0;
    std::optional<std::uint64_t> seed_option;
    const auto check = [&](const po::variables_map& v) {
        if (v["domain"].as<std::uint32_t>() > sd::kMaxDomainId) {
            option_error("domain", "expected 0..232");
        }
        const std::string& net = v["network"].as<std::string>();
        if (net != "loopback" && net != "system") {
            option_error("network", "expected loopback or system, got '" + net + "'");
        }
        if (v["random-delay-us"].as<std::int64_t>() < 0) option_error("random-delay-us", "must be >= 0");
        if (!(v["join-timeout"].as<double>() > 0)) option_error("join-timeout", "must be > 0");
        const std::string& corruption = v["corruption"].as<std::string>();
        if (corruption != "version" && corruption != "stale" && corruption != "missing") {
            option_error("corruption", "expected version, stale or missing");
        }
        if (v.count("xmit-loss") != 0 && (v["xmit-loss"].as<int>() < 0 || v["xmit-loss"].as<int>() > 1000)) {
            option_error("xmit-loss", "expected 0..1000");
        }
        if (v.count("lease") != 0 && !(v["lease"].as<double>() >= 0.01 && v["lease"].as<double>() <= 86400)) {
            option_error("lease", "expected [0.01, 86400] s");
        }
        check_dds_security_option(v, "security");
        if (v.count("security") != 0 && v["domain"].as<std::uint32_t>() > 230) {
            option_error("domain", "expected 0..230 with --security");
        }
        if (program.check_options) program.check_options(v);
        if (v.count("seed") != 0) {
            seed_option = parse_unsigned_option("seed", v["seed"].as<std::string>());
        }
    };
    const auto values = parse_command_line(argc, argv, command_line(program), exit_code, check);
    if (!values) return exit_code;
    const po::variables_map& v = *values;
    const std::int64_t delay_us = v["random-delay-us"].as<std::int64_t>();
    const std::uint64_t seed = seed_option ? *seed_option : fresh_seed();
    const std::int64_t corrupt_at =
        v.count("corrupt-command-at") != 0 ? v["corrupt-command-at"].as<std::int64_t>() : -1;
    const std::string corruption = v["corruption"].as<std::string>();
    // What the options name must be usable before the host is kept waiting for
    // us: a model that does not load is a bad option (exit 2), as for the host.
    WireFormat format;
    try {
        if (program.prepare) format = program.prepare(v);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", name, e.what());
        return 2;
    }

    // SIGINT / SIGTERM: before the join there is nothing to leave (the
    // constructor waits up to --join-timeout and cannot be interrupted), so
    // the process exits at once; once joined, the pending request is withdrawn
    // and the loop ends with the summary.
    std::stop_source stop;
    std::mutex join_mutex;
    bool joined = false; // guarded by join_mutex
    StopOnSignals signals([&](int number) {
        std::lock_guard<std::mutex> g(join_mutex);
        if (!joined) {
            std::fprintf(stderr, "%s: %s while waiting for the host: exiting, not joined\n", name,
                         signal_name(number));
            std::fflush(stderr);
            std::_Exit(3);
        }
        stop.request_stop();
    });

    std::mt19937_64 rng(seed);
    auto delay = [&] {
        if (delay_us <= 0) return;
        std::uniform_int_distribution<std::int64_t> us(0, delay_us);
        std::this_thread::sleep_for(std::chrono::microseconds(us(rng)));
    };

    try {
        sd::DomainConfig domain = v["network"].as<std::string>() == "loopback"
                                      ? sd::DomainConfig::loopback(v["domain"].as<std::uint32_t>())
                                      : sd::DomainConfig{};
        domain.id = v["domain"].as<std::uint32_t>();
        domain.tag = v["tag"].as<std::string>();
        if (v.count("xmit-loss") != 0 && v["xmit-loss"].as<int>() > 0) {
            domain.extra_xml = xmit_loss_xml(v["xmit-loss"].as<int>());
            std::fprintf(stderr,
                         "%s: fault injection: Cyclone DDS drops %d of every 1000 packets it "
                         "sends (%s)\n", name,
                         v["xmit-loss"].as<int>(), domain.extra_xml.c_str());
        }
        if (v.count("security") != 0) domain.security = sd::load_security_file(v["security"].as<std::string>());
        auto participant = sd::Participant::create(domain);
        sd::RemoteAccessorConfig rc;
        rc.partition = v["partition"].as<std::string>();
        if (v.count("lease") != 0) {
            rc.lease = std::chrono::duration_cast<simsync::WallClock::duration>(
                std::chrono::duration<double>(v["lease"].as<double>()));
        }
        rc.join_timeout = std::chrono::duration_cast<simsync::WallClock::duration>(
            std::chrono::duration<double>(v["join-timeout"].as<double>()));
        std::unique_ptr<sd::RemoteAccessor> accessor;
        std::printf("%s: waiting up to %g s for a host (DDS domain %u, %s, partition %s, tag '%s')\n", name,
                    v["join-timeout"].as<double>(), domain.id, v["network"].as<std::string>().c_str(),
                    rc.partition.c_str(), domain.tag.c_str());
        std::fflush(stdout);
        try {
            accessor = std::make_unique<sd::RemoteAccessor>(
                participant, kControllerName,
                simsync::AccessorOptions{.kind = simsync::AccessorKind::lockstep,
                                         .mode = simsync::AccessMode::exclusive,
                                         .priority = kControllerPriority,
                                         .first_request = simsync::kSimStart},
                rc);
        } catch (const simsync::Error& e) {
            std::fprintf(stderr, "%s: could not join: %s\n", name, e.what());
            return 1;
        }
        {
            std::lock_guard<std::mutex> g(join_mutex);
            joined = true;
        }
        std::printf("%s: joined as %s (dt %s s, random delay 0..%lld us, seed %llu)\n", name,
                    kControllerName, simsync::format_seconds(simsync::SimTime{accessor->step_size()}).c_str(),
                    static_cast<long long>(delay_us), static_cast<unsigned long long>(seed));
        std::fflush(stdout);

        WireErrorCounts refused;
        std::optional<simsync::SimTime> end; // from the first observation
        std::uint64_t commands = 0;
        // The access held from one step to the next and the commands for it:
        // released and the next one requested in one message (one sample per
        // step each way).
        sd::RemoteAccess access;
        std::vector<std::uint8_t> bytes;
        for (std::int64_t n = 0;; ++n) {
            // The first request is at 0 (before the end is known, and before any end).
            const simsync::SimTime at = end ? controller_instant(n, *end) : simsync::kSimStart;
            if (access) {
                access = accessor->release_and_request(std::move(access), at, bytes, stop.get_token());
            } else {
                delay();
                access = accessor->request_access(at, stop.get_token());
            }
            if (!access && stop.stop_requested()) {
                std::printf("%s: ended by %s before %s s, %llu commands sent, %llu "
                            "observations refused\n", name,
                            signal_name(signals.received()), simsync::format_seconds(at).c_str(),
                            static_cast<unsigned long long>(commands),
                            static_cast<unsigned long long>(refused.total()));
                return 3; // the accessor's destructor leaves the host
            }
            if (!access) {
                std::fprintf(stderr, "%s: request at %s s refused: %s\n", name,
                             simsync::format_seconds(at).c_str(), access.error().message().c_str());
                return access.error() == simsync::errc::stopped ? 3 : 1;
            }
            delay();
            const WireDecoded<ObservationFrame> observation = decode_observation(format, access.payload());
            std::optional<WireError> error;
            if (!observation) {
                error = observation.error;
            } else if (observation.value->granted != access.granted_time()) {
                error = WireError::stale_observation;
            }
            if (error) {
                refused.add(*error);
                std::fprintf(stderr, "%s: observation at %s s refused: %s\n", name,
                             format_seconds(access.granted_time()).c_str(), to_string(*error));
                if (!end) return 1; // without the end there is no schedule to follow
                bytes.clear(); // no command: the host counts it missing
                continue;
            }
            const ObservationFrame& o = *observation.value;
            end = o.end;
            if (o.final) {
                access.release(); // the last access: no command is due
                break;
            }
            CommandFrame command{.granted = o.granted, .values = program.command(o)};
            if (n == corrupt_at && corruption == "stale") command.granted -= std::chrono::milliseconds(10);
            bytes = encode(format, command);
            if (n == corrupt_at && corruption == "version") bytes[4] = 99; // the version's low byte
            if (n == corrupt_at && corruption == "missing") bytes.clear();
            ++commands; // sent with the next request
            delay();
        }
        std::printf("%s: done, %llu commands sent, %llu observations refused\n", name,
                    static_cast<unsigned long long>(commands), static_cast<unsigned long long>(refused.total()));
        return refused.total() == 0 ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", name, e.what());
        return 1;
    }
}

} // namespace simsync::examples::host

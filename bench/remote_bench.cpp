// bench_remote: a lockstep participant in another process, one round trip per
// step, against the physical limit of that: a raw Cyclone DDS request/reply
// ping-pong between the same two processes, in the same run.
//
// Variants, alternating over repetitions on one loopback domain (a leased test
// domain id and a discovery tag):
//  - raw Cyclone ping-pong (baseline): the child writes a request sample
//    (simsync_remote::ToHost, the remote participants' own type and QoS:
//    reliable, volatile, keep all) and blocks on a waitset until the host's
//    reply (ToParticipant) comes; the host answers from Cyclone's listener, on
//    the receiving thread, with nothing in between (keeping the last pong:
//    see raw_qos);
//  - simsync, 1 participant: the host runs a SimSyncHandler (a CountingWorld,
//    1 ms step, no other accessor) and a dds::Bridge; the child is a lockstep
//    RemoteAccessor that asks for every step: request_access(k ms), then
//    release(next = k + 1 ms). Every step is one request and one grant between
//    the processes;
//  - simsync, 8 participants in 8 processes, each asking for every step (all
//    shared mode, so that they hold each step together);
//  - simsync, 1 participant, over DDS Security: host and child each with a
//    certificate of their own (throwaway CAs from scripts/make-dds-certs),
//    discovery and liveliness encrypted, every submessage signed and every
//    payload encrypted (the governance make-dds-certs writes); compared with
//    the open one-participant run of the same repetition.
// Both kinds are timed the same way, from outside the exchange: the child that
// drives the loop stamps the steady clock before each request and after its
// answer, and reports the per-step durations after a warm-up.
// Every variant runs twice per repetition: with idle CPUs halting (the
// machine as it comes) and, where /dev/cpu_dma_latency can be written (root),
// with idle CPUs polling; each is compared with the raw run in its own state.
//
// Usage: bench_remote [--quick] [--idle halt|both] [--json PATH] (--help for all)

#include "dds_testing.hpp"
#include "report.hpp"

#include <simsync/dds/bridge.hpp>
#include <simsync/dds/remote_accessor.hpp>
#include <simsync/dds/scenario.hpp>
#include <simsync/simsync.hpp>

#include <dds/dds.h>
#include <dds/version.h>
#include <simsync_dds_idl/remote.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace sd = simsync::dds;
namespace po = boost::program_options;
using simsync::WallClock;
using simsync::WallTime;
using simsync::bench::format;

namespace {

constexpr const char* kPingTopic = "simsync/bench/ping";
constexpr const char* kPongTopic = "simsync/bench/pong";
constexpr const char* kRawPartition = "simsync-bench-raw";
// The measured per-step cost of OpenRTI with two federates in two processes on
// this machine type (issue 13): the figure to be at least 3x faster than.
constexpr double kOpenRtiUsPerStep = 84.0;

// Reliable, volatile, keep all, one partition: the QoS of the remote
// participants' topics (docs/remote.md), for the raw exchange. Except the
// host's pong writer, which keeps the last sample only: it writes on Cyclone's
// receiving thread, and a keep-all writer whose cache of unacknowledged
// samples is full (about 130 pongs at Cyclone's initial watermark) blocks
// there waiting for acknowledgements that only that thread can process: the
// write times out after the reliability's 5 s and the pong is lost. With one
// ping in flight, keeping the last pong loses nothing. (The Bridge writes on
// its loop's thread, so it keeps all.)
enum class History { keep_all, keep_last_one };
dds_qos_t* raw_qos(bool writer, History history = History::keep_all)
{
    dds_qos_t* q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(5));
    dds_qset_durability(q, DDS_DURABILITY_VOLATILE);
    if (history == History::keep_all) {
        dds_qset_history(q, DDS_HISTORY_KEEP_ALL, 0);
    } else {
        dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 1);
    }
    dds_qset_partition1(q, kRawPartition);
    if (writer) {
        const dds_data_representation_id_t xcdr1 = DDS_DATA_REPRESENTATION_XCDR1;
        dds_qset_data_representation(q, 1, &xcdr1);
    }
    return q;
}

void check(dds_entity_t e, const char* what)
{
    if (e < 0) throw std::runtime_error(std::string("bench_remote: cannot create ") + what + ": " + dds_strretcode(e));
}

// The raw exchange's topics and endpoints, on either side: the child writes
// pings and reads pongs, the host the reverse, answering from `on_data` (a
// data-available listener whose argument is this object, writer set).
struct RawEndpoints {
    enum class Side { child, host };
    dds_entity_t ping_topic = 0;
    dds_entity_t pong_topic = 0;
    dds_entity_t writer = 0;
    dds_entity_t reader = 0;

    RawEndpoints(dds_entity_t pp, Side side, dds_on_data_available_fn on_data)
    {
        ping_topic = dds_create_topic(pp, &simsync_remote_ToHost_desc, kPingTopic, nullptr, nullptr);
        check(ping_topic, "the ping topic");
        pong_topic = dds_create_topic(pp, &simsync_remote_ToParticipant_desc, kPongTopic, nullptr, nullptr);
        check(pong_topic, "the pong topic");
        const bool child = side == Side::child;
        dds_qos_t* wq = raw_qos(true, child ? History::keep_all : History::keep_last_one);
        dds_qos_t* rq = raw_qos(false);
        writer = dds_create_writer(pp, child ? ping_topic : pong_topic, wq, nullptr);
        dds_listener_t* listener = on_data ? dds_create_listener(this) : nullptr;
        if (listener) dds_lset_data_available(listener, on_data);
        // The writer exists before a listener can answer with it.
        if (writer >= 0) reader = dds_create_reader(pp, child ? pong_topic : ping_topic, rq, listener);
        if (listener) dds_delete_listener(listener);
        dds_delete_qos(wq);
        dds_delete_qos(rq);
        check(writer, child ? "the ping writer" : "the pong writer");
        check(reader, child ? "the pong reader" : "the ping reader");
    }
    ~RawEndpoints()
    {
        dds_delete(reader);
        dds_delete(writer);
        dds_delete(ping_topic);
        dds_delete(pong_topic);
    }
    RawEndpoints(const RawEndpoints&) = delete;
    RawEndpoints& operator=(const RawEndpoints&) = delete;
};

bool wait_matched(dds_entity_t writer, dds_entity_t reader, WallClock::duration patience)
{
    const WallTime deadline = WallClock::now() + patience;
    while (WallClock::now() < deadline) {
        dds_publication_matched_status_t p{};
        dds_subscription_matched_status_t s{};
        dds_get_publication_matched_status(writer, &p);
        dds_get_subscription_matched_status(reader, &s);
        if (p.current_count >= 1 && s.current_count >= 1) return true;
        std::this_thread::sleep_for(1ms); // discovery, before anything is measured
    }
    return false;
}

// The per-step durations (us) after `warmup`, as the child's "result" line.
void print_result(const std::vector<double>& us)
{
    std::printf("result");
    for (double u : us) std::printf(" %.3f", u);
    std::printf("\n");
    std::fflush(stdout);
}

std::vector<double> parse_result(const std::string& line)
{
    std::vector<double> us;
    std::istringstream in(line.substr(std::strlen("result")));
    double u = 0;
    while (in >> u) us.push_back(u);
    return us;
}

double to_us(WallClock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// The two idle states the variants run in. A vCPU with nothing to run halts,
// and waking it again costs tens of microseconds on this VM: a round trip
// between two processes pays at least two such wake-ups, which dominates it.
enum class IdleState { halt, polling };

// Keeps idle CPUs polling instead of halting while it lives: a PM QoS request
// of 0 us exit latency on /dev/cpu_dma_latency, which the kernel drops when
// the file is closed (so an aborted run leaves the machine as it was).
class IdlePolling {
public:
    IdlePolling()
    {
        fd_ = ::open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
        if (fd_ < 0) {
            why_ = std::string("/dev/cpu_dma_latency: ") + std::strerror(errno);
            return;
        }
        const std::int32_t zero = 0;
        if (::write(fd_, &zero, sizeof zero) != static_cast<ssize_t>(sizeof zero)) {
            why_ = std::string("writing /dev/cpu_dma_latency: ") + std::strerror(errno);
            ::close(fd_);
            fd_ = -1;
        }
    }
    ~IdlePolling()
    {
        if (fd_ >= 0) ::close(fd_);
    }
    IdlePolling(const IdlePolling&) = delete;
    IdlePolling& operator=(const IdlePolling&) = delete;
    bool held() const noexcept { return fd_ >= 0; }
    const std::string& why() const noexcept { return why_; }

private:
    int fd_ = -1;
    std::string why_;
};

// ------------------------------------------------------------ child processes

sd::DomainConfig child_domain(std::uint32_t domain, const std::string& tag, const std::string& security = {})
{
    sd::DomainConfig dc = sd::DomainConfig::loopback(domain);
    dc.tag = tag;
    if (!security.empty()) dc.security = sd::load_security_file(security);
    return dc;
}

int run_raw_child(std::uint32_t domain, const std::string& tag, int warmup, int steps)
{
    auto participant = sd::Participant::create(child_domain(domain, tag));
    const dds_entity_t pp = participant->native_handle();
    RawEndpoints raw(pp, RawEndpoints::Side::child, nullptr);
    const dds_entity_t writer = raw.writer;
    const dds_entity_t reader = raw.reader;
    if (!wait_matched(writer, reader, 60s)) {
        std::fprintf(stderr, "bench_remote: the raw child did not match the host\n");
        return 1;
    }
    const dds_entity_t waitset = dds_create_waitset(pp);
    const dds_entity_t readable = dds_create_readcondition(reader, DDS_ANY_STATE);
    dds_waitset_attach(waitset, readable, 0);
    simsync_remote_ToHost ping{};
    std::vector<double> us;
    us.reserve(static_cast<std::size_t>(steps));
    for (int k = 0; k < warmup + steps; ++k) {
        ping.seq = static_cast<std::uint64_t>(k + 1);
        ping.time = k;
        const WallTime t0 = WallClock::now();
        if (dds_write(writer, &ping) != DDS_RETCODE_OK) throw std::runtime_error("bench_remote: ping refused");
        for (bool answered = false; !answered;) {
            if (dds_waitset_wait(waitset, nullptr, 0, DDS_SECS(30)) <= 0) {
                throw std::runtime_error("bench_remote: no pong within 30 s (step " + std::to_string(k) + ")");
            }
            void* samples[8] = {};
            dds_sample_info_t infos[8];
            const dds_return_t n = dds_take(reader, samples, infos, 8, 8);
            for (dds_return_t i = 0; i < n; ++i) {
                const auto* pong = static_cast<const simsync_remote_ToParticipant*>(samples[i]);
                if (infos[i].valid_data && pong->ref == ping.seq) answered = true;
            }
            if (n > 0) dds_return_loan(reader, samples, n);
        }
        if (k >= warmup) us.push_back(to_us(WallClock::now() - t0));
    }
    print_result(us);
    dds_delete(waitset);
    return 0;
}

int run_simsync_child(std::uint32_t domain, const std::string& tag, const std::string& security, const std::string& name,
                      int warmup, int steps)
{
    auto participant = sd::Participant::create(child_domain(domain, tag, security));
    sd::RemoteAccessorConfig rc;
    rc.join_timeout = 60s;
    sd::RemoteAccessor accessor(participant, name,
                                {.kind = simsync::AccessorKind::lockstep, .mode = simsync::AccessMode::shared}, rc);
    std::printf("joined\n");
    std::fflush(stdout);
    // Every participant starts together, once all have joined: a step of one
    // must not include waiting for another's discovery.
    std::string go;
    if (!std::getline(std::cin, go) || go != "go") return 1;
    std::vector<double> us;
    us.reserve(static_cast<std::size_t>(steps));
    // Starts where the host is (it may have moved before this one joined).
    const std::int64_t first = accessor.now().time_since_epoch().count() / 1'000'000 + 1;
    for (int k = 0; k < warmup + steps; ++k) {
        const simsync::SimTime t{std::chrono::milliseconds(first + k)};
        const WallTime t0 = WallClock::now();
        sd::RemoteAccess a = accessor.request_access(t);
        if (!a) {
            std::fprintf(stderr, "bench_remote: %s refused at step %d: %s\n", name.c_str(), k,
                         a.error().message().c_str());
            return 1;
        }
        if (k >= warmup) us.push_back(to_us(WallClock::now() - t0));
        a.release(t + std::chrono::milliseconds(1));
    }
    print_result(us);
    return 0;
}

// ------------------------------------------------------------------ the host

struct Run {
    std::vector<double> us; // per step, every child
};

std::vector<std::string> child_args(const std::string& self, const sd::testing::DomainLease& lease, int warmup,
                                    int steps)
{
    return {self, "--child-domain", std::to_string(lease.id()), "--child-tag", lease.tag(), "--warmup",
            std::to_string(warmup), "--steps", std::to_string(steps)};
}

std::vector<double> collect(sd::testing::ChildProcess& child, const char* what)
{
    const auto line = child.read_until([](const std::string& l) { return l.rfind("result", 0) == 0; }, 300s);
    if (!line) {
        const auto status = child.wait(30s);
        throw std::runtime_error(std::string("bench_remote: no result from ") + what + " (exit status " +
                                 (status ? std::to_string(*status) : std::string("unknown")) + ")");
    }
    child.wait(30s);
    return parse_result(*line);
}

Run raw_run(const std::string& self, const sd::testing::DomainLease& lease,
            const std::shared_ptr<sd::Participant>& participant, int warmup, int steps)
{
    // Answers on Cyclone's receiving thread: the shortest path there is.
    const RawEndpoints raw(participant->native_handle(), RawEndpoints::Side::host, [](dds_entity_t reader, void* arg) {
        const auto* endpoints = static_cast<const RawEndpoints*>(arg);
        void* samples[8] = {};
        dds_sample_info_t infos[8];
        const dds_return_t n = dds_take(reader, samples, infos, 8, 8);
        for (dds_return_t i = 0; i < n; ++i) {
            if (!infos[i].valid_data) continue;
            simsync_remote_ToParticipant pong{};
            pong.ref = static_cast<const simsync_remote_ToHost*>(samples[i])->seq;
            if (dds_write(endpoints->writer, &pong) != DDS_RETCODE_OK) std::fprintf(stderr, "bench_remote: a pong write failed\n");
        }
        if (n > 0) dds_return_loan(reader, samples, n);
    });
    Run run;
    {
        sd::testing::ChildProcess child([&] {
            auto args = child_args(self, lease, warmup, steps);
            args.insert(args.end(), {"--child-role", "raw"});
            return args;
        }());
        run.us = collect(child, "the raw child");
    }
    return run;
}

// `certs`: over DDS Security, each child with the certificate of its name
// ("p0", ...); null: open.
Run simsync_run(const std::string& self, const sd::testing::DomainLease& lease,
                const std::shared_ptr<sd::Participant>& participant, int participants, int warmup, int steps,
                const sd::testing::TestCertificates* certs = nullptr)
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    Run run;
    {
        sd::Bridge bridge(handler, participant);
        std::vector<std::unique_ptr<sd::testing::ChildProcess>> children;
        for (int i = 0; i < participants; ++i) {
            auto args = child_args(self, lease, warmup, steps);
            const std::string name = "p" + std::to_string(i);
            args.insert(args.end(), {"--child-role", "simsync", "--child-name", name});
            if (certs != nullptr) args.insert(args.end(), {"--child-security", certs->security_file(name)});
            children.push_back(std::make_unique<sd::testing::ChildProcess>(args));
        }
        for (auto& child : children) {
            if (!child->read_until([](const std::string& l) { return l == "joined"; }, 120s)) {
                const sd::BridgeStats s = bridge.stats();
                throw std::runtime_error(format("bench_remote: a participant did not join (the host had %llu announce(s), "
                                                "%llu held for discovery, %llu rejected)",
                                                static_cast<unsigned long long>(s.announces),
                                                static_cast<unsigned long long>(s.held_for_discovery),
                                                static_cast<unsigned long long>(s.rejected.total())));
            }
        }
        for (auto& child : children) child->write_line("go");
        for (auto& child : children) {
            const auto r = collect(*child, "a participant");
            run.us.insert(run.us.end(), r.begin(), r.end());
        }
    }
    handler.stop();
    return run;
}

} // namespace

int main(int argc, char** argv)
{
    simsync::bench::CommandLine cli("bench_remote",
                                    "A lockstep remote participant in another process, one round trip per step, "
                                    "against a raw Cyclone DDS ping-pong between the same two processes.");
    long child_domain_id = -1;
    std::string child_tag;
    std::string child_role;
    std::string child_name;
    std::string child_security;
    int warmup = 0;
    int steps = 0;
    std::string idle = "both";
    cli.add()("child-domain", po::value(&child_domain_id), "internal: run as a child on this domain id")(
        "child-tag", po::value(&child_tag), "internal: the child's discovery tag")(
        "child-role", po::value(&child_role), "internal: raw or simsync")(
        "child-name", po::value(&child_name), "internal: the participant's name")(
        "child-security", po::value(&child_security), "internal: the participant's DDS Security file")(
        "warmup", po::value(&warmup)->default_value(0), "steps before the measured ones (default: by --quick)")(
        "steps", po::value(&steps)->default_value(0), "measured steps per run (default: by --quick)")(
        "idle", po::value(&idle)->default_value("both"),
        "idle states of the CPUs to run in: halt (as the machine comes), or both (also with idle CPUs polling, "
        "which needs write access to /dev/cpu_dma_latency; skipped with a note without it)");
    if (const auto exit = cli.parse(argc, argv)) return *exit;
    try {
        if (child_domain_id >= 0) {
            const auto domain = static_cast<std::uint32_t>(child_domain_id);
            if (child_role == "raw") return run_raw_child(domain, child_tag, warmup, steps);
            if (child_role == "simsync") {
                return run_simsync_child(domain, child_tag, child_security, child_name, warmup, steps);
            }
            return cli.usage_error("--child-role must be raw or simsync");
        }
        if (idle != "halt" && idle != "both") return cli.usage_error("--idle must be halt or both");
        const bool quick = cli.args().quick;
        const int reps = quick ? 1 : 3;
        if (warmup <= 0) warmup = quick ? 100 : 500;
        if (steps <= 0) steps = quick ? 500 : 5000;
        const int steps8 = std::max(1, steps / 5);

        char self[4096] = {};
        const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) throw std::runtime_error("bench_remote: cannot find its own executable");
        sd::testing::DomainLease lease;
        auto participant = sd::Participant::create(lease.config(true));
        // DDS Security: another domain (one configuration per id), certificates made now.
        const sd::testing::TestCertificates certs({"host:host", "participant:p0"});
        sd::testing::DomainLease secured_lease(sd::testing::kFirstTestDomain, sd::testing::kLastSecuredTestDomain);
        sd::DomainConfig secured_domain = certs.secured(secured_lease, "host");
        secured_domain.tag = secured_lease.tag();

        // Every variant in each idle state, alternating within a repetition.
        std::vector<IdleState> states{IdleState::halt};
        std::string polling_unavailable;
        if (idle != "halt") {
            if (IdlePolling probe; probe.held()) {
                states.push_back(IdleState::polling);
            } else {
                polling_unavailable = probe.why();
            }
        }
        struct Samples {
            std::vector<double> raw, one, eight, secured;
        };
        std::map<IdleState, Samples> samples;
        for (int r = 0; r < reps; ++r) {
            for (const IdleState state : states) {
                std::optional<IdlePolling> hold;
                if (state == IdleState::polling) hold.emplace();
                Samples& out = samples[state];
                const Run a = raw_run(self, lease, participant, warmup, steps);
                out.raw.insert(out.raw.end(), a.us.begin(), a.us.end());
                const Run b = simsync_run(self, lease, participant, 1, warmup, steps);
                out.one.insert(out.one.end(), b.us.begin(), b.us.end());
                const Run c = simsync_run(self, lease, participant, 8, warmup, steps8);
                out.eight.insert(out.eight.end(), c.us.begin(), c.us.end());
                // A host participant of its own for each secured run: a Bridge
                // made again on a secured participant that had one stalled
                // after some 70 grants here (remote.notes.md).
                const Run d = simsync_run(self, secured_lease, sd::Participant::create(secured_domain), 1, warmup, steps,
                                          &certs);
                out.secured.insert(out.secured.end(), d.us.begin(), d.us.end());
            }
        }

        simsync::bench::Report report;
        report.id = "remote";
        report.title = "Remote participants over Cyclone DDS: one round trip per step";
        report.quick = quick;
        report.description = format(
            "Two processes on this machine, Cyclone DDS %s on loopback. Baseline: a raw Cyclone request/reply "
            "ping-pong (the remote participants' own sample types and QoS: reliable, volatile, keep all; the host's "
            "pong writer keeps the last sample, since it writes on Cyclone's receiving thread), the host "
            "answering from Cyclone's listener. Subject: a lockstep RemoteAccessor asking for every 1 ms step of a "
            "no-op world (CountingWorld) served by a Bridge, release(next) then request; also 8 such participants in "
            "8 processes (shared mode); and the one participant over DDS Security (Cyclone's built-in plugins: "
            "each process authenticated by a certificate of its own, discovery and liveliness encrypted, every "
            "submessage signed, every payload encrypted with AES-GCM; the governance of scripts/make-dds-certs). "
            "Per-step wall time measured by the child that drives the loop, before the "
            "request and after its answer, the same way for both. %d repetitions of %d steps (8 participants: %d "
            "steps each) after %d warm-up steps, alternating; percentiles over every step of every repetition. "
            "Each variant runs in two idle states of the CPUs, alternating: as the machine comes (idle vCPUs halt, "
            "and a wake-up costs tens of microseconds on this VM) and with idle CPUs polling (a PM QoS request of 0 "
            "us on /dev/cpu_dma_latency held while those runs last, as latency-tuned real-time hosts are set up). "
            "Each ratio is against the raw ping-pong in the same idle state.",
            DDS_VERSION, reps, steps, steps8, warmup);
        simsync::bench::Table table{"", {"variant", "idle CPUs", "steps", "us per step p50", "p99", "max", "mean",
                                         "p50 ratio to raw"}, {}};
        auto mean = [](const std::vector<double>& v) {
            double sum = 0;
            for (double x : v) sum += x;
            return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
        };
        for (const IdleState state : states) {
            const Samples& in = samples[state];
            const auto rawd = simsync::bench::distribution(in.raw);
            const auto oned = simsync::bench::distribution(in.one);
            const auto eightd = simsync::bench::distribution(in.eight);
            const auto securedd = simsync::bench::distribution(in.secured);
            const char* idle_text = state == IdleState::halt ? "halt" : "poll";
            auto row = [&](const char* name, const simsync::bench::Distribution& d, const std::vector<double>& v) {
                table.rows.push_back({name, idle_text, format("%zu", d.count), format("%.1f", d.p50),
                                      format("%.1f", d.p99), format("%.1f", d.max), format("%.1f", mean(v)),
                                      format("%.3g", rawd.p50 > 0 ? d.p50 / rawd.p50 : 0.0)});
            };
            row("raw Cyclone ping-pong (baseline)", rawd, in.raw);
            row("simsync, 1 remote participant", oned, in.one);
            row("simsync, 8 remote participants in 8 processes", eightd, in.eight);
            row("simsync, 1 remote participant, DDS Security (authenticated, encrypted)", securedd, in.secured);
            report.notes.push_back(format(
                "DDS Security, idle CPUs %s: %.1f us per step (p50) against %.1f us open, %.2fx; p99 %.1f us "
                "against %.1f us, %.2fx.",
                state == IdleState::halt ? "halting" : "polling", securedd.p50, oned.p50,
                oned.p50 > 0 ? securedd.p50 / oned.p50 : 0.0, securedd.p99, oned.p99,
                oned.p99 > 0 ? securedd.p99 / oned.p99 : 0.0));
            const std::string suffix = state == IdleState::halt ? "" : "_idle_polling";
            const std::string when = state == IdleState::halt ? "idle CPUs halting (as the machine comes)"
                                                              : "idle CPUs polling (cpu_dma_latency 0)";
            report.goals.push_back(simsync::bench::check_goal(
                "remote_step_vs_raw_pingpong" + suffix,
                "one remote lockstep participant: us per step at most 1.3x a raw Cyclone ping-pong's round trip "
                "(p50), " + when,
                rawd.p50 > 0 ? oned.p50 / rawd.p50 : std::nan(""), simsync::bench::Compare::at_most, 1.3, "x",
                format("%.1f us vs %.1f us", oned.p50, rawd.p50)));
            report.goals.push_back(simsync::bench::check_goal(
                "remote_step_vs_openrti" + suffix,
                "at least 3x faster per step than OpenRTI with two federates (84 us per step on this machine type, "
                "issue 13), " + when,
                oned.p50 > 0 ? kOpenRtiUsPerStep / oned.p50 : std::nan(""), simsync::bench::Compare::at_least, 3.0,
                "x",
                format("%.1f us vs 84 us; the raw Cyclone round trip in the same run: %.1f us, %.2fx", oned.p50,
                       rawd.p50, rawd.p50 > 0 ? kOpenRtiUsPerStep / rawd.p50 : 0.0)));
        }
        report.tables.push_back(std::move(table));
        if (!polling_unavailable.empty()) {
            report.notes.push_back("The idle-polling runs were not made: " + polling_unavailable + ".");
        }
        simsync::bench::publish(report, cli.args().json_path);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}

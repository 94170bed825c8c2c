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
//    the receiving thread, with nothing in between;
//  - simsync, 1 participant: the host runs a SimSyncHandler (a CountingWorld,
//    1 ms step, no other accessor) and a dds::Bridge; the child is a lockstep
//    RemoteAccessor that asks for every step: request_access(k ms), then
//    release(next = k + 1 ms). Every step is one request and one grant between
//    the processes;
//  - simsync, 8 participants in 8 processes, each asking for every step (all
//    shared mode, so that they hold each step together).
// Both kinds are timed the same way, from outside the exchange: the child that
// drives the loop stamps the steady clock before each request and after its
// answer, and reports the per-step durations after a warm-up.
//
// Usage: bench_remote [--quick] [--json PATH] (--help for all options)

#include "dds_testing.hpp"
#include "report.hpp"

#include <simsync/dds/bridge.hpp>
#include <simsync/dds/remote_accessor.hpp>
#include <simsync/simsync.hpp>

#include <dds/dds.h>
#include <dds/version.h>
#include <simsync_dds_idl/remote.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
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
// participants' topics (docs/remote.md), for the raw exchange.
dds_qos_t* raw_qos(bool writer)
{
    dds_qos_t* q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(5));
    dds_qset_durability(q, DDS_DURABILITY_VOLATILE);
    dds_qset_history(q, DDS_HISTORY_KEEP_ALL, 0);
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

// ------------------------------------------------------------ child processes

sd::DomainConfig child_domain(std::uint32_t domain, const std::string& tag)
{
    sd::DomainConfig dc = sd::DomainConfig::loopback(domain);
    dc.tag = tag;
    return dc;
}

int run_raw_child(std::uint32_t domain, const std::string& tag, int warmup, int steps)
{
    auto participant = sd::Participant::create(child_domain(domain, tag));
    const dds_entity_t pp = participant->native_handle();
    const dds_entity_t ping_topic = dds_create_topic(pp, &simsync_remote_ToHost_desc, kPingTopic, nullptr, nullptr);
    const dds_entity_t pong_topic =
        dds_create_topic(pp, &simsync_remote_ToParticipant_desc, kPongTopic, nullptr, nullptr);
    check(ping_topic, "the ping topic");
    check(pong_topic, "the pong topic");
    dds_qos_t* wq = raw_qos(true);
    dds_qos_t* rq = raw_qos(false);
    const dds_entity_t writer = dds_create_writer(pp, ping_topic, wq, nullptr);
    const dds_entity_t reader = dds_create_reader(pp, pong_topic, rq, nullptr);
    dds_delete_qos(wq);
    dds_delete_qos(rq);
    check(writer, "the ping writer");
    check(reader, "the pong reader");
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
                throw std::runtime_error("bench_remote: no pong within 30 s");
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

int run_simsync_child(std::uint32_t domain, const std::string& tag, const std::string& name, int warmup, int steps)
{
    auto participant = sd::Participant::create(child_domain(domain, tag));
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
    if (!line) throw std::runtime_error(std::string("bench_remote: no result from ") + what);
    child.wait(30s);
    return parse_result(*line);
}

Run raw_run(const std::string& self, const sd::testing::DomainLease& lease,
            const std::shared_ptr<sd::Participant>& participant, int warmup, int steps)
{
    const dds_entity_t pp = participant->native_handle();
    const dds_entity_t ping_topic = dds_create_topic(pp, &simsync_remote_ToHost_desc, kPingTopic, nullptr, nullptr);
    const dds_entity_t pong_topic =
        dds_create_topic(pp, &simsync_remote_ToParticipant_desc, kPongTopic, nullptr, nullptr);
    check(ping_topic, "the ping topic");
    check(pong_topic, "the pong topic");
    dds_qos_t* wq = raw_qos(true);
    dds_qos_t* rq = raw_qos(false);
    const dds_entity_t writer = dds_create_writer(pp, pong_topic, wq, nullptr);
    check(writer, "the pong writer");
    // Answers on Cyclone's receiving thread: the shortest path there is.
    struct Echo {
        dds_entity_t writer;
    };
    static Echo echo; // the listener's argument; one raw run at a time
    echo.writer = writer;
    dds_listener_t* listener = dds_create_listener(&echo);
    dds_lset_data_available(listener, [](dds_entity_t reader, void* arg) {
        const auto* e = static_cast<const Echo*>(arg);
        void* samples[8] = {};
        dds_sample_info_t infos[8];
        const dds_return_t n = dds_take(reader, samples, infos, 8, 8);
        for (dds_return_t i = 0; i < n; ++i) {
            if (!infos[i].valid_data) continue;
            simsync_remote_ToParticipant pong{};
            pong.ref = static_cast<const simsync_remote_ToHost*>(samples[i])->seq;
            dds_write(e->writer, &pong);
        }
        if (n > 0) dds_return_loan(reader, samples, n);
    });
    const dds_entity_t reader = dds_create_reader(pp, ping_topic, rq, listener);
    dds_delete_listener(listener);
    dds_delete_qos(wq);
    dds_delete_qos(rq);
    check(reader, "the ping reader");
    Run run;
    {
        sd::testing::ChildProcess child([&] {
            auto args = child_args(self, lease, warmup, steps);
            args.insert(args.end(), {"--child-role", "raw"});
            return args;
        }());
        run.us = collect(child, "the raw child");
    }
    dds_delete(reader);
    dds_delete(writer);
    dds_delete(ping_topic);
    dds_delete(pong_topic);
    return run;
}

Run simsync_run(const std::string& self, const sd::testing::DomainLease& lease,
                const std::shared_ptr<sd::Participant>& participant, int participants, int warmup, int steps)
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    Run run;
    {
        sd::Bridge bridge(handler, participant);
        std::vector<std::unique_ptr<sd::testing::ChildProcess>> children;
        for (int i = 0; i < participants; ++i) {
            auto args = child_args(self, lease, warmup, steps);
            args.insert(args.end(), {"--child-role", "simsync", "--child-name", "p" + std::to_string(i)});
            children.push_back(std::make_unique<sd::testing::ChildProcess>(args));
        }
        for (auto& child : children) {
            if (!child->read_until([](const std::string& l) { return l == "joined"; }, 120s)) {
                throw std::runtime_error("bench_remote: a participant did not join");
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
    int warmup = 0;
    int steps = 0;
    cli.add()("child-domain", po::value(&child_domain_id), "internal: run as a child on this domain id")(
        "child-tag", po::value(&child_tag), "internal: the child's discovery tag")(
        "child-role", po::value(&child_role), "internal: raw or simsync")(
        "child-name", po::value(&child_name), "internal: the participant's name")(
        "warmup", po::value(&warmup)->default_value(0), "steps before the measured ones (default: by --quick)")(
        "steps", po::value(&steps)->default_value(0), "measured steps per run (default: by --quick)");
    if (const auto exit = cli.parse(argc, argv)) return *exit;
    try {
        if (child_domain_id >= 0) {
            const auto domain = static_cast<std::uint32_t>(child_domain_id);
            if (child_role == "raw") return run_raw_child(domain, child_tag, warmup, steps);
            if (child_role == "simsync") return run_simsync_child(domain, child_tag, child_name, warmup, steps);
            return cli.usage_error("--child-role must be raw or simsync");
        }
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

        std::vector<double> raw, one, eight;
        for (int r = 0; r < reps; ++r) {
            const Run a = raw_run(self, lease, participant, warmup, steps);
            raw.insert(raw.end(), a.us.begin(), a.us.end());
            const Run b = simsync_run(self, lease, participant, 1, warmup, steps);
            one.insert(one.end(), b.us.begin(), b.us.end());
            const Run c = simsync_run(self, lease, participant, 8, warmup, steps8);
            eight.insert(eight.end(), c.us.begin(), c.us.end());
        }

        simsync::bench::Report report;
        report.id = "remote";
        report.title = "Remote participants over Cyclone DDS: one round trip per step";
        report.quick = quick;
        report.description = format(
            "Two processes on this machine, Cyclone DDS %s on loopback. Baseline: a raw Cyclone request/reply "
            "ping-pong (the remote participants' own sample types and QoS: reliable, volatile, keep all), the host "
            "answering from Cyclone's listener. Subject: a lockstep RemoteAccessor asking for every 1 ms step of a "
            "no-op world (CountingWorld) served by a Bridge, release(next) then request; also 8 such participants in "
            "8 processes (shared mode). Per-step wall time measured by the child that drives the loop, before the "
            "request and after its answer, the same way for both. %d repetitions of %d steps (8 participants: %d "
            "steps each) after %d warm-up steps, alternating; percentiles over every step of every repetition.",
            DDS_VERSION, reps, steps, steps8, warmup);
        simsync::bench::Table table{"", {"variant", "steps", "us per step p50", "p99", "max", "mean",
                                         "p50 ratio to raw"}, {}};
        const auto rawd = simsync::bench::distribution(raw);
        const auto oned = simsync::bench::distribution(one);
        const auto eightd = simsync::bench::distribution(eight);
        auto mean = [](const std::vector<double>& v) {
            double s = 0;
            for (double x : v) s += x;
            return v.empty() ? 0.0 : s / static_cast<double>(v.size());
        };
        auto row = [&](const char* name, const simsync::bench::Distribution& d, const std::vector<double>& v) {
            table.rows.push_back({name, format("%zu", d.count), format("%.1f", d.p50), format("%.1f", d.p99),
                                  format("%.1f", d.max), format("%.1f", mean(v)),
                                  format("%.3g", rawd.p50 > 0 ? d.p50 / rawd.p50 : 0.0)});
        };
        row("raw Cyclone ping-pong (baseline)", rawd, raw);
        row("simsync, 1 remote participant", oned, one);
        row("simsync, 8 remote participants in 8 processes", eightd, eight);
        report.tables.push_back(std::move(table));
        report.goals.push_back(simsync::bench::check_goal(
            "remote_step_vs_raw_pingpong", "one remote lockstep participant: us per step at most 1.3x a raw Cyclone "
                                           "ping-pong's round trip (p50)",
            rawd.p50 > 0 ? oned.p50 / rawd.p50 : std::nan(""), simsync::bench::Compare::at_most, 1.3, "x",
            format("%.1f us vs %.1f us", oned.p50, rawd.p50)));
        report.goals.push_back(simsync::bench::check_goal(
            "remote_step_vs_openrti", "at least 3x faster per step than OpenRTI with two federates (84 us per step "
                                      "on this machine type, issue 13)",
            oned.p50 > 0 ? kOpenRtiUsPerStep / oned.p50 : std::nan(""), simsync::bench::Compare::at_least, 3.0, "x",
            format("%.1f us vs 84 us; the raw round trip alone is %.1f us, so at most %.2fx is possible here",
                   oned.p50, rawd.p50, rawd.p50 > 0 ? kOpenRtiUsPerStep / rawd.p50 : 0.0)));
        simsync::bench::publish(report, cli.args().json_path);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}

// bench_ros2_clock: ROS 2 /clock over Cyclone DDS at 1 kHz. One-way latency of
// the clock publisher's Ros2ClockSink against a plain Cyclone writer of the same
// type and QoS, both measured by a reader in another process.
//
// Variants, alternating over repetitions on one loopback domain (a leased test
// domain id and a discovery tag, so nothing else on the machine is seen):
//  - plain Cyclone writer (baseline): a thread sleeping to t0 + k ms, then
//    `dds_write` of Clock_{k ms} on rt/clock (reliable, transient local, keep
//    last 1, plain CDR: the sink's QoS);
//  - clock publisher + Ros2ClockSink: a handler stepping a CountingWorld at 1 ms,
//    paced at 1x by RealTimePacer with a 1 ms period and no spin tail, a ClockPublisher at 1 kHz
//    (a lockstep accessor: every tick is published) with a Ros2ClockSink. The
//    publisher is an inline system: the write happens on the pacer's event-loop
//    thread, inside its release, and that thread goes on with the pacer's next
//    request and timer after it;
//  - the same publisher stepped by a blocking lockstep thread that sleeps to
//    t0 + k ms and releases (no pacer): the write happens on that thread, which
//    goes to sleep right after it, as the plain writer's does. The difference
//    between the two publisher rows is what the pacer's loop thread does after
//    the write, on a machine whose reader process needs the other CPU.
// Latency = the reader's steady-clock time when it took the sample minus the
// writer's steady-clock time just before the write (CLOCK_MONOTONIC is one clock
// for every process of the machine). For the publisher the stamp is taken by a
// callback sink placed before the DDS sink, so the latency includes the sink's
// own work (checked conversion, write) and nothing of the pacing.
// The reader (this executable with --reader) is reliable, volatile, keep all:
// it loses nothing, so a missing or reordered time is the writer's.
//
// Usage: bench_ros2_clock [--quick] [--json PATH] (--help for all options)

#include "dds_testing.hpp"
#include "report.hpp"

#include <simsync/dds/dds.hpp>
#include <simsync/simsync.hpp>

#include <dds/dds.h>
#include <dds/version.h>
#include <simsync_dds_idl/ros2_clock.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
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

std::int64_t steady_ns(WallTime t) { return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count(); }

constexpr sd::Qos kReaderQos{sd::Reliability::reliable, sd::Durability::volatile_, 0, {}};

// A reliable Cyclone reader drops a Cyclone writer's data until it has seen the
// writer's first heartbeat (Cyclone 0.10 q_receive.c, "no heartbeat seen yet"),
// and a keep-last-1 writer no longer holds those samples when the reader asks
// for them again: the first samples after a match can be lost by design. Before
// each measured run the writer repeats this time (outside the measured range;
// the reader does not record it) until the reader has taken one.
constexpr std::int64_t kWarmUp = 1'000'000 * std::int64_t{1'000'000'000};

// ------------------------------------------------------------ reader process

// --reader-domain DOMAIN --reader-tag TAG: prints "ready" once a writer matched, then, when stdin
// closes and no sample came for 200 ms, one line "r TIME_NS RECV_NS" per sample.
int run_reader(std::uint32_t domain, const std::string& tag)
{
    sd::DomainConfig config = sd::DomainConfig::loopback(domain);
    config.tag = tag;
    auto participant = sd::Participant::create(config);
    simsync::ExternalTimeSource source;
    std::mutex mutex;
    std::vector<std::pair<std::int64_t, std::int64_t>> samples; // time, received
    samples.reserve(1 << 16);
    WallTime last_sample = WallClock::now();
    bool warm = false;
    sd::Ros2ClockFollower follower(participant, source,
                                   {.qos = kReaderQos, .on_sample = [&](const simsync::dds::ClockSample& s) {
                                        const std::int64_t t = simsync::from_ros_time(s.time).time_since_epoch().count();
                                        std::lock_guard<std::mutex> guard(mutex);
                                        if (t == kWarmUp) {
                                            if (!warm) std::printf("warm\n");
                                            std::fflush(stdout);
                                            warm = true;
                                            return;
                                        }
                                        samples.emplace_back(t, steady_ns(s.received));
                                        last_sample = s.received;
                                    }});
    if (!follower.wait_for_writers(1, 60s)) return 1;
    std::printf("ready\n");
    std::fflush(stdout);
    std::string line;
    while (std::getline(std::cin, line)) {
    }
    // The last samples may still be on their way.
    const WallTime give_up = WallClock::now() + 5s;
    for (;;) {
        {
            std::lock_guard<std::mutex> guard(mutex);
            if (WallClock::now() - last_sample >= 200ms || WallClock::now() >= give_up) break;
        }
        std::this_thread::sleep_for(20ms);
    }
    follower.stop();
    for (const auto& [t, r] : samples) std::printf("r %lld %lld\n", static_cast<long long>(t), static_cast<long long>(r));
    std::fflush(stdout);
    return 0;
}

// ------------------------------------------------------------------ the runs

struct Run {
    std::vector<double> latency_us; // one per distinct time received
    std::uint64_t expected = 0;     // distinct times written
    std::uint64_t missing = 0;
    std::uint64_t out_of_order = 0;
};

// Sends are stamped into `sent` (time_ns -> first send stamp); the reader's
// records are matched to them.
Run evaluate(const std::map<std::int64_t, std::int64_t>& sent, sd::testing::ChildProcess& reader)
{
    Run run;
    run.expected = sent.size();
    reader.close_stdin();
    reader.read_to_end(60s);
    std::map<std::int64_t, std::int64_t> first_received;
    std::int64_t max_seen = -1;
    for (const std::string& line : reader.lines()) {
        if (line.rfind("r ", 0) != 0) continue;
        std::istringstream in(line.substr(2));
        long long t = 0, r = 0;
        in >> t >> r;
        if (t < max_seen) ++run.out_of_order;
        max_seen = std::max<std::int64_t>(max_seen, t);
        first_received.emplace(t, r);
    }
    for (const auto& [t, s] : sent) {
        const auto it = first_received.find(t);
        if (it == first_received.end()) {
            if (++run.missing <= 10) {
                std::fprintf(stderr, "bench_ros2_clock: time %.3f s never arrived\n", static_cast<double>(t) / 1e9);
            }
            continue;
        }
        run.latency_us.push_back(static_cast<double>(it->second - s) / 1000.0);
    }
    return run;
}

sd::testing::ChildProcess start_reader(const std::string& self, const sd::testing::DomainLease& lease)
{
    return sd::testing::ChildProcess({self, "--reader-domain", std::to_string(lease.id()), "--reader-tag", lease.tag()});
}

bool wait_ready(sd::testing::ChildProcess& reader)
{
    return reader.read_until([](const std::string& l) { return l == "ready"; }, 60s).has_value();
}

// Writes the warm-up time every 10 ms until the reader says it took one.
void warm_up(sd::testing::ChildProcess& reader, const std::function<void()>& write_marker)
{
    const WallTime deadline = WallClock::now() + 60s;
    for (;;) {
        write_marker();
        if (reader.read_until([](const std::string& l) { return l == "warm"; }, 10ms)) return;
        if (WallClock::now() >= deadline) throw std::runtime_error("the reader process never took a sample");
    }
}

Run plain_writer(const std::string& self, const sd::testing::DomainLease& lease,
                 const std::shared_ptr<sd::Participant>& participant, std::chrono::milliseconds length)
{
    const dds_entity_t pp = participant->native_handle();
    const dds_entity_t topic = dds_create_topic(pp, &rosgraph_msgs_msg_dds__Clock__desc, "rt/clock", nullptr, nullptr);
    dds_qos_t* q = dds_create_qos();
    dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, 0);
    dds_qset_durability(q, DDS_DURABILITY_TRANSIENT_LOCAL);
    dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 1);
    const dds_data_representation_id_t xcdr1 = DDS_DATA_REPRESENTATION_XCDR1;
    dds_qset_data_representation(q, 1, &xcdr1);
    const dds_entity_t writer = dds_create_writer(pp, topic, q, nullptr);
    dds_delete_qos(q);
    if (topic < 0 || writer < 0) throw std::runtime_error("cannot create the plain Cyclone writer");
    dds_set_status_mask(writer, DDS_PUBLICATION_MATCHED_STATUS);

    sd::testing::ChildProcess reader = start_reader(self, lease);
    if (!wait_ready(reader)) throw std::runtime_error("the reader process did not match");
    for (const WallTime deadline = WallClock::now() + 60s;;) { // the writer's side of the match
        dds_publication_matched_status_t st{};
        dds_get_publication_matched_status(writer, &st);
        if (st.current_count >= 1) break;
        if (WallClock::now() >= deadline) throw std::runtime_error("the plain writer did not match");
        std::this_thread::sleep_for(1ms);
    }
    warm_up(reader, [&] {
        const simsync::RosTime t = simsync::to_ros_time(simsync::SourceTime{std::chrono::nanoseconds(kWarmUp)});
        rosgraph_msgs_msg_dds__Clock_ sample{{t.sec, t.nanosec}};
        dds_write(writer, &sample);
    });
    std::map<std::int64_t, std::int64_t> sent;
    std::thread([&] {
        const WallTime t0 = WallClock::now();
        for (std::int64_t k = 0; k <= length.count(); ++k) {
            std::this_thread::sleep_until(t0 + k * 1ms);
            const simsync::RosTime t = simsync::to_ros_time(simsync::SourceTime{std::chrono::milliseconds(k)});
            rosgraph_msgs_msg_dds__Clock_ sample{{t.sec, t.nanosec}};
            const std::int64_t stamp = steady_ns(WallClock::now());
            if (dds_write(writer, &sample) == DDS_RETCODE_OK) sent.emplace(k * 1'000'000, stamp);
        }
    }).join();
    Run run = evaluate(sent, reader);
    dds_delete(writer);
    dds_delete(topic);
    return run;
}

enum class Driver { pacer, lockstep_thread };

Run clock_publisher(const std::string& self, const sd::testing::DomainLease& lease,
                    const std::shared_ptr<sd::Participant>& participant, std::chrono::milliseconds length,
                    Driver driver)
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true});
    simsync::TimeScale scale(1.0);
    // No spin tail: the pacer's default spins up to 150 us before every 1 ms
    // deadline, a CPU taken from the reader process on a 2-vCPU machine, which
    // would be charged to the sink. Sleeping only makes the pacing later, and
    // pacing lateness is not in the measured latency (see the top comment).
    std::optional<simsync::RealTimePacer> pacer;
    std::optional<simsync::Accessor> stepper;
    if (driver == Driver::pacer) {
        pacer.emplace(handler, scale, simsync::PacerConfig{.period = 1ms, .spin_tail = WallClock::duration::zero()});
    } else {
        stepper.emplace(handler.register_accessor("stepper"));
    }
    simsync::SimTimeSource source(handler);
    simsync::ClockPublisher clock(handler, source, {.schedule = simsync::PeriodicSchedule::from_rate(1000)});
    std::map<std::int64_t, std::int64_t> sent; // filled on the stepping thread
    std::mutex sent_mutex;
    std::condition_variable sent_changed;
    clock.add_callback([&](const simsync::ClockMessage& m) {
        const std::int64_t stamp = steady_ns(WallClock::now());
        {
            std::lock_guard<std::mutex> guard(sent_mutex);
            sent.emplace(m.time.time_since_epoch().count(), stamp);
        }
        sent_changed.notify_all();
    });
    auto owned = std::make_unique<sd::Ros2ClockSink>(participant);
    sd::Ros2ClockSink& sink = *owned;
    clock.add_sink(std::move(owned));

    sd::testing::ChildProcess reader = start_reader(self, lease);
    if (!wait_ready(reader) || !sink.wait_for_readers(1, 60s)) {
        throw std::runtime_error("the reader process did not match");
    }
    warm_up(reader, [&] { sink.write(simsync::SourceTime{std::chrono::nanoseconds(kWarmUp)}); });
    clock.start();
    handler.run_until(simsync::SimTime{length});
    std::thread stepping;
    if (stepper) {
        // Holds each instant k until t0 + k ms, then lets time move to k + 1:
        // the step and the tick's write happen in its release.
        stepping = std::thread([&] {
            const WallTime t0 = WallClock::now();
            for (std::int64_t k = 0; k <= length.count(); ++k) {
                simsync::Access a = stepper->request_access(simsync::SimTime{std::chrono::milliseconds(k)});
                if (!a) break;
                std::this_thread::sleep_until(t0 + k * 1ms);
                a.release(simsync::SimTime{std::chrono::milliseconds(k + 1)});
            }
            stepper->deregister();
        });
    }
    handler.wait_until_paused(WallClock::now() + 10 * length + 30s);
    {
        // The last tick is granted at the pause; let it go out before stopping.
        std::unique_lock<std::mutex> lock(sent_mutex);
        const std::int64_t last = std::chrono::nanoseconds(length).count();
        sent_changed.wait_for(lock, 30s, [&] { return sent.count(last) != 0; });
    }
    clock.stop();
    handler.stop();
    if (stepping.joinable()) stepping.join();
    // Every tick must have been published (lockstep); the paused repeats of the
    // last one carry no new time (the map keeps the first stamp).
    std::uint64_t unpublished = 0;
    for (std::int64_t t = 0; t <= std::chrono::nanoseconds(length).count(); t += 1'000'000) {
        if (sent.find(t) == sent.end()) ++unpublished;
    }
    Run run = evaluate(sent, reader);
    run.expected += unpublished;
    run.missing += unpublished + sink.dropped() + clock.sink_failures();
    return run;
}

} // namespace

int main(int argc, char** argv)
{
    simsync::bench::CommandLine cli("bench_ros2_clock",
                                    "ROS 2 /clock over Cyclone DDS at 1 kHz: one-way latency of the clock "
                                    "publisher's Ros2ClockSink against a plain Cyclone writer, measured by a reader "
                                    "in another process.");
    long reader_domain = -1;
    std::string reader_tag;
    cli.add()("reader-domain", po::value(&reader_domain), "internal: run as the reader process on this domain id")(
        "reader-tag", po::value(&reader_tag), "internal: the reader process's discovery tag");
    if (const auto exit = cli.parse(argc, argv)) return *exit;
    if (reader_domain >= 0) return run_reader(static_cast<std::uint32_t>(reader_domain), reader_tag);
    const bool quick = cli.args().quick;
    const int reps = quick ? 1 : 5;
    const std::chrono::milliseconds length(quick ? 1000 : 2000);

    char self[4096] = {};
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        std::fprintf(stderr, "bench_ros2_clock: cannot find its own executable\n");
        return 1;
    }
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));

    struct Variant {
        const char* name;
        enum { plain, paced, stepped } kind;
        std::vector<Run> runs;
    };
    std::vector<Variant> variants{{"plain Cyclone writer (baseline)", Variant::plain, {}},
                                  {"clock publisher + Ros2ClockSink", Variant::paced, {}},
                                  {"same, stepped by a lockstep thread (no pacer)", Variant::stepped, {}}};
    for (int r = 0; r < reps; ++r) {
        for (Variant& v : variants) {
            switch (v.kind) {
            case Variant::plain: v.runs.push_back(plain_writer(self, lease, participant, length)); break;
            case Variant::paced:
                v.runs.push_back(clock_publisher(self, lease, participant, length, Driver::pacer));
                break;
            case Variant::stepped:
                v.runs.push_back(clock_publisher(self, lease, participant, length, Driver::lockstep_thread));
                break;
            }
        }
    }

    simsync::bench::Report report;
    report.id = "ros2_clock";
    report.title = "ROS 2 /clock over Cyclone DDS at 1 kHz";
    report.quick = quick;
    report.description = format(
        "One-way latency of ROS 2 `/clock` samples (`rosgraph_msgs::msg::dds_::Clock_` on `rt/clock`, reliable, "
        "transient local, keep last 1) from this process to a reader in another process (reliable, keep all), "
        "over Cyclone DDS %s on loopback. Baseline: a plain Cyclone writer of the same type and QoS writing every "
        "millisecond. Subject: a ClockPublisher at 1 kHz (lockstep) on a handler paced at 1x with a 1 ms pacing "
        "period (no spin tail, so that no spinning thread competes with the reader), publishing through Ros2ClockSink (the goal's subject); the same publisher stepped by a blocking lockstep thread instead of the pacer, for comparison (see bench/ros2_clock.notes.md). Latency = the reader's steady-clock time on taking the sample "
        "minus the writer's just before writing it. %d repetitions of %.0f s per variant, alternating; p50, p99 "
        "and max over every sample of every repetition (exact, nearest rank).",
        DDS_VERSION, reps, std::chrono::duration<double>(length).count());
    simsync::bench::Table table{"", {"variant", "samples", "missing", "out of order", "latency p50 us",
                                     "latency p99 us", "latency max us", "p50 ratio"}, {}};
    double base50 = 0;
    double subject50 = 0;
    std::uint64_t subject_missing = 0;
    std::uint64_t subject_disorder = 0;
    simsync::bench::Plot plot{.file = "ros2_clock_latency.png",
                              .title = "/clock one-way latency at 1 kHz, cumulative (every sample of every repetition)",
                              .xlabel = "latency (us)",
                              .ylabel = "fraction of samples",
                              .logx = true,
                              .logy = false,
                              .style = "steps",
                              .series = {}};
    for (const Variant& v : variants) {
        std::vector<double> latency;
        std::uint64_t missing = 0, disorder = 0;
        for (const Run& r : v.runs) {
            latency.insert(latency.end(), r.latency_us.begin(), r.latency_us.end());
            missing += r.missing;
            disorder += r.out_of_order;
        }
        const simsync::bench::Distribution d = simsync::bench::distribution(latency);
        plot.series.push_back({v.name, simsync::bench::cumulative(std::move(latency))});
        if (v.kind == Variant::plain) base50 = d.p50;
        if (v.kind == Variant::paced) {
            subject50 = d.p50;
            subject_missing = missing;
            subject_disorder = disorder;
        }
        table.rows.push_back({v.name, format("%zu", d.count), format("%llu", static_cast<unsigned long long>(missing)),
                              format("%llu", static_cast<unsigned long long>(disorder)), format("%.1f", d.p50),
                              format("%.1f", d.p99), format("%.1f", d.max),
                              format("%.3g", base50 > 0 ? d.p50 / base50 : 0.0)});
    }
    report.tables.push_back(std::move(table));
    report.plots.push_back(std::move(plot));
    const double ratio = base50 > 0 ? subject50 / base50 : std::nan("");
    report.goals.push_back(simsync::bench::check_goal(
        "sink_p50_vs_plain_writer", "clock publisher sink latency p50 at most 1.1x a plain Cyclone writer's", ratio,
        simsync::bench::Compare::at_most, 1.1, "x", format("%.1f us vs %.1f us", subject50, base50)));
    report.goals.push_back(simsync::bench::check_goal(
        "lockstep_missing_or_reordered", "no missing or out-of-order sample in lockstep mode",
        static_cast<double>(subject_missing + subject_disorder), simsync::bench::Compare::at_most, 0, "",
        format("%llu missing, %llu out of order", static_cast<unsigned long long>(subject_missing),
               static_cast<unsigned long long>(subject_disorder)),
        0));
    simsync::bench::publish(report, cli.args().json_path);
    return 0;
}

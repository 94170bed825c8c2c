// bench_remote: a lockstep participant in another process, one round trip per
// step, against the physical limit of that: Cyclone DDS's own ddsperf
// ping/pong and a raw Cyclone request/reply ping-pong between the same two
// processes, in the same run.
//
// Variants, alternating over repetitions on one loopback domain (a leased test
// domain id and a discovery tag):
//  - ddsperf (the reference floor): `ddsperf ping` and `ddsperf pong` in two
//    processes (cyclonedds-tools, the same Cyclone DDS), on this run's domain
//    id, loopback and tag; its own round-trip p50 per second, the median over
//    the seconds after the first. ddsperf's ping/pong: 12-byte keyed samples
//    (topic KS), reliable, keep last 1, each side answering from its
//    data-available listener, on Cyclone's receiving thread;
//  - raw Cyclone ping-pong, listener (what ddsperf does, on the remote
//    participants' own sample types): the child writes a request sample
//    (simsync_remote::ToHost, reliable, volatile) from its reply listener, on
//    Cyclone's receiving thread; the host answers from its listener too. Both
//    writers keep the last sample (one ping in flight: nothing is lost;
//    see raw_qos);
//  - raw Cyclone ping-pong, waitset: the same, but the child blocks on a
//    waitset on its own thread until the reply comes, as a blocking
//    request_access does (one more thread wake-up in the child per step);
//  - simsync, 1 participant: the host runs a SimSyncHandler (a CountingWorld,
//    1 ms step, no other accessor) and a dds::Bridge; the child is a lockstep
//    RemoteAccessor that asks for every step: request_access for the first,
//    then release_and_request(k ms) for each next step (one sample each way
//    per step);
//  - simsync, 8 participants in 8 processes, each asking for every step (all
//    shared mode, so that they hold each step together);
//  - ddsperf with 8 pongs (the floor of the 8-participant ratio): `ddsperf ping`
//    and 8 `ddsperf pong` processes; the ping sends its next ping once every
//    pong has answered, so a round is one ping and 8 replies; time per round
//    (1 s over the rounds of each second) against the one-pong run's, the same
//    way;
//  - simsync, 1 participant, over DDS Security: host and child each with a
//    certificate of their own (throwaway CAs from scripts/make-dds-certs),
//    discovery and liveliness encrypted, every payload encrypted (the
//    governance make-dds-certs writes); compared with the open
//    one-participant run of the same repetition.
// The raw and simsync variants are timed the same way, from outside the
// exchange: the child that drives the loop stamps the steady clock before each
// request and after its answer, and reports the per-step durations after a
// warm-up. Thread wake-ups: every process's voluntary context switches, summed
// over its threads from /proc/<pid>/task/*/status, before and after the
// measured steps (a child reads its own, the host its own, this program reads
// ddsperf's), divided by the steps (ddsperf: by its round trips).
// Every variant runs twice per repetition: with idle CPUs halting (the
// machine as it comes) and, where /dev/cpu_dma_latency can be written (root),
// with idle CPUs polling; each is compared with ddsperf in its own state.
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

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
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

// Reliable, volatile, one partition: the QoS of the remote participants'
// topics (docs/remote.md), for the raw exchange, except the history: both
// writers keep the last sample, as ddsperf's ping and pong do. They write on
// Cyclone's receiving thread (the listeners), and a keep-all writer whose
// cache of unacknowledged samples is full (about 130 pongs at Cyclone's
// initial watermark) blocks there waiting for acknowledgements that only that
// thread can process: the write times out after the reliability's 5 s and the
// sample is lost (remote.notes.md). With one ping in flight, keeping the last
// sample loses nothing. (The Bridge keeps all: see docs/remote.md.)
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
// data-available listener whose argument is `listener_arg`, or this object,
// writer set).
struct RawEndpoints {
    enum class Side { child, host };
    dds_entity_t ping_topic = 0;
    dds_entity_t pong_topic = 0;
    dds_entity_t writer = 0;
    dds_entity_t reader = 0;

    RawEndpoints(dds_entity_t pp, Side side, dds_on_data_available_fn on_data, void* listener_arg = nullptr)
    {
        ping_topic = dds_create_topic(pp, &simsync_remote_ToHost_desc, kPingTopic, nullptr, nullptr);
        check(ping_topic, "the ping topic");
        pong_topic = dds_create_topic(pp, &simsync_remote_ToParticipant_desc, kPongTopic, nullptr, nullptr);
        check(pong_topic, "the pong topic");
        const bool child = side == Side::child;
        dds_qos_t* wq = raw_qos(true, History::keep_last_one);
        dds_qos_t* rq = raw_qos(false);
        writer = dds_create_writer(pp, child ? ping_topic : pong_topic, wq, nullptr);
        dds_listener_t* listener = on_data ? dds_create_listener(listener_arg ? listener_arg : this) : nullptr;
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

// Thread wake-ups of process `pid` (0: this one) so far: the voluntary
// context switches of all its threads (/proc/<pid>/task/*/status). A thread
// that blocks (a condition variable, a waitset, a socket read) and is woken
// again counts one. 0 if the process is gone.
std::uint64_t voluntary_switches(pid_t pid = 0)
{
    const std::string dir = pid == 0 ? std::string("/proc/self/task") : "/proc/" + std::to_string(pid) + "/task";
    std::uint64_t total = 0;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return 0;
    while (const dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream status(dir + "/" + e->d_name + "/status");
        std::string line;
        while (std::getline(status, line)) {
            if (line.rfind("voluntary_ctxt_switches:", 0) == 0) {
                total += std::strtoull(line.c_str() + std::strlen("voluntary_ctxt_switches:"), nullptr, 10);
            }
        }
    }
    ::closedir(d);
    return total;
}

// The load averages of /proc/loadavg (1, 5, 15 min), for the report: the
// machine may be shared while the benchmark runs.
std::string load_average()
{
    std::ifstream in("/proc/loadavg");
    std::string one, five, fifteen;
    in >> one >> five >> fifteen;
    return one + " " + five + " " + fifteen;
}

// The child's line after its warm-up (the host samples its own wake-ups on
// reading it) and its wake-ups over the measured steps, before its result.
void print_warm()
{
    std::printf("warm\n");
    std::fflush(stdout);
}
void print_switches(std::uint64_t switches)
{
    std::printf("switches %llu\n", static_cast<unsigned long long>(switches));
    std::fflush(stdout);
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

// The raw child, `listener`: ddsperf's way, every next ping written from the
// reply listener on Cyclone's receiving thread; `waitset`: the main thread
// writes each ping and blocks on a waitset until its reply comes.
int run_raw_child(std::uint32_t domain, const std::string& tag, bool listener, int warmup, int steps)
{
    auto participant = sd::Participant::create(child_domain(domain, tag));
    const dds_entity_t pp = participant->native_handle();
    struct Loop {
        dds_entity_t writer = 0;
        simsync_remote_ToHost ping{};
        int k = 0;
        int warmup = 0;
        int total = 0;
        WallTime t0{};
        std::uint64_t switches0 = 0;
        std::vector<double> us;
        std::promise<void> done;
        std::atomic<bool> running{false};
        // Writes ping k (stamping its start).
        void send()
        {
            if (k == warmup) {
                switches0 = voluntary_switches();
                print_warm();
            }
            ping.seq = static_cast<std::uint64_t>(k + 1);
            ping.time = k;
            t0 = WallClock::now();
            if (dds_write(writer, &ping) != DDS_RETCODE_OK) throw std::runtime_error("bench_remote: ping refused");
        }
        // The reply to ping k came: stamps it; false once all are done.
        bool answered()
        {
            if (k >= warmup) us.push_back(to_us(WallClock::now() - t0));
            return ++k < total;
        }
    } loop;
    loop.warmup = warmup;
    loop.total = warmup + steps;
    loop.us.reserve(static_cast<std::size_t>(steps));
    const auto on_pong = [](dds_entity_t reader, void* arg) {
        auto* l = static_cast<Loop*>(arg);
        void* samples[8] = {};
        dds_sample_info_t infos[8];
        const dds_return_t n = dds_take(reader, samples, infos, 8, 8);
        bool mine = false;
        for (dds_return_t i = 0; i < n; ++i) {
            const auto* pong = static_cast<const simsync_remote_ToParticipant*>(samples[i]);
            if (infos[i].valid_data && pong->ref == l->ping.seq) mine = true;
        }
        if (n > 0) dds_return_loan(reader, samples, n);
        if (!mine || !l->running.load()) return;
        if (l->answered()) {
            l->send();
        } else {
            l->running.store(false);
            l->done.set_value();
        }
    };
    RawEndpoints raw(pp, RawEndpoints::Side::child, listener ? +on_pong : nullptr, &loop);
    loop.writer = raw.writer;
    const dds_entity_t reader = raw.reader;
    if (!wait_matched(raw.writer, reader, 60s)) {
        std::fprintf(stderr, "bench_remote: the raw child did not match the host\n");
        return 1;
    }
    if (listener) {
        std::future<void> finished = loop.done.get_future();
        loop.running.store(true);
        loop.send();
        if (finished.wait_for(300s) != std::future_status::ready) {
            throw std::runtime_error("bench_remote: the listener ping-pong did not end within 300 s (step " +
                                     std::to_string(loop.k) + ")");
        }
    } else {
        const dds_entity_t waitset = dds_create_waitset(pp);
        const dds_entity_t readable = dds_create_readcondition(reader, DDS_ANY_STATE);
        dds_waitset_attach(waitset, readable, 0);
        for (bool more = true; more;) {
            loop.send();
            for (bool answered = false; !answered;) {
                if (dds_waitset_wait(waitset, nullptr, 0, DDS_SECS(30)) <= 0) {
                    throw std::runtime_error("bench_remote: no pong within 30 s (step " + std::to_string(loop.k) + ")");
                }
                void* samples[8] = {};
                dds_sample_info_t infos[8];
                const dds_return_t n = dds_take(reader, samples, infos, 8, 8);
                for (dds_return_t i = 0; i < n; ++i) {
                    const auto* pong = static_cast<const simsync_remote_ToParticipant*>(samples[i]);
                    if (infos[i].valid_data && pong->ref == loop.ping.seq) answered = true;
                }
                if (n > 0) dds_return_loan(reader, samples, n);
            }
            more = loop.answered();
        }
        dds_delete(waitset);
    }
    print_switches(voluntary_switches() - loop.switches0);
    print_result(loop.us);
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
    std::uint64_t switches0 = 0;
    sd::RemoteAccess a; // held from one step to the next: released with the next request
    for (int k = 0; k < warmup + steps; ++k) {
        const simsync::SimTime t{std::chrono::milliseconds(first + k)};
        if (k == warmup) {
            switches0 = voluntary_switches();
            print_warm();
        }
        const WallTime t0 = WallClock::now();
        a = accessor.release_and_request(std::move(a), t);
        if (!a) {
            std::fprintf(stderr, "bench_remote: %s refused at step %d: %s\n", name.c_str(), k,
                         a.error().message().c_str());
            return 1;
        }
        if (k >= warmup) us.push_back(to_us(WallClock::now() - t0));
    }
    print_switches(voluntary_switches() - switches0);
    a.release();
    print_result(us);
    return 0;
}

// ------------------------------------------------------------------ the host

struct Run {
    std::vector<double> us; // per step, every child
    double child_switches = 0; // per step and child process
    double host_switches = 0;  // per step, the host process
};

std::vector<std::string> child_args(const std::string& self, const sd::testing::DomainLease& lease, int warmup,
                                    int steps)
{
    return {self, "--child-domain", std::to_string(lease.id()), "--child-tag", lease.tag(), "--warmup",
            std::to_string(warmup), "--steps", std::to_string(steps)};
}

// A child's result: its per-step durations and its wake-ups over them.
struct ChildResult {
    std::vector<double> us;
    std::uint64_t switches = 0;
};

void wait_warm(sd::testing::ChildProcess& child, const char* what)
{
    if (!child.read_until([](const std::string& l) { return l == "warm"; }, 300s)) {
        throw std::runtime_error(std::string("bench_remote: ") + what + " did not finish its warm-up");
    }
}

ChildResult collect(sd::testing::ChildProcess& child, const char* what)
{
    const auto line = child.read_until([](const std::string& l) { return l.rfind("result", 0) == 0; }, 300s);
    if (!line) {
        const auto status = child.wait(30s);
        throw std::runtime_error(std::string("bench_remote: no result from ") + what + " (exit status " +
                                 (status ? std::to_string(*status) : std::string("unknown")) + ")");
    }
    child.wait(30s);
    ChildResult r;
    r.us = parse_result(*line);
    for (const std::string& l : child.lines()) {
        if (l.rfind("switches ", 0) == 0) r.switches = std::strtoull(l.c_str() + 9, nullptr, 10);
    }
    return r;
}

// `listener`: the child writes each next ping from its reply listener
// (ddsperf's way); else from its main thread, waiting on a waitset.
// `handoff`: the host's listener only posts to an EventLoop, whose thread
// takes the ping and writes the pong (what the Bridge does: one more thread
// wake-up in the host per step); else the listener answers on Cyclone's
// receiving thread.
Run raw_run(const std::string& self, const sd::testing::DomainLease& lease,
            const std::shared_ptr<sd::Participant>& participant, bool listener, bool handoff, int warmup, int steps)
{
    struct Host {
        std::atomic<const RawEndpoints*> endpoints{nullptr};
        std::unique_ptr<simsync::EventLoop> loop;
        std::atomic<bool> posted{false};
        void answer(dds_entity_t reader)
        {
            void* samples[8] = {};
            dds_sample_info_t infos[8];
            const dds_return_t n = dds_take(reader, samples, infos, 8, 8);
            for (dds_return_t i = 0; i < n; ++i) {
                if (!infos[i].valid_data) continue;
                simsync_remote_ToParticipant pong{};
                pong.ref = static_cast<const simsync_remote_ToHost*>(samples[i])->seq;
                if (dds_write(endpoints.load()->writer, &pong) != DDS_RETCODE_OK) {
                    std::fprintf(stderr, "bench_remote: a pong write failed\n");
                }
            }
            if (n > 0) dds_return_loan(reader, samples, n);
        }
    } host;
    if (handoff) host.loop = std::make_unique<simsync::EventLoop>();
    const auto on_ping = [](dds_entity_t reader, void* arg) {
        auto* h = static_cast<Host*>(arg);
        if (h->endpoints.load() == nullptr) return; // before the endpoints exist: the child waits for the match
        if (!h->loop) {
            h->answer(reader); // on Cyclone's receiving thread: the shortest path there is
        } else if (!h->posted.exchange(true)) {
            h->loop->executor().post([h, reader] {
                h->posted.store(false);
                h->answer(reader);
            });
        }
    };
    const RawEndpoints raw(participant->native_handle(), RawEndpoints::Side::host, on_ping, &host);
    host.endpoints = &raw;
    Run run;
    {
        sd::testing::ChildProcess child([&] {
            auto args = child_args(self, lease, warmup, steps);
            args.insert(args.end(), {"--child-role", listener ? "raw-listener" : "raw-waitset"});
            return args;
        }());
        wait_warm(child, "the raw child");
        const std::uint64_t host0 = voluntary_switches();
        ChildResult r = collect(child, "the raw child");
        const std::uint64_t host1 = voluntary_switches();
        run.us = std::move(r.us);
        run.child_switches = static_cast<double>(r.switches) / steps;
        run.host_switches = static_cast<double>(host1 - host0) / steps;
    }
    return run;
}

// Cyclone DDS's own latency test, `ddsperf ping` and `ddsperf pong` in two
// processes on this run's domain, loopback and tag (CYCLONEDDS_URI), for
// `seconds`: its round-trip p50 of each second after the first, and each
// process's wake-ups per round trip over those seconds. ddsperf prints half
// the round trip: its ping records (pong received - ping written) / 2
// (update_roundtrip in src/tools/ddsperf/ddsperf.c), a one-way latency; the
// round trip is twice what it prints.
//
// With `pongs` > 1, that many `ddsperf pong` processes answer one ping: the ping
// sends its next ping once every known pong has answered (each second, every pong's
// line has the same count), so a round is one ping and `pongs` replies, the floor
// of the 8-participant step on this machine. Its figure is the time per round, 1 s
// over the rounds of that second (round_us), which the one-pong run also gives for a
// like-for-like ratio.
struct DdsperfRun {
    std::vector<double> p50s;     // us, one per second (per pong line)
    std::vector<double> round_us; // us per round: 1 s / round trips that second
    double ping_switches = 0;
    double pong_switches = 0; // all pongs together, per round
    std::string error;        // why there is no figure, if so
};

DdsperfRun ddsperf_run(const std::string& ddsperf, const sd::testing::DomainLease& lease, int seconds, int pongs = 1)
{
    DdsperfRun run;
    // Cyclone gives a process on this host one of MaxAutoParticipantIndex + 1 (10 by
    // default) participant indices per domain: 8 pongs, the ping and this process's
    // own participant fill them, and a full run then failed with "Failed to find a
    // free participant index". A configuration appended after a comma raises the
    // limit for the ddsperf processes only.
    std::string uri = sd::cyclone_config(lease.config(true));
    if (pongs > 1) {
        uri += ",<CycloneDDS><Domain Id=\"any\"><Discovery><MaxAutoParticipantIndex>40</MaxAutoParticipantIndex>"
               "</Discovery></Domain></CycloneDDS>";
    }
    ::setenv("CYCLONEDDS_URI", uri.c_str(), 1);
    const std::string id = std::to_string(lease.id());
    // Several pongs take seconds to start and be discovered on a loaded machine, and
    // the ping prints nothing until then: its duration must cover that too (its run
    // is read only for `seconds` printed seconds, then ended).
    const int slack = pongs > 1 ? 5 : 0;
    std::vector<std::unique_ptr<sd::testing::ChildProcess>> pong;
    for (int i = 0; i < pongs; ++i) {
        pong.push_back(std::make_unique<sd::testing::ChildProcess>(
            std::vector<std::string>{ddsperf, "-i", id, "-D", std::to_string(seconds + 5 + slack), "pong"}));
    }
    sd::testing::ChildProcess ping({ddsperf, "-i", id, "-D", std::to_string(seconds + 1 + slack), "ping"});
    // A line per second and pong: "[pid] t  name size 12 mean ... 50% 11.6us ... cnt 34805".
    auto field = [](const std::string& l, const std::string& key) -> std::optional<double> {
        const auto at = l.find(key);
        if (at == std::string::npos) return std::nullopt;
        return std::strtod(l.c_str() + at + key.size(), nullptr);
    };
    auto pong_switches = [&] {
        std::uint64_t sum = 0;
        for (const auto& p : pong) sum += voluntary_switches(p->pid());
        return sum;
    };
    int lines = 0;
    std::uint64_t ping0 = 0;
    std::uint64_t pong0 = 0;
    double round_trips = 0;
    for (;;) {
        const auto line = ping.read_until([](const std::string& l) { return l.find(" cnt ") != std::string::npos; },
                                          WallClock::duration(std::chrono::seconds(seconds + 30)));
        if (!line) break;
        const auto p50 = field(*line, " 50% ");
        const auto cnt = field(*line, " cnt ");
        if (!p50 || !cnt) continue;
        if (++lines <= pongs) { // the first second: discovery and warm-up, not measured
            if (lines == pongs) {
                ping0 = voluntary_switches(ping.pid());
                pong0 = pong_switches();
            }
            continue;
        }
        run.p50s.push_back(2 * *p50); // ddsperf prints half the round trip (see DdsperfRun)
        if (*cnt > 0) run.round_us.push_back(1e6 / *cnt);
        round_trips += *cnt;
        if (lines == seconds * pongs) {
            const double rounds = round_trips / pongs;
            if (rounds > 0) {
                run.ping_switches = static_cast<double>(voluntary_switches(ping.pid()) - ping0) / rounds;
                run.pong_switches = static_cast<double>(pong_switches() - pong0) / rounds;
            }
            break;
        }
    }
    ping.signal(SIGTERM);
    for (auto& p : pong) p->signal(SIGTERM);
    ping.wait(10s);
    for (auto& p : pong) p->wait(10s);
    if (pongs > 1) ::setenv("CYCLONEDDS_URI", sd::cyclone_config(lease.config(true)).c_str(), 1); // as before
    if (run.p50s.empty()) {
        run.error = "ddsperf printed no round trips (" + ddsperf + " ping/pong on domain " + id + ", " +
                    std::to_string(pongs) + " pong(s))";
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
        for (auto& child : children) wait_warm(*child, "a participant");
        const std::uint64_t host0 = voluntary_switches();
        std::uint64_t child_switches = 0;
        for (auto& child : children) {
            ChildResult r = collect(*child, "a participant");
            run.us.insert(run.us.end(), r.us.begin(), r.us.end());
            child_switches += r.switches;
        }
        const std::uint64_t host1 = voluntary_switches();
        run.child_switches = static_cast<double>(child_switches) / participants / steps;
        run.host_switches = static_cast<double>(host1 - host0) / steps;
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
    std::string ddsperf = "/usr/bin/ddsperf";
    int ddsperf_seconds = 0;
    bool no_security = false;
    cli.add()("child-domain", po::value(&child_domain_id), "internal: run as a child on this domain id")(
        "child-tag", po::value(&child_tag), "internal: the child's discovery tag")(
        "child-role", po::value(&child_role), "internal: raw-listener, raw-waitset or simsync")(
        "child-name", po::value(&child_name), "internal: the participant's name")(
        "child-security", po::value(&child_security), "internal: the participant's DDS Security file")(
        "warmup", po::value(&warmup)->default_value(0), "steps before the measured ones (default: by --quick)")(
        "steps", po::value(&steps)->default_value(0), "measured steps per run (default: by --quick)")(
        "idle", po::value(&idle)->default_value("both"),
        "idle states of the CPUs to run in: halt (as the machine comes), or both (also with idle CPUs polling, "
        "which needs write access to /dev/cpu_dma_latency; skipped with a note without it)")(
        "ddsperf", po::value(&ddsperf)->default_value("/usr/bin/ddsperf"),
        "Cyclone DDS's ddsperf (cyclonedds-tools), the reference floor")(
        "ddsperf-seconds", po::value(&ddsperf_seconds)->default_value(0),
        "seconds of ddsperf ping/pong per run, the first not counted (default: by --quick)")(
        "no-security", po::bool_switch(&no_security), "skip the DDS Security variant");
    if (const auto exit = cli.parse(argc, argv)) return *exit;
    try {
        if (child_domain_id >= 0) {
            const auto domain = static_cast<std::uint32_t>(child_domain_id);
            if (child_role == "raw-listener" || child_role == "raw-waitset") {
                return run_raw_child(domain, child_tag, child_role == "raw-listener", warmup, steps);
            }
            if (child_role == "simsync") {
                return run_simsync_child(domain, child_tag, child_security, child_name, warmup, steps);
            }
            return cli.usage_error("--child-role must be raw-listener, raw-waitset or simsync");
        }
        if (idle != "halt" && idle != "both") return cli.usage_error("--idle must be halt or both");
        const bool quick = cli.args().quick;
        const int reps = quick ? 1 : 3;
        if (warmup <= 0) warmup = quick ? 500 : 2000;
        if (steps <= 0) steps = quick ? 5000 : 20000;
        // Enough steps that a run lasts about as long as ddsperf's seconds: a
        // few hundred steps (tens of milliseconds) were at the mercy of one
        // burst of another process on this shared 2-vCPU machine.
        const int steps8 = std::max(1, steps / 5);
        if (ddsperf_seconds <= 0) ddsperf_seconds = quick ? 4 : 8;
        if (ddsperf_seconds < 2) return cli.usage_error("--ddsperf-seconds must be at least 2");

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
            std::vector<double> ddsperf, raw_listener, raw_waitset, raw_handoff, one, eight, secured;
            std::vector<double> ddsperf_round, ddsperf8_round; // us per round, 1 and 8 pongs
            // Wake-ups per step, summed over the runs (divided by `runs` below):
            // participant side, host side.
            std::map<std::string, std::pair<double, double>> switches;
            int runs = 0;
            std::string ddsperf_error;
        };
        std::map<IdleState, Samples> samples;
        const std::string load_before = load_average();
        for (int r = 0; r < reps; ++r) {
            for (const IdleState state : states) {
                std::optional<IdlePolling> hold;
                if (state == IdleState::polling) hold.emplace();
                Samples& out = samples[state];
                ++out.runs;
                auto add = [&](const char* key, std::vector<double>& into, const Run& run) {
                    into.insert(into.end(), run.us.begin(), run.us.end());
                    out.switches[key].first += run.child_switches;
                    out.switches[key].second += run.host_switches;
                };
                const DdsperfRun z = ddsperf_run(ddsperf, lease, ddsperf_seconds);
                out.ddsperf.insert(out.ddsperf.end(), z.p50s.begin(), z.p50s.end());
                out.switches["ddsperf"].first += z.ping_switches;
                out.switches["ddsperf"].second += z.pong_switches;
                if (!z.error.empty()) out.ddsperf_error = z.error;
                out.ddsperf_round.insert(out.ddsperf_round.end(), z.round_us.begin(), z.round_us.end());
                const DdsperfRun z8 = ddsperf_run(ddsperf, lease, ddsperf_seconds, 8);
                out.ddsperf8_round.insert(out.ddsperf8_round.end(), z8.round_us.begin(), z8.round_us.end());
                out.switches["ddsperf8"].first += z8.ping_switches;
                out.switches["ddsperf8"].second += z8.pong_switches;
                if (!z8.error.empty()) out.ddsperf_error = z8.error;
                add("raw_listener", out.raw_listener, raw_run(self, lease, participant, true, false, warmup, steps));
                add("raw_waitset", out.raw_waitset, raw_run(self, lease, participant, false, false, warmup, steps));
                add("raw_handoff", out.raw_handoff, raw_run(self, lease, participant, false, true, warmup, steps));
                add("one", out.one, simsync_run(self, lease, participant, 1, warmup, steps));
                add("eight", out.eight, simsync_run(self, lease, participant, 8, warmup, steps8));
                // A host participant of its own for each secured run: a Bridge
                // made again on a secured participant that had one stalled
                // after some 70 grants here (remote.notes.md).
                if (!no_security) {
                    add("secured", out.secured,
                        simsync_run(self, secured_lease, sd::Participant::create(secured_domain), 1, warmup, steps,
                                    &certs));
                }
            }
        }
        const std::string load_after = load_average();

        simsync::bench::Report report;
        report.id = "remote";
        report.title = "Remote participants over Cyclone DDS: one round trip per step";
        report.quick = quick;
        report.description = format(
            "Two processes on this machine, Cyclone DDS %s on loopback. Reference floor: Cyclone's own `ddsperf "
            "ping` / `ddsperf pong` (12-byte keyed samples, reliable, keep last 1, both sides answering from "
            "Cyclone's listener on its receiving thread), its round-trip p50 of each second after the first (%d s "
            "per run): twice the figure ddsperf prints, which is half the round trip ((pong received - ping "
            "written) / 2 in its source). Raw baselines on the remote participants' own sample types (reliable, "
            "volatile, writers "
            "keeping the last sample), the host answering from its listener: the child writing each next request "
            "from its reply listener (ddsperf's way), or blocking on a waitset on its own thread as a blocking "
            "request_access does, and the same with the host's listener handing each ping to an EventLoop "
            "thread that answers it (as the Bridge does). Subject: a lockstep RemoteAccessor asking for every 1 "
            "ms step of a no-op world (CountingWorld) served by a Bridge; also 8 such participants in 8 processes (shared mode); and the one "
            "participant over DDS Security (Cyclone's built-in plugins: each process authenticated by a "
            "certificate of its own, discovery and liveliness encrypted, every payload encrypted with AES-GCM; the "
            "governance of scripts/make-dds-certs). Per-step wall time measured by the child that drives the loop, "
            "before the request and after its answer. Wake-ups: voluntary context switches of all threads of a "
            "process (/proc/<pid>/task/*/status) over the measured steps, per step (ddsperf: per round trip); "
            "participant side (ddsperf: ping) / host side (ddsperf: pong). %d repetitions of %d steps (8 "
            "participants: %d steps each) after %d warm-up steps, alternating; percentiles over every step of "
            "every repetition. Each variant runs in each idle state of the CPUs asked for, alternating: as the "
            "machine comes (idle vCPUs halt) and, with root, with idle CPUs polling (/dev/cpu_dma_latency 0). "
            "Each ratio is against ddsperf in the same idle state. The floor of the 8-participant ratio: `ddsperf ping` "
            "with 8 `ddsperf pong` processes (the ping sends its next ping once every pong has answered) against its "
            "ping with one pong, both as time per round (1 s over the rounds of each second). Load average before "
            "/ after: %s / %s.",
            DDS_VERSION, ddsperf_seconds, reps, steps, steps8, warmup, load_before.c_str(), load_after.c_str());
        simsync::bench::Table table{"", {"variant", "idle CPUs", "steps", "us per step p50", "p99", "max", "mean",
                                         "p50 ratio to ddsperf", "wake-ups per step: participant / host"}, {}};
        auto mean = [](const std::vector<double>& v) {
            double sum = 0;
            for (double x : v) sum += x;
            return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
        };
        for (const IdleState state : states) {
            Samples& in = samples[state];
            const auto floord = simsync::bench::distribution(in.ddsperf);
            const auto listenerd = simsync::bench::distribution(in.raw_listener);
            const auto waitsetd = simsync::bench::distribution(in.raw_waitset);
            const auto handoffd = simsync::bench::distribution(in.raw_handoff);
            const auto oned = simsync::bench::distribution(in.one);
            const auto eightd = simsync::bench::distribution(in.eight);
            const auto securedd = simsync::bench::distribution(in.secured);
            const char* idle_text = state == IdleState::halt ? "halt" : "poll";
            auto ratio = [&](double p50) { return floord.p50 > 0 ? p50 / floord.p50 : std::nan(""); };
            auto row = [&](const char* name, const char* key, const simsync::bench::Distribution& d,
                           const std::vector<double>& v) {
                const auto& [participant_side, host_side] = in.switches[key];
                table.rows.push_back({name, idle_text, format("%zu", d.count), format("%.1f", d.p50),
                                      format("%.1f", d.p99), format("%.1f", d.max), format("%.1f", mean(v)),
                                      format("%.3g", ratio(d.p50)),
                                      format("%.2f / %.2f", participant_side / in.runs, host_side / in.runs)});
            };
            table.rows.push_back({"ddsperf ping/pong (reference floor; round trip, p50 of each second)", idle_text,
                                  format("%zu s", floord.count), format("%.1f", floord.p50), "", "", "", "1",
                                  format("%.2f / %.2f", in.switches["ddsperf"].first / in.runs,
                                         in.switches["ddsperf"].second / in.runs)});
            row("raw Cyclone ping-pong, listener (ddsperf's way)", "raw_listener", listenerd, in.raw_listener);
            row("raw Cyclone ping-pong, waitset on the child's thread", "raw_waitset", waitsetd, in.raw_waitset);
            row("raw Cyclone ping-pong, waitset; the host answering from a loop thread", "raw_handoff", handoffd,
                in.raw_handoff);
            row("simsync, 1 remote participant", "one", oned, in.one);
            row("simsync, 8 remote participants in 8 processes", "eight", eightd, in.eight);
            // The floor of the 8-participant ratio: ddsperf's own ping with 8 pongs
            // against its ping with one, both as time per round (1 s / rounds).
            const double round1 = simsync::bench::median(in.ddsperf_round);
            const double round8 = simsync::bench::median(in.ddsperf8_round);
            const double floor8 = round1 > 0 && round8 > 0 ? round8 / round1 : std::nan("");
            table.rows.push_back({"ddsperf ping with 8 pongs in 8 processes (floor of the 8-participant row; us per "
                                  "round, 1 s / rounds of each second, median; its own 1-pong run: " +
                                      format("%.1f us per round", round1) + ")",
                                  idle_text, format("%zu s", in.ddsperf8_round.size() / 8), format("%.1f", round8), "",
                                  "", "", format("%.3g x its 1 pong", floor8),
                                  format("%.2f / %.2f", in.switches["ddsperf8"].first / in.runs,
                                         in.switches["ddsperf8"].second / in.runs)});
            if (!no_security) {
                row("simsync, 1 remote participant, DDS Security (authenticated, encrypted)", "secured", securedd,
                    in.secured);
                report.notes.push_back(format(
                    "DDS Security, idle CPUs %s: %.1f us per step (p50) against %.1f us open, %.2fx; p99 %.1f us "
                    "against %.1f us, %.2fx.",
                    state == IdleState::halt ? "halting" : "polling", securedd.p50, oned.p50,
                    oned.p50 > 0 ? securedd.p50 / oned.p50 : 0.0, securedd.p99, oned.p99,
                    oned.p99 > 0 ? securedd.p99 / oned.p99 : 0.0));
            }
            if (!in.ddsperf_error.empty()) report.notes.push_back(in.ddsperf_error);
            const std::string suffix = state == IdleState::halt ? "" : "_idle_polling";
            const std::string when = state == IdleState::halt ? "idle CPUs halting (as the machine comes)"
                                                              : "idle CPUs polling (cpu_dma_latency 0)";
            report.goals.push_back(simsync::bench::check_goal(
                "remote_raw_pingpong_vs_ddsperf" + suffix,
                "the raw Cyclone ping-pong (listener, ddsperf's way): at most 1.2x ddsperf's round trip (p50), " +
                    when,
                ratio(listenerd.p50), simsync::bench::Compare::at_most, 1.2, "x",
                format("%.1f us vs %.1f us", listenerd.p50, floord.p50)));
            report.goals.push_back(simsync::bench::check_goal(
                "remote_step_vs_ddsperf" + suffix,
                "one remote lockstep participant: us per step at most 1.5x ddsperf's round trip (p50), " + when,
                ratio(oned.p50), simsync::bench::Compare::at_most, 1.5, "x",
                format("%.1f us vs %.1f us", oned.p50, floord.p50)));
            report.goals.push_back(simsync::bench::check_goal(
                "remote_8_processes_vs_1" + suffix,
                "8 remote participants in 8 processes: us per step at most 3x one participant's (p50), " + when,
                oned.p50 > 0 ? eightd.p50 / oned.p50 : std::nan(""), simsync::bench::Compare::at_most, 3.0, "x",
                format("%.1f us vs %.1f us; ddsperf's own ping with 8 pongs, same run: %.2fx its ping with one, per "
                       "round",
                       eightd.p50, oned.p50, floor8)));
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

// Liveness of remote participants, apart from progress: a slow participant is
// waited for and named; one whose process is killed (SIGKILL, in the middle of
// an access or while time waits for its lockstep bound) is detected by its DDS
// liveliness lease and revoked or pauses the simulation, per the Bridge's
// policy, while the other participants (remote and local) go on; a restarted
// one joins again; a participant whose host is killed ends its request.
// Loopback domain leased per test, with a discovery tag; participants and the
// killed host are simsync_remote_participant child processes. Timing is only
// ever bounded generously (sanitizers, a loaded two-core machine).

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "dds_testing.hpp"

#include <simsync/dds/bridge.hpp>
#include <simsync/dds/remote_accessor.hpp>
#include <simsync/dds/remote_asio.hpp>
#include <simsync/simsync.hpp>

#if SIMSYNC_TEST_STATUS_LINE
#include "operator_console.hpp"
#endif

#include <boost/asio/use_future.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace std::chrono_literals;
namespace sd = simsync::dds;

namespace {

constexpr auto kWait = 30s;
// The lease of the participants (and hosts) the tests kill. Cyclone asserts
// automatic liveliness at 80 % of the lease, so a process whose Cyclone
// threads stall for more than a fifth of it is taken for lost: 300 ms (60 ms
// of slack) gave false alarms under ThreadSanitizer on a loaded machine.
constexpr auto kLease = 2s;
// What the tests allow beyond the lease for detecting a loss: generous, for
// sanitizers on a loaded machine (the measured delay is printed).
constexpr auto kMargin = 10s;

// Diagnostics as the handler reports them (on the Bridge's loop thread).
class DiagnosticLog {
public:
    simsync::DiagnosticsCallback callback()
    {
        return [this](const simsync::Diagnostic& d) {
            {
                std::lock_guard<std::mutex> guard(mutex_);
                if (d.kind == simsync::Diagnostic::Kind::accessor_ended) ended_.push_back(d);
            }
            changed_.notify_all();
        };
    }
    // The first accessor_ended report, waiting up to `timeout` for it.
    std::optional<simsync::Diagnostic> wait_ended(std::chrono::steady_clock::duration timeout)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        if (!changed_.wait_for(lock, timeout, [&] { return !ended_.empty(); })) return std::nullopt;
        return ended_.front();
    }
    std::size_t ended() const
    {
        std::lock_guard<std::mutex> guard(mutex_);
        return ended_.size();
    }

private:
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<simsync::Diagnostic> ended_;
};

// The Bridge's join and leave notifications (on its loop thread), as
// "joined <name>" and "<reason> <name>".
class JoinLog {
public:
    void attach(sd::BridgeConfig& config)
    {
        config.on_joined = [this](const sd::RemoteParticipantInfo& who) { add("joined " + who.name); };
        config.on_left = [this](const sd::RemoteParticipantInfo& who, sd::LeaveReason why) {
            add(std::string(sd::to_string(why)) + " " + who.name);
        };
    }
    // What was told, once there are `n` entries (or after kWait), sorted.
    std::vector<std::string> wait_for(std::size_t n)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait_for(lock, kWait, [&] { return told_.size() >= n; });
        std::vector<std::string> out = told_;
        std::sort(out.begin(), out.end());
        return out;
    }
    bool contains(const std::string& entry)
    {
        std::lock_guard<std::mutex> guard(mutex_);
        return std::find(told_.begin(), told_.end(), entry) != told_.end();
    }

private:
    void add(std::string entry)
    {
        {
            std::lock_guard<std::mutex> guard(mutex_);
            told_.push_back(std::move(entry));
        }
        changed_.notify_all();
    }
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::string> told_;
};

// Polls the handler's snapshot (bounded in time) until `done` holds.
bool wait_for_snapshot(const simsync::SimSyncHandler& handler, const std::function<bool(const simsync::Snapshot&)>& done)
{
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (std::chrono::steady_clock::now() < deadline) {
        if (done(handler.snapshot())) return true;
        std::this_thread::sleep_for(2ms);
    }
    return false;
}

const simsync::AccessorStatus* find(const simsync::Snapshot& s, const std::string& name)
{
    for (const auto& a : s.accessors) {
        if (a.name == name) return &a;
    }
    return nullptr;
}

bool starts_with(const std::string& line, const std::string& prefix) { return line.rfind(prefix, 0) == 0; }

// What a child printed, for the failure messages.
std::string transcript(const sd::testing::ChildProcess& child)
{
    std::string out;
    for (const std::string& line : child.lines()) out += "\n  | " + line;
    return out;
}

struct Child {
    std::string name;
    std::int64_t first_ns = 0;
    std::int64_t period_ns = 1'000'000;
    int count = 10;
    std::vector<std::string> extra;
};

std::vector<std::string> child_args(const sd::testing::DomainLease& lease, const Child& c)
{
    std::vector<std::string> args = {SIMSYNC_REMOTE_PARTICIPANT, "--domain", std::to_string(lease.id()), "--tag",
                                     lease.tag(), "--name", c.name, "--first-ns", std::to_string(c.first_ns),
                                     "--period-ns", std::to_string(c.period_ns), "--count", std::to_string(c.count),
                                     "--lease-ms", std::to_string(std::chrono::milliseconds(kLease).count())};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    return args;
}

// A child's grants as it printed them: requested, granted, sequence.
std::vector<std::tuple<std::int64_t, std::int64_t, std::uint64_t>> grants_of(const sd::testing::ChildProcess& child)
{
    std::vector<std::tuple<std::int64_t, std::int64_t, std::uint64_t>> out;
    for (const std::string& line : child.lines()) {
        if (!starts_with(line, "grant ")) continue;
        std::istringstream in(line.substr(6));
        std::int64_t requested = 0;
        std::int64_t granted = 0;
        std::uint64_t sequence = 0;
        in >> requested >> granted >> sequence;
        out.emplace_back(requested, granted, sequence);
    }
    return out;
}

// A local lockstep accessor: `count` grants at k ms, each released declaring
// the next; what it was granted (time, sequence) and any refusal.
struct LocalRun {
    std::vector<std::pair<simsync::SimTime, std::uint64_t>> grants;
    std::vector<std::string> errors;
};
void run_local(simsync::Accessor& accessor, int count, LocalRun& out)
{
    for (int k = 0; k < count; ++k) {
        const simsync::SimTime t = simsync::sim_time(k * 1ms);
        simsync::Access a = accessor.request_access_for(t, 2 * kWait);
        if (!a) {
            out.errors.push_back("request " + std::to_string(k) + ": " + a.error().message());
            return;
        }
        out.grants.emplace_back(a.granted_time(), a.sequence());
        if (k + 1 < count) {
            a.release(t + 1ms);
        } else {
            a.release();
        }
    }
    accessor.deregister();
}

// The grants of a participant that went on: every one at the time asked,
// in increasing order of the handler's sequence.
void check_continued(const std::string& who, const std::vector<std::pair<simsync::SimTime, std::uint64_t>>& grants,
                     int count, std::int64_t first_ns, std::int64_t period_ns)
{
    INFO(who);
    REQUIRE(grants.size() == static_cast<std::size_t>(count));
    for (int k = 0; k < count; ++k) {
        CHECK(grants[k].first == simsync::SimTime{simsync::SimDuration{first_ns + k * period_ns}});
        if (k > 0) CHECK(grants[k].second > grants[k - 1].second);
    }
}

enum class Moment { holding, stalled };

// The fault proof: a victim child is SIGKILLed while it holds an access
// (`holding`) or while its lockstep bound holds time (`stalled`), beside a
// local lockstep accessor and another remote lockstep child; the Bridge acts
// per `policy`; then the victim, restarted under its name, joins and is granted.
void kill_a_participant(Moment moment, sd::LostParticipantPolicy policy)
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    simsync::CountingWorld world;
    DiagnosticLog log;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .start_paused = true, .diagnostics = log.callback()});
    sd::BridgeConfig config;
    config.lease = kLease;
    config.on_lost = policy;
    JoinLog joins;
    joins.attach(config);
    sd::Bridge bridge(handler, participant, config);

    constexpr int kLocalCount = 10;
    const Child other{"other", 0, 2'000'000, 5, {}};
    // Holding: its third access (at 2 ms) is held. Stalled: its third release
    // declares 3 ms, and it never asks: time cannot pass 3 ms.
    const Child victim{"victim", 0, 1'000'000, 8,
                       {moment == Moment::holding ? "--hold-at" : "--stall-after", "3"}};

    simsync::Accessor local = handler.register_accessor("local", {.kind = simsync::AccessorKind::lockstep});
    sd::testing::ChildProcess other_child(child_args(lease, other));
    auto victim_child = std::make_unique<sd::testing::ChildProcess>(child_args(lease, victim));
    INFO("other:" << transcript(other_child));
    INFO("victim:" << transcript(*victim_child));
    if (!bridge.wait_for_participants(2, kWait)) {
        other_child.read_to_end(1s);
        victim_child->read_to_end(1s);
        FAIL("the participants did not join");
    }
    LocalRun local_run;
    std::thread local_thread([&] { run_local(local, kLocalCount, local_run); });
    // On a failed REQUIRE: stop the handler (the local accessor's wait ends) and join.
    struct Joiner {
        simsync::SimSyncHandler& handler;
        std::thread& thread;
        ~Joiner()
        {
            if (!thread.joinable()) return;
            handler.stop();
            thread.join();
        }
    } joiner{handler, local_thread};
    handler.resume();

    const auto stood = victim_child->read_until(
        [&](const std::string& l) { return starts_with(l, moment == Moment::holding ? "holding " : "stalled "); }, kWait);
    REQUIRE(stood);
    // Time waits for the victim, and the snapshot names it.
    REQUIRE(wait_for_snapshot(handler, [](const simsync::Snapshot& s) {
        return std::find(s.waiting_for.begin(), s.waiting_for.end(), "victim") != s.waiting_for.end();
    }));
    const simsync::SimTime stood_at = handler.now();
    CHECK(stood_at <= simsync::sim_time(3ms));

    const auto killed = std::chrono::steady_clock::now();
    victim_child->signal(SIGKILL);
    const auto report = log.wait_ended(kLease + kMargin);
    const auto detected = std::chrono::steady_clock::now() - killed;
    REQUIRE(report);
    MESSAGE("lost after " << std::chrono::duration<double, std::milli>(detected).count() << " ms (lease "
                          << std::chrono::milliseconds(kLease).count() << " ms), policy " << std::string(sd::to_string(policy)));
    CHECK(detected <= kLease + kMargin);
    CHECK(report->accessor == "victim");
    CHECK(report->reason == simsync::errc::timed_out);
    CHECK(report->message.find("'victim'") != std::string::npos);
    CHECK(report->message.find("liveliness lease") != std::string::npos);
    CHECK(victim_child->wait(kWait) == 128 + SIGKILL);
    CHECK(bridge.stats().lost == 1);

    if (policy == sd::LostParticipantPolicy::revoke) {
        CHECK(report->message.find("revoked") != std::string::npos);
        // Told before the report (on the same thread): it left, lost.
        CHECK(joins.contains("lost victim"));
        // The others see nothing but the revocation: the victim is gone from
        // the snapshot, and they finish their sequences.
        CHECK(find(handler.snapshot(), "victim") == nullptr);
        const auto names = bridge.participants();
        CHECK(std::find(names.begin(), names.end(), "victim") == names.end());
    } else {
        CHECK(report->message.find("paused") != std::string::npos);
        const simsync::Snapshot s = handler.snapshot();
        CHECK(s.state == simsync::HandlerState::paused);
        const simsync::AccessorStatus* v = find(s, "victim");
        REQUIRE(v != nullptr); // kept for the operator
        CHECK(v->activity == (moment == Moment::holding ? simsync::AccessorStatus::Activity::holding
                                                        : simsync::AccessorStatus::Activity::idle));
        // Restarted under its name, it replaces the lost one; then the operator resumes.
        const std::int64_t at = handler.now().time_since_epoch().count();
        sd::testing::ChildProcess again(child_args(lease, {"victim", at, 1'000'000, 3, {}}));
        REQUIRE(again.read_until([](const std::string& l) { return starts_with(l, "joined "); }, kWait));
        CHECK(bridge.stats().replaced == 1);
        CHECK_FALSE(joins.contains("lost victim")); // kept: not a leave
        CHECK(joins.contains("replaced victim"));
        handler.resume();
        CHECK(again.read_until([](const std::string& l) { return l == "done"; }, kWait));
        CHECK(again.wait(kWait) == 0);
        const auto g = grants_of(again);
        REQUIRE(g.size() == 3);
        for (std::size_t k = 0; k < g.size(); ++k) CHECK(std::get<1>(g[k]) == at + static_cast<std::int64_t>(k) * 1'000'000);
    }

    local_thread.join();
    CHECK(local_run.errors.empty());
    check_continued("local", local_run.grants, kLocalCount, 0, 1'000'000);
    CHECK(other_child.read_until([](const std::string& l) { return l == "done"; }, kWait));
    CHECK(other_child.wait(kWait) == 0);
    std::vector<std::pair<simsync::SimTime, std::uint64_t>> other_grants;
    for (const auto& [requested, granted, sequence] : grants_of(other_child)) {
        CHECK(granted == requested);
        other_grants.emplace_back(simsync::SimTime{simsync::SimDuration{granted}}, sequence);
    }
    check_continued("other", other_grants, other.count, 0, other.period_ns);
    for (const std::string& line : other_child.lines()) CHECK_FALSE(starts_with(line, "refused"));

    if (policy == sd::LostParticipantPolicy::revoke) {
        // Restarted under its name after the revocation, it joins as a new one
        // and is granted.
        const std::int64_t at = handler.now().time_since_epoch().count() + 5'000'000;
        sd::testing::ChildProcess again(child_args(lease, {"victim", at, 1'000'000, 3, {}}));
        CHECK(again.read_until([](const std::string& l) { return l == "done"; }, kWait));
        CHECK(again.wait(kWait) == 0);
        const auto g = grants_of(again);
        REQUIRE(g.size() == 3);
        for (std::size_t k = 0; k < g.size(); ++k) CHECK(std::get<1>(g[k]) == at + static_cast<std::int64_t>(k) * 1'000'000);
    }
    const sd::BridgeStats s = bridge.stats();
    CHECK(s.lost == 1);
    CHECK(s.announces == 3);
    CHECK(s.refused_announces == 0);
    CHECK(s.protocol_errors == 0);
    CHECK(log.ended() == 1);
    // Each join told once, each participant's end once with its reason: the
    // victim's loss (revoke) or replacement (pause), the others' leaves.
    const std::string victim_end = policy == sd::LostParticipantPolicy::revoke ? "lost victim" : "replaced victim";
    std::vector<std::string> expected{"joined other", "joined victim", "joined victim", "left other", "left victim",
                                      victim_end};
    std::sort(expected.begin(), expected.end());
    CHECK(joins.wait_for(expected.size()) == expected);
}

} // namespace

TEST_CASE("Remote.Liveness.ASlowParticipantIsWaitedForAndNamed" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    sd::BridgeConfig config;
    config.lease = kLease;
    sd::Bridge bridge(handler, participant, config);
    sd::RemoteAccessor slow(participant, "slowpoke", {.kind = simsync::AccessorKind::lockstep},
                            {.lease = kLease});
    simsync::Accessor camera = handler.register_accessor("camera", {.kind = simsync::AccessorKind::free});

    // Holding an access: a request beyond now waits for it.
    sd::RemoteAccess a = slow.request_access(simsync::kSimStart);
    REQUIRE(a);
    std::error_code camera_error;
    simsync::SimTime camera_at{};
    std::thread waiter([&] {
        simsync::Access c = camera.request_access_for(simsync::sim_time(5ms), kWait);
        camera_error = c.error();
        camera_at = c.granted_time();
    });
    REQUIRE(wait_for_snapshot(handler, [](const simsync::Snapshot& s) {
        const auto* c = find(s, "camera");
        return c && c->activity == simsync::AccessorStatus::Activity::waiting;
    }));
    // Slow is not lost: its lease is renewed by its process, whatever it does.
    std::this_thread::sleep_for(kLease + 1s); // longer than the lease, on purpose: nothing may happen
    simsync::Snapshot s = handler.snapshot();
    CHECK(s.waiting_for == std::vector<std::string>{"slowpoke"});
    const auto* held = find(s, "slowpoke");
    REQUIRE(held != nullptr);
    CHECK(held->activity == simsync::AccessorStatus::Activity::holding);
#if SIMSYNC_TEST_STATUS_LINE
    simsync::examples::RateMeter meter;
    const std::string line = simsync::examples::status_line(handler, meter, true);
    INFO(line);
    CHECK(line.find("waiting_for=slowpoke") != std::string::npos);
#endif
    // Released with its next request at 2 ms: now its lockstep bound holds time.
    a.release(simsync::sim_time(2ms));
    REQUIRE(wait_for_snapshot(handler, [](const simsync::Snapshot& snap) {
        return snap.now == simsync::sim_time(2ms) && !snap.waiting_for.empty();
    }));
    s = handler.snapshot();
    CHECK(s.waiting_for == std::vector<std::string>{"slowpoke"});
    CHECK(find(s, "slowpoke")->activity == simsync::AccessorStatus::Activity::idle);
    CHECK(find(s, "slowpoke")->time == simsync::sim_time(2ms));
    sd::RemoteAccess b = slow.request_access(simsync::sim_time(2ms));
    REQUIRE(b);
    b.release(simsync::sim_time(10ms));
    waiter.join();
    CHECK_FALSE(camera_error);
    CHECK(camera_at == simsync::sim_time(5ms));
    CHECK(bridge.stats().lost == 0);
}

TEST_CASE("Remote.Liveness.KilledWhileHoldingIsRevokedAndTheOthersGoOn" * doctest::timeout(180))
{
    kill_a_participant(Moment::holding, sd::LostParticipantPolicy::revoke);
}

TEST_CASE("Remote.Liveness.KilledWhileTimeWaitsForItIsRevokedAndTheOthersGoOn" * doctest::timeout(180))
{
    kill_a_participant(Moment::stalled, sd::LostParticipantPolicy::revoke);
}

TEST_CASE("Remote.Liveness.KilledWhileHoldingPausesAndARestartReplacesIt" * doctest::timeout(180))
{
    kill_a_participant(Moment::holding, sd::LostParticipantPolicy::pause);
}

TEST_CASE("Remote.Liveness.KilledWhileTimeWaitsForItPausesAndARestartReplacesIt" * doctest::timeout(180))
{
    kill_a_participant(Moment::stalled, sd::LostParticipantPolicy::pause);
}

// The known false alarm: a participant stopped (SIGSTOP, as a debugger does)
// longer than its lease is taken for lost and revoked. When it goes on, the
// host answers its requests `not_registered` (it must join again), and drops
// the rest (unknown participant). The host's own lease is long here, so the
// participant does not take the host for lost in turn (it would end its
// request `stopped`: also an answer, but not the one under test).
TEST_CASE("Remote.Liveness.AParticipantStoppedLongerThanItsLeaseIsRevokedAndToldSo" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    simsync::CountingWorld world;
    DiagnosticLog log;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .diagnostics = log.callback()});
    sd::BridgeConfig config;
    config.lease = 4 * kWait;
    sd::Bridge bridge(handler, participant, config);
    sd::testing::ChildProcess sleeper(child_args(lease, {"sleeper", 0, 1'000'000, 3, {"--hold-at", "1", "--hold-until-input"}}));
    INFO("sleeper:" << transcript(sleeper));
    REQUIRE(sleeper.read_until([](const std::string& l) { return starts_with(l, "holding "); }, kWait));
    sleeper.signal(SIGSTOP);
    const auto report = log.wait_ended(kLease + kMargin);
    REQUIRE(report);
    CHECK(report->accessor == "sleeper");
    CHECK(find(handler.snapshot(), "sleeper") == nullptr);
    sleeper.signal(SIGCONT);
    sleeper.write_line("go"); // releases (dropped), then asks for 1 ms
    const auto refused = sleeper.read_until([](const std::string& l) { return starts_with(l, "refused "); }, kWait);
    REQUIRE(refused);
    INFO(*refused);
    CHECK(refused->find(simsync::make_error_code(simsync::errc::not_registered).message()) != std::string::npos);
    CHECK(sleeper.read_until([](const std::string& l) { return l == "done"; }, kWait));
    CHECK(sleeper.wait(kWait) == 0);
    const sd::BridgeStats s = bridge.stats();
    CHECK(s.lost == 1);
    CHECK(s.rejected[sd::remote::Rejection::unknown_participant] >= 1); // its release
    CHECK(bridge.participants().empty());
}

// The remedy of the false alarm: the pause policy. A participant stopped
// longer than its lease pauses the simulation and stays registered; when it
// goes on, the Bridge hears from it again and the operator resumes.
TEST_CASE("Remote.Liveness.UnderThePausePolicyAStoppedParticipantGoesOnAfterResume" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    simsync::CountingWorld world;
    DiagnosticLog log;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .diagnostics = log.callback()});
    sd::BridgeConfig config;
    config.lease = 4 * kWait; // the participant must not take the host for lost
    config.on_lost = sd::LostParticipantPolicy::pause;
    sd::Bridge bridge(handler, participant, config);
    sd::testing::ChildProcess sleeper(child_args(lease, {"sleeper", 0, 1'000'000, 3, {"--hold-at", "1", "--hold-until-input"}}));
    INFO("sleeper:" << transcript(sleeper));
    REQUIRE(sleeper.read_until([](const std::string& l) { return starts_with(l, "holding "); }, kWait));
    sleeper.signal(SIGSTOP);
    const auto report = log.wait_ended(kLease + kMargin);
    REQUIRE(report);
    CHECK(report->message.find("paused") != std::string::npos);
    CHECK(handler.state() == simsync::HandlerState::paused);
    REQUIRE(find(handler.snapshot(), "sleeper") != nullptr);
    sleeper.signal(SIGCONT);
    sleeper.write_line("go"); // releases, then asks for 1 ms: waits for resume
    REQUIRE(bridge.wait_until([](const sd::BridgeStats& s) { return s.regained == 1 && s.requests == 2; }, kWait));
    handler.resume();
    CHECK(sleeper.read_until([](const std::string& l) { return l == "done"; }, kWait));
    CHECK(sleeper.wait(kWait) == 0);
    const auto g = grants_of(sleeper);
    REQUIRE(g.size() == 3);
    for (std::size_t k = 0; k < g.size(); ++k) CHECK(std::get<1>(g[k]) == static_cast<std::int64_t>(k) * 1'000'000);
    for (const std::string& line : sleeper.lines()) CHECK_FALSE(starts_with(line, "refused"));
    const sd::BridgeStats s = bridge.stats();
    CHECK(s.lost == 1);
    CHECK(s.rejected.total() == 0);
    CHECK(s.protocol_errors == 0);
}

TEST_CASE("Remote.Liveness.AKilledHostEndsThePendingRequestStopped" * doctest::timeout(120))
{
    sd::testing::DomainLease lease;
    sd::testing::ChildProcess host({SIMSYNC_REMOTE_PARTICIPANT, "--host", "--domain", std::to_string(lease.id()),
                                    "--tag", lease.tag(), "--lease-ms", std::to_string(std::chrono::milliseconds(kLease).count())});
    REQUIRE(host.read_until([](const std::string& l) { return starts_with(l, "hosting "); }, kWait));
    auto participant = sd::Participant::create(lease.config(true));
    sd::RemoteAccessor remote(participant, "orphan", {}, {.join_timeout = kWait, .lease = kLease});
    CHECK(remote.state() == simsync::HandlerState::paused);
    CHECK_FALSE(remote.host_lost());

    // The host is paused at 0: 5 ms waits, until the host is gone.
    auto pending = remote.async_request_access(simsync::sim_time(5ms), boost::asio::use_future);
    const auto killed = std::chrono::steady_clock::now();
    host.signal(SIGKILL);
    REQUIRE(pending.wait_for(kLease + kMargin) == std::future_status::ready);
    const auto detected = std::chrono::steady_clock::now() - killed;
    MESSAGE("host lost after " << std::chrono::duration<double, std::milli>(detected).count() << " ms (lease "
                               << std::chrono::milliseconds(kLease).count() << " ms)");
    auto [error, access] = pending.get();
    CHECK(error == simsync::errc::stopped);
    CHECK_FALSE(access);
    CHECK(remote.host_lost());
    CHECK(remote.state() == simsync::HandlerState::stopped);
    CHECK(remote.request_access(simsync::sim_time(5ms)).error() == simsync::errc::stopped);
    CHECK(host.wait(kWait) == 128 + SIGKILL);
}

TEST_CASE("Remote.Liveness.ALeaseMustBePositive")
{
    sd::testing::DomainLease lease;
    auto participant = sd::Participant::create(lease.config(true));
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    sd::BridgeConfig config;
    config.lease = 0ms;
    CHECK_THROWS_AS(sd::Bridge(handler, participant, config), simsync::Error);
    sd::Bridge bridge(handler, participant);
    try {
        sd::RemoteAccessor remote(participant, "x", {}, {.join_timeout = 1s, .lease = -1ms});
        FAIL("a negative lease was taken");
    } catch (const simsync::Error& e) {
        CHECK(e.code() == simsync::errc::invalid_argument);
    }
}

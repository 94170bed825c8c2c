// Time sources: start values, scaling, exactness, monotonicity, the factory,
// and concurrent readers (run under ThreadSanitizer too).

#include <simsync/simsync.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using simsync::SourceTime;

namespace {

constexpr std::int64_t kS = 1'000'000'000;
// A UNIX time with a fractional part, so an epoch start is not a round number.
const simsync::SystemTime kEpochStart{std::chrono::seconds(1'700'000'000) + std::chrono::nanoseconds(123)};
constexpr std::int64_t kEpochNs = 1'700'000'000 * kS + 123;

std::int64_t ns(SourceTime t) { return t.time_since_epoch().count(); }

// A wall clock whose system time can be stepped backwards (NTP), which
// ManualWallClock refuses by design.
class SteppableWallClock final : public simsync::WallClockSource {
public:
    simsync::WallTime steady_now() const noexcept override { return simsync::WallTime{std::chrono::nanoseconds(steady_.load())}; }
    simsync::SystemTime system_now() const noexcept override
    {
        return simsync::SystemTime{std::chrono::duration_cast<simsync::SystemClock::duration>(std::chrono::nanoseconds(system_.load()))};
    }
    void sleep_until(simsync::WallTime) override {}
    void set_system(std::int64_t ns) { system_.store(ns); }
    void advance_steady(std::int64_t ns) { steady_.fetch_add(ns); }

private:
    std::atomic<std::int64_t> steady_{0};
    std::atomic<std::int64_t> system_{0};
};

// A user-defined source replaying a script of readings, some of them backwards.
class ScriptedSource final : public simsync::TimeSource {
public:
    explicit ScriptedSource(std::vector<std::int64_t> script) : script_(std::move(script)) {}

protected:
    SourceTime read() const noexcept override
    {
        const std::size_t i = std::min(next_.fetch_add(1), script_.size() - 1);
        return SourceTime{SourceTime::duration{script_[i]}};
    }

private:
    std::vector<std::int64_t> script_;
    mutable std::atomic<std::size_t> next_{0};
};

struct Fixture {
    simsync::ManualWallClock clock{simsync::WallTime{1000s}, kEpochStart};
    simsync::TimeScale scale;
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler{world, {.step = 1ms}};
    simsync::TimeSourceContext context{&handler, &scale, &clock};

    explicit Fixture(double initial_scale = 1.0) : scale(initial_scale, clock) {}
};

} // namespace

TEST_CASE("TimeSource.StartValue.BuiltIns")
{
    struct Row {
        const char* name;
        std::int64_t expected_ns;
    };
    const Row rows[] = {{"sim", 0}, {"simulation", 0}, {"system", kEpochNs}, {"ros", kEpochNs}, {"external", 0}};
    for (const Row& row : rows) {
        CAPTURE(row.name);
        Fixture f(0.5);
        auto source = simsync::make_time_source(row.name, f.context);
        REQUIRE(source);
        CHECK(ns(source->now()) == row.expected_ns);
    }
}

TEST_CASE("TimeSource.Scaling.AcrossScaleChanges")
{
    struct Op {
        std::chrono::nanoseconds advance;
        std::optional<double> new_scale; // applied after the advance
    };
    struct Row {
        const char* name;
        double initial;
        std::vector<Op> ops;
        std::int64_t expected_ns;
    };
    const std::vector<Op> changes{{1s, 2.0}, {1s, 0.25}, {4s, std::nullopt}};
    const Row rows[] = {
        {"simulation", 0.5, {{1s, std::nullopt}}, 500'000'000},
        {"system", 0.5, {{1s, std::nullopt}}, kEpochNs + 500'000'000},
        {"ros", 0.5, {{1s, std::nullopt}}, kEpochNs + kS},
        {"sim", 0.5, {{1s, std::nullopt}}, 0}, // wall time does not step the world
        // 1 s at 1x, then 1 s at 2x, then 4 s at 0.25x: 1 + 2 + 1 = 4 s.
        {"simulation", 1.0, changes, 4 * kS},
        {"system", 1.0, changes, kEpochNs + 4 * kS},
        {"ros", 1.0, changes, kEpochNs + 6 * kS}, // not scaled
        // The change applies from the moment of the change, not retroactively.
        {"simulation", 1.0, {{1s, 1e6}}, kS},
        {"simulation", 3.0, {{333ms, std::nullopt}}, 999'000'000},
        {"simulation", 1.0 / 3.0, {{3s, std::nullopt}}, 999'999'999}, // 333333333 ppb, exact integer maths
    };
    for (const Row& row : rows) {
        CAPTURE(row.name);
        CAPTURE(row.initial);
        Fixture f(row.initial);
        auto source = simsync::make_time_source(row.name, f.context);
        const std::int64_t start = ns(source->now());
        for (const Op& op : row.ops) {
            f.clock.advance(op.advance);
            if (op.new_scale) f.scale.set(*op.new_scale);
        }
        CHECK(ns(source->now()) == row.expected_ns);
        CHECK(ns(source->now()) >= start);
    }
}

TEST_CASE("TimeSource.Exactness.LongRun")
{
    // AWSIM accumulates float deltas: 1 s at 0.5 drifts to 500000023 ns. Ours is
    // exact at every one of a million reads, not only at the end.
    struct Row {
        double scale;
        std::int64_t per_read_ns; // scaled time per 1 ms of wall time
    };
    const Row rows[] = {{0.5, 500'000}, {0.001, 1'000}, {3.0, 3'000'000}, {1.0, 1'000'000}};
    for (const Row& row : rows) {
        CAPTURE(row.scale);
        Fixture f(row.scale);
        simsync::ScaledWallTimeSource source(f.scale, simsync::ScaledWallTimeSource::Origin::zero);
        f.clock.advance(1s);
        const std::int64_t one_second = ns(source.now());
        CHECK(one_second == row.per_read_ns * 1000);
        constexpr std::int64_t kReads = 1'000'000;
        std::int64_t mismatches = 0;
        for (std::int64_t i = 1; i <= kReads; ++i) {
            f.clock.advance(1ms);
            if (ns(source.now()) != one_second + i * row.per_read_ns) ++mismatches;
        }
        CHECK(mismatches == 0);
        CHECK(ns(source.now()) == (1000 + kReads) * row.per_read_ns);
    }
}

TEST_CASE("TimeSource.Range.ScaledSourcesSaturateInsteadOfWrapping")
{
    // At the largest scale, 292 years of scaled time pass in about 2.56 h of wall
    // time: the scaled sources must stop at the end of the range, never wrap to
    // a negative time and run backwards (they skip the monotonic clamp).
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    struct Row {
        const char* name;
        std::chrono::nanoseconds advance;
        bool saturated;
    };
    const Row rows[] = {
        {"simulation", 2h, false},     // 7.2e18 ns: still in range
        {"simulation", 3h, true},      // 1.08e19 ns: beyond
        {"system", 150min, true},      // the UNIX time of start + 9.0e18: beyond
        {"simulation", 10000h, true},  // far beyond
    };
    for (const Row& row : rows) {
        CAPTURE(row.name);
        CAPTURE(row.advance.count());
        Fixture f(simsync::TimeScale::kMax);
        auto source = simsync::make_time_source(row.name, f.context);
        std::int64_t previous = ns(source->now());
        bool backwards = false;
        // In ten stretches, so every intermediate reading is checked too.
        for (int i = 0; i < 10; ++i) {
            f.clock.advance(row.advance / 10);
            const std::int64_t reading = ns(source->now());
            backwards = backwards || reading < previous;
            previous = reading;
        }
        CHECK_FALSE(backwards);
        CHECK(previous > 0);
        CHECK((previous == kMax) == row.saturated);
        if (!row.saturated) CHECK(previous == row.advance.count() * 1'000'000); // exact: scale 1e6
    }
    // The scale itself: saturated, then a change of scale, still saturated.
    Fixture f(simsync::TimeScale::kMax);
    f.clock.advance(3h);
    CHECK(f.scale.scaled_elapsed() == simsync::SimDuration::max());
    f.scale.set(1.0);
    f.clock.advance(1s);
    CHECK(f.scale.scaled_elapsed() == simsync::SimDuration::max());
}

TEST_CASE("TimeSource.Exactness.SimSteps")
{
    Fixture f;
    auto source = simsync::make_time_source("sim", f.context);
    f.handler.step(1'000'000); // no accessor: steps on this thread
    REQUIRE(f.handler.wait_until_paused(simsync::WallClock::now() + 20s));
    CHECK(ns(source->now()) == 1000 * kS);
}

TEST_CASE("TimeSource.Monotonic.SystemClockStepsBack")
{
    SteppableWallClock clock;
    clock.set_system(100 * kS);
    simsync::TimeScale scale(1.0, clock);
    simsync::RosTimeSource ros(clock);
    simsync::ScaledWallTimeSource system(scale, simsync::ScaledWallTimeSource::Origin::system_time);

    struct Row {
        std::int64_t system_ns;
        std::int64_t steady_advance_ns;
        std::int64_t ros_ns;
        std::int64_t system_source_ns;
    };
    const Row rows[] = {
        {100 * kS, 0, 100 * kS, 100 * kS},
        {50 * kS, kS, 100 * kS, 101 * kS},  // stepped back: ros holds, system follows steady time
        {99 * kS, kS, 100 * kS, 102 * kS},  // still behind: holds
        {150 * kS, kS, 150 * kS, 103 * kS}, // caught up
        {149 * kS, 0, 150 * kS, 103 * kS},
    };
    for (const Row& row : rows) {
        CAPTURE(row.system_ns);
        clock.set_system(row.system_ns);
        clock.advance_steady(row.steady_advance_ns);
        CHECK(ns(ros.now()) == row.ros_ns);
        CHECK(ns(system.now()) == row.system_source_ns);
    }
}

TEST_CASE("TimeSource.Monotonic.UserSourceClamped")
{
    ScriptedSource source({5, 3, 7, 6, 6, -1, 8});
    const std::int64_t expected[] = {5, 5, 7, 7, 7, 7, 8};
    for (std::int64_t e : expected) CHECK(ns(source.now()) == e);
}

TEST_CASE("TimeSource.External.RefusesBackwards")
{
    Fixture f;
    auto made = simsync::make_time_source("external", f.context);
    auto& external = dynamic_cast<simsync::ExternalTimeSource&>(*made);
    CHECK(ns(external.now()) == 0);
    external.set(simsync::source_time(5s));
    CHECK(ns(external.now()) == 5 * kS);
    external.set(simsync::source_time(5s)); // the same time again is not backwards
    try {
        external.set(simsync::source_time(4500ms));
        FAIL("a time earlier than the last one was accepted");
    } catch (const simsync::Error& e) {
        CHECK(e.code() == simsync::errc::invalid_argument);
        const std::string what = e.what();
        CHECK(what.find("4.500000000") != std::string::npos);
        CHECK(what.find("5.000000000") != std::string::npos);
    }
    CHECK(ns(external.now()) == 5 * kS);
    external.set(simsync::source_time(6s));
    CHECK(ns(external.now()) == 6 * kS);
    // Negative times are fine as long as they do not go back.
    simsync::ExternalTimeSource from_negative(simsync::source_time(-2s));
    from_negative.set(simsync::source_time(-1s));
    CHECK(ns(from_negative.now()) == -kS);
}

TEST_CASE("TimeSource.External.OfferHoldsBackwardJumpsAndCountsThemOnce")
{
    using Offer = simsync::ExternalTimeSource::Offer;
    simsync::ExternalTimeSource source;
    CHECK(source.offer(simsync::source_time(10s)) == Offer::advanced);
    CHECK(source.offer(simsync::source_time(10s)) == Offer::unchanged); // a paused clock repeats itself
    CHECK(source.offer(simsync::source_time(12s)) == Offer::advanced);
    CHECK(source.backward_jumps() == 0);
    CHECK_FALSE(source.last_backward_jump().has_value());

    // The outside clock is reset to 1 s and runs on from there: the source holds
    // 12 s until the outside clock passes it, and the reset counts once.
    CHECK(source.offer(simsync::source_time(1s)) == Offer::held);
    CHECK(ns(source.now()) == 12 * kS);
    CHECK(source.backward_jumps() == 1);
    const auto jump = source.last_backward_jump();
    REQUIRE(jump.has_value());
    CHECK(ns(jump->from) == 12 * kS);
    CHECK(ns(jump->to) == 1 * kS);
    CHECK(ns(jump->held) == 12 * kS);
    for (int s = 2; s <= 12; ++s) {
        CAPTURE(s);
        CHECK(source.offer(simsync::source_time(std::chrono::seconds(s))) ==
              (s < 12 ? Offer::held : Offer::unchanged));
        CHECK(ns(source.now()) == 12 * kS);
    }
    CHECK(source.backward_jumps() == 1);
    CHECK(source.offer(simsync::source_time(13s)) == Offer::advanced);
    CHECK(ns(source.now()) == 13 * kS);

    // A second jump, this time to a point still ahead of nothing held.
    CHECK(source.offer(simsync::source_time(12500ms)) == Offer::held);
    CHECK(source.backward_jumps() == 2);
    CHECK(ns(source.last_backward_jump()->from) == 13 * kS);

    // set() still refuses going back, and offer() after set() compares with the set time.
    source.set(simsync::source_time(20s));
    CHECK_THROWS_AS(source.set(simsync::source_time(19s)), simsync::Error);
    CHECK(source.offer(simsync::source_time(15s)) == Offer::held);
    CHECK(ns(source.now()) == 20 * kS);
}

TEST_CASE("TimeSource.External.JumpHandlerSeesHeldTimeAndMayOffer")
{
    simsync::ExternalTimeSource source;
    std::vector<simsync::TimeJump> seen;
    std::vector<std::int64_t> now_in_handler;
    source.on_backward_jump([&](const simsync::TimeJump& j) {
        seen.push_back(j);
        now_in_handler.push_back(ns(source.now()));
        source.offer(j.from); // re-entering the source from its handler must not deadlock
    });
    source.offer(simsync::source_time(5s));
    source.offer(simsync::source_time(3s));
    REQUIRE(seen.size() == 1);
    CHECK(seen[0] == simsync::TimeJump{simsync::source_time(5s), simsync::source_time(3s), simsync::source_time(5s)});
    CHECK(now_in_handler == std::vector<std::int64_t>{5 * kS});
    // The handler's own offer of 5 s came after 3 s: forward, not a jump.
    CHECK(source.backward_jumps() == 1);

    // A throwing handler does not escape offer(); removing it stops the calls.
    source.on_backward_jump([](const simsync::TimeJump&) { throw std::runtime_error("host failed"); });
    CHECK_NOTHROW(source.offer(simsync::source_time(1s)));
    CHECK(source.backward_jumps() == 2);
    source.on_backward_jump(nullptr);
    source.offer(simsync::source_time(7s));
    source.offer(simsync::source_time(6s));
    CHECK(source.backward_jumps() == 3);
    CHECK(seen.size() == 1);
}

TEST_CASE("TimeSource.RosTimeChecked.RefusesWhatRos2CannotHold")
{
    CHECK(simsync::to_ros_time_checked(SourceTime{}) == simsync::RosTime{0, 0});
    CHECK(simsync::to_ros_time_checked(SourceTime{SourceTime::duration{kEpochNs}}) ==
          simsync::RosTime{1'700'000'000, 123});
    CHECK(simsync::to_ros_time_checked(SourceTime{SourceTime::duration{2'147'483'647 * kS + 999'999'999}}) ==
          simsync::RosTime{2'147'483'647, 999'999'999});
    struct Bad {
        std::int64_t ns;
        const char* named;
    };
    for (const Bad& bad : {Bad{-1, "-0.000000001"}, Bad{-1'500'000'000, "-1.500000000"},
                           Bad{2'147'483'648 * kS, "2147483648.000000000"}}) {
        CAPTURE(bad.ns);
        try {
            simsync::to_ros_time_checked(SourceTime{SourceTime::duration{bad.ns}});
            FAIL("an out-of-range time was accepted");
        } catch (const simsync::Error& e) {
            CHECK(e.code() == simsync::errc::invalid_argument);
            const std::string what = e.what();
            CHECK(what.find(bad.named) != std::string::npos);
            CHECK(what.find("2147483647.999999999") != std::string::npos);
        }
    }
}

TEST_CASE("TimeSource.Factory.NamesAndErrors")
{
    Fixture f;
    simsync::TimeSourceFactory factory;
    CHECK(factory.names() == std::vector<std::string>{"external", "ros", "sim", "simulation", "system"});

    SUBCASE("unknown name lists the known ones")
    {
        try {
            (void)factory.make("unity", f.context);
            FAIL("unknown name accepted");
        } catch (const simsync::Error& e) {
            CHECK(e.code() == simsync::errc::invalid_argument);
            const std::string what = e.what();
            CHECK(what.find("'unity'") != std::string::npos);
            CHECK(what.find("external, ros, sim, simulation, system") != std::string::npos);
        }
    }
    SUBCASE("missing context")
    {
        CHECK_THROWS_WITH_AS((void)factory.make("sim", {}), doctest::Contains("handler"), simsync::Error);
        CHECK_THROWS_WITH_AS((void)factory.make("simulation", {}), doctest::Contains("time_scale"), simsync::Error);
        CHECK_THROWS_WITH_AS((void)factory.make("system", {}), doctest::Contains("time_scale"), simsync::Error);
        CHECK(factory.make("ros", {}) != nullptr); // the real wall clock
    }
    SUBCASE("user-defined source by name")
    {
        factory.add("scripted", [](const simsync::TimeSourceContext&) {
            return std::make_unique<ScriptedSource>(std::vector<std::int64_t>{42});
        });
        CHECK(factory.contains("scripted"));
        CHECK(ns(factory.make("scripted", f.context)->now()) == 42);
        CHECK_THROWS_AS(factory.add("scripted", [](const simsync::TimeSourceContext&) { return nullptr; }),
                        simsync::Error);
        CHECK_THROWS_AS(factory.add("sim", [](const simsync::TimeSourceContext&) { return nullptr; }),
                        simsync::Error);
        CHECK_THROWS_AS(factory.add("", [](const simsync::TimeSourceContext&) { return nullptr; }),
                        simsync::Error);
        CHECK_THROWS_AS(factory.add("empty", {}), simsync::Error);
        factory.add("null", [](const simsync::TimeSourceContext&) { return std::unique_ptr<simsync::TimeSource>(); });
        CHECK_THROWS_WITH_AS((void)factory.make("null", f.context), doctest::Contains("returned null"),
                             simsync::Error);
        // A default factory does not know what this one learned.
        CHECK_THROWS_AS((void)simsync::make_time_source("scripted", f.context), simsync::Error);
    }
}

TEST_CASE("TimeSource.Docs.TheTableHasARowPerSource")
{
    // docs/config.md's "Time sources" table (AWSIM's columns) names every source
    // the factory knows, once each, with a value in every column: a source added
    // or renamed without its row fails here.
    std::ifstream in(SIMSYNC_DOCS_DIR "/config.md");
    REQUIRE(in);
    std::vector<std::string> rows;
    bool in_section = false;
    bool header_seen = false;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("## ", 0) == 0) in_section = line == "## Time sources";
        if (!in_section || line.rfind("|", 0) != 0) continue;
        std::vector<std::string> cells;
        std::istringstream cut(line.substr(1));
        for (std::string cell; std::getline(cut, cell, '|');) cells.push_back(cell);
        CAPTURE(line);
        REQUIRE(cells.size() == 5);
        if (!header_seen) {
            header_seen = true;
            CHECK(cells[0].find("`time.source`") != std::string::npos);
            CHECK(cells[1].find("driven by") != std::string::npos);
            CHECK(cells[2].find("start value") != std::string::npos);
            CHECK(cells[3].find("time.scale") != std::string::npos);
            CHECK(cells[4].find("while paused") != std::string::npos);
            continue;
        }
        if (cells[0].find("---") != std::string::npos) continue;
        for (const std::string& cell : cells) CHECK(cell.find_first_not_of(' ') != std::string::npos);
        const auto open = cells[0].find('`');
        const auto close = cells[0].find('`', open + 1);
        REQUIRE(close != std::string::npos);
        rows.push_back(cells[0].substr(open + 1, close - open - 1));
    }
    CHECK(header_seen);
    std::sort(rows.begin(), rows.end());
    CHECK(rows == simsync::TimeSourceFactory().names());
}

TEST_CASE("TimeSource.RosSplit.Floor")
{
    struct Row {
        std::int64_t ns;
        simsync::RosTime expected;
    };
    const Row rows[] = {
        {0, {0, 0}},
        {1, {0, 1}},
        {1'500'000'000, {1, 500'000'000}},
        {-1, {-1, 999'999'999}},
        {-1'500'000'000, {-2, 500'000'000}},
        {-2'000'000'000, {-2, 0}},
        {kEpochNs, {1'700'000'000, 123}},
        {2'147'483'647 * kS + 999'999'999, {2'147'483'647, 999'999'999}},
        {2'147'483'648 * kS, {2'147'483'647, 999'999'999}}, // saturates
        {-2'147'483'649 * kS, {-2'147'483'647 - 1, 0}},      // saturates
    };
    for (const Row& row : rows) {
        CAPTURE(row.ns);
        const simsync::RosTime got = simsync::to_ros_time(SourceTime{SourceTime::duration{row.ns}});
        CHECK(got.sec == row.expected.sec);
        CHECK(got.nanosec == row.expected.nanosec);
        if (row.ns > -2'147'483'649 * kS && row.ns < 2'147'483'648 * kS) {
            CHECK(ns(simsync::from_ros_time(got)) == row.ns);
        }
    }
}

namespace {

// Readers check the guarantee across threads: a reading is never below any
// reading that some thread finished before this one started.
void run_concurrent_readers(simsync::TimeSource& source, int readers, const std::function<void(int)>& change,
                            int changes)
{
    std::atomic<std::int64_t> finished_max{std::numeric_limits<std::int64_t>::min()};
    std::atomic<bool> done{false};
    std::atomic<std::int64_t> violations{0};
    std::atomic<std::int64_t> reads{0};
    std::vector<std::thread> threads;
    for (int r = 0; r < readers; ++r) {
        threads.emplace_back([&] {
            std::int64_t local = 0;
            std::int64_t own_last = std::numeric_limits<std::int64_t>::min();
            while (!done.load(std::memory_order_acquire) || local < 1000) {
                const std::int64_t before = finished_max.load(std::memory_order_acquire);
                const std::int64_t v = ns(source.now());
                if (v < before || v < own_last) violations.fetch_add(1);
                own_last = v;
                std::int64_t m = finished_max.load(std::memory_order_relaxed);
                while (v > m && !finished_max.compare_exchange_weak(m, v, std::memory_order_acq_rel)) {
                }
                ++local;
            }
            reads.fetch_add(local);
        });
    }
    for (int i = 0; i < changes; ++i) change(i);
    done.store(true, std::memory_order_release);
    for (auto& t : threads) t.join();
    CHECK(violations.load() == 0);
    CHECK(reads.load() >= 1000 * readers);
}

} // namespace

TEST_CASE("TimeSource.ConcurrentReaders.ScaleChanges" * doctest::timeout(30))
{
    const double scales[] = {0.5, 2.0, 0.001, 1.0};
    for (int readers : {1, 2, 4}) {
        CAPTURE(readers);
        for (const char* name : {"simulation", "system", "ros"}) {
            CAPTURE(name);
            for (const bool manual : {true, false}) {
                CAPTURE(manual);
                if (manual) {
                    Fixture f;
                    auto source = simsync::make_time_source(name, f.context);
                    run_concurrent_readers(*source, readers, [&](int i) {
                        f.clock.advance(1ms);
                        f.scale.set(scales[i % 4]);
                    }, 2000);
                } else {
                    simsync::TimeScale scale(1.0); // the real wall clock: the lock-free path
                    simsync::TimeSourceContext context{nullptr, &scale, nullptr};
                    auto source = simsync::make_time_source(name, context);
                    run_concurrent_readers(*source, readers, [&](int i) { scale.set(scales[i % 4]); }, 2000);
                }
            }
        }
    }
}

TEST_CASE("TimeSource.ConcurrentReaders.ExternalOffersWithJumps" * doctest::timeout(30))
{
    for (int readers : {1, 2}) {
        CAPTURE(readers);
        simsync::ExternalTimeSource source;
        std::atomic<std::uint64_t> handled{0};
        source.on_backward_jump([&](const simsync::TimeJump&) { handled.fetch_add(1); });
        // A feed that resets every 1000 readings, and a second feed racing it.
        std::atomic<bool> stop{false};
        std::thread racer([&] {
            std::int64_t t = 0;
            while (!stop.load()) source.offer(SourceTime{SourceTime::duration{t++ % 7000}});
        });
        run_concurrent_readers(source, readers, [&](int i) {
            source.offer(SourceTime{SourceTime::duration{std::int64_t{i % 1000} * 10}});
        }, 20000);
        stop.store(true);
        racer.join();
        CHECK(handled.load() == source.backward_jumps());
        CHECK(source.backward_jumps() >= 1); // the main feed alone resets 19 times
    }
}

TEST_CASE("TimeSource.ConcurrentReaders.ExternalSetters" * doctest::timeout(30))
{
    for (int readers : {1, 2, 4}) {
        CAPTURE(readers);
        simsync::ExternalTimeSource source;
        std::atomic<std::int64_t> refused{0};
        // A second setter races the main one with stale values: some are refused,
        // none goes through backwards.
        std::atomic<bool> stop{false};
        std::thread racer([&] {
            std::int64_t t = 0;
            while (!stop.load()) {
                try {
                    source.set(SourceTime{SourceTime::duration{t}});
                } catch (const simsync::Error&) {
                    refused.fetch_add(1);
                }
                t += 3;
            }
        });
        run_concurrent_readers(source, readers, [&](int i) {
            try {
                source.set(SourceTime{SourceTime::duration{std::int64_t{i} * 5}});
            } catch (const simsync::Error&) {
                refused.fetch_add(1);
            }
        }, 20000);
        stop.store(true);
        racer.join();
    }
}

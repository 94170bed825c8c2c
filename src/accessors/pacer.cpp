#include <simsync/config.hpp>
#include <simsync/error.hpp>
#include <simsync/asio.hpp>
#include <simsync/pacer.hpp>

#include <boost/asio/bind_executor.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SIMSYNC_PACER_RELAX() _mm_pause()
#else
#define SIMSYNC_PACER_RELAX() std::this_thread::yield()
#endif

namespace simsync {

namespace {

__extension__ typedef __int128 Int128; // exact products of nanoseconds and ppb

constexpr std::int64_t kBillion = 1'000'000'000;

std::int64_t to_ppb(double scale)
{
    if (!std::isfinite(scale) || scale < TimeScale::kMin || scale > TimeScale::kMax) {
        throw Error(errc::invalid_argument,
                    "PacingInput.scale must be a finite value in [1e-06, 1e+06], got " + std::to_string(scale));
    }
    return std::llround(scale * 1e9);
}

std::int64_t clamp_to_int64(Int128 v) noexcept
{
    // Keeps WallTime arithmetic away from overflow for absurd inputs (a 292-year
    // simulated span at scale 1e-6); far beyond anything a run reaches.
    constexpr Int128 kLimit = std::numeric_limits<std::int64_t>::max() / 4;
    return static_cast<std::int64_t>(std::clamp<Int128>(v, -kLimit, kLimit));
}

std::string ns_text(WallClock::duration d)
{
    return std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()) + " ns";
}

} // namespace

const char* to_string(CatchUp policy) noexcept
{
    switch (policy) {
    case CatchUp::none: return "none";
    case CatchUp::bounded: return "bounded";
    case CatchUp::full: return "full";
    }
    return "?";
}

CatchUp parse_catch_up(const std::string& name)
{
    if (name == "none") return CatchUp::none;
    if (name == "bounded") return CatchUp::bounded;
    if (name == "full") return CatchUp::full;
    throw Error(errc::invalid_argument, "catch-up policy must be 'none', 'bounded' or 'full', got '" + name + "'");
}

PacerConfig pacer_config(const PacerSectionConfig& section)
{
    PacerConfig config;
    config.period = section.period;
    config.catch_up = section.catch_up;
    config.max_catch_up = section.catch_up_limit;
    config.spin_tail = section.spin_tail;
    return config;
}

const char* to_string(PacingEvent event) noexcept
{
    switch (event) {
    case PacingEvent::none: return "none";
    case PacingEvent::anchored: return "anchored";
    case PacingEvent::paused: return "paused";
    case PacingEvent::rescaled: return "rescaled";
    case PacingEvent::dropped: return "dropped";
    }
    return "?";
}

// ------------------------------------------------------------- PacingSchedule

PacingSchedule::PacingSchedule(CatchUp policy, WallClock::duration max_catch_up)
    : policy_(policy), max_catch_up_(max_catch_up)
{
    if (max_catch_up < WallClock::duration::zero()) {
        throw Error(errc::invalid_argument, "PacerConfig.max_catch_up must be >= 0, got " + ns_text(max_catch_up));
    }
}

WallTime PacingSchedule::deadline(SimTime t) const
{
    if (!anchored_) throw Error(errc::invalid_state, "PacingSchedule::deadline called without an anchor");
    const Int128 num = static_cast<Int128>((t - anchor_sim_).count()) * kBillion;
    Int128 wall_ns = num / ppb_;
    if (num > 0 && num % ppb_ != 0) ++wall_ns; // round up: never release early
    return anchor_wall_ + WallClock::duration{clamp_to_int64(wall_ns)};
}

void PacingSchedule::anchor(SimTime sim, WallTime wall) noexcept
{
    anchored_ = true;
    anchor_sim_ = sim;
    anchor_wall_ = wall;
}

void PacingSchedule::observe(const PacingInput& in) noexcept
{
    observed_ = true;
    run_generation_ = in.run_generation;
    scale_generation_ = in.scale_generation;
}

// Continues the schedule from where the old scale had brought it at `now`, so the
// motion is continuous; never beyond the instant held (that would be a jump).
void PacingSchedule::rescale(std::int64_t ppb, WallTime now, SimTime held) noexcept
{
    if (anchored_) {
        const std::int64_t since = std::max<std::int64_t>(0, (now - anchor_wall_).count());
        const SimTime reached =
            anchor_sim_ + SimDuration{clamp_to_int64(static_cast<Int128>(since) * ppb_ / kBillion)};
        anchor(std::min(reached, held), now);
    } else {
        anchor(held, now);
    }
    ppb_ = ppb;
}

PacingDecision PacingSchedule::on_grant(const PacingInput& in)
{
    const std::int64_t ppb = to_ppb(in.scale);
    const bool run_changed = observed_ && in.run_generation != run_generation_;
    const bool scale_changed = observed_ && in.scale_generation != scale_generation_;
    observe(in);

    PacingDecision d;
    d.deadline = in.now;
    if (!in.running) {
        unanchor();
        ppb_ = ppb;
        d.event = PacingEvent::paused;
        return d;
    }
    if (!anchored_ || run_changed) {
        ppb_ = ppb;
        anchor(in.granted, in.now);
        d.event = PacingEvent::anchored;
        return d;
    }
    if (scale_changed) {
        rescale(ppb, in.now, in.granted);
        d.event = PacingEvent::rescaled;
    }
    d.deadline = deadline(in.granted);
    if (in.now <= d.deadline) {
        d.sleep = true;
        return d;
    }
    d.lateness = in.now - d.deadline;
    switch (policy_) {
    case CatchUp::none:
        d.dropped = d.lateness;
        anchor(in.granted, in.now);
        break;
    case CatchUp::bounded:
        if (d.lateness > max_catch_up_) {
            d.dropped = d.lateness - max_catch_up_;
            anchor(in.granted, in.now - max_catch_up_);
        }
        break;
    case CatchUp::full: break;
    }
    if (d.dropped > WallClock::duration::zero()) d.event = PacingEvent::dropped;
    return d;
}

PacingDecision PacingSchedule::on_wake(const PacingInput& in)
{
    const std::int64_t ppb = to_ppb(in.scale);
    const bool scale_changed = observed_ && in.scale_generation != scale_generation_;
    // A resume or run_until seen while waiting keeps the deadline: time was held
    // at `granted` all along, so nothing can have jumped.
    observe(in);

    PacingDecision d;
    d.deadline = in.now;
    if (!in.running) {
        unanchor();
        d.event = PacingEvent::paused;
        return d;
    }
    if (!anchored_) {
        ppb_ = ppb;
        anchor(in.granted, in.now);
        d.event = PacingEvent::anchored;
        return d;
    }
    if (scale_changed) {
        rescale(ppb, in.now, in.granted);
        d.event = PacingEvent::rescaled;
    }
    d.deadline = deadline(in.granted);
    d.sleep = in.now < d.deadline;
    return d;
}

// ---------------------------------------------------------- LatenessHistogram

std::size_t LatenessHistogram::index_of(std::uint64_t ns) noexcept
{
    if (ns < kSubBuckets) return static_cast<std::size_t>(ns);
    const int exponent = static_cast<int>(std::bit_width(ns)) - 1; // >= 4
    const std::uint64_t sub = (ns >> (exponent - 4)) - kSubBuckets;
    return kSubBuckets + static_cast<std::size_t>(exponent - 4) * kSubBuckets + static_cast<std::size_t>(sub);
}

std::uint64_t LatenessHistogram::top_of(std::size_t index) noexcept
{
    if (index < kSubBuckets) return index;
    const std::size_t k = index - kSubBuckets;
    const unsigned shift = static_cast<unsigned>(k / kSubBuckets);
    const std::uint64_t lower = (kSubBuckets + k % kSubBuckets) << shift;
    return lower + ((std::uint64_t{1} << shift) - 1);
}

namespace {
// 1, 2, 5 us ... 5 s, 10 s; the last display bucket is the overflow.
WallClock::duration display_upper(std::size_t i) noexcept
{
    constexpr std::int64_t kMantissa[3] = {1, 2, 5};
    std::int64_t decade = 1000; // 1 us in ns
    for (std::size_t k = 0; k < i / 3; ++k) decade *= 10;
    return WallClock::duration{kMantissa[i % 3] * decade};
}
} // namespace

void LatenessHistogram::record(WallClock::duration lateness) noexcept
{
    const std::int64_t ns = std::max<std::int64_t>(0, lateness.count());
    ++buckets_[index_of(static_cast<std::uint64_t>(ns))];
    std::size_t display = 0;
    while (display + 1 < kDisplayBuckets && WallClock::duration{ns} >= display_upper(display)) ++display;
    ++display_[display];
    ++count_;
    max_ns_ = std::max(max_ns_, ns);
    sum_ns_ += static_cast<long double>(ns);
}

WallClock::duration LatenessHistogram::mean() const noexcept
{
    if (count_ == 0) return {};
    return WallClock::duration{static_cast<std::int64_t>(sum_ns_ / static_cast<long double>(count_))};
}

WallClock::duration LatenessHistogram::percentile(double p) const noexcept
{
    if (count_ == 0) return {};
    p = std::clamp(std::isnan(p) ? 0.0 : p, 0.0, 1.0);
    const auto rank = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(p * static_cast<double>(count_))));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
        seen += buckets_[i];
        if (seen >= rank) {
            return WallClock::duration{std::min<std::int64_t>(max_ns_, static_cast<std::int64_t>(top_of(i)))};
        }
    }
    return max();
}

LatenessSummary LatenessHistogram::summary() const
{
    LatenessSummary s;
    s.count = count_;
    s.p50 = percentile(0.50);
    s.p99 = percentile(0.99);
    s.max = max();
    s.mean = mean();
    s.histogram.reserve(kDisplayBuckets);
    for (std::size_t i = 0; i < kDisplayBuckets; ++i) {
        s.histogram.push_back({i + 1 < kDisplayBuckets ? display_upper(i) : WallClock::duration::max(), display_[i]});
    }
    return s;
}

void LatenessHistogram::clear() noexcept { *this = LatenessHistogram{}; }

// -------------------------------------------------------- RealTimeFactorWindow

RealTimeFactorWindow::RealTimeFactorWindow(WallClock::duration window, std::size_t max_samples)
    : window_(window), max_samples_(max_samples)
{
    if (window <= WallClock::duration::zero()) {
        throw Error(errc::invalid_argument, "PacerConfig.rate_window must be > 0, got " + ns_text(window));
    }
    if (max_samples < 2) {
        throw Error(errc::invalid_argument,
                    "RealTimeFactorWindow max_samples must be >= 2, got " + std::to_string(max_samples));
    }
}

void RealTimeFactorWindow::add(WallTime wall, SimTime sim)
{
    if (!samples_.empty() && wall < samples_.back().wall) {
        throw Error(errc::invalid_argument, "RealTimeFactorWindow::add: wall time went back by " +
                                                ns_text(samples_.back().wall - wall));
    }
    samples_.push_back({wall, sim});
    while (samples_.front().wall < wall - window_) samples_.pop_front();
    while (samples_.size() > max_samples_) samples_.pop_front();
}

std::optional<double> RealTimeFactorWindow::factor(WallTime now) const noexcept
{
    const WallTime from = now - window_;
    auto base = std::find_if(samples_.begin(), samples_.end(), [&](const Sample& s) { return s.wall >= from; });
    if (base == samples_.end()) return std::nullopt;
    const Sample& head = samples_.back();
    if (head.wall <= base->wall) return std::nullopt;
    return static_cast<double>((head.sim - base->sim).count()) / static_cast<double>((head.wall - base->wall).count());
}

// -------------------------------------------------------------- RealTimePacer

namespace {

PacerConfig validated(PacerConfig config)
{
    if (config.name.empty()) throw Error(errc::invalid_argument, "PacerConfig.name must not be empty");
    if (config.period <= SimDuration::zero()) {
        throw Error(errc::invalid_argument, "PacerConfig.period must be > 0, got " + ns_text(config.period));
    }
    if (config.max_catch_up < WallClock::duration::zero()) {
        throw Error(errc::invalid_argument, "PacerConfig.max_catch_up must be >= 0, got " + ns_text(config.max_catch_up));
    }
    if (config.spin_tail < WallClock::duration::zero()) {
        throw Error(errc::invalid_argument, "PacerConfig.spin_tail must be >= 0, got " + ns_text(config.spin_tail));
    }
    if (config.rate_window <= WallClock::duration::zero()) {
        throw Error(errc::invalid_argument, "PacerConfig.rate_window must be > 0, got " + ns_text(config.rate_window));
    }
    return config;
}

} // namespace

// Everything the pacer does runs on its event loop's thread: grants arrive
// there (the request's completion is bound to the loop), deadlines are
// WallTimers of the loop, and handler and scale events are posted there. So the
// pacing state needs no lock; only the statistics, read from any thread, have
// one. Jobs hold the Impl by shared_ptr: one still queued when the pacer is
// destroyed finds it stopped and does nothing.
struct RealTimePacer::Impl : std::enable_shared_from_this<RealTimePacer::Impl> {
    Impl(SimSyncHandler& h, const TimeScale& s, PacerConfig c, Executor ex)
        : handler(h),
          scale(s),
          clock(s.clock()),
          real_clock(dynamic_cast<RealWallClock*>(&s.clock()) != nullptr),
          config(validated(std::move(c))),
          schedule(config.catch_up, config.max_catch_up),
          window(config.rate_window)
    {
        if (!ex) {
            // A pacer on a manual clock keeps the old meaning of an injected
            // clock: its waits jump (see EventLoop::ManualTime).
            own_loop.emplace(clock, EventLoop::ManualTime::jumps_to_deadlines);
            ex = own_loop->executor();
        }
        executor = ex;
        timer.emplace(executor);
    }

    void request();
    void on_grant(std::error_code error, Access access);
    void decide_while_waiting();
    void release_held(bool reached);
    void end(std::error_code error);
    void fail(std::exception_ptr failure);
    PacingInput input(SimTime granted) const;
    WallClock::duration tail() const noexcept;

    SimSyncHandler& handler;
    const TimeScale& scale;
    WallClockSource& clock;
    const bool real_clock;
    const PacerConfig config;
    std::optional<EventLoop> own_loop; // only when given no executor
    Executor executor;
    std::optional<WallTimer> timer;
    Accessor accessor;
    Subscription handler_events;
    ScaleSubscription scale_events;
    WallTime started{};

    // Loop thread only.
    PacingSchedule schedule;
    SimTime next{};          // the instant the pacer asks for next
    Access held;             // the grant waiting for its deadline
    PacingDecision decision; // the decision `held` waits on
    WallTime wait_start{};
    bool ended = false;

    std::atomic<bool> running{true};
    std::mutex stop_mutex; // serialises stop() callers

    mutable std::mutex stats_mutex;
    PacerStats counters; // lateness / achieved_factor / target / elapsed filled on read
    LatenessHistogram lateness;
    RealTimeFactorWindow window;
    std::exception_ptr failure;
};

PacingInput RealTimePacer::Impl::input(SimTime granted) const
{
    PacingInput in;
    in.granted = granted;
    in.run_generation = handler.run_generation();
    in.running = handler.state() == HandlerState::running;
    // Generation before value: a change between the two reads is then seen as a
    // change next time, never missed.
    in.scale_generation = scale.generation();
    in.scale = scale.value();
    in.now = clock.steady_now();
    return in;
}

WallClock::duration RealTimePacer::Impl::tail() const noexcept
{
    // Spinning only makes sense with a core to spare and a clock that moves by
    // itself.
    static const bool spare_cpu = std::thread::hardware_concurrency() > 1;
    return real_clock && spare_cpu ? config.spin_tail : WallClock::duration::zero();
}

void RealTimePacer::Impl::request()
{
    accessor.async_request_access(
        next, boost::asio::bind_executor(asio_executor(executor),
                                         [self = shared_from_this()](std::error_code error, Access access) {
                                             self->on_grant(error, std::move(access));
                                         }));
}

void RealTimePacer::Impl::end(std::error_code error)
{
    if (ended) return;
    ended = true;
    timer->cancel();
    held = Access{};
    if (error && error != errc::stopped) {
        Diagnostic d;
        d.kind = Diagnostic::Kind::accessor_ended;
        d.at = handler.now();
        d.accessor = accessor.name();
        d.reason = error;
        d.message = "simsync: pacer '" + d.accessor + "' ended at " + format_seconds(d.at) +
                    " s: its request was refused (" + error.message() + "); time runs unpaced";
        handler.report(d);
    }
    accessor.deregister(); // time runs free again
    running.store(false, std::memory_order_release);
}

void RealTimePacer::Impl::fail(std::exception_ptr what)
{
    {
        std::lock_guard<std::mutex> guard(stats_mutex);
        failure = std::move(what);
    }
    end({});
}

void RealTimePacer::Impl::on_grant(std::error_code error, Access access)
{
    if (ended) return; // stopped meanwhile: `access` releases on the way out
    if (error || !access) {
        // stopped, world_failed, or not_registered (revoked). time_passed
        // cannot happen: we hold time at every instant we ask for next.
        end(error ? error : access.error());
        return;
    }
    try {
        const SimTime t = access.granted_time();
        const PacingDecision d = schedule.on_grant(input(t));
        {
            std::lock_guard<std::mutex> guard(stats_mutex);
            ++counters.grants;
            if (d.event == PacingEvent::anchored || d.event == PacingEvent::paused) ++counters.unpaced;
            if (d.event == PacingEvent::anchored || d.event == PacingEvent::rescaled ||
                d.event == PacingEvent::dropped) {
                ++counters.reanchors;
            }
            counters.dropped += d.dropped;
            if (d.lateness > WallClock::duration::zero()) {
                ++counters.late;
                lateness.record(d.lateness);
            }
        }
        held = std::move(access);
        decision = d;
        if (!d.sleep) {
            release_held(false);
            return;
        }
        wait_start = clock.steady_now();
        decide_while_waiting();
    } catch (...) {
        fail(std::current_exception());
    }
}

// Arms the timer for the held grant's deadline, or releases it when the
// deadline has come, the handler stopped running or the scale changed so
// that it is due. Called at the grant, when the timer fires and on every
// handler or scale event while a grant is held.
void RealTimePacer::Impl::decide_while_waiting()
{
    if (ended || !held) return;
    const SimTime t = held.granted_time();
    const PacingDecision again = schedule.on_wake(input(t));
    if (again.event == PacingEvent::paused) {
        release_held(false); // cut short by a pause or stop of the handler
        return;
    }
    if (again.event == PacingEvent::rescaled) {
        std::lock_guard<std::mutex> guard(stats_mutex);
        ++counters.reanchors;
    }
    const WallTime deadline = again.deadline;
    const WallTime now = clock.steady_now();
    if (now >= deadline) {
        release_held(true);
        return;
    }
    const WallTime sleep_end = deadline - tail();
    if (now >= sleep_end) {
        // Spin tail: a timer wakes tens of microseconds late; reading the clock
        // in a loop does not, at the price of a busy core (and a busy loop
        // thread) for the tail.
        while (clock.steady_now() < deadline) SIMSYNC_PACER_RELAX();
        {
            std::lock_guard<std::mutex> guard(stats_mutex);
            counters.spun += clock.steady_now() - now;
        }
        release_held(true);
        return;
    }
    timer->wait_until(sleep_end, [self = shared_from_this()] { self->decide_while_waiting(); });
}

void RealTimePacer::Impl::release_held(bool reached)
{
    timer->cancel();
    const SimTime t = held.granted_time();
    const WallTime released = clock.steady_now();
    std::optional<WallClock::duration> overshoot;
    // The deadline may have moved while waiting (scale change): measure against
    // the schedule as it is now.
    if (reached) overshoot = released - schedule.deadline(t);
    next = t + config.period;
    {
        // Recorded before releasing, so that whoever sees the release (a
        // wait_until_paused, say) also sees the statistics of this grant.
        std::lock_guard<std::mutex> guard(stats_mutex);
        if (decision.sleep) counters.waited += released - wait_start;
        if (overshoot) {
            ++counters.on_time;
            lateness.record(*overshoot);
        } else if (decision.sleep) {
            ++counters.unpaced;
        }
        window.add(released, t);
        counters.last_release = t;
    }
    Access access = std::move(held);
    access.release(next);
    request();
}

RealTimePacer::RealTimePacer(SimSyncHandler& handler, const TimeScale& scale, PacerConfig config, Executor executor)
    : impl_(std::make_shared<Impl>(handler, scale, std::move(config), std::move(executor)))
{
    Impl& impl = *impl_;
    impl.accessor = handler.register_accessor(
        impl.config.name, {.kind = AccessorKind::lockstep, .mode = impl.config.mode, .priority = impl.config.priority});
    // Registration holds time at the current time, which now() reads once it
    // returns (it waits for a step in flight): the instant we hold.
    impl.next = handler.now();
    impl.started = impl.clock.steady_now();
    std::weak_ptr<Impl> weak = impl_;
    // Events, not polling: a pause, stop or scale change re-decides a grant
    // waiting for its deadline at once. The callbacks only post.
    impl.handler_events = handler.subscribe([weak](const HandlerEvent&) {
        if (auto self = weak.lock()) {
            try {
                self->executor.post([self] { self->decide_while_waiting(); });
            } catch (const Error&) {
                // The loop is gone: the pacer is being torn down.
            }
        }
    });
    impl.scale_events = scale.subscribe([weak](double) {
        if (auto self = weak.lock()) {
            try {
                self->executor.post([self] { self->decide_while_waiting(); });
            } catch (const Error&) {
            }
        }
    });
#if defined(__linux__)
    // Per thread: the loop's timers get tighter (the slack rounds every wait
    // up by 50 us by default). Failure just keeps the default slack.
    if (impl.config.tight_timer_slack && impl.real_clock) {
        impl.executor.post([] { (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); });
    }
#endif
    impl.executor.post([self = impl_] { self->request(); });
}

RealTimePacer::~RealTimePacer()
{
    stop();
    // A private loop is joined with the Impl's last reference; a job of ours
    // may still hold one, so end the loop here, not on its own thread.
    impl_->handler_events.reset();
    impl_->scale_events.reset();
    if (impl_->own_loop) {
        impl_->timer.reset();
        impl_->own_loop.reset();
    }
}

void RealTimePacer::stop()
{
    Impl& impl = *impl_;
    std::lock_guard<std::mutex> guard(impl.stop_mutex);
    impl.handler_events.reset();
    impl.scale_events.reset();
    // On the loop, so that no grant or deadline of the pacer is being handled
    // while it ends; a request still pending completes with not_registered
    // and finds it ended.
    impl.executor.sync([&impl] { impl.end({}); });
}

bool RealTimePacer::running() const noexcept { return impl_->running.load(std::memory_order_acquire); }

const PacerConfig& RealTimePacer::config() const noexcept { return impl_->config; }

std::exception_ptr RealTimePacer::failure() const
{
    std::lock_guard<std::mutex> guard(impl_->stats_mutex);
    return impl_->failure;
}

PacerStats RealTimePacer::stats() const
{
    const Impl& impl = *impl_;
    const WallTime now = impl.clock.steady_now();
    std::lock_guard<std::mutex> guard(impl.stats_mutex);
    PacerStats s = impl.counters;
    s.lateness = impl.lateness.summary();
    s.achieved_factor = impl.window.factor(now);
    s.target_factor = impl.scale.value();
    s.elapsed = now - impl.started;
    return s;
}

} // namespace simsync

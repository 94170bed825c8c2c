#include <simsync/accessors/pacer.hpp>
#include <simsync/config/config.hpp>
#include <simsync/core/asio.hpp>
#include <simsync/core/error.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>

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

std::string ns_text(WallClock::duration d)
{
    return std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()) + " ns";
}

} // namespace

PacerConfig pacer_config(const PacerSectionConfig& section)
{
    PacerConfig config;
    config.period = section.period;
    config.catch_up = section.catch_up;
    config.max_catch_up = section.catch_up_limit;
    config.spin_tail = section.spin_tail;
    return config;
}

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
            // With no loop given, a pacer on a manual clock makes its own loop
            // whose waits jump to their deadlines (see EventLoop::ManualTime):
            // a test that injects a clock need not move it by hand.
            own_loop.emplace(clock, EventLoop::ManualTime::jumps_to_deadlines);
            ex = own_loop->executor();
        }
        executor = ex;
        timer.emplace(executor);
    }

    void request(Access previous = {});
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
    bool request_pending = false;             // between request() and on_grant()
    boost::asio::cancellation_signal cancel; // withdraws the pending request

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

// Asks for `next`, releasing `previous` (the grant just paced) in the same
// operation: one call under one lock from one grant to the next.
void RealTimePacer::Impl::request(Access previous)
{
    request_pending = true;
    accessor.async_release_and_request(
        std::move(previous), next,
        boost::asio::bind_cancellation_slot(
            cancel.slot(), boost::asio::bind_executor(asio_executor(executor),
                                                      [self = shared_from_this()](std::error_code error, Access access) {
                                                          self->on_grant(error, std::move(access));
                                                      })));
}

void RealTimePacer::Impl::end(std::error_code error)
{
    if (ended) return;
    ended = true;
    timer->cancel();
    held = Access{};
    // The one way to stop an accessor: withdraw its pending request through
    // its cancellation slot (the completion, `cancelled`, finds the pacer
    // ended). Request and emission both happen on the loop thread.
    if (request_pending) cancel.emit(boost::asio::cancellation_type::terminal);
    if (error && error != errc::stopped) {
        handler.report_accessor_ended("pacer", accessor.name(), error, "time runs unpaced");
    }
    // Nothing pending now; letting go of the accessor lifts the hold it keeps
    // on time at its last release, so time runs free again.
    accessor.deregister();
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
    request_pending = false;
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
    next = next_instant_after(t, saturating_add(t, config.period), handler.step_size(), handler.rounding());
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
    request(std::move(held));
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
    // while it ends; a request still pending is withdrawn (end() emits its
    // cancellation) and completes with `cancelled`, finding it ended.
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

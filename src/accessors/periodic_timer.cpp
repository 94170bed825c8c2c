#include "signal_state.hpp"

#include <simsync/error.hpp>
#include <simsync/handler.hpp>
#include <simsync/periodic_timer.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_timer.hpp>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace simsync {

using std::chrono::nanoseconds;

const char* to_string(TimerClock clock) noexcept
{
    switch (clock) {
    case TimerClock::real: return "real";
    case TimerClock::simulated: return "simulated";
    }
    return "?";
}

nanoseconds first_grid_instant(nanoseconds t, nanoseconds period, nanoseconds offset)
{
    if (period <= nanoseconds::zero()) {
        throw Error(errc::invalid_argument, "first_grid_instant: period " + format_seconds(period) + " s must be > 0");
    }
    if (offset < nanoseconds::zero()) {
        throw Error(errc::invalid_argument, "first_grid_instant: offset " + format_seconds(offset) + " s must be >= 0");
    }
    if (t <= offset) return offset;
    const auto since = (t - offset).count();
    const auto n = since / period.count() + (since % period.count() != 0 ? 1 : 0);
    return offset + n * period;
}

namespace {

SystemTime to_system_time(nanoseconds since_epoch)
{
    return SystemTime{std::chrono::duration_cast<SystemClock::duration>(since_epoch)};
}

nanoseconds since_epoch(SystemTime t)
{
    return std::chrono::duration_cast<nanoseconds>(t.time_since_epoch());
}

std::string describe(const PeriodicTimerConfig& config) { return "PeriodicTimer '" + config.name + "'"; }

} // namespace

struct PeriodicTimer::Impl : std::enable_shared_from_this<PeriodicTimer::Impl> {
    enum class Run { idle, running, finished };

    Impl(PeriodicTimerConfig c, TimerContext ctx) : config(std::move(c)), context(ctx)
    {
        clock = context.wall_clock ? context.wall_clock : &real_wall_clock();
        // Only the real clock is waited on with Asio: its wait is the one stop()
        // can cancel, and it waits on system_clock itself, so a stepped system
        // clock moves the deadline with it.
        use_asio = config.clock == TimerClock::real && dynamic_cast<RealWallClock*>(clock) != nullptr;
        if (context.signal) signal = detail::SignalAccess::state(*context.signal);
    }

    // ------------------------------------------------------------------ stop

    void request_stop()
    {
        {
            std::lock_guard<std::mutex> guard(mutex);
            stop_requested = true;
            if (requesting) {
                // The timer thread is (about to be) blocked in request_access, which
                // only a change of registration can wake. Revoking while the flag
                // is set under this mutex means the callback never runs on the
                // revoked access: the timer checks the flag after every grant.
                requesting = false;
                context.handler->revoke(config.name);
            }
        }
        cv.notify_all();
        if (use_asio) {
            // Posted, because an Asio timer must not be touched from two threads;
            // a cancel posted while no wait is pending cancels the next one, which
            // the timer does not start anyway once it sees the flag.
            boost::asio::post(io, [this] { asio_timer.cancel(); });
        }
    }

    bool stop_was_requested() const
    {
        std::lock_guard<std::mutex> guard(mutex);
        return stop_requested;
    }

    // A stop fired on the signal: the stop callback replaces stopping.
    void on_stop_signal()
    {
        if (config.on_stop_signal) {
            config.on_stop_signal();
        } else {
            request_stop();
        }
    }

    bool on_timer_thread() const
    {
        std::lock_guard<std::mutex> guard(mutex);
        return std::this_thread::get_id() == timer_thread;
    }

    // ------------------------------------------------------------------- run

    void claim(const TimerCallback& callback)
    {
        if (!callback) throw Error(errc::invalid_argument, describe(config) + ": start with an empty callback");
        std::lock_guard<std::mutex> guard(mutex);
        if (run_state != Run::idle) {
            throw Error(errc::invalid_state,
                        describe(config) + ": started twice (it is " +
                            (run_state == Run::running ? "already running" : "stopped") +
                            "); a PeriodicTimer runs once, make a new one to run again");
        }
        run_state = Run::running;
    }

    void run(const TimerCallback& callback)
    {
        {
            std::lock_guard<std::mutex> guard(mutex);
            timer_thread = std::this_thread::get_id();
        }
        std::shared_ptr<detail::SignalListener> listener;
        struct Finish {
            Impl& self;
            std::shared_ptr<detail::SignalListener>& listener;
            ~Finish()
            {
                if (listener) detail::unsubscribe(*self.signal, listener.get());
                std::lock_guard<std::mutex> guard(self.mutex);
                self.run_state = Run::finished;
                self.requesting = false;
                self.timer_thread = std::thread::id{};
            }
        } finish{*this, listener};

        if (signal) {
            listener = std::make_shared<detail::SignalListener>();
            std::weak_ptr<Impl> weak = weak_from_this();
            listener->on_start = [weak] {
                if (auto self = weak.lock()) {
                    {
                        std::lock_guard<std::mutex> guard(self->mutex);
                        self->start_seen = true;
                    }
                    self->cv.notify_all();
                }
            };
            listener->on_stop = [weak] {
                if (auto self = weak.lock()) self->on_stop_signal();
            };
            const detail::Subscription seen = detail::subscribe(*signal, listener);
            if (seen.started) {
                std::lock_guard<std::mutex> guard(mutex);
                start_seen = true;
            }
            // A stop fired before this timer started still counts: without a stop
            // callback the timer ends before its first call.
            if (seen.stops > 0) on_stop_signal();
        }

        if (config.clock == TimerClock::real) {
            if (!wait_for_start()) return;
            run_real(callback);
        } else {
            run_simulated(callback);
        }
    }

    // False if stopped before the start.
    bool wait_for_start()
    {
        std::unique_lock<std::mutex> lock(mutex);
        if (config.wait_for_start) {
            cv.wait(lock, [this] { return start_seen || stop_requested; });
        }
        return !stop_requested;
    }

    // Counts a call about to begin; false if the timer was stopped first.
    bool begin_call()
    {
        std::lock_guard<std::mutex> guard(mutex);
        if (stop_requested) return false;
        ++calls;
        return true;
    }

    void run_real(const TimerCallback& callback)
    {
        const nanoseconds period = config.period;
        const nanoseconds offset = config.offset;
        nanoseconds next = first_grid_instant(since_epoch(clock->system_now()), period, offset);
        std::uint64_t skipped_now = 0;
        for (;;) {
            if (!wait_real(to_system_time(next))) return;
            if (!begin_call()) return;
            TimerTick tick;
            tick.index = (next - offset) / period;
            tick.real_time = to_system_time(next);
            tick.skipped = skipped_now;
            callback(tick);
            // The next deadline stays on the grid (previous + whole periods), so an
            // overrun skips instants instead of shifting all later ones.
            const nanoseconds after = next + period;
            const nanoseconds following =
                std::max(after, first_grid_instant(since_epoch(clock->system_now()), period, offset));
            skipped_now = static_cast<std::uint64_t>((following - after) / period);
            {
                std::lock_guard<std::mutex> guard(mutex);
                skipped += skipped_now;
            }
            next = following;
        }
    }

    // Waits until the system clock reaches `deadline`; false if stopped first.
    bool wait_real(SystemTime deadline)
    {
        for (;;) {
            if (stop_was_requested()) return false;
            const SystemTime now = clock->system_now();
            if (now >= deadline) return true;
            if (use_asio) {
                asio_timer.expires_at(deadline);
                asio_timer.async_wait([](const boost::system::error_code&) {});
                io.restart();
                io.run(); // returns after the wait completed or was cancelled by a stop
            } else {
                // The injected source sleeps on its steady clock; the loop re-reads
                // the system clock in case that was stepped meanwhile.
                clock->sleep_until(clock->steady_now() +
                                   std::chrono::duration_cast<WallClock::duration>(deadline - now));
            }
        }
    }

    // A timer that ends on its own says so: to its owner (on_end) and to the
    // handler's diagnostics, so nobody has to poll error() to notice.
    void announce_end(SimSyncHandler& handler, std::error_code reason)
    {
        // A stopped simulation is the normal end of every timer on it: the owner
        // hears of it (on_end), the operator's diagnostics do not.
        if (reason == errc::stopped) {
            if (config.on_end) config.on_end(reason);
            return;
        }
        Diagnostic d;
        d.kind = Diagnostic::Kind::accessor_ended;
        d.at = handler.now();
        d.accessor = config.name;
        d.reason = reason;
        d.message = "simsync: timer '" + config.name + "' ended at " + format_seconds(d.at) +
                    " s: its request was refused (" + reason.message() + ")";
        handler.report(d);
        if (config.on_end) config.on_end(reason);
    }

    void run_simulated(const TimerCallback& callback)
    {
        SimSyncHandler& handler = *context.handler;
        AccessorOptions options;
        options.kind = AccessorKind::lockstep;
        options.priority = config.priority;
        // Registered without a first request: it holds time at the current time,
        // which is handler.now() once registration returns (it waits for a step
        // in flight), so the first instant computed from now() is never passed.
        // start_async registers on the starting thread instead, so time cannot
        // move between start_async returning and the timer's thread starting.
        Accessor accessor = preregistered ? std::move(*preregistered) : handler.register_accessor(config.name, options);
        preregistered.reset();
        if (!wait_for_start()) return;

        const nanoseconds period = config.period;
        const nanoseconds offset = config.offset;
        SimTime at{first_grid_instant(handler.now().time_since_epoch(), period, offset)};
        std::int64_t index = (at.time_since_epoch() - offset) / period;
        for (;;) {
            {
                std::lock_guard<std::mutex> guard(mutex);
                if (stop_requested) return;
                requesting = true;
            }
            Access access = accessor.request_access(at);
            {
                std::lock_guard<std::mutex> guard(mutex);
                requesting = false;
                if (stop_requested) return; // also covers an access revoked by stop()
                if (!access) error = access.error();
                else ++calls;
            }
            if (!access) {
                announce_end(handler, access.error());
                return;
            }
            TimerTick tick;
            tick.index = index;
            tick.sim_time = at;
            tick.access = &access;
            callback(tick);
            if (stop_was_requested()) return;
            at += period;
            ++index;
            access.release(at);
        }
    }

    PeriodicTimerConfig config;
    TimerContext context;
    WallClockSource* clock = nullptr;
    bool use_asio = false;
    std::shared_ptr<detail::SignalState> signal;

    mutable std::mutex mutex;
    std::condition_variable cv;
    Run run_state = Run::idle;
    bool stop_requested = false;
    bool start_seen = false;
    bool requesting = false; // simulated: in (or about to enter) request_access
    std::thread::id timer_thread;
    std::uint64_t calls = 0;
    std::uint64_t skipped = 0;
    std::error_code error;
    std::exception_ptr async_failure;

    // Guards `thread`: two threads calling stop() must not both join it.
    std::mutex join_mutex;
    std::thread thread;
    std::optional<Accessor> preregistered; // set by start_async before the thread exists

    boost::asio::io_context io;
    boost::asio::system_timer asio_timer{io};
};

PeriodicTimer::PeriodicTimer(PeriodicTimerConfig config, TimerContext context)
{
    const std::string who = describe(config);
    if (config.period <= nanoseconds::zero()) {
        throw Error(errc::invalid_argument, who + ": period " + format_seconds(config.period) + " s must be > 0");
    }
    if (config.offset < nanoseconds::zero()) {
        throw Error(errc::invalid_argument, who + ": offset " + format_seconds(config.offset) + " s must be >= 0");
    }
    if (config.clock == TimerClock::real && config.offset >= config.period) {
        throw Error(errc::invalid_argument,
                    who + ": offset " + format_seconds(config.offset) + " s must be smaller than the period " +
                        format_seconds(config.period) +
                        " s on the real clock (its grid is anchored at the UNIX epoch; use offset modulo period)");
    }
    if (config.clock == TimerClock::simulated && context.handler == nullptr) {
        throw Error(errc::invalid_argument, who + ": clock 'simulated' needs a handler (TimerContext::handler)");
    }
    if (config.wait_for_start && context.signal == nullptr) {
        throw Error(errc::invalid_argument, who + ": wait_for_start needs a signal (TimerContext::signal)");
    }
    impl_ = std::make_shared<Impl>(std::move(config), context);
}

PeriodicTimer::~PeriodicTimer()
{
    impl_->request_stop();
    if (impl_->on_timer_thread()) {
        // Destroyed from inside its own callback: joining would deadlock. The
        // thread owns a reference to the state and ends after the callback.
        std::lock_guard<std::mutex> guard(impl_->join_mutex);
        if (impl_->thread.joinable()) impl_->thread.detach();
        return;
    }
    std::lock_guard<std::mutex> guard(impl_->join_mutex);
    if (impl_->thread.joinable()) impl_->thread.join();
}

void PeriodicTimer::start(TimerCallback callback)
{
    impl_->claim(callback);
    impl_->run(callback);
}

void PeriodicTimer::start_async(TimerCallback callback)
{
    impl_->claim(callback);
    std::lock_guard<std::mutex> guard(impl_->join_mutex);
    try {
        if (impl_->config.clock == TimerClock::simulated) {
            AccessorOptions options;
            options.kind = AccessorKind::lockstep;
            options.priority = impl_->config.priority;
            impl_->preregistered.emplace(impl_->context.handler->register_accessor(impl_->config.name, options));
        }
        impl_->thread = std::thread([self = impl_, callback = std::move(callback)] {
            try {
                self->run(callback);
            } catch (...) {
                std::lock_guard<std::mutex> inner(self->mutex);
                self->async_failure = std::current_exception();
            }
        });
    } catch (...) {
        impl_->preregistered.reset();
        std::lock_guard<std::mutex> inner(impl_->mutex);
        impl_->run_state = Impl::Run::finished;
        throw;
    }
}

void PeriodicTimer::stop()
{
    impl_->request_stop();
    if (impl_->on_timer_thread()) return;
    {
        std::lock_guard<std::mutex> guard(impl_->join_mutex);
        if (impl_->thread.joinable()) impl_->thread.join();
    }
    std::exception_ptr failure;
    {
        std::lock_guard<std::mutex> guard(impl_->mutex);
        failure = std::exchange(impl_->async_failure, nullptr);
    }
    if (failure) std::rethrow_exception(failure);
}

bool PeriodicTimer::running() const
{
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return impl_->run_state == Impl::Run::running;
}

std::uint64_t PeriodicTimer::calls() const
{
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return impl_->calls;
}

std::uint64_t PeriodicTimer::skipped() const
{
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return impl_->skipped;
}

std::error_code PeriodicTimer::error() const
{
    std::lock_guard<std::mutex> guard(impl_->mutex);
    return impl_->error;
}

const PeriodicTimerConfig& PeriodicTimer::config() const noexcept { return impl_->config; }

} // namespace simsync

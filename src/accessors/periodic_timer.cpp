#include "signal_state.hpp"

#include <simsync/accessors/periodic_timer.hpp>
#include <simsync/core/asio.hpp>
#include <simsync/core/error.hpp>
#include <simsync/core/handler.hpp>
#include <simsync/core/schedule.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/execution/blocking.hpp>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <stop_token>
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
    // Checked here too so that the message names this function, as it always has.
    if (period <= nanoseconds::zero()) {
        throw Error(errc::invalid_argument, "first_grid_instant: period " + format_seconds(period) + " s must be > 0");
    }
    if (offset < nanoseconds::zero()) {
        throw Error(errc::invalid_argument, "first_grid_instant: offset " + format_seconds(offset) + " s must be >= 0");
    }
    const PeriodicSchedule grid = PeriodicSchedule::from_period(period, offset);
    return grid.at(grid.first_index_at_or_after(SimTime{t})).time_since_epoch();
}

namespace {

// A PeriodicSchedule counts from its own epoch; the real clock's grid is
// anchored at the UNIX epoch, so system time enters it as nanoseconds since then.
SimTime on_grid(SystemTime t) { return SimTime{std::chrono::duration_cast<nanoseconds>(t.time_since_epoch())}; }

SystemTime from_grid(SimTime t)
{
    return SystemTime{std::chrono::duration_cast<SystemClock::duration>(t.time_since_epoch())};
}

std::string describe(const PeriodicTimerConfig& config) { return "PeriodicTimer '" + config.name + "'"; }

} // namespace

// Who runs what:
//  - start(): the caller's thread runs the timer; the loop only reports a due
//    wall-clock deadline (on_due) through the condition variable.
//  - start_async(): every step of the run (begin, on_due, on_granted, finish)
//    runs as a job on the loop's thread; stop() from elsewhere hands its part
//    to the loop (on_stop_event) and waits for the run to end.
// Members under "the run" belong to the thread running the timer; the others
// are guarded by `mutex`.
struct PeriodicTimer::Impl : std::enable_shared_from_this<PeriodicTimer::Impl> {
    enum class Run { idle, running, finished };
    enum class Mode { none, blocking, async };

    Impl(PeriodicTimerConfig c, TimerContext ctx)
        : config(std::move(c)), context(ctx), grid(PeriodicSchedule::from_period(config.period, config.offset))
    {
        if (context.executor) {
            clock = &context.executor.clock();
        } else {
            clock = context.wall_clock ? context.wall_clock : &real_wall_clock();
            // Alone on its clock, a timer waits on a manual clock as its
            // sleep_until does: by moving it to the deadline.
            self_driven = dynamic_cast<ManualWallClock*>(clock);
        }
        if (context.signal) signal = detail::SignalAccess::state(*context.signal);
    }

    // ----------------------------------------------------------------- start

    void claim(const TimerCallback& cb, Mode how)
    {
        if (!cb) throw Error(errc::invalid_argument, describe(config) + ": start with an empty callback");
        const SystemTime now = clock->system_now();
        std::lock_guard<std::mutex> guard(mutex);
        if (run_state != Run::idle) {
            throw Error(errc::invalid_state,
                        describe(config) + ": started twice (it is " +
                            (run_state == Run::running ? "already running" : "stopped") +
                            "); a PeriodicTimer runs once, make a new one to run again");
        }
        run_state = Run::running;
        mode = how;
        if (!config.wait_for_start) start_time = now;
    }

    // The loop the timer waits on (its own if it was given none) and, for the
    // real clock, its WallTimer.
    void prepare_loop(bool with_timer)
    {
        Executor ex = context.executor;
        std::unique_ptr<EventLoop> own;
        if (!ex) {
            own = std::make_unique<EventLoop>(*clock);
            ex = own->executor();
        }
        std::unique_ptr<WallTimer> timer;
        if (with_timer) timer = std::make_unique<WallTimer>(ex);
        std::lock_guard<std::mutex> guard(mutex);
        executor = ex;
        private_loop = std::move(own);
        wall_timer = std::move(timer);
    }

    // Subscribes to the signal; true if a stop was fired before (the caller
    // handles it on the thread running the timer).
    bool subscribe_signal()
    {
        if (!signal) return false;
        auto l = std::make_shared<detail::SignalListener>();
        std::weak_ptr<Impl> weak = weak_from_this();
        l->on_start = [weak] {
            if (auto self = weak.lock()) self->on_start_signal();
        };
        l->on_stop = [weak] {
            if (auto self = weak.lock()) self->on_stop_signal();
        };
        {
            std::lock_guard<std::mutex> guard(mutex);
            listener = l;
        }
        const detail::Subscription seen = detail::subscribe(*signal, l);
        if (seen.started) on_start_signal();
        return seen.stops > 0;
    }

    void on_start_signal()
    {
        const SystemTime now = clock->system_now();
        bool begin_now = false;
        Executor ex;
        {
            std::lock_guard<std::mutex> guard(mutex);
            if (start_seen) return;
            start_seen = true;
            if (!config.wait_for_start) return;
            start_time = now;
            // Before `ready`, start_async posts the beginning itself.
            begin_now = mode == Mode::async && ready && run_state == Run::running && !stop_requested;
            if (begin_now) ex = executor;
        }
        cv.notify_all();
        if (begin_now) post_begin(ex);
    }

    // A stop fired on the signal: the stop callback replaces stopping.
    void on_stop_signal()
    {
        if (config.on_stop_signal) {
            config.on_stop_signal();
        } else {
            (void)request_stop();
        }
    }

    void post_begin(const Executor& ex)
    {
        try {
            ex.post([weak = weak_from_this()] {
                if (auto self = weak.lock()) self->begin();
            });
        } catch (const Error&) {
            // The loop is gone: the timer was torn down meanwhile.
        }
    }

    // start_async's part on the starting thread: a simulated timer registers
    // here (so time cannot pass its first instant before the loop gets to it),
    // then the loop takes over.
    void prepare_async(TimerCallback cb)
    {
        callback = std::move(cb);
        if (config.clock == TimerClock::simulated) {
            accessor.emplace(context.handler->register_accessor(config.name, accessor_options()));
        }
        prepare_loop(config.clock == TimerClock::real);
        const bool stop_fired = subscribe_signal();
        Executor ex;
        bool begin_now = false;
        bool stopped = false;
        {
            std::lock_guard<std::mutex> guard(mutex);
            ready = true;
            ex = executor;
            stopped = stop_requested;
            begin_now = !config.wait_for_start || start_seen;
        }
        // A stop() that came before `ready` left the end to us; nothing was posted.
        if (stopped) {
            finish();
            return;
        }
        std::weak_ptr<Impl> weak = weak_from_this();
        if (stop_fired) {
            ex.post([weak] {
                if (auto self = weak.lock()) self->on_stop_signal();
            });
        }
        if (begin_now) post_begin(ex);
    }

    // Loop thread (start_async): the first instant and the first wait or request.
    void begin()
    {
        SystemTime started;
        {
            std::lock_guard<std::mutex> guard(mutex);
            if (run_state != Run::running || stop_requested) return;
            started = start_time;
        }
        if (config.clock == TimerClock::real) {
            next = grid.first_index_at_or_after(on_grid(started));
            skipped_now = 0;
            tick_async(); // a start on the grid calls now, without a trip through the loop
        } else {
            sim_index = grid.first_index_at_or_after(context.handler->now());
            request_next();
        }
    }

    AccessorOptions accessor_options() const
    {
        AccessorOptions options;
        options.kind = AccessorKind::lockstep;
        options.priority = config.priority;
        return options;
    }

    // ------------------------------------------------------------------ stop

    // Stops the run from any thread; returns true if called from inside the
    // callback. After start_async and from outside the loop's thread, it waits
    // until the run has ended.
    bool request_stop()
    {
        Executor ex;
        bool inside = false;
        bool hand_to_loop = false;
        {
            std::lock_guard<std::mutex> guard(mutex);
            stop_requested = true;
            if (wall_timer) wall_timer->cancel();
            inside = callback_thread == std::this_thread::get_id();
            hand_to_loop = mode == Mode::async && ready && run_state == Run::running && !inside;
            if (hand_to_loop) ex = executor;
        }
        stop_source.request_stop(); // withdraws start()'s blocking request
        cv.notify_all();            // wakes start()'s caller, and its wait for the start signal
        if (!hand_to_loop || !ex) return inside;
        if (ex.running_in_this_thread()) {
            // Another job on a shared loop (or a signal fired there): the run
            // ends here, or once a withdrawn request completes.
            on_stop_event();
            return false;
        }
        ex.sync([this] { on_stop_event(); });
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait(lock, [this] { return run_state != Run::running; });
        return false;
    }

    // Loop thread: a pending request is withdrawn (its completion ends the
    // run); otherwise the run ends now.
    void on_stop_event()
    {
        {
            std::lock_guard<std::mutex> guard(mutex);
            if (run_state != Run::running || finishing) return;
        }
        if (request_pending) {
            cancel.emit(boost::asio::cancellation_type::terminal);
            return;
        }
        finish();
    }

    bool stop_was_requested() const
    {
        std::lock_guard<std::mutex> guard(mutex);
        return stop_requested;
    }

    // Ends the run, on the thread running it, once nothing is pending: no more
    // signals, no accessor (time is free of the timer), no callback kept.
    void finish()
    {
        std::shared_ptr<detail::SignalListener> l;
        {
            std::lock_guard<std::mutex> guard(mutex);
            if (run_state != Run::running || finishing) return;
            finishing = true;
            l = std::move(listener);
            if (wall_timer) wall_timer->cancel();
            ++armed;
        }
        if (l) detail::unsubscribe(*signal, l.get());
        accessor.reset();
        callback = nullptr;
        {
            std::lock_guard<std::mutex> guard(mutex);
            run_state = Run::finished;
            callback_thread = std::thread::id{};
        }
        cv.notify_all();
    }

    // An exception of the run after start_async: kept for the next stop().
    void fail(std::exception_ptr failure)
    {
        {
            std::lock_guard<std::mutex> guard(mutex);
            async_failure = std::move(failure);
        }
        finish();
    }

    // Destroys the private loop (and the WallTimer, which must go first), once
    // the run has ended, or while it ends on that very loop's thread (the
    // destructor called from the callback: see ~EventLoop).
    void teardown(bool run_may_continue = false)
    {
        std::lock_guard<std::mutex> joining(teardown_mutex);
        std::unique_ptr<WallTimer> timer;
        std::unique_ptr<EventLoop> loop;
        {
            std::lock_guard<std::mutex> guard(mutex);
            if (run_state == Run::running && !run_may_continue) return;
            timer = std::move(wall_timer);
            loop = std::move(private_loop);
        }
        timer.reset();
        loop.reset();
    }

    // True on the thread of the timer's private loop, which cannot join itself.
    bool on_private_loop_thread() const
    {
        Executor ex;
        {
            std::lock_guard<std::mutex> guard(mutex);
            if (!private_loop) return false;
            ex = executor;
        }
        return ex.running_in_this_thread();
    }

    // --------------------------------------------------------------- calling

    // Counts a call about to begin; false if the timer was stopped first.
    bool begin_call()
    {
        std::lock_guard<std::mutex> guard(mutex);
        if (stop_requested) return false;
        ++calls;
        callback_thread = std::this_thread::get_id();
        return true;
    }

    // Marks the end of a call, also when the callback throws.
    struct CallScope {
        Impl& self;
        ~CallScope()
        {
            std::lock_guard<std::mutex> guard(self.mutex);
            self.callback_thread = std::thread::id{};
        }
    };

    // ------------------------------------------------------------ real clock

    // Arms the WallTimer for grid instant `n`; returns the wait's generation,
    // 0 if the timer was stopped.
    std::uint64_t arm(std::int64_t n)
    {
        const SystemTime instant = from_grid(grid.at(n));
        // Steady first: a clock moved between the two readings makes the
        // deadline early (caught on waking), never late.
        const WallTime steady = clock->steady_now();
        const SystemTime system = clock->system_now();
        const WallTime deadline =
            instant <= system ? steady : steady + std::chrono::ceil<WallClock::duration>(instant - system);
        std::uint64_t generation = 0;
        {
            std::lock_guard<std::mutex> guard(mutex);
            if (stop_requested || !wall_timer || run_state != Run::running) return 0;
            generation = ++armed;
            wall_timer->wait_until(deadline, [weak = weak_from_this(), generation] {
                if (auto self = weak.lock()) self->on_due(generation);
            });
        }
        if (self_driven) self_driven->sleep_until(deadline);
        return generation;
    }

    // Loop thread: the WallTimer of wait `generation` is due.
    void on_due(std::uint64_t generation)
    {
        {
            std::lock_guard<std::mutex> guard(mutex);
            if (generation != armed || run_state != Run::running || stop_requested) return;
            if (mode == Mode::blocking) {
                woken = generation;
                cv.notify_all();
                return;
            }
        }
        tick_async();
    }

    bool early() const { return clock->system_now() < from_grid(grid.at(next)); }

    TimerTick real_tick() const
    {
        TimerTick tick;
        tick.index = next;
        tick.real_time = from_grid(grid.at(next));
        tick.skipped = skipped_now;
        return tick;
    }

    // The next deadline stays on the grid (whole periods after the last one), so
    // an overrun skips instants instead of shifting all later ones.
    void after_call()
    {
        const std::int64_t after = next + 1;
        const std::int64_t following =
            std::max(after, grid.first_index_at_or_after(on_grid(clock->system_now())));
        skipped_now = static_cast<std::uint64_t>(following - after);
        {
            std::lock_guard<std::mutex> guard(mutex);
            skipped += skipped_now;
        }
        next = following;
    }

    // Loop thread (start_async): the call at `next` if it is due, then the wait
    // for the one after; the wait for it otherwise.
    void tick_async()
    {
        if (early()) {
            (void)arm(next);
            return;
        }
        // Stopped meanwhile: the stop's own event (or the stopping job) ends the run.
        if (!begin_call()) return;
        try {
            CallScope scope{*this};
            callback(real_tick());
        } catch (...) {
            fail(std::current_exception());
            return;
        }
        if (stop_was_requested()) {
            finish();
            return;
        }
        after_call();
        (void)arm(next);
    }

    void run_real_blocking(const TimerCallback& cb)
    {
        if (!wait_for_start_blocking()) return;
        {
            std::lock_guard<std::mutex> guard(mutex);
            next = grid.first_index_at_or_after(on_grid(start_time));
        }
        skipped_now = 0;
        for (;;) {
            if (early()) {
                const std::uint64_t generation = arm(next);
                if (generation == 0) return;
                std::unique_lock<std::mutex> lock(mutex);
                cv.wait(lock, [&] { return stop_requested || woken == generation; });
                if (stop_requested) return;
                continue; // due, unless the system clock was stepped back meanwhile
            }
            if (!begin_call()) return;
            {
                CallScope scope{*this};
                cb(real_tick());
            }
            after_call();
        }
    }

    // False if stopped before the start.
    bool wait_for_start_blocking()
    {
        std::unique_lock<std::mutex> lock(mutex);
        if (config.wait_for_start) {
            cv.wait(lock, [this] { return start_seen || stop_requested; });
        }
        return !stop_requested;
    }

    // -------------------------------------------------------- simulated time

    // A timer that ends on its own says so: to its owner (on_end) and to the
    // handler's diagnostics, so nobody has to poll error() to notice.
    void announce_end(std::error_code reason)
    {
        SimSyncHandler& handler = *context.handler;
        // A stopped simulation is the normal end of every timer on it: the owner
        // hears of it (on_end), the operator's diagnostics do not.
        if (reason == errc::stopped) {
            if (config.on_end) config.on_end(reason);
            return;
        }
        handler.report_accessor_ended("timer", config.name, reason);
        if (config.on_end) config.on_end(reason);
    }

    void run_sim_blocking(const TimerCallback& cb)
    {
        SimSyncHandler& handler = *context.handler;
        // Registered without a first request: it holds time at the current time,
        // which is handler.now() once registration returns (it waits for a step
        // in flight), so the first instant computed from now() is never passed.
        Accessor registered = handler.register_accessor(config.name, accessor_options());
        if (!wait_for_start_blocking()) return;
        std::int64_t n = grid.first_index_at_or_after(handler.now());
        const std::stop_token stop = stop_source.get_token();
        Access access;
        for (;;) {
            const SimTime at = grid.at(n);
            // From one call to the next in one operation (the previous access
            // released as the next is asked for).
            access = registered.release_and_request(std::move(access), at, stop);
            {
                std::lock_guard<std::mutex> guard(mutex);
                if (stop_requested) return; // also a request withdrawn by stop()
                if (!access) {
                    error = access.error();
                } else {
                    ++calls;
                    callback_thread = std::this_thread::get_id();
                }
            }
            if (!access) {
                announce_end(access.error());
                return;
            }
            TimerTick tick;
            tick.index = n;
            tick.sim_time = at;
            tick.access = &access;
            {
                CallScope scope{*this};
                cb(tick);
            }
            if (stop_was_requested()) return;
            ++n;
        }
    }

    // Loop thread: the next asynchronous request, completed on the loop, with
    // the previous grant released in the same operation.
    void request_next(Access previous = {})
    {
        request_pending = true;
        try {
            auto on_loop = boost::asio::bind_executor(
                asio_executor(executor), [weak = weak_from_this()](std::error_code ec, Access access) {
                    if (auto self = weak.lock()) self->on_granted(ec, std::move(access));
                });
            accessor->async_release_and_request(std::move(previous), grid.at(sim_index),
                                                boost::asio::bind_cancellation_slot(cancel.slot(), std::move(on_loop)));
        } catch (...) {
            request_pending = false;
            fail(std::current_exception());
        }
    }

    // Loop thread: the request's completion.
    void on_granted(std::error_code ec, Access access)
    {
        request_pending = false;
        bool stopped = false;
        {
            std::lock_guard<std::mutex> guard(mutex);
            stopped = stop_requested || run_state != Run::running;
            if (!stopped) {
                if (!access) {
                    error = ec;
                } else {
                    ++calls;
                    callback_thread = std::this_thread::get_id();
                }
            }
        }
        if (stopped) {
            // Withdrawn by stop(), or granted just before it: released unused.
            access = Access{};
            finish();
            return;
        }
        if (!access) {
            try {
                announce_end(ec);
            } catch (...) {
                fail(std::current_exception());
                return;
            }
            finish();
            return;
        }
        TimerTick tick;
        tick.index = sim_index;
        tick.sim_time = grid.at(sim_index);
        tick.access = &access;
        try {
            CallScope scope{*this};
            callback(tick);
        } catch (...) {
            access.release();
            fail(std::current_exception());
            return;
        }
        if (stop_was_requested()) {
            access.release();
            finish();
            return;
        }
        ++sim_index;
        request_next(std::move(access));
    }

    // ------------------------------------------------------------------ data

    const PeriodicTimerConfig config;
    const TimerContext context;
    const PeriodicSchedule grid;
    WallClockSource* clock = nullptr;
    ManualWallClock* self_driven = nullptr;
    std::shared_ptr<detail::SignalState> signal;

    mutable std::mutex mutex;
    std::condition_variable cv;
    Run run_state = Run::idle;
    Mode mode = Mode::none;
    bool ready = false;     // start_async has handed the run to the loop
    bool finishing = false; // finish() has begun
    bool stop_requested = false;
    bool start_seen = false;
    SystemTime start_time{}; // real clock: the start, or the start signal
    std::thread::id callback_thread; // the thread inside the callback, if any
    std::uint64_t calls = 0;
    std::uint64_t skipped = 0;
    std::error_code error;
    std::exception_ptr async_failure;
    std::uint64_t armed = 0; // generation of the current wall-clock wait
    std::uint64_t woken = 0; // start(): the last generation found due
    Executor executor;
    std::unique_ptr<EventLoop> private_loop;
    std::unique_ptr<WallTimer> wall_timer;
    std::shared_ptr<detail::SignalListener> listener;
    std::mutex teardown_mutex;

    // The run (the thread running the timer; start_async sets them before handing over).
    TimerCallback callback;           // start_async
    std::int64_t next = 0;            // real clock: grid index of the next call
    std::uint64_t skipped_now = 0;
    std::int64_t sim_index = 0;       // simulated, start_async: index of the pending request
    std::optional<Accessor> accessor; // simulated, start_async
    bool request_pending = false;
    boost::asio::cancellation_signal cancel; // the pending request's cancellation, on the loop
    std::stop_source stop_source;            // start(): the blocking request's cancellation
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
    if (context.executor && config.clock == TimerClock::real && context.wall_clock != nullptr &&
        context.wall_clock != &context.executor.clock()) {
        throw Error(errc::invalid_argument,
                    who + ": wall_clock is not the executor's clock (the timer waits on its loop, which follows "
                          "that clock; leave wall_clock empty)");
    }
    impl_ = std::make_shared<Impl>(std::move(config), context);
}

PeriodicTimer::~PeriodicTimer()
{
    const std::shared_ptr<Impl> self = impl_;
    (void)self->request_stop();
    if (self->on_private_loop_thread()) {
        // Destroyed from inside its own callback, on its private loop: the run
        // ends when the callback returns (it touches only the timer's own
        // state then), and the loop, destroyed here, lets go of the caller's
        // clock now and of its thread once that callback returns.
        self->teardown(/*run_may_continue=*/true);
        return;
    }
    self->teardown();
}

void PeriodicTimer::start(TimerCallback callback)
{
    const std::shared_ptr<Impl> self = impl_; // the run keeps the state alive
    self->claim(callback, Impl::Mode::blocking);
    struct End {
        Impl& self;
        ~End()
        {
            self.finish();
            self.teardown();
        }
    } end{*self};
    if (self->config.clock == TimerClock::real) self->prepare_loop(true);
    if (self->subscribe_signal()) self->on_stop_signal();
    if (self->config.clock == TimerClock::real) {
        self->run_real_blocking(callback);
    } else {
        self->run_sim_blocking(callback);
    }
}

void PeriodicTimer::start_async(TimerCallback callback)
{
    const std::shared_ptr<Impl> self = impl_;
    self->claim(callback, Impl::Mode::async);
    try {
        self->prepare_async(std::move(callback));
    } catch (...) {
        self->finish();
        self->teardown();
        throw;
    }
}

void PeriodicTimer::stop()
{
    const std::shared_ptr<Impl> self = impl_;
    const bool inside = self->request_stop();
    if (inside) return;
    if (!self->on_private_loop_thread()) self->teardown();
    std::exception_ptr failure;
    {
        std::lock_guard<std::mutex> guard(self->mutex);
        failure = std::exchange(self->async_failure, nullptr);
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

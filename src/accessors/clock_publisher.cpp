#include <simsync/accessors/clock_publisher.hpp>
#include <simsync/core/asio.hpp>
#include <simsync/core/error.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace simsync {

namespace {

// The part of a publisher that may outlive it: every way into the publisher
// from another thread (a tick's completion, a paused-message timer, a handler
// event, the first request's job) passes through it before touching the
// publisher, so one that comes late (a request withdrawn by stop() completes
// afterwards, a queued job runs after the destructor) finds it closed and
// leaves. stop() waits until `active` is 0: then nothing of the publisher is
// running on another thread, and nothing will.
struct Gate {
    std::mutex mutex;
    std::condition_variable idle;
    bool closed = false; // stop() asked, or the accessor ended: no more work
    int active = 0;      // entries running now, on any thread
    // A tick read and released but not yet published: a paused message now
    // could overtake it with a later (frozen) time.
    bool tick_in_flight = false;

    // The pause, as the handler's events tell it. Until start() has read the
    // state (`listening`), events only update it: no paused messages yet.
    bool listening = false;
    bool paused = false;
    std::uint64_t epoch = 0;           // bumped by every change: older paused timers do nothing
    std::uint64_t last_generation = 0; // of the last event (or initial state) applied
    SourceTime frozen_time{};
    SimTime frozen_sim{};
    WallTime paused_deadline{};
};

// The gates this thread is inside of (a tick, a sink, a paused message, an
// event callback): stop() called there cannot wait for itself, so it only asks.
thread_local std::vector<const Gate*> t_inside;

bool inside(const Gate* gate)
{
    return std::find(t_inside.begin(), t_inside.end(), gate) != t_inside.end();
}

// Marks this thread as inside `gate` (for stop's "only ask"), without counting.
class InsideMark {
public:
    explicit InsideMark(const Gate* gate) { t_inside.push_back(gate); }
    ~InsideMark() { t_inside.pop_back(); }
    InsideMark(const InsideMark&) = delete;
    InsideMark& operator=(const InsideMark&) = delete;
};

// One entry through the gate: refused once it is closed, counted while it lasts.
class Entry {
public:
    explicit Entry(Gate& gate) : gate_(&gate)
    {
        std::lock_guard<std::mutex> guard(gate.mutex);
        if (gate.closed) {
            gate_ = nullptr;
            return;
        }
        ++gate.active;
        t_inside.push_back(gate_);
    }
    ~Entry()
    {
        if (gate_ == nullptr) return;
        t_inside.pop_back(); // entries nest on a thread, never interleave
        std::lock_guard<std::mutex> guard(gate_->mutex);
        if (--gate_->active == 0) gate_->idle.notify_all();
    }
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    explicit operator bool() const noexcept { return gate_ != nullptr; }

private:
    Gate* gate_;
};

// The publisher's ticks are requested on the stepping thread (each from the
// previous tick's completion) and withdrawn by stop() from any thread. Asio's
// cancellation_signal is not thread-safe: installing a request's handler in
// its slot and emitting must not overlap. This slot, bound to every tick's
// request, installs the handler under the mutex that stop() holds around its
// emission, and a handler installed after the emission is called at once (a
// request that starts after stop() is withdrawn as it starts). The mutex is
// held for nothing else: no sink or step runs under it on the requesting side.
// Recursive, because the emission may run the withdrawn (inline) completion
// on the emitting thread.
class LockedSlot {
public:
    LockedSlot(std::recursive_mutex& mutex, const bool& emitted, boost::asio::cancellation_signal& signal) noexcept
        : mutex_(&mutex), emitted_(&emitted), signal_(&signal)
    {
    }
    bool is_connected() const noexcept { return true; }
    template <class CancellationHandler, class... Args>
    CancellationHandler& emplace(Args&&... args)
    {
        const std::lock_guard<std::recursive_mutex> guard(*mutex_);
        auto& handler = signal_->slot().template emplace<CancellationHandler>(std::forward<Args>(args)...);
        if (*emitted_) handler(boost::asio::cancellation_type::terminal);
        return handler;
    }

private:
    std::recursive_mutex* mutex_;
    const bool* emitted_;
    boost::asio::cancellation_signal* signal_;
};

} // namespace

struct ClockPublisher::Impl {
    Impl(SimSyncHandler& h, const TimeSource& s, ClockPublisherConfig c, Executor e)
        : handler(h), source(s), config(std::move(c))
    {
        if (e) {
            clock = &e.clock(); // throws invalid_state if the loop is gone
            if (config.wall_clock != nullptr && config.wall_clock != clock) {
                throw Error(errc::invalid_argument,
                            "ClockPublisherConfig.wall_clock must be null or the executor's clock: the paused "
                            "messages run on the executor's EventLoop, whose timers follow its own clock");
            }
            executor = std::move(e);
        } else {
            own_loop = std::make_unique<EventLoop>(config.wall_clock != nullptr ? *config.wall_clock
                                                                                : real_wall_clock());
            executor = own_loop->executor();
            clock = &own_loop->clock();
        }
        timer.emplace(executor);
        paused_period = config.paused_period > WallClock::duration::zero()
                            ? config.paused_period
                            : std::max<WallClock::duration>(
                                  std::chrono::duration_cast<WallClock::duration>(config.schedule.nominal_period()),
                                  WallClock::duration{1});
    }

    // The completion of a tick's request: runs inline, on the stepping thread.
    struct OnTick {
        std::shared_ptr<Gate> gate;
        Impl* impl;
        void operator()(std::error_code error, Access access) const
        {
            Entry entry(*gate);
            if (!entry) {
                access.release(); // granted just before stop(): let time go now
                return;
            }
            impl->on_tick(error, std::move(access));
        }
    };
    struct OnEvent {
        std::shared_ptr<Gate> gate;
        Impl* impl;
        void operator()(const HandlerEvent& event) const
        {
            Entry entry(*gate);
            if (entry) impl->on_event(event);
        }
    };
    struct OnPausedTimer {
        std::shared_ptr<Gate> gate;
        Impl* impl;
        std::uint64_t epoch;
        void operator()() const
        {
            Entry entry(*gate);
            if (entry) impl->on_paused_timer(epoch);
        }
    };

    void arm(SimTime tick, Access previous = {});
    void on_tick(std::error_code error, Access access);
    void on_event(const HandlerEvent& event);
    void on_paused_timer(std::uint64_t epoch);
    // Gate locked: the simulation is paused at `at` (frozen source time `time`);
    // paused messages every paused_period from now.
    void freeze_locked(SimTime at, SourceTime time, std::uint64_t generation);
    void arm_paused_timer_locked(std::uint64_t epoch);
    // Gate locked: time moves (or the handler stopped): no paused messages.
    void thaw_locked(std::uint64_t generation);
    void end(std::error_code error);
    // sinks_mutex held by this thread: publishes `message`, then the ticks
    // deferred meanwhile (see on_tick).
    void publish_locked(ClockMessage message);
    void deliver_locked(ClockMessage message);
    void drain_deferred_locked();
    void deliver(ClockSink& sink, const ClockMessage& message) noexcept
    {
        try {
            sink.publish(message);
        } catch (...) {
            // A broken subscriber must not take the clock down for the others.
            sink_failures.fetch_add(1, std::memory_order_relaxed);
        }
    }

    SimSyncHandler& handler;
    const TimeSource& source;
    const ClockPublisherConfig config;
    WallClock::duration paused_period{};
    const std::shared_ptr<Gate> gate = std::make_shared<Gate>();

    // The loop of the paused messages: private, or the one given. Declared
    // before the timer, so the timer goes first.
    std::unique_ptr<EventLoop> own_loop;
    Executor executor;
    WallClockSource* clock = nullptr;
    std::optional<WallTimer> timer; // armed only while paused; under gate->mutex

    // Sinks, the sequence counter and the last message: held while publishing
    // (after the access is released), never while reading time. Holding it
    // around every delivery keeps each sink's calls apart and in order.
    mutable std::mutex sinks_mutex;
    std::vector<std::unique_ptr<ClockSink>> sinks;
    std::optional<ClockMessage> last;
    std::uint64_t next_sequence = 0;
    std::atomic<std::uint64_t> published{0};
    std::atomic<std::uint64_t> sink_failures{0};
    std::atomic<std::thread::id> publishing_thread{}; // while sinks_mutex is held to publish
    std::vector<ClockMessage> deferred;               // ticks granted inside a sink (on_tick)

    // start/stop. `accessor` and `events` are written by start() under
    // control_mutex only; stop() reads them after seeing `started` there.
    std::mutex control_mutex;
    bool started = false;
    bool stop_called = false;
    Accessor accessor;
    Subscription events;
    std::atomic<bool> running{false};

    // The pending tick's cancellation: how stop() withdraws it (see LockedSlot).
    std::recursive_mutex cancel_mutex;
    bool cancel_emitted = false; // under cancel_mutex
    boost::asio::cancellation_signal cancel;

    // The index of the next tick: used by one completion at a time (each
    // request follows the previous grant), and by start() before the first.
    std::int64_t next_tick = 0;
};

// Asks for `tick`, releasing `previous` (the tick just published) in the same
// operation, so time is held from one tick to the next with no gap.
void ClockPublisher::Impl::arm(SimTime tick, Access previous)
{
    {
        std::lock_guard<std::mutex> guard(gate->mutex);
        if (gate->closed) return; // stopped (from a sink, say): do not ask again; `previous` releases
    }
    // A stop() from here on withdraws this request through the slot, however
    // the two interleave (see LockedSlot).
    accessor.async_release_and_request(
        std::move(previous), tick,
        boost::asio::bind_cancellation_slot(LockedSlot(cancel_mutex, cancel_emitted, cancel),
                                            run_inline(OnTick{gate, this})));
}

void ClockPublisher::Impl::on_tick(std::error_code error, Access access)
{
    if (error) {
        end(error);
        return;
    }
    ClockMessage message;
    message.time = source.now();
    message.sim_time = access.granted_time();
    message.paused = handler.state() == HandlerState::paused;
    {
        std::lock_guard<std::mutex> guard(gate->mutex);
        gate->tick_in_flight = true; // a paused message waits for this tick's
    }
    ++next_tick;
    const SimTime next = config.schedule.at(next_tick);
    // Published inside the (shared) access, then released and the next tick
    // asked for in one operation: the next tick's call, queued behind this one
    // on whichever thread steps to it, cannot overtake this publication.
    if (publishing_thread.load(std::memory_order_acquire) == std::this_thread::get_id()) {
        // Granted inside one of our own sinks (a paused message's sink, or a
        // late joiner's, resumed or stepped the simulation, and this thread
        // stepped): that delivery, deeper in this stack, holds sinks_mutex.
        // The tick goes out right after it, in order, never nested.
        deferred.push_back(message);
    } else {
        const std::lock_guard<std::mutex> sinks_guard(sinks_mutex);
        publish_locked(message);
    }
    {
        std::lock_guard<std::mutex> guard(gate->mutex);
        gate->tick_in_flight = false;
    }
    // `next` rounds at or after this tick (the schedule increases): this
    // cannot throw, and none is skipped.
    arm(next, std::move(access));
}

void ClockPublisher::Impl::end(std::error_code error)
{
    {
        std::lock_guard<std::mutex> guard(gate->mutex);
        gate->closed = true;
        thaw_locked(gate->last_generation);
    }
    // A message being published on another thread (a paused one) is counted
    // before running() turns false. Not if this thread is the one publishing
    // (a paused message's sink stopped the handler): it cannot wait for itself.
    if (publishing_thread.load(std::memory_order_acquire) != std::this_thread::get_id()) {
        const std::lock_guard<std::mutex> drain(sinks_mutex);
    }
    running.store(false, std::memory_order_release);
    // stopped: the handler's stop. not_registered: an operator's revoke (our own
    // stop closes the gate first, so its withdrawal never gets here);
    // world_failed. time_passed cannot happen: registration holds time at the
    // instant the first tick is taken from, and every release names the next.
    if (error != errc::stopped) {
        handler.report_accessor_ended("clock publisher", config.name, error);
    }
    accessor.deregister(); // stop holding simulated time, whatever ended it
}

void ClockPublisher::Impl::freeze_locked(SimTime at, SourceTime time, std::uint64_t generation)
{
    gate->last_generation = generation;
    gate->paused = true;
    const std::uint64_t epoch = ++gate->epoch;
    gate->frozen_time = time;
    gate->frozen_sim = at;
    if (gate->listening) arm_paused_timer_locked(epoch);
}

void ClockPublisher::Impl::arm_paused_timer_locked(std::uint64_t epoch)
{
    gate->paused_deadline = clock->steady_now() + paused_period;
    timer->wait_until(gate->paused_deadline, OnPausedTimer{gate, this, epoch});
}

void ClockPublisher::Impl::thaw_locked(std::uint64_t generation)
{
    gate->last_generation = generation;
    gate->paused = false;
    ++gate->epoch;
    timer->cancel();
}

void ClockPublisher::Impl::on_event(const HandlerEvent& event)
{
    using Kind = HandlerEvent::Kind;
    // Read outside the gate's lock: a source is user code.
    const bool freezes = event.kind == Kind::paused || event.kind == Kind::target_reached;
    const SourceTime time = freezes ? source.now() : SourceTime{};
    std::lock_guard<std::mutex> guard(gate->mutex);
    if (event.generation <= gate->last_generation) return; // start() read a later state already
    switch (event.kind) {
    case Kind::paused:
    case Kind::target_reached: // a step or run_until arrived: the frozen time is re-read
        freeze_locked(event.at, time, event.generation);
        break;
    case Kind::resumed:
    case Kind::stepping:
    case Kind::running_until:
        thaw_locked(event.generation);
        break;
    case Kind::stopped:
        // No more paused messages. The pending request ends with `stopped` (or
        // world_failed, reported there), after the last tick is published:
        // end() turns running() false then.
        thaw_locked(event.generation);
        break;
    }
}

void ClockPublisher::Impl::on_paused_timer(std::uint64_t epoch)
{
    std::lock_guard<std::mutex> sinks_guard(sinks_mutex);
    ClockMessage message;
    {
        std::lock_guard<std::mutex> guard(gate->mutex);
        if (gate->closed || !gate->paused || gate->epoch != epoch) return; // resumed, or stopped meanwhile
        // Absolute deadlines keep the paused messages at their rate; one that
        // fell behind (a busy loop) starts again from now, never in a burst.
        gate->paused_deadline += paused_period;
        const WallTime now = clock->steady_now();
        if (gate->paused_deadline <= now) gate->paused_deadline = now + paused_period;
        timer->wait_until(gate->paused_deadline, OnPausedTimer{gate, this, epoch});
        // A tick between its release and its publication carries a time at or
        // before the frozen one: it goes first; this period has no repeat.
        // Time moved past the frozen instant (a step whose events are still
        // being delivered on another thread): the frozen time is stale, and
        // the event that re-freezes or thaws it is on its way.
        if (gate->tick_in_flight || handler.now() != gate->frozen_sim) return;
        message = ClockMessage{0, gate->frozen_time, gate->frozen_sim, true};
    }
    publish_locked(message);
}

void ClockPublisher::Impl::publish_locked(ClockMessage message)
{
    publishing_thread.store(std::this_thread::get_id(), std::memory_order_release);
    deliver_locked(message);
    drain_deferred_locked();
    publishing_thread.store(std::thread::id{}, std::memory_order_release);
}

void ClockPublisher::Impl::deliver_locked(ClockMessage message)
{
    message.sequence = next_sequence++;
    last = message;
    for (const auto& sink : sinks) deliver(*sink, message);
    published.fetch_add(1, std::memory_order_release);
}

void ClockPublisher::Impl::drain_deferred_locked()
{
    while (!deferred.empty()) {
        {
            std::lock_guard<std::mutex> guard(gate->mutex);
            if (gate->closed) { // a sink stopped the publisher: nothing after it
                deferred.clear();
                return;
            }
        }
        const ClockMessage message = deferred.front();
        deferred.erase(deferred.begin());
        deliver_locked(message); // may defer more: the loop takes them too
    }
}

ClockPublisher::ClockPublisher(SimSyncHandler& handler, const TimeSource& source, ClockPublisherConfig config,
                               Executor executor)
{
    if (config.paused_period < WallClock::duration::zero()) {
        throw Error(errc::invalid_argument,
                    "ClockPublisherConfig.paused_period must be >= 0, got " +
                        std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(config.paused_period).count()) +
                        " ns");
    }
    impl_ = std::make_unique<Impl>(handler, source, std::move(config), std::move(executor));
}

ClockPublisher::~ClockPublisher() { stop(); }

void ClockPublisher::add_sink(std::unique_ptr<ClockSink> sink)
{
    if (!sink) throw Error(errc::invalid_argument, "ClockPublisher::add_sink: the sink is null");
    const InsideMark mark(impl_->gate.get()); // a stop() from the late joiner's call only asks
    Impl& impl = *impl_;
    std::lock_guard<std::mutex> guard(impl.sinks_mutex);
    impl.publishing_thread.store(std::this_thread::get_id(), std::memory_order_release);
    if (impl.last) impl.deliver(*sink, *impl.last); // a late joiner learns the time at once
    impl.sinks.push_back(std::move(sink));
    impl.drain_deferred_locked(); // ticks its call made this thread grant: the new sink too
    impl.publishing_thread.store(std::thread::id{}, std::memory_order_release);
}

void ClockPublisher::add_callback(CallbackClockSink::Callback callback)
{
    add_sink(std::make_unique<CallbackClockSink>(std::move(callback)));
}

void ClockPublisher::start()
{
    Impl& impl = *impl_;
    // Subscribed before the state is read, so no change is missed in between;
    // and before the lock: subscribing waits for an event being delivered,
    // whose other callbacks may call stop().
    Subscription events = impl.handler.subscribe(Impl::OnEvent{impl.gate, &impl});
    std::lock_guard<std::mutex> guard(impl.control_mutex);
    if (impl.started || impl.stop_called) {
        throw Error(errc::invalid_state, "ClockPublisher '" + impl.config.name + "' was " +
                                             (impl.started ? "started" : "stopped") +
                                             " before; a publisher starts once");
    }
    // Registered here, not in the job below: from this call on time cannot
    // pass the current instant before the first tick is asked for.
    Accessor accessor = impl.handler.register_accessor(
        impl.config.name,
        AccessorOptions{.kind = AccessorKind::lockstep, .mode = AccessMode::shared, .priority = impl.config.priority});
    const std::uint64_t generation = impl.handler.run_generation(); // before the state: see on_event
    const bool paused = impl.handler.state() == HandlerState::paused;
    const SimTime now = impl.handler.now(); // held there by the registration
    impl.next_tick = impl.config.schedule.first_index_at_or_after(now);
    const SimTime first = impl.config.schedule.at(impl.next_tick);
    const SourceTime frozen = paused ? impl.source.now() : SourceTime{};
    impl.accessor = std::move(accessor);
    impl.events = std::move(events);
    impl.started = true;
    impl.running.store(true, std::memory_order_release);
    {
        std::lock_guard<std::mutex> gate_guard(impl.gate->mutex);
        // Unless an event newer than what we read has been applied already.
        if (impl.gate->last_generation <= generation) {
            if (paused) {
                impl.freeze_locked(now, frozen, generation);
            } else {
                impl.thaw_locked(generation);
            }
        }
        impl.gate->listening = true;
        if (impl.gate->paused && !impl.gate->closed) impl.arm_paused_timer_locked(impl.gate->epoch);
    }
    // The first request from the executor's thread: a tick due at once, and
    // the steps a lone clock in an unpaced run makes, are not this caller's.
    try {
        impl.executor.post([gate = impl.gate, self = &impl, first] {
            Entry entry(*gate);
            if (entry) self->arm(first);
        });
    } catch (...) { // the executor's loop is gone (it must outlive the publisher)
        {
            std::lock_guard<std::mutex> gate_guard(impl.gate->mutex);
            impl.gate->closed = true;
            impl.thaw_locked(impl.gate->last_generation);
        }
        impl.running.store(false, std::memory_order_release);
        impl.accessor.deregister(); // do not hold simulated time for a request that never comes
        throw;
    }
}

void ClockPublisher::stop()
{
    Impl& impl = *impl_;
    bool started = false;
    Subscription events;
    {
        std::lock_guard<std::mutex> guard(impl.control_mutex);
        impl.stop_called = true;
        started = impl.started;
    }
    {
        std::lock_guard<std::mutex> guard(impl.gate->mutex);
        impl.gate->closed = true;
        impl.thaw_locked(impl.gate->last_generation);
    }
    impl.running.store(false, std::memory_order_release);
    if (started) {
        // The pending tick is withdrawn through its cancellation slot (its
        // completion finds the gate closed); with the gate closed, no tick
        // asks again.
        {
            const std::lock_guard<std::recursive_mutex> cancel_guard(impl.cancel_mutex);
            impl.cancel_emitted = true;
            impl.cancel.emit(boost::asio::cancellation_type::terminal);
        }
        // Then the accessor lets go of time: a lockstep accessor holds it at
        // its last release until deregistered, and a publisher that is gone
        // must not hold the simulation.
        impl.accessor.deregister();
    }
    // From a sink (or anything the publisher runs on this thread) we cannot
    // wait for ourselves: the entries end when the sink returns.
    if (inside(impl.gate.get())) return;
    {
        std::unique_lock<std::mutex> lock(impl.gate->mutex);
        impl.gate->idle.wait(lock, [&] { return impl.gate->active == 0; });
    }
    if (started) {
        std::lock_guard<std::mutex> guard(impl.control_mutex);
        events = std::move(impl.events);
    }
    // Outside every lock of ours: unsubscribing waits for an event being
    // delivered on another thread (which finds the gate closed).
    events.reset();
}

bool ClockPublisher::running() const noexcept { return impl_->running.load(std::memory_order_acquire); }

std::optional<ClockMessage> ClockPublisher::last_message() const
{
    std::lock_guard<std::mutex> guard(impl_->sinks_mutex);
    return impl_->last;
}

std::uint64_t ClockPublisher::published() const noexcept
{
    return impl_->published.load(std::memory_order_acquire);
}

std::uint64_t ClockPublisher::sink_failures() const noexcept
{
    return impl_->sink_failures.load(std::memory_order_relaxed);
}

const ClockPublisherConfig& ClockPublisher::config() const noexcept { return impl_->config; }

} // namespace simsync

#include "core.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

namespace simsync::detail {

namespace {
std::string describe(SimTime t) { return format_seconds(t) + " s"; }

// An accessor has at most one request or access at a time (accessor.hpp: busy).
// `what` makes the message only when it is needed: this is on every request's path.
template <class What>
void throw_if_busy(const Slot& s, What what)
{
    if (s.activity == Activity::idle) return;
    throw Error(errc::busy, "accessor '" + s.name + "' " + what() + " while it " +
                                (s.activity == Activity::holding ? "holds an access" : "is waiting in another request"));
}
} // namespace

Core::Core(World& world, HandlerConfig config) : world_(world), config_(config)
{
    if (config_.step <= SimDuration::zero()) {
        throw Error(errc::invalid_argument,
                    "HandlerConfig.step must be > 0, got " + std::to_string(config_.step.count()) + " ns");
    }
    if (config_.stall_timeout < WallClock::duration::zero()) {
        throw Error(errc::invalid_argument,
                    "HandlerConfig.stall_timeout must be >= 0, got " +
                        format_seconds(std::chrono::duration_cast<SimDuration>(config_.stall_timeout)) + " s");
    }
    if (config_.start_paused) {
        limit_ = now_;
    }
    if (config_.stall_timeout > WallClock::duration::zero()) {
        watchdog_ = std::thread([this] { watchdog_loop(); });
        pthread_setname_np(watchdog_.native_handle(), "simsync-stall"); // for debuggers, and tests that wait for its end
    }
}

Core::~Core()
{
    stop_watchdog();
    // Destroyed on the watchdog thread itself: its diagnostics callback dropped
    // the last owner of the core while watchdog_loop kept it alive across the
    // call (see there); that thread returns without touching the core again.
    if (watchdog_.joinable()) watchdog_.detach();
    // Slots may outlive the core's sets; unlink them so their safe-mode hooks
    // do not assert on destruction.
    pending_.clear();
    bounds_.clear();
    lockstep_holders_.clear();
}

// ---------------------------------------------------------------- registration

Accessor Core::register_accessor(std::string name, const AccessorOptions& options)
{
    if (name.empty()) {
        throw Error(errc::invalid_argument, "accessor name must not be empty");
    }
    if (options.lookahead < SimDuration::zero()) {
        throw Error(errc::invalid_argument, "AccessorOptions.lookahead of '" + name +
                                                "' must be >= 0, got " +
                                                std::to_string(options.lookahead.count()) + " ns");
    }
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    wait_for_an_instant(lock);
    if (by_name_.count(name) != 0) {
        throw Error(errc::duplicate_name, "an accessor named '" + name + "' is already registered");
    }
    // Only World::step's own thread can still see a step in flight here: the
    // current time is then the end of that step.
    const SimTime current = effective_now();
    SimTime bound = current;
    if (options.first_request != SimTime::min()) {
        const SimTime first = round(options.first_request);
        if (first < current) {
            throw Error(errc::invalid_argument,
                        "AccessorOptions.first_request of '" + name + "' is " +
                            describe(options.first_request) + ", before the current time " +
                            describe(current));
        }
        bound = first;
    }
    auto slot = std::make_shared<Slot>(name, options, next_order_++);
    slot->last_time = now_;
    if (slot->kind == AccessorKind::lockstep) {
        add_bound(*slot, bound);
    }
    by_name_.emplace(std::move(name), slot);
    return Accessor(shared_from_this(), std::move(slot));
}

void Core::add_bound(Slot& s, SimTime bound)
{
    assert(bound >= now_);
    s.last_time = bound;
    if (bound == kSimTimeMax) return; // "never": holds time nowhere
    s.bound_key = Key{bound.time_since_epoch().count(), s.round_at(bound), s.options.priority, s.order};
    bounds_.insert(s);
}

void Core::wait_for_an_instant(Lock& lock)
{
    if (!step_in_flight_ || stepper_ == std::this_thread::get_id()) return;
    ++registrations_waiting_;
    ++state_waiters_;
    state_cv_.wait(lock, [&] { return !step_in_flight_; });
    --state_waiters_;
    --registrations_waiting_;
    // The stepper may be waiting for us to finish; the unlock that ends this
    // call notifies it (flush_and_unlock).
}

bool Core::caller_holds() const
{
    const auto me = std::this_thread::get_id();
    for (const Slot& s : holding_) {
        if (s.holder_thread == me) return true;
    }
    return false;
}

void Core::remove_from_sets(Slot& s)
{
    if (s.pending_hook.is_linked()) pending_.erase(pending_.iterator_to(s));
    if (s.bound_hook.is_linked()) bounds_.erase(bounds_.iterator_to(s));
    if (s.holder_hook.is_linked()) lockstep_holders_.erase(lockstep_holders_.iterator_to(s));
}

AccessorKind Core::kind(const Slot& slot) const
{
    Lock lock(mutex_);
    return slot.kind;
}

void Core::set_kind(Slot& s, AccessorKind kind)
{
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    wait_for_an_instant(lock); // becoming lockstep holds time at the current time: one the world is at
    if (s.kind == kind || !s.registered.load() || stopped_) {
        s.kind = kind;
        return;
    }
    s.kind = kind;
    if (kind == AccessorKind::free) {
        if (s.bound_hook.is_linked()) bounds_.erase(bounds_.iterator_to(s));
        if (s.holder_hook.is_linked()) lockstep_holders_.erase(lockstep_holders_.iterator_to(s));
    } else if (s.activity == Activity::idle) {
        add_bound(s, effective_now());
    } else if (s.activity == Activity::holding) {
        s.holder_key = Key{now_.time_since_epoch().count(), s.round_at(now_), s.options.priority, s.order};
        lockstep_holders_.insert(s);
    }
    advance(lock, nullptr);
}

void Core::deregister(Slot& s) noexcept
{
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    if (!s.registered.load()) return;
    detach(s, false);
    advance(lock, nullptr);
}

bool Core::revoke(const std::string& name)
{
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return false;
    const std::shared_ptr<Slot> keep = it->second; // detach erases the index entry
    detach(*keep, true);
    advance(lock, nullptr);
    return true;
}

// Removes a slot from every structure. A waiting thread is woken and finds
// itself unregistered; a held access stops counting.
void Core::detach(Slot& s, bool revoked)
{
    s.registered.store(false);
    by_name_.erase(s.name);
    remove_from_sets(s); // a holder can no longer ask again: out of lockstep_holders_ too
    if (s.activity == Activity::holding) {
        // Deregistering keeps the hold until the Access is released: only an
        // operator's revoke takes the world away from a thread.
        if (!revoked) return;
        s.revoked.store(true);
        end_hold(s);
    }
    const bool was_waiting = s.activity == Activity::waiting;
    if (was_waiting && s.step_duty) {
        // It was asked to step but has not started: hand the duty back.
        s.step_duty = false;
        stepping_ = false;
    }
    s.activity = Activity::idle;
    s.since = mutex_.hold_time();
    if (was_waiting && s.waiting != Waiting::thread) {
        complete_async(s, errc::not_registered);
    } else {
        wake(s);
    }
}

void Core::end_hold(Slot& s)
{
    if (s.holder_hook.is_linked()) lockstep_holders_.erase(lockstep_holders_.iterator_to(s));
    if (s.held_hook.is_linked()) holding_.erase(holding_.iterator_to(s));
    if (s.options.mode == AccessMode::exclusive) {
        exclusive_held_ = false;
    } else {
        --shared_holders_;
    }
    s.activity = Activity::idle;
    s.since = mutex_.hold_time();
}

// --------------------------------------------------------------------- request

Access Core::make_access(Slot& s, const std::shared_ptr<Slot>& slot, HeldRefs* refs)
{
    Access access;
    if (refs != nullptr && refs->slot) {
        access.core_ = std::move(refs->core);
        access.slot_ = std::move(refs->slot);
    } else {
        access.core_ = shared_from_this();
        access.slot_ = slot;
    }
    access.world_ = &world_;
    access.requested_ = s.requested;
    access.granted_ = s.granted_at;
    access.mode_ = s.options.mode;
    access.sequence_ = s.hold_sequence;
    return access;
}

Access Core::request(const std::shared_ptr<Slot>& slot, SimTime t, WallTime deadline, bool try_only,
                     const std::stop_token& stop)
{
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    return request_locked(lock, slot, t, deadline, try_only, stop);
}

// Ends `held` (an access of `s`) under the caller's lock, as a release that
// is followed at once by the next request: no bound is declared in between,
// the request's own pending entry holds time. False if `held` holds nothing
// of `s` any more (released, revoked).
bool Core::end_for_next(Slot& s, Access& held, SimTime next, HeldRefs& refs)
{
    if (!held.slot_) return false;
    if (held.slot_.get() != &s) {
        throw Error(errc::invalid_argument, "release_and_request on accessor '" + s.name +
                                                "' with an access of accessor '" + held.slot_->name + "'");
    }
    const bool holds = s.activity == Activity::holding && s.hold_sequence == held.sequence_;
    if (holds && round(next) < now_) {
        throw Error(errc::invalid_argument, "release_and_request of '" + s.name + "' names its next request at " +
                                                describe(next) + ", before the granted time " + describe(now_));
    }
    if (holds) end_hold(s); // else revoked or already released: only the request remains
    // `held` gives up its references without touching their counts: they go
    // to the next Access (make_access), so a step from one access to the next
    // makes no atomic read-modify-write on the shared counts of the core and
    // the slot, which both threads of a handoff would otherwise pull back and
    // forth between their cores.
    refs.core = std::move(held.core_);
    refs.slot = std::move(held.slot_);
    held.reset();
    return holds;
}

Access Core::release_and_request(const std::shared_ptr<Slot>& slot, Access& held, SimTime next, WallTime deadline,
                                 const std::stop_token& stop)
{
    HeldRefs refs; // destroyed after the unlock, if no Access took them
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    (void)end_for_next(*slot, held, next, refs);
    return request_locked(lock, slot, next, deadline, false, stop, &refs);
}

Access Core::request_locked(Lock& lock, const std::shared_ptr<Slot>& slot, SimTime t, WallTime deadline,
                            bool try_only, const std::stop_token& stop, HeldRefs* refs)
{
    Slot& s = *slot;
    if (!s.registered.load()) return Access(errc::not_registered, t);
    if (stopped_) return Access(stop_reason(), t);
    throw_if_busy(s, [&] { return "asked for " + describe(t); });
    if (stop.stop_requested()) return Access(errc::cancelled, t);
    const SimTime at = round(t);
    if (at < effective_now()) return Access(errc::time_passed, t);

    if (s.bound_hook.is_linked()) bounds_.erase(bounds_.iterator_to(s));
    s.activity = Activity::waiting;
    s.waiting = Waiting::thread;
    s.since = mutex_.hold_time();
    s.request_time = at;
    s.requested = t;
    s.last_time = at;
    s.granted.store(false, std::memory_order_relaxed);
    s.step_duty = false;
    s.cancelled = false;
    ++s.request_id;
    s.thread = std::this_thread::get_id();
    s.pending_key = Key{at.time_since_epoch().count(), s.round_at(at), s.options.priority, s.order};
    pending_.insert(s);
    s.waiter.reset();
    arm_watchdog();
    // A thread about to wait carries the steps for whoever is next (try only
    // for itself): it is idle anyway, and hands that grant over ready-made.
    advance(lock, &s, /*carry_for_others=*/!try_only);

    // A stop request wakes the waiting thread, which withdraws below. The
    // callback only touches the Waiter (thread-safe), never the core's lock.
    struct NotifyWaiter {
        Slot* slot;
        void operator()() const noexcept { slot->waiter.notify(); }
    };
    std::optional<std::stop_callback<NotifyWaiter>> on_stop;
    if (stop.stop_possible()) on_stop.emplace(stop, NotifyWaiter{&s});

    for (;;) {
        if (s.granted.load(std::memory_order_relaxed)) return make_access(s, slot, refs);
        if (!s.registered.load()) return Access(errc::not_registered, t);
        if (stopped_) {
            withdraw(s);
            return Access(stop_reason(), t);
        }
        const bool cancel = stop.stop_requested();
        if (s.step_duty && !cancel) {
            s.step_duty = false;
            run_steps(lock);
            continue;
        }
        if (cancel || try_only || (deadline != WallTime::max() && WallClock::now() >= deadline)) {
            if (s.step_duty) { // hand an unstarted duty back: advance() gives it to the next in line
                s.step_duty = false;
                stepping_ = false;
            }
            withdraw(s);
            advance(lock, nullptr);
            return Access(cancel ? errc::cancelled : try_only ? errc::would_block : errc::timed_out, t);
        }
        // Inline completions delivered on this thread may have changed our
        // state (even granted us): look again before sleeping.
        if (flush_and_unlock(lock)) {
            lock.lock();
            continue;
        }
        s.waiter.wait_until(deadline);
        // A grant handed over ready-made: everything the Access needs was
        // written before `granted` (release), so no lock is needed to return.
        if (s.granted.load(std::memory_order_acquire)) return make_access(s, slot, refs);
        lock.lock();
    }
}

AsyncTicket Core::start_async(const std::shared_ptr<Slot>& slot, SimTime t, std::unique_ptr<AsyncCompletion> completion,
                              Access* held)
{
    Slot& s = *slot;
    HeldRefs refs; // unused by an asynchronous grant (made by the granting thread); dropped after the unlock
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    if (held != nullptr) (void)end_for_next(s, *held, t, refs);
    throw_if_busy(s, [&] { return "asked for " + describe(t); });
    AsyncTicket ticket{weak_from_this(), slot, ++s.request_id};
    const bool runs_inline = completion->runs_inline();
    s.requested = t;
    std::error_code refusal;
    const SimTime at = round(t);
    if (!s.registered.load()) refusal = errc::not_registered;
    else if (stopped_) refusal = stop_reason();
    else if (at < effective_now()) refusal = errc::time_passed;
    if (refusal) {
        deliveries_.push_back(Delivery::complete_with(slot, std::move(completion), refusal, Access{}, runs_inline));
        return ticket;
    }
    s.completion = std::move(completion);
    enqueue(s, at, t, runs_inline ? Waiting::inline_system : Waiting::executor);
    // The initiating thread steps if this request is next (no post, no
    // handoff), and for whoever is next otherwise: its request made it wait.
    advance(lock, &s, /*carry_for_others=*/true);
    return ticket;
}

void Core::enqueue(Slot& s, SimTime at, SimTime requested, Waiting how)
{
    if (s.bound_hook.is_linked()) bounds_.erase(bounds_.iterator_to(s));
    s.activity = Activity::waiting;
    s.waiting = how;
    s.since = mutex_.hold_time();
    s.request_time = at;
    s.requested = requested;
    s.last_time = at;
    s.granted.store(false, std::memory_order_relaxed);
    s.step_duty = false;
    s.executor_unreachable = false;
    s.thread = std::this_thread::get_id();
    s.pending_key = Key{at.time_since_epoch().count(), s.round_at(at), s.options.priority, s.order};
    pending_.insert(s);
    arm_watchdog();
}

void Core::start_system(const std::shared_ptr<Slot>& slot, SimTime first, Accessor::System system)
{
    Slot& s = *slot;
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    throw_if_busy(s, [&] { return "started a system at " + describe(first); });
    s.system = std::move(system);
    s.system_end = {};
    s.requested = first;
    ++s.request_id; // an older request's cancellation ticket must not withdraw this one
    const SimTime at = round(first);
    std::error_code refusal;
    if (!s.registered.load()) refusal = errc::not_registered;
    else if (stopped_) refusal = stop_reason();
    else if (at < effective_now()) refusal = errc::time_passed;
    if (refusal) {
        s.waiting = Waiting::system;
        complete_async(s, refusal);
        return;
    }
    enqueue(s, at, first, Waiting::system);
    advance(lock, &s, /*carry_for_others=*/true);
}

void Core::cancel_async(Slot& s, std::uint64_t request) noexcept
{
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    if (s.activity != Activity::waiting || s.waiting == Waiting::thread || s.request_id != request) return;
    if (s.step_duty) {
        s.step_duty = false;
        stepping_ = false;
    }
    withdraw(s);
    complete_async(s, errc::cancelled);
    advance(lock, nullptr);
}

void Core::complete_async(Slot& s, std::error_code error)
{
    if (s.waiting == Waiting::system) {
        s.system_end = error; // its last call says why it ends
        systems_due_.push_back(s.shared_from_this());
        if (!runs_systems_here()) host_waiter_.notify();
        return;
    }
    deliveries_.push_back(Delivery::complete_with(s.shared_from_this(), std::move(s.completion), error, Access{},
                                                  s.waiting == Waiting::inline_system));
}

// A step duty posted to an asynchronous request's executor.
void Core::run_step_duty(const std::shared_ptr<Slot>& slot)
{
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    Slot& s = *slot;
    if (!s.step_duty || s.activity != Activity::waiting) return; // withdrawn, or handed back meanwhile
    s.step_duty = false;
    run_steps(lock);
    advance(lock, nullptr);
}

// The job that carried a duty was destroyed without running: its executor's
// loop is gone, or the execution context dropped its queue. Posting the duty
// there again would lose it again, so this request's duties go to the thread
// that finds them undeliverable (advance), this one first.
void Core::duty_dropped(const std::shared_ptr<Slot>& slot) noexcept
{
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    Slot& s = *slot;
    if (!s.step_duty || s.activity != Activity::waiting) return;
    s.step_duty = false;
    s.executor_unreachable = true;
    stepping_ = false;
    advance(lock, nullptr);
}

bool Core::begin_completion(Slot& s, std::uint64_t sequence)
{
    Lock lock(mutex_);
    if (s.hold_sequence != sequence) return true; // an older grant's completion: nothing of it is tracked
    if (s.completion_abandoned) return false;
    s.completion_queued = false;
    if (s.activity == Activity::holding) s.holder_thread.store(std::this_thread::get_id(), std::memory_order_relaxed);
    return true;
}

void Core::end_completion(Slot& s) noexcept
{
    // The Access may have been kept (stored, moved to another thread): it is
    // still held, but no longer by this thread.
    auto me = std::this_thread::get_id();
    s.holder_thread.compare_exchange_strong(me, std::thread::id{}, std::memory_order_relaxed);
}

// Takes a waiting slot out of the queue. A lockstep accessor keeps holding time
// at the instant it asked for: it could ask for it again.
void Core::withdraw(Slot& s)
{
    if (s.activity != Activity::waiting) return;
    if (s.pending_hook.is_linked()) pending_.erase(pending_.iterator_to(s));
    s.activity = Activity::idle;
    s.since = mutex_.hold_time();
    if (s.kind == AccessorKind::lockstep && !stopped_ && s.registered.load()) {
        add_bound(s, std::max(s.request_time, effective_now()));
    }
}

// --------------------------------------------------------------------- release

void Core::release(Slot& s, std::uint64_t sequence, std::optional<SimTime> next)
{
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    if (next) {
        if (s.activity == Activity::holding && s.hold_sequence == sequence && round(*next) < now_) {
            throw Error(errc::invalid_argument, "release of '" + s.name + "' names its next request at " +
                                                    describe(*next) + ", before the granted time " +
                                                    describe(now_));
        }
    }
    release(s, sequence, next, lock);
}

void Core::release(Slot& s, std::uint64_t sequence, std::optional<SimTime> next, Lock& lock)
{
    if (s.activity != Activity::holding || s.hold_sequence != sequence) {
        return; // revoked or already released
    }
    end_hold(s);
    if (s.kind == AccessorKind::lockstep && !stopped_ && s.registered.load()) {
        const SimTime bound = next ? round(*next) : round(saturating_add(now_, s.options.lookahead));
        add_bound(s, std::max(bound, now_));
    }
    advance(lock, nullptr);
}

// ------------------------------------------------------------------- wake-ups

void Core::wake(Slot& s)
{
    // A thread never needs waking for its own request: it is running, and checks
    // its flags before it waits (flush_and_unlock says when it must look again).
    if (s.thread == std::this_thread::get_id()) return;
    wakes_.push_back(s.shared_from_this());
}

namespace {

// Per thread: whether it is inside the delivery loop of flush_and_unlock, and
// the inline completions it still has to run. A completion that makes another
// request, releases, or acts as an operator queues what that produces here
// instead of running it nested, so systems that re-arm never grow the stack.
thread_local bool t_delivering = false;
thread_local std::vector<Delivery> t_inline;
// The persistent systems this thread runs next, in order (see flush_and_unlock).
thread_local std::vector<std::shared_ptr<Slot>> t_systems;
// Depth of this thread's delivery loops in flush_and_unlock (see there).
thread_local int t_flush_depth = 0;

} // namespace

void Core::run_inline_completion(Delivery& d)
{
    d.slot->holder_thread.store(std::this_thread::get_id(), std::memory_order_relaxed);
    try {
        d.completion->complete(d.error, std::move(d.access));
    } catch (...) {
        // An inline system runs on whichever thread stepped: its exception
        // cannot go to its own caller. Like a World::step that throws, it stops
        // the simulation, and failure() tells why.
        Lock lock(mutex_);
        if (!failure_) failure_ = std::current_exception();
        stop_locked();
        flush_and_unlock(lock); // nested: queued to this thread's loop
    }
    d.completion.reset(); // the handler's state dies here, on this thread
    // An Access still held now was kept: moved to another thread (a strand, a
    // mailbox) or stored for later. This thread is no longer inside it, so its
    // own wait_until_paused() or stop() must neither be refused nor skip it.
    auto me = std::this_thread::get_id();
    d.slot->holder_thread.compare_exchange_strong(me, std::thread::id{}, std::memory_order_relaxed);
}

void Core::deliver(Delivery& d)
{
    switch (d.kind) {
    case Delivery::Kind::duty: {
        // Whoever destroys the job without running it hands the duty back.
        struct Ticket {
            Ticket(std::shared_ptr<Core> c, std::shared_ptr<Slot> s) : core(std::move(c)), slot(std::move(s)) {}
            Ticket(const Ticket&) = delete;
            Ticket& operator=(const Ticket&) = delete;
            ~Ticket()
            {
                if (!ran) core->duty_dropped(slot);
            }
            std::shared_ptr<Core> core;
            std::shared_ptr<Slot> slot;
            bool ran = false;
        };
        auto ticket = std::make_shared<Ticket>(shared_from_this(), d.slot);
        d.poster([ticket] {
            ticket->ran = true;
            ticket->core->run_step_duty(ticket->slot);
        });
        return;
    }
    case Delivery::Kind::complete:
        if (!d.runs_inline) {
            d.completion->complete(d.error, std::move(d.access)); // posts to its executor
            return;
        }
        t_inline.push_back(std::move(d)); // run by the outermost flush of this thread, in order
        return;
    }
}

bool Core::flush_and_unlock(Lock& lock, bool stepping)
{
    const bool run_inline = !stepping;
    // Inline completions and systems run in the outermost flush of a thread
    // that does not step (a trampoline: never nested, so systems that re-arm
    // never grow the stack); a nested or stepping flush leaves them queued.
    const bool outermost = run_inline && !t_delivering;
    const bool take_systems = !systems_due_.empty() && !stepping && runs_systems_here();
    // Nothing but thread wake-ups (every purely blocking grant), kept short
    // because it is on the critical path of every handoff.
    if (deliveries_.empty() && (stepping || events_.empty() || delivering_events_) && !take_systems &&
        (!outermost || t_inline.empty())) {
        thread_local std::vector<std::shared_ptr<Slot>> wake_batch;
        wake_batch.swap(wakes_);
        const bool notify_state = state_waiters_ > 0;
        const bool notify_paused = paused_waiters_ > 0 && quiet_locked();
        lock.unlock();
        for (const auto& slot : wake_batch) slot->waiter.notify();
        wake_batch.clear();
        if (notify_state) state_cv_.notify_all();
        if (notify_paused) paused_cv_.notify_all();
        return false;
    }
    // Per-thread scratch: swapping keeps both buffers' capacity, so steady-state
    // grants allocate nothing. Not while this thread is inside the delivery
    // loop below (it owns the scratch then: a delivery can re-enter the core,
    // an Access dropped with its completion releasing, say): a local buffer.
    // Inline completions and systems run after that loop, so they use it.
    const bool nested_flush = t_flush_depth > 0;
    thread_local std::vector<std::shared_ptr<Slot>> scratch;
    std::vector<std::shared_ptr<Slot>> nested;
    std::vector<std::shared_ptr<Slot>>& batch = nested_flush ? nested : scratch;
    batch.swap(wakes_);
    thread_local std::vector<Delivery> scratch_deliveries;
    std::vector<Delivery> nested_deliveries;
    std::vector<Delivery>& others = nested_flush ? nested_deliveries : scratch_deliveries;
    if (!deliveries_.empty()) others.swap(deliveries_);
    if (take_systems) { // to this thread's runner, in order
        for (auto& slot : systems_due_) t_systems.push_back(std::move(slot));
        systems_due_.clear();
    }
    const bool notify_state = state_waiters_ > 0;
    const bool notify_paused = paused_waiters_ > 0 && quiet_locked();
    // Subscribers never run on a thread that holds the step duty: one that
    // waits for the simulation to come to rest would wait for itself.
    const bool events = !stepping && !events_.empty() && !delivering_events_;
    // User code runs below (subscribers, inline systems, completions); it may
    // destroy the handler and every other owner of the core (handler.hpp lets
    // callbacks call anything): the core lives until this delivery is over.
    // Inside this thread's runner of inline code the outer flush keeps it.
    std::shared_ptr<Core> keep;
    if (!t_delivering) keep = shared_from_this();
    lock.unlock();
    for (const auto& slot : batch) slot->waiter.notify();
    batch.clear();
    // A delivery can run core code on this thread (a job dropped by a loop
    // that is gone hands its duty back; an Access dropped with it releases),
    // which may grant this thread's own request or hand it the duty: wake()
    // skips the calling thread, so the caller must look again before sleeping.
    const bool delivered = !others.empty();
    ++t_flush_depth;
    for (Delivery& d : others) deliver(d); // inline completions wait in t_inline
    --t_flush_depth;
    others.clear();
    if (notify_state) state_cv_.notify_all();
    if (notify_paused) paused_cv_.notify_all();
    if (events) {
        lock.lock();
        deliver_events(lock); // unlocks
    }
    if (!outermost || (t_inline.empty() && t_systems.empty())) return events || delivered;
    // The outermost loop of this thread: run the inline completions and the
    // systems in order, including those that running them queues.
    // In rounds: what a round queues goes to the other buffer of the pair, so
    // a chain of any length reuses two buffers' capacity (no allocation).
    t_delivering = true;
    thread_local std::vector<Delivery> inline_round;
    thread_local std::vector<std::shared_ptr<Slot>> systems_round;
    for (;;) {
        if (!t_inline.empty()) {
            inline_round.swap(t_inline);
            for (Delivery& d : inline_round) run_inline_completion(d);
            inline_round.clear();
            continue;
        }
        if (t_systems.empty()) break;
        systems_round.swap(t_systems);
        for (const std::shared_ptr<Slot>& slot : systems_round) run_system_call(slot);
        systems_round.clear();
    }
    t_delivering = false;
    return true;
}

void Core::run_system_call(const std::shared_ptr<Slot>& slot)
{
    Slot& s = *slot;
    if (s.system_end) { // its last call: the reason, then it is gone
        Accessor::System system = std::move(s.system);
        s.system = nullptr;
        Access ended(s.system_end, s.requested);
        s.system_end = {};
        if (!system) return;
        try {
            (void)system(ended);
        } catch (...) {
            Lock lock(mutex_);
            if (!failure_) failure_ = std::current_exception();
            stop_locked();
            flush_and_unlock(lock); // nested: queued to this thread's loop
        }
        return;
    }
    // Granted under the lock this thread took to move it here: the fields
    // make_access reads were written before. The one Access serves every call
    // of a chain (see below): between calls its hold is over and its sequence
    // stale, so it releases nothing, and it is refreshed for the next grant.
    Access access = make_access(s, slot);
    for (;;) {
        const std::uint64_t sequence = s.hold_sequence;
        s.holder_thread.store(std::this_thread::get_id(), std::memory_order_relaxed);
        std::optional<SimTime> next;
        std::exception_ptr failure;
        try {
            next = s.system(access);
        } catch (...) {
            failure = std::current_exception();
        }
        auto me = std::this_thread::get_id();
        s.holder_thread.compare_exchange_strong(me, std::thread::id{}, std::memory_order_relaxed);

        Lock lock(mutex_);
        WakeOnExit wake_on_exit{*this, lock};
        const bool holds = s.activity == Activity::holding && s.hold_sequence == sequence;
        const SimTime at = next ? round(*next) : SimTime{};
        if (!failure && next && holds && access.slot_ && at < now_) {
            failure = std::make_exception_ptr(Error(
                errc::invalid_argument, "system '" + s.name + "' asked next for " + describe(*next) +
                                            ", before the time it was granted, " + describe(now_)));
        }
        if (!failure && next && holds && !access.slot_) {
            failure = std::make_exception_ptr(Error(errc::invalid_state, "system '" + s.name +
                                                                             "' kept its access (moved it out of "
                                                                             "the call) and asked again"));
        }
        if (chain_ref_.get() == &s && (failure || !next)) chain_ref_.reset(); // the chain ends
        if (failure) {
            s.system = nullptr;
            if (!failure_) failure_ = failure;
            stop_locked();
            return; // `access` releases after the unlock
        }
        if (!next) {
            if (access.slot_) release(s, access.sequence_, std::nullopt, lock);
            access.reset();
            s.system = nullptr;
            return;
        }
        if (holds && access.slot_) end_hold(s); // released and asked again in one operation
        // As a request: refused (deregistered, revoked, stopped) is its end.
        std::error_code refusal;
        if (!s.registered.load()) refusal = errc::not_registered;
        else if (stopped_) refusal = stop_reason();
        else if (at < effective_now()) refusal = errc::time_passed;
        if (refusal) {
            if (chain_ref_.get() == &s) chain_ref_.reset(); // the chain ends
            s.waiting = Waiting::system;
            s.requested = *next;
            complete_async(s, refusal);
            return;
        }
        enqueue(s, at, *next, Waiting::system);
        advance(lock, &s, /*carry_for_others=*/true);
        // The chain: if the one thing to do now is this system's next call
        // (granted again at once or after the steps just taken here), make it
        // here, without a trip through the flush and its queues.
        if (systems_due_.size() != 1 || systems_due_.front().get() != &s || !runs_systems_here() ||
            !deliveries_.empty() || !wakes_.empty() || !events_.empty() || state_waiters_ > 0 ||
            paused_waiters_ > 0 || s.system_end || !access.slot_) {
            return; // the flush on the way out delivers all, in order
        }
        // Its reference waits for the next grant of this system (grant()), so
        // a chain makes no atomic read-modify-write on the slot's count.
        chain_ref_ = std::move(systems_due_.front());
        systems_due_.clear();
        access.granted_ = s.granted_at;
        access.requested_ = s.requested;
        access.sequence_ = s.hold_sequence;
        lock.unlock();
    }
}

// ------------------------------------------------------------ the grant engine

// Called after every change of state. Grants what can be granted at the current
// instant; if nothing holds the world and time may move towards a request (or
// an operator's target), hands the step duty to the thread that waits for the
// earliest request, or does it here if that is the calling thread.
void Core::advance(Lock& lock, Slot* self, bool carry_for_others)
{
    if (stopped_) return;
    grant_at_now();
    if (stepping_ || !can_step()) return;

    stepping_ = true;
    if (config_.step_thread == StepThread::host) {
        if (host_running_) {
            host_duty_ = true;
            host_waiter_.notify();
        } else {
            stepping_ = false; // the host will pick it up when run() starts
        }
        return;
    }
    Slot* next = pending_.empty() ? nullptr : &*pending_.begin();
    if (next != nullptr && next != self && !carry_for_others) {
        switch (next->waiting) {
        case Waiting::thread:
            next->step_duty = true;
            wake(*next);
            return;
        case Waiting::executor: {
            if (next->executor_unreachable) break; // it dropped a duty before: step here
            // The request's executor steps on its way to the grant.
            next->step_duty = true;
            deliveries_.push_back(Delivery::duty_for(next->shared_from_this(), next->completion->poster()));
            return;
        }
        case Waiting::inline_system:
        case Waiting::system:
            break; // inline systems have no thread: the caller steps for them
        }
    }
    run_steps(lock, /*goal_known=*/true); // our own request is next, an inline system's, or only an operator target remains
}

// A plain value, not an optional: this runs two or three times per grant,
// and reading back an optional just stored through memory stalled on it.
// kSimTimeMax is "no goal" inside: a request for "never" is none, and target_
// is never kSimTimeMax (run_until and step(n) reset it instead).
SimTime Core::step_goal() const noexcept
{
    if (stopped_ || has_holders() || step_in_flight_) return now_;
    SimTime goal = target_ ? *target_ : kSimTimeMax;
    if (!pending_.empty()) {
        const SimTime earliest{SimDuration{pending_.begin()->pending_key.time_ns}};
        if (earliest == now_) return now_; // grant here first (or wait for who is ahead)
        goal = std::min(goal, earliest);
    }
    if (goal == kSimTimeMax) return now_;
    goal = std::min(goal, limit_);
    if (!bounds_.empty()) goal = std::min(goal, SimTime{SimDuration{bounds_.begin()->bound_key.time_ns}});
    return goal > now_ ? goal : now_;
}

// Steps one dt at a time, re-deciding under the lock after each step, so a
// pause, a new earlier request, a new lockstep bound or stop take effect at the
// next step boundary. Precondition: stepping_ is true and this thread owns it.
void Core::run_steps(Lock& lock, bool goal_known)
{
    // The wall time of progress is stamped late in the hold that follows the
    // step, once the grant it made possible has signalled its waiter (grant()
    // reads the clock then, and this reuses the reading), and always before
    // the lock is released, so the watchdog and snapshot() never see it stale.
    bool progressed = false;
    auto stamp_progress = [&] {
        if (progressed) last_progress_ = mutex_.hold_time();
        progressed = false;
    };
    while (std::exchange(goal_known, false) || can_step()) {
        if (!events_.empty() && !delivering_events_) {
            // Subscribers may call any member, wait_until_paused too: they run
            // with the duty given up and no step in flight, and whoever needs
            // time to move (that wait included) takes the duty up again.
            stepping_ = false;
            stamp_progress();
            flush_and_unlock(lock);
            lock.lock();
            if (stepping_ || stopped_) return; // another thread carries it now
            if (!can_step()) break;
            stepping_ = true;
            continue;
        }
        if (registrations_waiting_ > 0) {
            // A registration waits for the step that just ended: let it in
            // before the next one (see wait_for_an_instant).
            stamp_progress();
            flush_and_unlock(lock, /*stepping=*/true);
            lock.lock();
            ++state_waiters_;
            state_cv_.wait(lock, [&] { return registrations_waiting_ == 0 || stopped_; });
            --state_waiters_;
            continue;
        }
        step_in_flight_ = true;
        stepper_ = std::this_thread::get_id();
        stamp_progress();
        flush_and_unlock(lock, /*stepping=*/true); // events and inline completions wait for the end
        try {
            world_.step(config_.step);
        } catch (...) {
            lock.lock();
            step_in_flight_ = false;
            failure_ = std::current_exception();
            stepping_ = false;
            stop_locked();
            return;
        }
        lock.lock();
        step_in_flight_ = false; // pause() and registrations wait for this: see flush_and_unlock
        now_ += config_.step;
        now_ns_.store(now_.time_since_epoch().count(), std::memory_order_release);
        // Written only under the lock: a store, not a read-modify-write.
        steps_.store(steps_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
        progressed = true;
        grants_at_now_ = 0;
        if (stall_reported_) watchdog_cv_.notify_one();
        if (target_ && now_ >= *target_) {
            target_.reset();
            if (now_ >= limit_) record_event(HandlerEvent::Kind::target_reached);
        }
    }
    stepping_ = false;
    grant_at_now();
    stamp_progress();
}

void Core::grant_at_now()
{
    // Stopped: every request still pending is refused, also the one a step
    // in flight when stop() came was taking time to.
    if (step_in_flight_ || stopped_) return;
    const std::int64_t now_ns = now_.time_since_epoch().count();
    while (!pending_.empty()) {
        Slot& s = *pending_.begin();
        if (s.pending_key.time_ns != now_ns) break;
        // A lockstep accessor that could still ask for this instant ahead of s.
        if (!bounds_.empty() && bounds_.begin()->bound_key < s.pending_key) break;
        // A lockstep holder that could ask again ahead of s once it releases.
        if (!lockstep_holders_.empty() && lockstep_holders_.begin()->holder_key < s.pending_key) break;
        if (exclusive_held_) break;
        if (s.options.mode == AccessMode::exclusive && shared_holders_ > 0) break;
        grant(s);
        if (s.options.mode == AccessMode::exclusive) break;
    }
}

void Core::grant(Slot& s)
{
    s.hold_sequence = grant_sequence_++;
    s.granted_at = now_;
    s.activity = Activity::holding;
    if (s.waiting == Waiting::thread) {
        // The waiting thread first: everything its Access reads (requested,
        // granted_at, mode, hold_sequence) is written, and it returns without
        // the lock, so it runs while this thread does the bookkeeping below.
        // A spinning waiter is signalled here, under the lock (one atomic
        // exchange); a sleeping one after the unlock (a FUTEX_WAKE syscall,
        // queued by wake()). Under the lock the slot cannot be freed
        // meanwhile: the woken thread's Access keeps it, and dropping that
        // Access (a release) or the Accessor (a deregister) takes this lock.
        s.holder_thread.store(s.thread, std::memory_order_relaxed);
        s.granted.store(true, std::memory_order_release); // last: the waiter may return without the lock
        if (s.thread != std::this_thread::get_id() && !s.waiter.notify_if_awake()) wake(s);
    }
    pending_.erase(pending_.iterator_to(s));
    if (s.round_instant == now_) {
        ++s.round_count;
    } else {
        s.round_instant = now_;
        s.round_count = 1;
    }
    if (s.options.mode == AccessMode::exclusive) {
        exclusive_held_ = true;
    } else {
        ++shared_holders_;
    }
    if (s.kind == AccessorKind::lockstep) {
        s.holder_key = Key{now_.time_since_epoch().count(), s.round_count, s.options.priority, s.order};
        lockstep_holders_.insert(s);
    }
    holding_.push_back(s);
    s.since = mutex_.hold_time();
    ++grants_at_now_; // no progress by itself: grants at one instant can go on while time stands still
    ++s.grants;
    if (s.waiting == Waiting::thread) return;
    s.holder_thread.store(std::thread::id{}, std::memory_order_relaxed);
    if (s.waiting == Waiting::system) {
        // Called by the thread that runs systems (this one, unless it is not
        // the host's), right after the step: no completion, no Access yet.
        // A chain's own reference when it has one (no count change), else a new one.
        systems_due_.push_back(chain_ref_.get() == &s ? std::move(chain_ref_) : s.shared_from_this());
        if (!runs_systems_here()) host_waiter_.notify();
        return;
    }
    s.completion_queued = s.waiting == Waiting::executor;
    s.completion_abandoned = false;
    std::shared_ptr<Slot> self = s.shared_from_this();
    Access access = make_access(s, self);
    Delivery d = Delivery::complete_with(std::move(self), std::move(s.completion), {}, std::move(access),
                                         s.waiting == Waiting::inline_system);
    if (d.runs_inline && config_.step_thread == StepThread::host && std::this_thread::get_id() != host_thread_) {
        // Host mode: the world belongs to the host thread, and so do inline systems.
        host_inline_.push_back(std::move(d));
        host_waiter_.notify();
        return;
    }
    deliveries_.push_back(std::move(d));
}

// ------------------------------------------------------------ operator control

HandlerState Core::state_locked() const noexcept
{
    if (stopped_) return HandlerState::stopped;
    return (now_ >= limit_ && !step_in_flight_) ? HandlerState::paused : HandlerState::running;
}

HandlerState Core::state() const
{
    Lock lock(mutex_);
    return state_locked();
}

void Core::pause()
{
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    limit_ = effective_now();
    target_.reset();
    record_event(HandlerEvent::Kind::paused);
    // Return with time stopped: a step in flight completes first (one World::step),
    // so whoever asks next sees "paused" and a time that no longer moves. Not if
    // the step in flight is this very thread's (pause called from World::step).
    if (step_in_flight_ && stepper_ != std::this_thread::get_id()) {
        ++state_waiters_;
        state_cv_.wait(lock, [&] { return !step_in_flight_; });
        --state_waiters_;
    }
}

void Core::resume()
{
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    last_progress_ = mutex_.hold_time(); // the stall watchdog counts from the operator's action
    limit_ = kSimTimeMax;
    target_.reset();
    record_event(HandlerEvent::Kind::resumed);
    arm_watchdog();
    advance(lock, nullptr);
}

void Core::step(std::uint64_t n)
{
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    last_progress_ = mutex_.hold_time(); // the stall watchdog counts from the operator's action
    const SimTime base = limit_ == kSimTimeMax ? effective_now() : std::max(limit_, effective_now());
    const auto room = static_cast<std::uint64_t>((kSimTimeMax - base) / config_.step);
    limit_ = base + static_cast<std::int64_t>(std::min(n, room)) * config_.step; // saturate, never overflow
    target_ = limit_;
    if (limit_ == kSimTimeMax) target_.reset();
    record_event(HandlerEvent::Kind::stepping);
    arm_watchdog();
    advance(lock, nullptr);
}

void Core::run_until(SimTime t)
{
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    last_progress_ = mutex_.hold_time(); // the stall watchdog counts from the operator's action
    const SimTime at = round_to_grid(t, config_.step, Rounding::down);
    limit_ = std::max(at, effective_now());
    target_ = limit_;
    if (limit_ == kSimTimeMax) target_.reset(); // "never": no pause point, no reason to advance
    record_event(HandlerEvent::Kind::running_until);
    arm_watchdog();
    advance(lock, nullptr);
}

void Core::stop()
{
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    stop_locked();
}

void Core::stop_locked()
{
    if (stopped_) return;
    stopped_ = true;
    limit_ = effective_now();
    target_.reset();
    // Blocking waiters remove themselves when they wake; asynchronous requests
    // are ended here.
    for (auto it = pending_.begin(); it != pending_.end();) {
        Slot& s = *it++;
        if (s.waiting == Waiting::thread) {
            wake(s);
            continue;
        }
        if (s.step_duty) {
            s.step_duty = false;
            stepping_ = false;
        }
        pending_.erase(pending_.iterator_to(s));
        s.activity = Activity::idle;
        s.since = mutex_.hold_time();
        complete_async(s, stop_reason());
    }
    // Idle lockstep bounds no longer matter.
    bounds_.clear();
    record_event(HandlerEvent::Kind::stopped);
    host_waiter_.notify();
    state_cv_.notify_all();
    paused_cv_.notify_all();
    watchdog_cv_.notify_one();
}

void Core::run()
{
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    if (host_running_) throw Error(errc::invalid_state, "SimSyncHandler::run() is already running");
    if (caller_holds()) {
        throw Error(errc::invalid_state,
                    "SimSyncHandler::run() called by a thread that holds an access: no step could happen until "
                    "it is released, so run() would never step");
    }
    host_running_ = true;
    struct Done {
        Core& core;
        ~Done()
        {
            core.host_running_ = false;
            core.host_thread_ = std::thread::id{};
        }
    } done{*this};
    if (config_.step_thread != StepThread::host) {
        ++state_waiters_;
        state_cv_.wait(lock, [&] { return stopped_; });
        --state_waiters_;
        return;
    }
    host_thread_ = std::this_thread::get_id();
    advance(lock, nullptr);
    for (;;) {
        if (!host_inline_.empty() || !systems_due_.empty()) {
            // Inline completions and systems granted on other threads: run them here.
            for (Delivery& d : host_inline_) deliveries_.push_back(std::move(d));
            host_inline_.clear();
            flush_and_unlock(lock);
            lock.lock();
            continue;
        }
        if (stopped_) break;
        if (host_duty_) {
            host_duty_ = false;
            run_steps(lock);
            continue;
        }
        if (flush_and_unlock(lock)) {
            lock.lock();
            continue;
        }
        host_waiter_.wait_until(WallTime::max());
        lock.lock();
    }
}

bool Core::quiet_locked() const noexcept
{
    return stopped_ || (state_locked() == HandlerState::paused && !has_holders() && !stepping_);
}

// A thread about to wait for time to move steps itself when nobody else can:
// the duty is free (given up by a stepping thread while its subscribers run:
// this thread may be that very one), or was handed to a blocking request of
// this thread, which cannot carry it while it waits here.
bool Core::take_up_duty(Lock& lock)
{
    if (config_.step_thread != StepThread::any || stopped_) return false;
    if (!stepping_) {
        if (!can_step()) return false;
        stepping_ = true;
        run_steps(lock, /*goal_known=*/true);
        return true;
    }
    const auto me = std::this_thread::get_id();
    for (Slot& s : pending_) {
        if (s.step_duty && s.waiting == Waiting::thread && s.thread == me) {
            s.step_duty = false;
            run_steps(lock);
            return true;
        }
    }
    return false;
}

bool Core::wait_until_paused(WallTime deadline)
{
    Lock lock(mutex_);
    WakeOnExit wake_on_exit{*this, lock};
    if (caller_holds()) {
        throw Error(errc::invalid_state,
                    "SimSyncHandler::wait_until_paused() called by a thread that holds an access: the handler "
                    "is not quiet until that access is released, so the wait could never end");
    }
    ++paused_waiters_;
    bool ok = true;
    while (!quiet_locked()) {
        if (take_up_duty(lock)) continue;
        if (deadline == WallTime::max()) {
            paused_cv_.wait(lock);
        } else {
            if (WallClock::now() >= deadline) {
                ok = false;
                break;
            }
            paused_cv_.wait_until(lock, deadline);
        }
    }
    --paused_waiters_;
    return ok;
}

void Core::stop_watchdog()
{
    if (!watchdog_.joinable()) return;
    {
        Lock lock(mutex_);
        watchdog_exit_ = true;
    }
    watchdog_cv_.notify_one();
    // From the watchdog's own diagnostics callback (the handler destroyed
    // there) it cannot be joined: it sees watchdog_exit_ when the callback
    // returns, and the core's destructor detaches it.
    if (watchdog_.get_id() != std::this_thread::get_id()) watchdog_.join();
}

void Core::shutdown()
{
    stop_watchdog();
    Lock lock(mutex_);
    stop_locked();
    // A grant whose executor completion has not begun has nobody working in
    // it, and its executor may never run it (a stopped io_context): its hold
    // ends here, and the completion, if it ever runs, is told `stopped`.
    std::vector<Slot*> queued;
    for (Slot& s : holding_) {
        if (s.completion_queued) queued.push_back(&s);
    }
    for (Slot* s : queued) {
        s->completion_queued = false;
        s->completion_abandoned = true;
        end_hold(*s);
    }
    flush_and_unlock(lock); // the stopped waiters must hear of it before we wait
    lock.lock();
    // A holder on this very thread cannot release while we wait: don't wait for it.
    const auto me = std::this_thread::get_id();
    auto others_active = [&] {
        if (step_in_flight_) return true;
        for (const Slot& s : holding_) {
            if (s.holder_thread != me) return true;
        }
        return false;
    };
    ++state_waiters_;
    state_cv_.wait(lock, [&] { return !others_active(); });
    --state_waiters_;
}

std::exception_ptr Core::failure() const
{
    Lock lock(mutex_);
    return failure_;
}

// ----------------------------------------------------------------------- events

void Core::record_event(HandlerEvent::Kind kind)
{
    HandlerEvent e;
    e.kind = kind;
    e.generation = run_generation_.fetch_add(1, std::memory_order_acq_rel) + 1;
    e.at = now_;
    if (kind == HandlerEvent::Kind::stepping || kind == HandlerEvent::Kind::running_until) e.pause_at = target_;
    // Nobody listens: nothing to queue (the generation still counts).
    if (subscriber_count_.load(std::memory_order_acquire) == 0) return;
    events_.push_back(std::move(e));
}

// Lock held on entry, released on return. One thread delivers at a time, in
// the order the events were recorded; events recorded meanwhile (also by the
// callbacks) are delivered by the same loop.
void Core::deliver_events(Lock& lock)
{
    if (delivering_events_) {
        lock.unlock();
        return;
    }
    delivering_events_ = true;
    while (!events_.empty()) {
        const HandlerEvent e = std::move(events_.front());
        events_.pop_front();
        lock.unlock();
        {
            std::lock_guard<std::recursive_mutex> guard(subscribers_mutex_);
            const std::vector<std::shared_ptr<Subscriber>> current(subscribers_.begin(), subscribers_.end());
            for (const auto& sub : current) {
                if (sub->active) sub->callback(e);
            }
        }
        lock.lock();
    }
    delivering_events_ = false;
    lock.unlock();
}

Subscription Core::subscribe(EventCallback callback)
{
    if (!callback) throw Error(errc::invalid_argument, "SimSyncHandler::subscribe: the callback is empty");
    std::lock_guard<std::recursive_mutex> guard(subscribers_mutex_);
    auto sub = std::make_shared<Subscriber>();
    sub->id = next_subscriber_++;
    sub->callback = std::move(callback);
    subscribers_.push_back(sub);
    subscriber_count_.fetch_add(1, std::memory_order_acq_rel);
    return Subscription(weak_from_this(), sub->id);
}

void Core::unsubscribe(std::uint64_t id) noexcept
{
    std::lock_guard<std::recursive_mutex> guard(subscribers_mutex_);
    for (auto it = subscribers_.begin(); it != subscribers_.end(); ++it) {
        if ((*it)->id == id) {
            (*it)->active = false;
            subscribers_.erase(it);
            subscriber_count_.fetch_sub(1, std::memory_order_acq_rel);
            return;
        }
    }
}

} // namespace simsync::detail

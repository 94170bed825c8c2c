#pragma once
// The handler's shared state. Private: the public API is SimSyncHandler,
// Accessor and Access. Everything here is guarded by Core::mutex_ unless
// marked atomic.

#include "waiter.hpp"

#include <simsync/core/handler.hpp>

#include <boost/intrusive/list.hpp>
#include <boost/intrusive/set.hpp>
#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace simsync::detail {

// The order of candidates for one instant: earlier time first; at one time, an
// accessor's first grant at that instant before anybody's second ("round"),
// then higher priority, then registration order. Unique per slot (order is).
struct Key {
    std::int64_t time_ns = 0;
    std::uint64_t round = 0;
    int priority = 0; // higher first; compared, never negated (INT_MIN is a valid priority)
    std::uint64_t order = 0;

    friend bool operator<(const Key& a, const Key& b) noexcept
    {
        return std::tie(a.time_ns, a.round, b.priority, a.order) <
               std::tie(b.time_ns, b.round, a.priority, b.order);
    }
};

namespace bi = boost::intrusive;
using Hook = bi::set_member_hook<bi::link_mode<bi::safe_link>>;
using ListHook = bi::list_member_hook<bi::link_mode<bi::safe_link>>;

enum class Activity { idle, waiting, holding };

// How a waiting request learns of its outcome.
enum class Waiting {
    thread,   // a thread blocked in request(): its Waiter is notified
    executor, // an asynchronous request: completed (and given step duties) on its executor
    inline_system, // an asynchronous request completed on the thread that steps
    system,        // a persistent inline system (Accessor::run_system), called by the thread that steps
};

// The Core's record of one accessor (what an Accessor handle points to: its
// "slot" in the handler). Owned jointly by its Accessor handle, any Access it
// holds, and (while registered) the Core's name index; it outlives the Core's
// interest in it, so a late release or wake-up never touches freed memory.
struct Slot : std::enable_shared_from_this<Slot> {
    Slot(std::string n, const AccessorOptions& o, std::uint64_t ord)
        : name(std::move(n)), options(o), kind(o.kind), order(ord)
    {
    }

    const std::string name;
    const AccessorOptions options;
    AccessorKind kind;
    const std::uint64_t order;

    std::atomic<bool> registered{true};
    std::atomic<bool> revoked{false};

    Activity activity = Activity::idle;
    WallTime since = WallClock::now();
    std::uint64_t grants = 0;
    SimTime last_time{}; // see AccessorStatus::time

    // Grants at one instant, for the round of the Key.
    SimTime round_instant = SimTime::min();
    std::uint64_t round_count = 0;

    // Waiting.
    SimTime request_time{};
    SimTime requested{}; // before rounding, for the Access
    // Set last by the granter (release) once the grant is complete: a woken
    // blocking requester returns the Access without taking the lock.
    std::atomic<bool> granted{false};
    SimTime granted_at{}; // the instant of the current (or last) grant
    bool step_duty = false; // asked to step the world on its way to its grant
    bool cancelled = false; // a blocking request's stop_token fired
    std::thread::id thread; // the requesting thread
    Waiting waiting = Waiting::thread;
    CompletionMemory completion_memory;          // before `completion`: outlives it
    std::unique_ptr<AsyncCompletion> completion; // asynchronous requests
    Accessor::System system;                     // a persistent inline system's body
    std::error_code system_end;                  // why it ends (its last call), when it does
    std::uint64_t request_id = 0;                 // counts requests, for cancellation tickets

    // Holding. A hold outlives the registration (deregister, or the Accessor
    // destroyed, while its Access is held): it ends only with a release or a
    // revoke, so the world stays protected for the thread holding the Access.
    std::uint64_t hold_sequence = 0;
    // The thread the access was granted to (a blocking request's, or the one
    // running an inline completion while it runs); empty for executor
    // completions and once an inline completion has returned.
    std::atomic<std::thread::id> holder_thread{};
    // An executor completion granted and posted, not yet begun: nobody works
    // in the access, so a handler being destroyed need not wait for it (a
    // stopped io_context may never run it); it abandons the grant instead
    // (Core::shutdown, Core::begin_completion).
    bool completion_queued = false;
    bool completion_abandoned = false;
    // Its executor dropped a step duty without running it (a loop that is
    // gone): the duty for this request is carried by another thread.
    bool executor_unreachable = false;

    // Membership in the Core's ordered sets (at most one key per set).
    Key pending_key, bound_key, holder_key;
    Hook pending_hook, bound_hook, holder_hook;
    ListHook held_hook; // in Core::holding_ while holding

    Waiter waiter;

    std::uint64_t round_at(SimTime t) const noexcept { return round_instant == t ? round_count : 0; }
};

// One outcome to deliver after the handler's lock is released (see
// Core::flush_and_unlock).
struct Delivery {
    enum class Kind { complete, duty };
    Kind kind = Kind::complete;
    std::shared_ptr<Slot> slot;
    std::unique_ptr<AsyncCompletion> completion;         // complete
    std::error_code error;                                // complete
    Access access;                                        // complete, when granted
    bool runs_inline = false;                             // complete
    std::function<void(std::function<void()>)> poster;    // duty: posts to the request's executor

    // A completion to run: granted with `access`, or refused with `error`.
    static Delivery complete_with(std::shared_ptr<Slot> slot, std::unique_ptr<AsyncCompletion> completion,
                                  std::error_code error, Access access, bool runs_inline)
    {
        Delivery d;
        d.kind = Kind::complete;
        d.slot = std::move(slot);
        d.completion = std::move(completion);
        d.error = error;
        d.access = std::move(access);
        d.runs_inline = runs_inline;
        return d;
    }
    // The step duty of a request that waits on an executor, posted there.
    static Delivery duty_for(std::shared_ptr<Slot> slot, std::function<void(std::function<void()>)> poster)
    {
        Delivery d;
        d.kind = Kind::duty;
        d.slot = std::move(slot);
        d.poster = std::move(poster);
        return d;
    }
};

template <Key Slot::*K>
struct KeyLess {
    bool operator()(const Slot& a, const Slot& b) const noexcept { return a.*K < b.*K; }
};

using PendingSet = bi::set<Slot, bi::member_hook<Slot, Hook, &Slot::pending_hook>,
                           bi::compare<KeyLess<&Slot::pending_key>>>;
using BoundSet = bi::set<Slot, bi::member_hook<Slot, Hook, &Slot::bound_hook>,
                         bi::compare<KeyLess<&Slot::bound_key>>>;
using HolderSet = bi::set<Slot, bi::member_hook<Slot, Hook, &Slot::holder_hook>,
                          bi::compare<KeyLess<&Slot::holder_key>>>;
using HeldList = bi::list<Slot, bi::member_hook<Slot, ListHook, &Slot::held_hook>>;

class Core : public std::enable_shared_from_this<Core> {
public:
    // The handler's lock is held for a few hundred nanoseconds at a time, by
    // threads that hand grants to each other across cores. A default pthread
    // mutex puts a contender to sleep at once (a futex wait and a context
    // switch, ~10 us on a VM); glibc's adaptive mutex spins briefly first.
    class AdaptiveMutex {
    public:
        AdaptiveMutex() noexcept
        {
            pthread_mutexattr_t attr;
            pthread_mutexattr_init(&attr);
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
            pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
            pthread_mutex_init(&m_, &attr);
            pthread_mutexattr_destroy(&attr);
        }
        AdaptiveMutex(const AdaptiveMutex&) = delete;
        AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;
        ~AdaptiveMutex() { pthread_mutex_destroy(&m_); }
        void lock() noexcept { pthread_mutex_lock(&m_); }
        bool try_lock() noexcept { return pthread_mutex_trylock(&m_) == 0; }
        void unlock() noexcept
        {
            hold_time_valid_ = false;
            pthread_mutex_unlock(&m_);
        }

        // The wall time of this hold of the lock, read at its first use. Every
        // activity change made in one hold (a release, the next request, the
        // step's progress, the grant) is stamped with the same reading, which
        // lies inside the call that made the change: the bracket snapshot()'s
        // durations and the stall watchdog promise, at one clock read per hold
        // instead of one per stamp (a read costs ~26-42 ns here, the cost of a
        // whole inline grant's bookkeeping several times over). Caller holds
        // the lock.
        WallTime hold_time() noexcept
        {
            if (!hold_time_valid_) {
                hold_time_ = WallClock::now();
                hold_time_valid_ = true;
            }
            return hold_time_;
        }

    private:
        pthread_mutex_t m_;
        WallTime hold_time_{};
        bool hold_time_valid_ = false;
    };
    using Lock = std::unique_lock<AdaptiveMutex>;

    Core(World& world, HandlerConfig config);
    ~Core();

    Accessor register_accessor(std::string name, const AccessorOptions& options);
    Access request(const std::shared_ptr<Slot>& slot, SimTime t, WallTime deadline, bool try_only,
                   const std::stop_token& stop);
    // Releases `held` and requests `next` under one lock (Accessor::release_and_request).
    Access release_and_request(const std::shared_ptr<Slot>& slot, Access& held, SimTime next, WallTime deadline,
                               const std::stop_token& stop);
    AsyncTicket start_async(const std::shared_ptr<Slot>& slot, SimTime t, std::unique_ptr<AsyncCompletion> completion,
                            Access* held = nullptr);
    void start_system(const std::shared_ptr<Slot>& slot, SimTime first, Accessor::System system);
    void cancel_async(Slot& slot, std::uint64_t request) noexcept;
    // The run of an executor completion carrying a grant (see
    // detail::CompletionScope): begin returns false if the grant was abandoned
    // while queued (the handler was destroyed first).
    bool begin_completion(Slot& slot, std::uint64_t sequence);
    void end_completion(Slot& slot) noexcept;
    void release(Slot& slot, std::uint64_t sequence, std::optional<SimTime> next);
    void release(Slot& slot, std::uint64_t sequence, std::optional<SimTime> next, Lock& lock);
    void set_kind(Slot& slot, AccessorKind kind);
    void deregister(Slot& slot) noexcept;
    AccessorKind kind(const Slot& slot) const;

    SimTime now() const noexcept { return SimTime{SimDuration{now_ns_.load(std::memory_order_acquire)}}; }
    std::uint64_t steps() const noexcept { return steps_.load(std::memory_order_acquire); }
    std::uint64_t run_generation() const noexcept { return run_generation_.load(std::memory_order_acquire); }
    const HandlerConfig& config() const noexcept { return config_; }
    HandlerState state() const;

    void pause();
    void resume();
    void step(std::uint64_t n);
    void run_until(SimTime t);
    void stop();
    void run();
    bool wait_until_paused(WallTime deadline);
    void shutdown(); // stop and wait for holders: the handler's destructor
    Snapshot snapshot() const;
    bool revoke(const std::string& name);
    std::exception_ptr failure() const;
    void report(const Diagnostic& diagnostic) const;
    Subscription subscribe(EventCallback callback);
    void unsubscribe(std::uint64_t id) noexcept;

    World& world() noexcept { return world_; }

private:
    SimTime round(SimTime t) const { return round_to_grid(t, config_.step, config_.rounding); }
    // The time the world is at, or will be at once the step in flight completes.
    SimTime effective_now() const noexcept { return step_in_flight_ ? now_ + config_.step : now_; }
    bool has_holders() const noexcept { return exclusive_held_ || shared_holders_ > 0; }
    HandlerState state_locked() const noexcept;

    void add_bound(Slot& s, SimTime bound);
    // The references a released Access held, passed on to the next one.
    struct HeldRefs {
        std::shared_ptr<Core> core;
        std::shared_ptr<Slot> slot;
    };
    // An Access for the grant `s` holds; takes `refs`' references if it has
    // them (no count changes), else new ones.
    Access make_access(Slot& s, const std::shared_ptr<Slot>& slot, HeldRefs* refs = nullptr);
    // Ends an asynchronous request (or a persistent system) that is no longer
    // pending with `error`.
    void complete_async(Slot& s, std::error_code error);
    // Puts a request in the queue (activity waiting); the caller has checked it.
    void enqueue(Slot& s, SimTime at, SimTime requested, Waiting how);
    // One call of a persistent inline system, on the thread running them.
    void run_system_call(const std::shared_ptr<Slot>& slot);
    // True if this thread may run persistent systems (StepThread::host: the host only).
    bool runs_systems_here() const noexcept
    {
        return config_.step_thread != StepThread::host || std::this_thread::get_id() == host_thread_;
    }
    // A step duty runs on the request's executor (run_step_duty) or, if the
    // executor destroys the job without running it, is handed back
    // (duty_dropped): no duty is ever lost with the job that carried it.
    void run_step_duty(const std::shared_ptr<Slot>& slot);
    void duty_dropped(const std::shared_ptr<Slot>& slot) noexcept;
    void record_event(HandlerEvent::Kind kind);
    void deliver_events(Lock& lock);
    void deliver(Delivery& d);
    void run_inline_completion(Delivery& d);
    void remove_from_sets(Slot& s);
    // `self`: the request the calling thread just made (it steps if that is
    // next). `carry_for_others`: the caller waits for its own grant anyway, so
    // it also steps for another request that is next, instead of handing the
    // duty to that request's thread.
    void advance(Lock& lock, Slot* self, bool carry_for_others = false);
    Access request_locked(Lock& lock, const std::shared_ptr<Slot>& slot, SimTime t, WallTime deadline,
                          bool try_only, const std::stop_token& stop, HeldRefs* refs = nullptr);
    bool end_for_next(Slot& s, Access& held, SimTime next, HeldRefs& refs);
    void grant_at_now();
    void grant(Slot& s);
    // The instant time may step towards now, or now_ if it may not move.
    SimTime step_goal() const noexcept;
    bool can_step() const noexcept { return step_goal() != now_; }
    // `goal_known`: the caller has just seen can_step() true under this hold.
    void run_steps(Lock& lock, bool goal_known = false);
    bool take_up_duty(Lock& lock);
    void withdraw(Slot& s);
    void detach(Slot& s, bool revoked);
    void stop_locked();
    void end_hold(Slot& s);
    // The registration instant must be one the world is at, not one it is being
    // stepped to: waits (unless called from World::step itself) for a step in
    // flight to complete, and keeps the stepper from starting the next one
    // meanwhile, so a registration cannot starve behind a stepping loop.
    void wait_for_an_instant(Lock& lock);
    // True if the calling thread was granted an access that is still held.
    bool caller_holds() const;
    std::vector<std::string> waiting_for_locked() const;
    std::vector<std::pair<std::string, std::uint64_t>> repeating_at_now_locked() const;
    bool holds_by_bound_locked(const std::vector<std::string>& names) const;
    void watchdog_loop();
    bool report_from_watchdog(Lock& lock, const Diagnostic& d);
    void stop_watchdog();
    void arm_watchdog() // on a new wait: cheap unless the watchdog sleeps idle
    {
        if (watchdog_idle_) {
            watchdog_idle_ = false;
            watchdog_cv_.notify_one();
        }
    }
    // Wakes are queued under the lock and delivered after it is released, so a
    // woken thread does not run straight into the mutex its waker still holds
    // (that cost a second context switch per handoff). The shared_ptr keeps the
    // slot's Waiter alive until it is notified. (grant() signals an awake
    // waiter itself, under the lock, and queues only a sleeping one here.)
    void wake(Slot& s);
    // Delivers what was queued: notifies, posts and, unless the caller holds
    // the step duty (`stepping`), events and inline completions (queued on this
    // thread and run after the current one returns when called from inside
    // one: a trampoline, so systems that re-arm never nest). Returns true if it
    // ran user code, so a thread about to sleep re-checks its own state first.
    bool flush_and_unlock(Lock& lock, bool stepping = false);
    // Delivers queued wakes when a public member function returns.
    struct WakeOnExit {
        Core& core;
        Lock& lock;
        ~WakeOnExit()
        {
            if (lock.owns_lock()) core.flush_and_unlock(lock);
        }
    };
    errc stop_reason() const noexcept { return failure_ ? errc::world_failed : errc::stopped; }

    World& world_;
    const HandlerConfig config_;

    mutable AdaptiveMutex mutex_;
    SimTime now_{};
    std::atomic<std::int64_t> now_ns_{0};
    std::atomic<std::uint64_t> steps_{0};
    std::atomic<std::uint64_t> run_generation_{0};
    SimTime limit_ = kSimTimeMax;       // time may not advance beyond (pause)
    std::optional<SimTime> target_;     // run_until / step(n): advance even without requests
    bool stopped_ = false;
    std::exception_ptr failure_;

    bool stepping_ = false;       // step duty assigned or being carried out
    bool step_in_flight_ = false; // World::step running, mutex released
    std::thread::id stepper_;      // the thread running it
    bool host_running_ = false;
    bool host_duty_ = false;
    std::thread::id host_thread_; // the thread inside run()
    Waiter host_waiter_;

    PendingSet pending_;
    BoundSet bounds_;   // idle lockstep accessors: time may not pass their bound
    HolderSet lockstep_holders_; // lockstep holders, keyed by their possible next request at now
    HeldList holding_;           // every slot holding an access, registered or not (revoke, stop)
    int shared_holders_ = 0;
    bool exclusive_held_ = false;

    std::vector<std::shared_ptr<Slot>> wakes_; // blocking waiters to notify after the lock is released
    std::vector<Delivery> deliveries_;         // completions and step duties of asynchronous requests
    std::vector<Delivery> host_inline_; // StepThread::host: inline completions for the host thread
    std::vector<std::shared_ptr<Slot>> systems_due_; // persistent systems granted (or ended), in order
    std::shared_ptr<Slot> chain_ref_; // a chaining system's reference to its slot, for its next grant
    std::map<std::string, std::shared_ptr<Slot>, std::less<>> by_name_;
    std::uint64_t next_order_ = 0;
    std::uint64_t grant_sequence_ = 0;
    // The stall watchdog's progress: time advanced, or an operator acted. A
    // grant is none (grants at one instant can go on while time stands still).
    WallTime last_progress_ = WallClock::now();
    std::uint64_t grants_at_now_ = 0; // grants since time last advanced

    // For wait_until_paused, run() in any mode, shutdown(), pause() and
    // registrations waiting for a step: not on the grant path. Every unlock that
    // ends a change of state notifies it while somebody waits (flush_and_unlock),
    // so no path can change what a waiter's condition reads without waking it.
    mutable std::condition_variable_any state_cv_;
    int state_waiters_ = 0;
    // wait_until_paused alone: notified only at an unlock after which the
    // handler is quiet (quiet_locked), so a thread waiting for a pause sleeps
    // while the simulation runs instead of waking at every grant (it took a
    // CPU per tick from whatever else ran beside it).
    mutable std::condition_variable_any paused_cv_;
    int paused_waiters_ = 0;
    bool quiet_locked() const noexcept;
    int registrations_waiting_ = 0;

    // Stall watchdog (HandlerConfig::stall_timeout): sleeps until someone waits,
    // then wakes once per timeout to see whether time moved.
    std::condition_variable_any watchdog_cv_;
    bool watchdog_idle_ = false;
    bool watchdog_exit_ = false;
    bool stall_reported_ = false;
    WallTime stall_started_{}; // last_progress_ when the reported stall began
    std::thread watchdog_;

    // Events (subscribe): queued under the lock with their generation and
    // delivered in order by one thread at a time, so no subscriber sees two at
    // once or out of order; the subscribers' list has a lock of its own, held
    // (recursively) while callbacks run, so an unsubscribe waits for a callback
    // running on another thread.
    struct Subscriber {
        std::uint64_t id = 0;
        EventCallback callback;
        bool active = true;
    };
    std::deque<HandlerEvent> events_;
    bool delivering_events_ = false;
    std::recursive_mutex subscribers_mutex_;
    std::list<std::shared_ptr<Subscriber>> subscribers_;
    std::uint64_t next_subscriber_ = 1;
    std::atomic<int> subscriber_count_{0};
};

} // namespace simsync::detail

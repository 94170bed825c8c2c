#pragma once
/// @file
/// Accessors and accesses: how a thread gets timestamped access to the world.

#include <simsync/core/error.hpp>
#include <simsync/core/time.hpp>
#include <simsync/core/world.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>
#include <typeinfo>

namespace simsync {

class Access;

namespace detail {
class Core;
struct Slot;

// The type-erased completion of an asynchronous request; simsync/core/asio.hpp
// makes one from an Asio completion handler. The core calls exactly one of
// `complete` (with the Access, or an empty one and the refusal), after its lock
// is released; `poster` gives a function that runs a job (the step duty) on
// the request's executor.
class AsyncCompletion;

// One spare block per accessor for its asynchronous completions. An accessor
// has at most one request pending, so the block of the completion that just
// finished serves the next request (two blocks alternate when a completion
// asks again before it is destroyed): no allocation per request once warm.
// allocate on the requesting thread, deallocate on whichever ends the request.
class CompletionMemory {
public:
    CompletionMemory() noexcept = default;
    CompletionMemory(const CompletionMemory&) = delete;
    CompletionMemory& operator=(const CompletionMemory&) = delete;
    ~CompletionMemory();
    void* allocate(std::size_t size);
    void deallocate(void* block) noexcept;

private:
    std::atomic<void*> spare_{nullptr};
};

class AsyncCompletion {
public:
    virtual ~AsyncCompletion() = default;
    // True for an inline system: completed on the thread that steps the world.
    virtual bool runs_inline() const noexcept = 0;
    virtual void complete(std::error_code error, Access access) = 0;
    virtual std::function<void(std::function<void()>)> poster() const = 0;

    // Made by make_completion in an accessor's CompletionMemory, and given
    // back there when deleted (a destroying delete: it knows the block).
    static void operator delete(AsyncCompletion* p, std::destroying_delete_t) noexcept;

protected:
    AsyncCompletion() noexcept = default;

private:
    template <class T, class... Args>
    friend std::unique_ptr<AsyncCompletion> make_completion(CompletionMemory* memory, Args&&... args);
    CompletionMemory* memory_ = nullptr;
};

template <class T, class... Args>
std::unique_ptr<AsyncCompletion> make_completion(CompletionMemory* memory, Args&&... args)
{
    static_assert(alignof(T) <= alignof(std::max_align_t), "over-aligned completion handler");
    void* block = memory->allocate(sizeof(T));
    T* completion = nullptr;
    try {
        completion = ::new (block) T(std::forward<Args>(args)...);
    } catch (...) {
        memory->deallocate(block);
        throw;
    }
    completion->memory_ = memory;
    return std::unique_ptr<AsyncCompletion>(completion);
}

// Identifies one asynchronous request, for its cancellation.
struct AsyncTicket {
    std::weak_ptr<Core> core;
    std::weak_ptr<Slot> slot;
    std::uint64_t request = 0;
};
// Withdraws the request if it is still pending (completing it with
// errc::cancelled); no-op otherwise. Any thread.
void cancel_async(const AsyncTicket& ticket) noexcept;

// Brackets the run of an executor completion that carries a granted Access
// (simsync/core/asio.hpp wraps every such completion in one). While it lives, the
// running thread is the access's holder, as a blocking requester is: the
// handler's calls that would wait for that access (wait_until_paused, run())
// refuse on it. A grant that is no longer held when its completion begins is
// delivered as the refusal it has become, so that the completion's error is
// empty exactly when its Access is held: revoked by an operator meanwhile,
// `not_registered` (what the revoke tells a waiting request); abandoned because
// the handler was destroyed first (its hold ended so the destructor need not
// wait for an executor that may never run it), `stopped`.
class CompletionScope {
public:
    CompletionScope(std::error_code& error, Access& access);
    ~CompletionScope();
    CompletionScope(const CompletionScope&) = delete;
    CompletionScope& operator=(const CompletionScope&) = delete;

    // The same for an inline completion, which runs on the thread that made the
    // grant possible once the handler's lock is released: an operator's revoke
    // may land in between.
    static void refuse_if_revoked(std::error_code& error, Access& access) noexcept;

private:
    std::shared_ptr<Core> core_;
    std::shared_ptr<Slot> slot_;
};
} // namespace detail

/// Whether an accessor holds simulated time back between its accesses.
enum class AccessorKind {
    /// Time never moves past an instant at which the accessor could still ask:
    /// between a release and its next request it holds time at the bound it
    /// declared on release. Deterministic: same config, same grants.
    lockstep,
    /// Best effort: holds time back only while it holds an access or has a
    /// pending request. A request for a time already passed is refused.
    free,
};

/// What an access allows.
enum class AccessMode {
    exclusive, ///< alone with the world; may write. The default.
    shared,    ///< read-only; several shared accesses at one instant run at once.
};

const char* to_string(AccessorKind kind) noexcept;
const char* to_string(AccessMode mode) noexcept;

/// Options of an accessor, fixed at registration except `kind`
/// (see Accessor::set_kind).
struct AccessorOptions {
    AccessorKind kind = AccessorKind::lockstep;
    AccessMode mode = AccessMode::exclusive;
    /// Order at one instant: higher priority first, then registration order.
    int priority = 0;
    /// Lockstep only: the time of the first request. Until then the accessor
    /// holds time there. Unset: it holds time at the current time.
    SimTime first_request = SimTime::min();
    /// Lockstep only: a plain release (without naming the next request) declares
    /// the bound `granted time + lookahead`. Zero holds time at the granted time
    /// until the next request.
    SimDuration lookahead{0};
};

/// A granted access to the world at one simulated instant, or the reason why
/// none was granted.
///
/// Copy: no. Move: yes (ownership of the access moves).
/// Thread safety: distinct objects: safe. Shared objects: unsafe; an access
/// belongs to the thread that requested it, though it may be released on another.
///
/// While an Access converts to `true`, the handler does not step the world and,
/// for an exclusive access, grants nobody else. It stays held until it is
/// released or destroyed, also if its Accessor is deregistered or destroyed
/// meanwhile; only an operator's revoke ends it earlier, and then it converts
/// to false and revoked() is true. Destroying it releases it, also during stack
/// unwinding: an exception thrown inside an access releases it.
/// An Access must not outlive the SimSyncHandler's world.
///
/// @code
/// simsync::Access a = camera.request_access(simsync::sim_time(33ms));
/// if (!a) return;                       // a.error(): time_passed, stopped, ...
/// read_pixels(a.world_as<MyWorld>(), a.granted_time());
/// a.release(simsync::sim_time(67ms));   // lockstep: hold time at the next frame
/// @endcode
class Access {
public:
    Access() noexcept = default;
    Access(Access&& other) noexcept;
    Access& operator=(Access&& other) noexcept;
    Access(const Access&) = delete;
    Access& operator=(const Access&) = delete;
    /// Releases the access (as `release()`), if still held.
    ~Access();

    /// True while this object holds a granted access that protects the world:
    /// false if none was granted, after release, and after a revoke.
    explicit operator bool() const noexcept;
    /// Why no access was granted (empty when one was granted, also after release).
    std::error_code error() const noexcept { return error_; }

    /// The grid instant at which the access was granted: the simulation's current
    /// time for as long as the access is held.
    SimTime granted_time() const noexcept { return granted_; }
    /// The time the caller asked for, before rounding.
    SimTime requested_time() const noexcept { return requested_; }
    AccessMode mode() const noexcept { return mode_; }
    /// Position of this grant in the handler's total order of grants (0, 1, 2, ...).
    /// Shared accesses held at once still have distinct, deterministic numbers.
    std::uint64_t sequence() const noexcept { return sequence_; }

    /// The world. @throws simsync::Error (invalid_state) if no access is held,
    ///         also after a revoke (the world is no longer protected).
    World& world() const;
    /// The world as its concrete type. @throws std::bad_cast if it is not a `T`.
    template <class T>
    T& world_as() const
    {
        return dynamic_cast<T&>(world());
    }

    /// Releases the access. A lockstep accessor then holds time at
    /// `granted_time() + lookahead` until its next request. No-op if not held.
    void release() noexcept;
    /// Releases the access and, atomically, declares the time of the accessor's
    /// next request: a lockstep accessor holds time at (the grid rounding of)
    /// `next_request` until it asks again, so time cannot slip past it.
    /// A free accessor ignores the bound. A later request before that time is
    /// served only if time has not passed it (it may have advanced up to the bound).
    /// @throws simsync::Error (invalid_argument) if `next_request` is before the
    ///         granted time; the access is then still held.
    void release(SimTime next_request);

    /// True if an operator revoked this accessor while the access was held: the
    /// world is then no longer protected for this thread. Stop touching it.
    /// Stays true until the Access is released or destroyed.
    bool revoked() const noexcept;

private:
    friend class detail::Core;
    friend class detail::CompletionScope;
    Access(std::error_code error, SimTime requested) noexcept
        : error_(error), requested_(requested)
    {
    }
    void reset() noexcept;

    std::shared_ptr<detail::Core> core_;
    std::shared_ptr<detail::Slot> slot_;
    World* world_ = nullptr;
    std::error_code error_;
    SimTime requested_{};
    SimTime granted_{};
    AccessMode mode_ = AccessMode::exclusive;
    std::uint64_t sequence_ = 0;
};

/// A registered participant of the simulation, made by
/// SimSyncHandler::register_accessor. Four ways to wait for an access, mixed
/// freely in one handler under the same grant rule and order:
///  - a blocking request on a thread of its own (`request_access` and variants);
///  - an asynchronous request completed on an Asio executor
///    (`async_request_access` with a handler bound to an executor, a C++20
///    coroutine with `use_awaitable`, ...: see simsync/core/asio.hpp);
///  - an inline system: an asynchronous request whose completion handler has no
///    executor of its own (or is wrapped in simsync::run_inline), completed on
///    the thread that steps the world, right after the step, with no handoff;
///  - `use_future` and any other Asio completion token.
///
/// Copy: no. Move: yes.
/// Thread safety: one request at a time per accessor (a second one, blocking or
/// asynchronous, while one is pending or an access is held throws `busy`).
/// `set_kind`, `kind`, `name`, `registered` and `deregister` are safe from any
/// thread; a deregister from another thread while a request waits makes it end
/// with `not_registered`.
/// Destroying the Accessor deregisters it; an Access it was granted stays held
/// until that Access is released or destroyed. It may outlive the
/// SimSyncHandler: requests then return `stopped`.
///
/// Requests at a time `t`:
///  - `t` is rounded to the step grid with the handler's Rounding policy;
///  - a rounded time before the current time is refused with `time_passed`
///    (exactly the current time is granted). Once a step has begun, the
///    handler has left the instant now() still reads: a free accessor, which
///    holds nothing, that asks for that instant is refused (a lockstep one
///    holds time, so the now() it reads stays grantable);
///  - the call blocks until the handler has stepped the world to the rounded time
///    and it is this accessor's turn at that instant (priority, then registration
///    order), then returns the Access. While waiting, the calling thread may be
///    asked to step the world itself (StepThread::any): that saves a thread handoff.
///  - one way to cancel: a `std::stop_token` (blocking requests) or an Asio
///    cancellation slot (asynchronous ones) withdraws the request, which ends
///    with `cancelled`; like a timeout, a lockstep accessor then keeps holding
///    time at the instant it asked for (it could ask again).
class Accessor {
public:
    Accessor() noexcept = default;
    Accessor(Accessor&&) noexcept = default;
    Accessor& operator=(Accessor&& other) noexcept;
    Accessor(const Accessor&) = delete;
    Accessor& operator=(const Accessor&) = delete;
    ~Accessor();

    /// Blocks until the access at `t` is granted or refused; a stop requested
    /// on `stop` meanwhile withdraws the request (`cancelled`).
    Access request_access(SimTime t, std::stop_token stop = {});
    /// As request_access, but gives up with `timed_out` at the wall-clock `deadline`.
    Access request_access_until(SimTime t, WallTime deadline, std::stop_token stop = {});
    /// As request_access, but gives up with `timed_out` after `timeout` of wall time.
    Access request_access_for(SimTime t, WallClock::duration timeout, std::stop_token stop = {});
    /// Grants only if that needs no waiting for another thread (the calling
    /// thread may step the world to `t` itself); otherwise `would_block`.
    Access try_request_access(SimTime t);

    /// Releases `held` and asks for `next` in one call, under one lock: what
    /// `held.release(next)` followed by `request_access(next, stop)` does, with
    /// the same order and determinism, and nothing in between (no bound is
    /// declared, the request itself holds time at `next`). The way an accessor
    /// that always asks again (a sensor, a controller) goes from one access to
    /// the next. The calling thread may step the world for whichever request
    /// is next meanwhile (it waits anyway) and hand that grant over ready-made.
    /// `held` may be empty (nothing to release: a plain request); it is empty
    /// on return unless the call throws.
    /// @code
    /// simsync::Access a = camera.request_access(t);
    /// while (a) {
    ///     render(a.world_as<MyWorld>());
    ///     t += period;
    ///     a = camera.release_and_request(std::move(a), t);
    /// }
    /// @endcode
    /// @throws simsync::Error: invalid_argument if `held` is an access of
    ///         another accessor or `next` is before its granted time (`held`
    ///         is then still held); busy if another request of this accessor
    ///         is pending.
    Access release_and_request(Access&& held, SimTime next, std::stop_token stop = {});

    /// The asynchronous release_and_request: releases `held` and starts the
    /// request for `next` in one operation under one lock, completing as
    /// async_request_access does (one completion per grant; once warm no
    /// allocation per request). Defined in simsync/core/asio.hpp.
    /// @throws simsync::Error as release_and_request.
    template <class CompletionToken>
    auto async_release_and_request(Access&& held, SimTime next, CompletionToken&& token);

    /// A persistent inline system's body: called with the access at each
    /// instant it asked for; returns the time it asks for next, or
    /// std::nullopt to end.
    using System = std::function<std::optional<SimTime>(Access&)>;

    /// Makes this accessor a persistent inline system from `first` on:
    /// registered once, `system` is called on the thread that steps the world,
    /// right after the step that reaches each instant it asks for
    /// (StepThread::host: on the host thread), with no completion queued and no
    /// allocation per call. When it returns, its access is released and its
    /// next request made in one operation, as release_and_request does; a
    /// system that moved or released the Access itself just asks again. The
    /// Gazebo PostUpdate / Drake periodic-event model at the cost of a function
    /// call. It ends when it returns std::nullopt (released as `release()`:
    /// a lockstep accessor then holds time at granted + lookahead), or with one
    /// last call whose Access converts to false and says why in error()
    /// (stopped, not_registered after a deregister or revoke, world_failed,
    /// time_passed for a `first` already passed); that call's result is
    /// ignored. An exception from it, or a next time before the granted one,
    /// stops the handler like a World::step that throws (see failure()).
    /// Returns at once; the first call may come before it returns.
    /// @throws simsync::Error: busy (a request pending or an access held),
    ///         invalid_argument (an empty system), invalid_state (moved-from).
    void run_system(SimTime first, System system);

    /// Starts an asynchronous request for `t` and returns at once; `token` says
    /// how it completes, with the signature `void(std::error_code, Access)`: a
    /// callback, `boost::asio::use_future`, `boost::asio::use_awaitable`, ...
    /// The error is empty exactly when the Access is held, else the refusal
    /// (time_passed, stopped, not_registered, world_failed, cancelled), which
    /// the Access's error() repeats. A grant revoked by an operator before its
    /// completion runs arrives as not_registered.
    ///  - A handler with an associated executor completes there (posted, never
    ///    inside this call), and the request's executor may be asked to step the
    ///    world on its way to the grant. Its executor's work count is held while
    ///    the request is pending: keep the execution context alive (and running)
    ///    until it completes, or cancel it first.
    ///  - A handler without one (a plain lambda; simsync::run_inline) is an inline
    ///    system: it completes on the thread that makes the grant possible, the
    ///    one that stepped the world to `t` (StepThread::host: always the host
    ///    thread), never with the handler's lock held. A request granted or
    ///    refused at once may complete before this call returns. Requests made
    ///    from inside an inline completion complete after it returns, never
    ///    nested, so a system that re-arms itself does not grow the stack.
    ///  - Terminal, partial or total cancellation through the handler's
    ///    associated cancellation slot withdraws a pending request (`cancelled`).
    /// The calling thread may step the world itself if this request is the next
    /// to be granted (StepThread::any). Defined in simsync/core/asio.hpp: include it.
    /// @throws simsync::Error: busy (a request pending or an access held),
    ///         invalid_state (a moved-from Accessor).
    template <class CompletionToken>
    auto async_request_access(SimTime t, CompletionToken&& token);

    /// Switches between lockstep and free while the simulation runs. Becoming
    /// lockstep while idle holds time at the current time (the accessor could ask
    /// for it). Thread-safe.
    void set_kind(AccessorKind kind);
    AccessorKind kind() const;

    /// Deregisters now: a waiting request returns `not_registered`, a lockstep
    /// bound is lifted and the name is free again. A held access stays held
    /// (and protected) until its Access is released or destroyed.
    void deregister() noexcept;
    /// False after deregister() or an operator's revoke.
    bool registered() const noexcept;
    const std::string& name() const;

private:
    friend class detail::Core;
    Accessor(std::shared_ptr<detail::Core> core, std::shared_ptr<detail::Slot> slot) noexcept
        : core_(std::move(core)), slot_(std::move(slot))
    {
    }
    // The engine's side of async_request_access and async_release_and_request
    // (simsync/core/asio.hpp): `held`, if given, is released first, in one operation.
    detail::AsyncTicket start_async(SimTime t, std::unique_ptr<detail::AsyncCompletion> completion,
                                    Access* held = nullptr);
    detail::CompletionMemory* completion_memory() const;

    std::shared_ptr<detail::Core> core_;
    std::shared_ptr<detail::Slot> slot_;
};

} // namespace simsync

// The public classes are thin handles onto detail::Core.

#include "core.hpp"

#include <utility>

namespace simsync {

// ----------------------------------------------------------------------- Access

Access::Access(Access&& other) noexcept { *this = std::move(other); }

Access& Access::operator=(Access&& other) noexcept
{
    if (this != &other) {
        release();
        core_ = std::move(other.core_);
        slot_ = std::move(other.slot_);
        world_ = std::exchange(other.world_, nullptr);
        error_ = other.error_;
        requested_ = other.requested_;
        granted_ = other.granted_;
        mode_ = other.mode_;
        sequence_ = other.sequence_;
        other.reset();
    }
    return *this;
}

Access::~Access() { release(); }

void Access::reset() noexcept
{
    core_.reset();
    slot_.reset();
    world_ = nullptr;
}

Access::operator bool() const noexcept { return slot_ && !slot_->revoked.load(std::memory_order_acquire); }

World& Access::world() const
{
    if (!slot_) {
        throw Error(errc::invalid_state,
                    "Access::world() called without a held access (error: " + error_.message() + ")");
    }
    if (slot_->revoked.load(std::memory_order_acquire)) {
        throw Error(errc::invalid_state, "Access::world() called after an operator revoked accessor '" +
                                             slot_->name + "': the world is no longer protected");
    }
    return *world_;
}

void Access::release() noexcept
{
    if (!slot_) return;
    core_->release(*slot_, sequence_, std::nullopt);
    reset();
}

void Access::release(SimTime next_request)
{
    if (!slot_) return;
    core_->release(*slot_, sequence_, next_request); // throws before releasing on bad input
    reset();
}

bool Access::revoked() const noexcept { return slot_ && slot_->revoked.load(); }

// --------------------------------------------------------------------- Accessor

Accessor& Accessor::operator=(Accessor&& other) noexcept
{
    if (this != &other) {
        deregister();
        core_ = std::move(other.core_);
        slot_ = std::move(other.slot_);
    }
    return *this;
}

Accessor::~Accessor() { deregister(); }

Access Accessor::request_access(SimTime t, std::stop_token stop)
{
    return request_access_until(t, WallTime::max(), std::move(stop));
}

Access Accessor::request_access_until(SimTime t, WallTime deadline, std::stop_token stop)
{
    if (!slot_) throw Error(errc::invalid_state, "request on an empty (moved-from) Accessor");
    return core_->request(slot_, t, deadline, false, stop);
}

Access Accessor::request_access_for(SimTime t, WallClock::duration timeout, std::stop_token stop)
{
    return request_access_until(t, deadline_after(timeout), std::move(stop));
}

Access Accessor::release_and_request(Access&& held, SimTime next, std::stop_token stop)
{
    if (!slot_) throw Error(errc::invalid_state, "release_and_request on an empty (moved-from) Accessor");
    return core_->release_and_request(slot_, held, next, WallTime::max(), stop);
}

Access Accessor::try_request_access(SimTime t)
{
    if (!slot_) throw Error(errc::invalid_state, "request on an empty (moved-from) Accessor");
    return core_->request(slot_, t, WallTime::max(), true, std::stop_token{});
}

detail::AsyncTicket Accessor::start_async(SimTime t, std::unique_ptr<detail::AsyncCompletion> completion,
                                          Access* held)
{
    if (!slot_) throw Error(errc::invalid_state, "async request on an empty (moved-from) Accessor");
    return core_->start_async(slot_, t, std::move(completion), held);
}

detail::CompletionMemory* Accessor::completion_memory() const
{
    if (!slot_) throw Error(errc::invalid_state, "async request on an empty (moved-from) Accessor");
    return &slot_->completion_memory;
}

void Accessor::run_system(SimTime first, System system)
{
    if (!slot_) throw Error(errc::invalid_state, "run_system on an empty (moved-from) Accessor");
    if (!system) throw Error(errc::invalid_argument, "run_system of '" + slot_->name + "': the system is empty");
    core_->start_system(slot_, first, std::move(system));
}

// ------------------------------------------------------ asynchronous completions

namespace {
// A block: its size first, then the completion (aligned as malloc aligns).
struct alignas(std::max_align_t) BlockHeader {
    std::size_t size;
};
void* payload(BlockHeader* h) noexcept { return h + 1; }
BlockHeader* header(void* p) noexcept { return static_cast<BlockHeader*>(p) - 1; }
} // namespace

detail::CompletionMemory::~CompletionMemory()
{
    if (void* spare = spare_.exchange(nullptr)) ::operator delete(header(spare));
}

void* detail::CompletionMemory::allocate(std::size_t size)
{
    if (void* spare = spare_.exchange(nullptr, std::memory_order_acquire)) {
        if (header(spare)->size >= size) return spare;
        ::operator delete(header(spare));
    }
    auto* h = static_cast<BlockHeader*>(::operator new(sizeof(BlockHeader) + size));
    h->size = size;
    return payload(h);
}

void detail::CompletionMemory::deallocate(void* block) noexcept
{
    void* expected = nullptr;
    if (!spare_.compare_exchange_strong(expected, block, std::memory_order_release, std::memory_order_relaxed)) {
        ::operator delete(header(block)); // a spare is kept already
    }
}

void detail::AsyncCompletion::operator delete(AsyncCompletion* p, std::destroying_delete_t) noexcept
{
    CompletionMemory* memory = p->memory_;
    p->~AsyncCompletion();
    if (memory != nullptr) {
        memory->deallocate(p);
    } else {
        ::operator delete(p); // made by a plain new
    }
}

detail::CompletionScope::CompletionScope(std::error_code& error, Access& access)
{
    if (!access.slot_) return; // a refusal
    core_ = access.core_;
    slot_ = access.slot_;
    if (!core_->begin_completion(*slot_, access.sequence_)) {
        // Abandoned: its hold is over, nothing to release.
        const SimTime requested = access.requested_;
        access.reset();
        access = Access(errc::stopped, requested);
        error = errc::stopped;
        slot_.reset();
        return;
    }
    // Checked after begin_completion: a revoke from here on finds this thread
    // holding the access (revoked while held, which the Access reports); one
    // before it leaves no hold to begin.
    refuse_if_revoked(error, access);
}

void detail::CompletionScope::refuse_if_revoked(std::error_code& error, Access& access) noexcept
{
    if (!access.slot_ || !access.slot_->revoked.load(std::memory_order_acquire)) return;
    const SimTime requested = access.requested_;
    access.release(); // no-op on the revoked hold; ends this Access's part in it
    access = Access(errc::not_registered, requested);
    error = errc::not_registered;
}

detail::CompletionScope::~CompletionScope()
{
    if (slot_) core_->end_completion(*slot_);
}

void detail::cancel_async(const AsyncTicket& ticket) noexcept
{
    const auto core = ticket.core.lock();
    const auto slot = ticket.slot.lock();
    if (core && slot) core->cancel_async(*slot, ticket.request);
}

// ----------------------------------------------------------------- Subscription

Subscription::Subscription(Subscription&& other) noexcept
    : core_(std::move(other.core_)), id_(std::exchange(other.id_, 0))
{
}

Subscription& Subscription::operator=(Subscription&& other) noexcept
{
    if (this != &other) {
        reset();
        core_ = std::move(other.core_);
        id_ = std::exchange(other.id_, 0);
    }
    return *this;
}

Subscription::~Subscription() { reset(); }

void Subscription::reset() noexcept
{
    if (id_ == 0) return;
    if (const auto core = core_.lock()) core->unsubscribe(id_);
    id_ = 0;
    core_.reset();
}

void Accessor::set_kind(AccessorKind kind)
{
    if (!slot_) throw Error(errc::invalid_state, "set_kind on an empty (moved-from) Accessor");
    core_->set_kind(*slot_, kind);
}

AccessorKind Accessor::kind() const
{
    if (!slot_) throw Error(errc::invalid_state, "kind() on an empty (moved-from) Accessor");
    return core_->kind(*slot_);
}

void Accessor::deregister() noexcept
{
    if (slot_) core_->deregister(*slot_);
}

bool Accessor::registered() const noexcept { return slot_ && slot_->registered.load(); }

const std::string& Accessor::name() const
{
    if (!slot_) throw Error(errc::invalid_state, "name() on an empty (moved-from) Accessor");
    return slot_->name;
}

// --------------------------------------------------------------- SimSyncHandler

SimSyncHandler::SimSyncHandler(World& world, HandlerConfig config)
    : core_(std::make_shared<detail::Core>(world, config))
{
}

SimSyncHandler::~SimSyncHandler() { core_->shutdown(); }

Accessor SimSyncHandler::register_accessor(std::string name, AccessorOptions options)
{
    return core_->register_accessor(std::move(name), options);
}

SimTime SimSyncHandler::now() const noexcept { return core_->now(); }
SimDuration SimSyncHandler::step_size() const noexcept { return core_->config().step; }
Rounding SimSyncHandler::rounding() const noexcept { return core_->config().rounding; }
std::uint64_t SimSyncHandler::steps() const noexcept { return core_->steps(); }
HandlerState SimSyncHandler::state() const { return core_->state(); }
std::uint64_t SimSyncHandler::run_generation() const noexcept { return core_->run_generation(); }
Subscription SimSyncHandler::subscribe(EventCallback callback) { return core_->subscribe(std::move(callback)); }
void SimSyncHandler::pause() { core_->pause(); }
void SimSyncHandler::resume() { core_->resume(); }
void SimSyncHandler::step(std::uint64_t n) { core_->step(n); }
void SimSyncHandler::run_until(SimTime t) { core_->run_until(t); }
void SimSyncHandler::stop() { core_->stop(); }
void SimSyncHandler::run() { core_->run(); }
bool SimSyncHandler::wait_until_paused(WallTime deadline) { return core_->wait_until_paused(deadline); }
Snapshot SimSyncHandler::snapshot() const { return core_->snapshot(); }
bool SimSyncHandler::revoke(const std::string& name) { return core_->revoke(name); }
std::exception_ptr SimSyncHandler::failure() const { return core_->failure(); }
void SimSyncHandler::report(const Diagnostic& diagnostic) const { core_->report(diagnostic); }

void SimSyncHandler::report_accessor_ended(const std::string& what, const std::string& name, std::error_code reason,
                                           const std::string& consequence) const
{
    Diagnostic d;
    d.kind = Diagnostic::Kind::accessor_ended;
    d.at = now();
    d.accessor = name;
    d.reason = reason;
    d.message = "simsync: " + what + " '" + name + "' ended at " + format_seconds(d.at) +
                " s: its request was refused (" + reason.message() + ")";
    if (!consequence.empty()) d.message += "; " + consequence;
    report(d);
}

// ------------------------------------------------------------------- to_string

const char* to_string(AccessorKind kind) noexcept
{
    return kind == AccessorKind::lockstep ? "lockstep" : "free";
}

const char* to_string(AccessMode mode) noexcept
{
    return mode == AccessMode::exclusive ? "exclusive" : "shared";
}

const char* to_string(HandlerState state) noexcept
{
    switch (state) {
    case HandlerState::running: return "running";
    case HandlerState::paused: return "paused";
    case HandlerState::stopped: return "stopped";
    }
    return "?";
}

const char* to_string(HandlerEvent::Kind kind) noexcept
{
    switch (kind) {
    case HandlerEvent::Kind::paused: return "paused";
    case HandlerEvent::Kind::resumed: return "resumed";
    case HandlerEvent::Kind::stepping: return "stepping";
    case HandlerEvent::Kind::running_until: return "running_until";
    case HandlerEvent::Kind::target_reached: return "target_reached";
    case HandlerEvent::Kind::stopped: return "stopped";
    }
    return "?";
}

const char* to_string(Diagnostic::Kind kind) noexcept
{
    switch (kind) {
    case Diagnostic::Kind::stall: return "stall";
    case Diagnostic::Kind::stall_over: return "stall_over";
    case Diagnostic::Kind::accessor_ended: return "accessor_ended";
    }
    return "?";
}

const char* to_string(AccessorStatus::Activity activity) noexcept
{
    switch (activity) {
    case AccessorStatus::Activity::idle: return "idle";
    case AccessorStatus::Activity::waiting: return "waiting";
    case AccessorStatus::Activity::holding: return "holding";
    }
    return "?";
}

} // namespace simsync

// What the handler tells about itself: the snapshot (who holds, who waits, who
// time waits for) and the stall watchdog that reports when time stands still.

#include "core.hpp"

#include <algorithm>
#include <cstdio>

namespace simsync::detail {

// ------------------------------------------------------------------ diagnostics

Snapshot Core::snapshot() const
{
    Lock lock(mutex_);
    const auto wall_now = WallClock::now();
    Snapshot snap;
    snap.now = now_;
    snap.state = state_locked();
    snap.steps = steps_.load();
    snap.grants = grant_sequence_;
    if (target_) snap.pause_at = *target_;
    std::vector<const Slot*> slots;
    slots.reserve(by_name_.size());
    for (const auto& [name, slot] : by_name_) slots.push_back(slot.get());
    for (const Slot& s : holding_) {
        if (!s.registered.load()) slots.push_back(&s); // deregistered, Access still held
    }
    std::sort(slots.begin(), slots.end(), [](const Slot* a, const Slot* b) { return a->order < b->order; });
    for (const Slot* s : slots) {
        AccessorStatus st;
        st.name = s->name;
        st.kind = s->kind;
        st.mode = s->options.mode;
        st.priority = s->options.priority;
        st.registered = s->registered.load();
        st.activity = s->activity == Activity::idle      ? AccessorStatus::Activity::idle
                      : s->activity == Activity::waiting ? AccessorStatus::Activity::waiting
                                                         : AccessorStatus::Activity::holding;
        st.time = s->activity == Activity::holding ? now_ : s->last_time;
        st.for_how_long = wall_now - s->since;
        st.grants = s->grants;
        snap.accessors.push_back(std::move(st));
    }
    snap.waiting_for = waiting_for_locked();
    if (!snap.waiting_for.empty()) snap.waiting_for_how_long = wall_now - last_progress_;
    return snap;
}

// Who is time waiting for? Only meaningful if somebody wants time to move.
std::vector<std::string> Core::waiting_for_locked() const
{
    std::vector<std::string> names;
    const bool wanted = !pending_.empty() || target_.has_value();
    if (stopped_ || !wanted) return names;
    if (stepping_) {
        // A step duty handed to a request that has not taken it up yet (its
        // thread not yet awake, its executor not running): time waits for it.
        for (const Slot& s : pending_) {
            if (s.step_duty) names.push_back(s.name);
        }
        return names;
    }
    const bool at_now =
        !pending_.empty() && pending_.begin()->pending_key.time_ns == now_.time_since_epoch().count();
    if (has_holders()) {
        std::vector<const Slot*> holders;
        for (const Slot& s : holding_) holders.push_back(&s);
        std::sort(holders.begin(), holders.end(), [](const Slot* a, const Slot* b) { return a->order < b->order; });
        for (const Slot* s : holders) names.push_back(s->name);
    } else if (at_now) {
        // Blocked at this instant by a lockstep accessor ahead in order.
        if (!bounds_.empty() && bounds_.begin()->bound_key < pending_.begin()->pending_key) {
            names.push_back(bounds_.begin()->name);
        }
    } else if (state_locked() != HandlerState::paused && !bounds_.empty()) {
        const auto lowest = bounds_.begin()->bound_key.time_ns;
        for (auto it = bounds_.begin(); it != bounds_.end() && it->bound_key.time_ns == lowest; ++it) {
            names.push_back(it->name);
        }
    }
    return names;
}

// Accessors granted more than once at the current instant that still keep
// time there, most grants first: the stall report's sign of an accessor asking
// again for the instant it was just granted.
std::vector<std::pair<std::string, std::uint64_t>> Core::repeating_at_now_locked() const
{
    const std::int64_t now_ns = now_.time_since_epoch().count();
    std::vector<const Slot*> repeating;
    for (const auto& [name, slot] : by_name_) {
        const Slot& s = *slot;
        if (s.round_instant != now_ || s.round_count < 2) continue;
        // Only one that keeps time here itself: holding, asking or bound at
        // this instant (one that repeated and now waits for later is no cause).
        const bool here = s.activity == Activity::holding ||
                          (s.activity == Activity::waiting && s.request_time == now_) ||
                          (s.bound_hook.is_linked() && s.bound_key.time_ns == now_ns);
        if (here) repeating.push_back(&s);
    }
    std::sort(repeating.begin(), repeating.end(), [](const Slot* a, const Slot* b) {
        return a->round_count != b->round_count ? a->round_count > b->round_count : a->order < b->order;
    });
    std::vector<std::pair<std::string, std::uint64_t>> names;
    for (const Slot* s : repeating) names.emplace_back(s->name, s->round_count);
    return names;
}

// True if one of `names` holds time as an idle lockstep accessor (its bound).
bool Core::holds_by_bound_locked(const std::vector<std::string>& names) const
{
    for (const auto& name : names) {
        const auto it = by_name_.find(name);
        if (it != by_name_.end() && it->second->bound_hook.is_linked()) return true;
    }
    return false;
}

// ------------------------------------------------------------------ watchdog

namespace {

std::string seconds_text(WallClock::duration d)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s", std::chrono::duration<double>(d).count());
    return buf;
}

std::string join(const std::vector<std::string>& names)
{
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
    return out;
}

} // namespace

// Sleeps without a deadline while nobody waits for time (or the simulation is
// paused by an operator, when waiting is expected); otherwise wakes when time
// would have stood still for stall_timeout, and reports if it did. After a
// report it sleeps until time moves (run_steps notifies) and reports that too.
void Core::watchdog_loop()
{
    Lock lock(mutex_);
    for (;;) {
        if (watchdog_exit_) return;
        if (stall_reported_ && last_progress_ > stall_started_) {
            Diagnostic d;
            d.kind = Diagnostic::Kind::stall_over;
            d.at = now_;
            d.for_how_long = last_progress_ - stall_started_;
            d.message = "simsync: the simulation makes progress again at " + format_seconds(now_) + " s" +
                        " after standing still for " + seconds_text(d.for_how_long);
            stall_reported_ = false;
            if (!report_from_watchdog(lock, d)) return;
            continue;
        }
        const bool someone_waits = !pending_.empty() || target_.has_value();
        if (stopped_ || !someone_waits || state_locked() == HandlerState::paused) {
            // Nothing to watch (or an operator holds time): a stall reported
            // before ends without a report of its own.
            stall_reported_ = false;
            watchdog_idle_ = true;
            watchdog_cv_.wait(lock);
            continue;
        }
        if (stall_reported_) {
            watchdog_cv_.wait(lock); // until time moves (run_steps and the operator's calls notify)
            continue;
        }
        const WallTime now = WallClock::now();
        const WallTime stalled_at = last_progress_ + config_.stall_timeout;
        if (now < stalled_at) {
            watchdog_cv_.wait_until(lock, stalled_at);
            continue;
        }
        std::vector<std::string> who = waiting_for_locked();
        const auto repeating = repeating_at_now_locked();
        if (who.empty() && repeating.empty()) {
            // Somebody waits but nothing holds time back (a step is about to be
            // taken): look again one timeout later.
            watchdog_cv_.wait_until(lock, now + config_.stall_timeout);
            continue;
        }
        Diagnostic d;
        d.kind = Diagnostic::Kind::stall;
        d.at = now_;
        d.for_how_long = now - last_progress_;
        d.message = "simsync: simulated time has stood at " + format_seconds(now_) + " s" + " for " + seconds_text(d.for_how_long);
        if (!repeating.empty()) {
            // Grants go on, time does not: an accessor asks again and again
            // for the instant it was just granted (a rate finer than the step).
            std::string counts;
            for (const auto& [name, times] : repeating) {
                counts += (counts.empty() ? "'" : ", '") + name + "' (" + std::to_string(times) + " times)";
            }
            d.message += " while " + std::to_string(grants_at_now_) + " grants were made at that instant: " + counts +
                         " asked again for the instant just granted; time moves only when each asks for a later "
                         "one (simsync::next_instant_after rounds a schedule finer than the step to the grid)";
            if (who.empty()) {
                for (const auto& [name, times] : repeating) who.push_back(name);
            }
        } else {
            d.message += ", waiting for " + join(who);
            if (holds_by_bound_locked(who)) {
                d.message += " (a lockstep accessor holds time at its bound until it asks again, is deregistered or "
                             "destroyed, or is revoked)";
            }
        }
        d.waiting_for = std::move(who);
        stall_reported_ = true;
        stall_started_ = last_progress_;
        if (!report_from_watchdog(lock, d)) return;
    }
}

// The diagnostics callback may destroy the handler and every accessor, so that
// nothing but this call owns the core any more: it is kept alive across the
// call and let go only with the lock released. Returns false when the loop must
// end (the handler is being destroyed) without touching the core again.
bool Core::report_from_watchdog(Lock& lock, const Diagnostic& d)
{
    std::shared_ptr<Core> keep = shared_from_this();
    lock.unlock();
    report(d);
    lock.lock();
    if (!watchdog_exit_) return true; // the handler lives (its destructor sets the flag first)
    lock.unlock();
    keep.reset(); // may run ~Core, on this thread: nothing of it is touched after this
    return false;
}

void Core::report(const Diagnostic& diagnostic) const
{
    if (config_.diagnostics) {
        config_.diagnostics(diagnostic);
        return;
    }
    std::fprintf(stderr, "%s\n", diagnostic.message.c_str());
}

} // namespace simsync::detail

#pragma once
// A reference model of the grant contract, written from the public headers
// (handler.hpp, accessor.hpp, time.hpp) alone: nothing here was taken from src/. It is single-threaded and knows no threads or clocks:
// a discrete-event state machine whose events are the accessors' actions
// (register, request, withdraw, release, set_kind, deregister), the operator's
// (pause, resume, step, run_until) and the engine's two freedoms (advance time,
// grant a request). Whatever order those events come in, the model only lets the
// engine do what the contract allows, so a test can ask it "which grants may
// come next?" and "is this observed grant one of them?".
//
// The rules, each with the sentence of the contract it comes from:
//  - Rounding: nearest (ties go up), up, down onto k * dt (time.hpp).
//  - A request whose rounded time lies before now is refused (time_passed);
//    exactly now is served (accessor.hpp, design 2).
//  - Lockstep bounds: at registration its first_request (rounded) or now;
//    after release(next) the rounding of next; after a plain release
//    granted + lookahead; after becoming lockstep while idle, now. Time never
//    moves past a bound (design 2, accessor.hpp). Free accessors hold nothing
//    while idle.
//  - Time moves only when nobody holds an access ("never a step during an
//    access"), not paused (or within an operator's step/run_until target), to
//    the earliest pending request or operator target, and never beyond a
//    lockstep bound or a pending request.
//  - Grant at now: nobody holds an exclusive access; an exclusive grant also
//    needs nobody holding a shared one; shared grants join shared holders.
//  - Order at one instant: higher priority first, then registration order; an
//    accessor asking again at an instant it was already granted queues behind
//    every accessor that has not had that instant (handler.hpp). A grant waits
//    for every request ahead of it and for every lockstep accessor that could
//    still ask for the instant ahead of it (idle, its bound rounds to <= now).
//    The contract does not order two accessors that both had the instant
//    already (RepeatOrder::unspecified, the default, leaves that free; the
//    literal reading "priority, then registration, for repeats as well" is
//    RepeatOrder::by_priority).
//  - Pause: requests at now are still served; step(n) advances n steps from now
//    (or from the pending target) and pauses; run_until(T) pauses at T rounded
//    down, or at now if T is not after now; resume clears any target.
//  - Sequence numbers: 0, 1, 2 ... in grant order, shared grants included.
//
// Deliberately not modelled: wall time, timeouts' clocks, stop/revoke, a world
// failure; and what the contract leaves open (who steps, how time moves while
// a lockstep accessor's request is still pending beyond its bound).

#include <simsync/core/accessor.hpp>
#include <simsync/core/time.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace simsync::model {

// 128-bit integers for exact rounding near the ends of SimTime's range (GCC and
// Clang; __extension__ keeps -Wpedantic quiet about it).
__extension__ typedef __int128 WideInt;

enum class RepeatOrder {
    unspecified, ///< accessors that all had the instant: any order is allowed
    by_priority, ///< the literal reading: priority, then registration, among those too
};

struct ModelOptions {
    AccessorKind kind = AccessorKind::lockstep;
    AccessMode mode = AccessMode::exclusive;
    int priority = 0;
    std::optional<SimTime> first_request{};
    SimDuration lookahead{0};
};

struct ModelGrant {
    std::size_t accessor = 0;
    SimTime time{};
    std::uint64_t sequence = 0;
    bool repeat = false; ///< the accessor had already been granted this instant
};

class GrantModel {
public:
    GrantModel(SimDuration dt, Rounding rounding, bool start_paused = false,
               RepeatOrder repeat_order = RepeatOrder::unspecified)
        : dt_(dt.count()), rounding_(rounding), paused_(start_paused), repeat_order_(repeat_order)
    {
        if (dt_ <= 0) throw std::invalid_argument("model: dt must be > 0");
    }

    // ------------------------------------------------------------ time grid

    /// The handler's rounding policy, computed here from its definition
    /// (time.hpp), in 128-bit arithmetic: the grid saturates at the ends of
    /// SimTime's range, kSimTimeMax ("never") and kSimTimeMin round to themselves,
    /// a grid point beyond the last representable one is kSimTimeMax, below the
    /// first one kSimTimeMin.
    SimTime round(SimTime t) const
    {
        using Wide = WideInt;
        constexpr std::int64_t kMaxNs = std::numeric_limits<std::int64_t>::max();
        constexpr std::int64_t kMinNs = std::numeric_limits<std::int64_t>::min();
        const std::int64_t v = t.time_since_epoch().count();
        if (v == kMaxNs || v == kMinNs) return t;
        const Wide d = dt_;
        const Wide lo = floor_div_wide(v, d) * d; // last grid point <= v
        Wide g = lo;
        if (lo != v) {
            switch (rounding_) {
            case Rounding::down: g = lo; break;
            case Rounding::up: g = lo + d; break;
            case Rounding::nearest: g = (Wide{v} - lo) * 2 >= d ? lo + d : lo; break; // a tie goes up
            }
        }
        const Wide last = floor_div_wide(kMaxNs, d) * d;
        const Wide first = -floor_div_wide(-Wide{kMinNs}, d) * d; // ceil(min / d) * d
        if (g > last) return SimTime::max();
        if (g < first) return SimTime::min();
        return at(static_cast<std::int64_t>(g));
    }
    SimTime floor_to_grid(SimTime t) const { return at(floor_div(t.time_since_epoch().count(), dt_) * dt_); }
    SimDuration dt() const { return SimDuration{dt_}; }

    // ------------------------------------------------------------ accessors

    /// Registers at the current time; returns the accessor's registration index.
    /// `name` only appears in messages.
    std::size_t add(const ModelOptions& options, std::string name = {})
    {
        Acc a;
        a.name = name.empty() ? "accessor " + std::to_string(accs_.size()) : std::move(name);
        a.options = options;
        a.kind = options.kind;
        if (a.kind == AccessorKind::lockstep) {
            if (options.first_request) {
                if (round(*options.first_request) < now_) throw std::invalid_argument("model: first_request before now");
                a.bound = round(*options.first_request);
            } else {
                a.bound = now_;
            }
        }
        accs_.push_back(a);
        return accs_.size() - 1;
    }

    /// False: refused with time_passed (the accessor stays idle, its bound unchanged).
    bool request(std::size_t i, SimTime t)
    {
        Acc& a = live(i);
        expect(a.state == State::idle, i, "request while not idle");
        const SimTime r = round(t);
        if (r < now_) return false;
        a.state = State::pending;
        a.at = r;
        return true;
    }
    /// A timed-out or would-block request gives up: idle again with the bound it
    /// declared before asking.
    void withdraw(std::size_t i)
    {
        Acc& a = live(i);
        expect(a.state == State::pending, i, "withdraw without a request");
        a.state = State::idle;
    }
    void release(std::size_t i) { release_impl(i, std::nullopt); }
    void release(std::size_t i, SimTime next) { release_impl(i, next); }
    void set_kind(std::size_t i, AccessorKind kind)
    {
        Acc& a = live(i);
        if (a.kind == kind) return;
        a.kind = kind;
        if (a.state == State::idle) {
            // Becoming lockstep while idle holds time at now (it could ask for now);
            // becoming free lifts the bound.
            a.bound = kind == AccessorKind::lockstep ? std::optional<SimTime>(now_) : std::nullopt;
        }
        // Pending or holding: the pending request or the coming release decides.
    }
    void deregister(std::size_t i)
    {
        Acc& a = live(i);
        a.registered = false;
        a.state = State::idle;
        a.bound.reset();
    }

    // ------------------------------------------------------------- operator

    void pause()
    {
        paused_ = true;
        target_.reset();
    }
    void resume()
    {
        paused_ = false;
        target_.reset();
    }
    void step(std::uint64_t n)
    {
        const SimTime base = target_ ? *target_ : now_;
        target_ = base + SimDuration{static_cast<std::int64_t>(n) * dt_};
        paused_ = false;
        if (*target_ == now_) pause();
    }
    void run_until(SimTime t)
    {
        const SimTime target = floor_to_grid(t);
        if (target <= now_) {
            pause();
            return;
        }
        target_ = target;
        paused_ = false;
    }

    // ------------------------------------------------------- engine freedoms

    /// The latest instant time may reach while nothing changes: the lockstep
    /// bounds of idle accessors (their grid floor), now while anyone holds.
    SimTime limit() const
    {
        SimTime l = kMax;
        for (const Acc& a : accs_) {
            if (!a.registered) continue;
            if (a.state == State::holding) return now_;
            if (a.state == State::idle && a.kind == AccessorKind::lockstep && a.bound) l = std::min(l, floor_to_grid(*a.bound));
        }
        return l;
    }
    std::optional<SimTime> earliest_pending() const
    {
        std::optional<SimTime> e;
        for (const Acc& a : accs_) {
            if (a.registered && a.state == State::pending && (!e || a.at < *e)) e = a.at;
        }
        return e;
    }
    /// Whether the contract lets time move from now to `t` (> now) without any
    /// other event first, the operator aside: nobody holds, no pending request
    /// and no lockstep bound lies before `t`.
    bool may_advance_to(SimTime t) const
    {
        if (t <= now_) return t == now_;
        const auto e = earliest_pending();
        return limit() >= t && (!e || *e >= t);
    }
    /// Moves time as far as the contract lets it go now (to the earliest pending
    /// request or operator target, not past a bound). True if it moved.
    bool advance()
    {
        const auto to = advance_target();
        if (to) now_ = *to;
        if (target_ && now_ == *target_) pause();
        return to.has_value();
    }
    /// Where advance() would move time to, if anywhere.
    std::optional<SimTime> advance_target() const
    {
        if (holders() > 0) return std::nullopt;
        const auto e = earliest_pending();
        if (e && *e == now_) return std::nullopt; // serve the current instant first
        if (paused_ && !target_) return std::nullopt;
        std::optional<SimTime> goal = e;
        if (target_) goal = goal ? std::min(*goal, *target_) : *target_;
        if (!goal) return std::nullopt;
        const SimTime to = std::min(*goal, limit());
        return to > now_ ? std::optional<SimTime>(to) : std::nullopt;
    }
    /// Moves time to `t` (a test replaying an observed run); the caller checked
    /// may_advance_to.
    void force_advance(SimTime t)
    {
        if (t < now_) throw std::logic_error("model: time cannot go back");
        now_ = t;
        if (target_ && now_ >= *target_) pause();
    }

    /// The pending requests the contract allows the engine to grant now.
    std::vector<std::size_t> grantable() const
    {
        std::vector<std::size_t> out;
        for (std::size_t c = 0; c < accs_.size(); ++c) {
            if (!blocker(c)) out.push_back(c);
        }
        return out;
    }
    bool is_grantable(std::size_t c) const { return !blocker(c); }
    /// Why `c` may not be granted now, for messages ("" if it may).
    std::string why_not(std::size_t c) const
    {
        const auto b = blocker(c);
        return b ? *b : std::string();
    }

    ModelGrant grant(std::size_t i)
    {
        if (const auto b = blocker(i)) throw std::logic_error("model: grant not allowed: " + *b);
        Acc& a = accs_[i];
        if (a.instant != now_) {
            a.instant = now_;
            a.at_instant = 0;
        }
        ++a.at_instant;
        a.state = State::holding;
        a.at = now_;
        ++a.grants;
        const std::size_t shared = count_holders(AccessMode::shared);
        max_shared_together_ = std::max(max_shared_together_, shared);
        return ModelGrant{i, now_, next_sequence_++, a.at_instant > 1};
    }

    // ------------------------------------------------------------- observers

    SimTime now() const { return now_; }
    bool paused() const { return paused_; }
    std::optional<SimTime> pause_target() const { return target_; }
    std::uint64_t steps() const { return static_cast<std::uint64_t>(now_.time_since_epoch().count() / dt_); }
    std::uint64_t grants() const { return next_sequence_; }
    std::size_t accessors() const { return accs_.size(); }
    bool registered(std::size_t i) const { return accs_.at(i).registered; }
    bool idle(std::size_t i) const { return accs_.at(i).state == State::idle; }
    bool pending(std::size_t i) const { return accs_.at(i).state == State::pending; }
    bool holding(std::size_t i) const { return accs_.at(i).state == State::holding; }
    std::optional<SimTime> pending_time(std::size_t i) const
    {
        return pending(i) ? std::optional<SimTime>(accs_[i].at) : std::nullopt;
    }
    std::optional<SimTime> bound(std::size_t i) const
    {
        const Acc& a = accs_.at(i);
        return a.registered && a.kind == AccessorKind::lockstep ? a.bound : std::nullopt;
    }
    AccessorKind kind(std::size_t i) const { return accs_.at(i).kind; }
    std::size_t holders() const { return count_holders(AccessMode::shared) + count_holders(AccessMode::exclusive); }
    std::size_t max_shared_together() const { return max_shared_together_; }
    /// True if `i` was already granted the current instant.
    bool had_now(std::size_t i) const { return accs_.at(i).instant == now_ && accs_[i].at_instant > 0; }

private:
    enum class State { idle, pending, holding };
    struct Acc {
        std::string name;
        ModelOptions options;
        AccessorKind kind = AccessorKind::lockstep;
        bool registered = true;
        State state = State::idle;
        SimTime at{};                 // pending: rounded request; holding: granted instant
        std::optional<SimTime> bound; // idle lockstep: the declared bound (exact)
        SimTime instant = SimTime::min();
        std::uint64_t at_instant = 0; // grants at `instant`
        std::uint64_t grants = 0;
    };
    static constexpr SimTime kMax = SimTime::max();

    static std::int64_t floor_div(std::int64_t a, std::int64_t b)
    {
        const std::int64_t q = a / b;
        return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    }
    static WideInt floor_div_wide(WideInt a, WideInt b)
    {
        const WideInt q = a / b;
        return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    }
    static SimTime at(std::int64_t ns) { return SimTime{SimDuration{ns}}; }
    static std::string show(SimTime t) { return std::to_string(t.time_since_epoch().count()) + " ns"; }
    static void expect(bool ok, std::size_t i, const char* what)
    {
        if (!ok) throw std::logic_error("model: accessor " + std::to_string(i) + ": " + what);
    }
    Acc& live(std::size_t i)
    {
        Acc& a = accs_.at(i);
        expect(a.registered, i, "not registered");
        return a;
    }
    std::size_t count_holders(AccessMode mode) const
    {
        return static_cast<std::size_t>(std::count_if(accs_.begin(), accs_.end(), [&](const Acc& a) {
            return a.registered && a.state == State::holding && a.options.mode == mode;
        }));
    }
    void release_impl(std::size_t i, std::optional<SimTime> next)
    {
        Acc& a = live(i);
        expect(a.state == State::holding, i, "release without an access");
        if (next && *next < a.at) throw std::invalid_argument("model: next request before the granted time");
        a.state = State::idle;
        if (a.kind == AccessorKind::lockstep) {
            if (next) {
                a.bound = round(*next);
            } else {
                const std::int64_t g = a.at.time_since_epoch().count();
                const std::int64_t l = a.options.lookahead.count();
                a.bound = at(g > std::numeric_limits<std::int64_t>::max() - l ? std::numeric_limits<std::int64_t>::max() : g + l);
            }
        } else {
            a.bound.reset();
        }
    }

    bool had(std::size_t i) const { return had_now(i); }
    /// Could `y` still be granted the current instant ahead of others: a pending
    /// request at now, or an idle lockstep accessor whose bound lets it ask for
    /// now. A holder could ask again (a repeat): only relevant if repeats are
    /// ordered among themselves.
    bool may_come(std::size_t y) const
    {
        const Acc& a = accs_[y];
        if (!a.registered) return false;
        if (a.state == State::pending) return a.at == now_;
        if (a.kind != AccessorKind::lockstep) return false;
        if (a.state == State::idle) return a.bound && round(*a.bound) <= now_;
        return repeat_order_ == RepeatOrder::by_priority; // holding
    }
    /// Is `y`'s (possible) request at now ahead of `c`'s in the order at one instant?
    bool ahead(std::size_t y, std::size_t c) const
    {
        const bool hy = had(y) || accs_[y].state == State::holding;
        const bool hc = had(c);
        if (hy != hc) return !hy; // those that have not had the instant come first
        if (hy && repeat_order_ == RepeatOrder::unspecified) return false;
        const int py = accs_[y].options.priority;
        const int pc = accs_[c].options.priority;
        if (py != pc) return py > pc;
        return y < c;
    }
    std::optional<std::string> blocker(std::size_t c) const
    {
        const Acc& a = accs_.at(c);
        if (!a.registered) return "not registered";
        if (a.state != State::pending) return "no pending request";
        if (a.at != now_) return "its request is at " + show(a.at) + ", now is " + show(now_);
        if (count_holders(AccessMode::exclusive) > 0) return "an exclusive access is held";
        if (a.options.mode == AccessMode::exclusive && count_holders(AccessMode::shared) > 0)
            return "shared accesses are held";
        for (std::size_t y = 0; y < accs_.size(); ++y) {
            if (y == c || !may_come(y) || !ahead(y, c)) continue;
            std::ostringstream why;
            why << accs_[y].name << " comes first at " << show(now_) << " ("
                << (accs_[y].state == State::pending ? "waiting" : "could still ask") << ", priority "
                << accs_[y].options.priority << (had(y) ? ", a repeat" : "") << " against priority "
                << a.options.priority << (had(c) ? ", a repeat" : "") << ")";
            return why.str();
        }
        return std::nullopt;
    }

    std::int64_t dt_;
    Rounding rounding_;
    SimTime now_{};
    bool paused_;
    std::optional<SimTime> target_;
    RepeatOrder repeat_order_;
    std::vector<Acc> accs_;
    std::uint64_t next_sequence_ = 0;
    std::size_t max_shared_together_ = 0;
};

} // namespace simsync::model

#include "model/scenario.hpp"

#include <algorithm>
#include <limits>
#include <random>
#include <sstream>

namespace simsync::model {

const char* to_string(DriverKind kind)
{
    switch (kind) {
    case DriverKind::blocking: return "blocking";
    case DriverKind::blocking_timed: return "blocking_timed";
    case DriverKind::blocking_try: return "blocking_try";
    case DriverKind::async_callback: return "async_callback";
    case DriverKind::coroutine: return "coroutine";
    case DriverKind::inline_system: return "inline_system";
    case DriverKind::fused_blocking: return "fused_blocking";
    case DriverKind::fused_async: return "fused_async";
    case DriverKind::persistent_system: return "persistent_system";
    }
    return "?";
}

const char* to_string(Role role)
{
    switch (role) {
    case Role::steady: return "steady";
    case Role::free: return "free";
    case Role::switching: return "switching";
    }
    return "?";
}

std::string show(SimDuration d)
{
    // Milliseconds with the nanoseconds kept: "33.333333 ms".
    const std::int64_t ns = d.count();
    std::ostringstream out;
    out << (ns < 0 ? "-" : "") << std::abs(ns) / 1'000'000;
    const std::int64_t frac = std::abs(ns) % 1'000'000;
    if (frac != 0) {
        std::string f = std::to_string(frac);
        f.insert(0, 6 - f.size(), '0');
        while (!f.empty() && f.back() == '0') f.pop_back();
        out << '.' << f;
    }
    out << " ms";
    return out.str();
}

std::string show(SimTime t) { return show(t.time_since_epoch()); }

bool Scenario::lockstep_only() const
{
    return std::all_of(accessors.begin(), accessors.end(), [](const AccessorSpec& a) { return a.role == Role::steady; });
}

std::string Scenario::describe() const
{
    std::ostringstream out;
    out << "seed " << seed << ": dt " << show(dt) << ", rounding " << to_string(rounding) << ", step thread "
        << (step_thread == StepThread::host ? "host" : "any") << (start_paused ? ", starts paused" : "") << ", end "
        << show(end) << ", operator " << (op.enabled ? "on" : "off");
    if (op.enabled) out << " (" << op.checkpoints << " checkpoints)";
    out << '\n';
    for (std::size_t i = 0; i < accessors.size(); ++i) {
        const AccessorSpec& a = accessors[i];
        out << "  [" << i << "] " << a.name << ": " << to_string(a.role) << ", " << to_string(a.options.kind) << ", "
            << to_string(a.options.mode) << ", priority " << a.options.priority;
        if (a.options.lookahead.count() != 0) out << ", lookahead " << show(a.options.lookahead);
        if (a.options.first_request != SimTime::min()) out << ", first_request " << show(a.options.first_request);
        out << ", driver " << to_string(a.driver) << ", script:";
        for (const ScriptStep& s : a.script) {
            out << ' ';
            if (s.switch_before) out << '<' << to_string(*s.switch_before) << '>';
            out << (s.relative ? "now+" : "") << show(s.request);
            if (s.switch_inside) out << '{' << to_string(*s.switch_inside) << '}';
            if (s.next) out << "->" << show(*s.next);
        }
        out << '\n';
    }
    return out.str();
}

namespace {

class Gen {
public:
    explicit Gen(std::uint64_t seed) : rng_(seed) {}
    std::int64_t uniform(std::int64_t lo, std::int64_t hi) // inclusive
    {
        return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
    }
    bool chance(int percent) { return uniform(0, 99) < percent; }
    template <class T, std::size_t N>
    T pick(const T (&values)[N])
    {
        return values[static_cast<std::size_t>(uniform(0, static_cast<std::int64_t>(N) - 1))];
    }

private:
    std::mt19937_64 rng_;
};

SimTime t_ns(std::int64_t ns) { return SimTime{SimDuration{ns}}; }

// The handler's rounding, for the generator only (so scripts keep the rule
// "never ask before the declared bound" whatever the policy).
SimTime round_like_handler(SimTime t, SimDuration dt, Rounding r)
{
    const std::int64_t v = t.time_since_epoch().count();
    const std::int64_t d = dt.count();
    const std::int64_t lo = (v >= 0 ? v / d : (v - d + 1) / d) * d;
    if (lo == v) return t;
    if (r == Rounding::down) return t_ns(lo);
    if (r == Rounding::up) return t_ns(lo + d);
    return t_ns((v - lo) * 2 >= d ? lo + d : lo);
}

// A deterministic script: requests at absolute times up to `end`, every one at or
// after the bound the previous release declared (so a lockstep accessor is never
// refused and the contract fixes where its grants go).
std::vector<ScriptStep> lockstep_script(Gen& g, const Scenario& s, const AccessorOptions& o, bool switching)
{
    const std::int64_t dt = s.dt.count();
    const std::int64_t end = s.end.time_since_epoch().count();
    std::vector<ScriptStep> script;
    std::int64_t t = o.first_request != SimTime::min() ? o.first_request.time_since_epoch().count() : 0;
    t += g.chance(30) ? g.uniform(0, 3 * dt) : 0;
    // A rate: most scripts are periodic (offset + n * period, exact), the rest walk.
    const bool periodic = g.chance(60);
    const std::int64_t periods[] = {dt / 3, dt, 2 * dt, dt * 5 / 2, 7 * dt, 33'333'333 % (11 * dt) + dt, 3 * dt + 1};
    const std::int64_t period = std::max<std::int64_t>(1, g.pick(periods));
    const std::int64_t offset = t;
    AccessorKind kind = o.kind;
    for (std::int64_t n = 0; t <= end && script.size() < 400; ++n) {
        ScriptStep step;
        step.request = t_ns(t);
        if (switching && n > 0 && g.chance(12)) {
            kind = kind == AccessorKind::lockstep ? AccessorKind::free : AccessorKind::lockstep;
            step.switch_before = kind;
        }
        if (switching && g.chance(20)) {
            kind = kind == AccessorKind::lockstep ? AccessorKind::free : AccessorKind::lockstep;
            step.switch_inside = kind;
        }
        // The next request.
        std::int64_t next;
        if (periodic) {
            next = offset + (n + 1) * period;
        } else {
            const std::int64_t deltas[] = {0, 1, dt / 2, dt, dt, 2 * dt, 3 * dt + dt / 3, 9 * dt};
            next = t + g.pick(deltas);
        }
        const std::int64_t granted = round_like_handler(t_ns(t), s.dt, s.rounding).time_since_epoch().count();
        next = std::max(next, granted); // never before the granted time
        if (g.chance(55)) {
            // release(next): declare the next request, or (sometimes) an earlier
            // bound than the actual next request: it then asks later than it said.
            std::int64_t declared = next;
            if (g.chance(20) && next > granted) declared = g.uniform(granted, next);
            step.next = t_ns(declared);
        } else {
            // A plain release: the bound is granted + lookahead; ask at or after it.
            next = std::max(next, granted + o.lookahead.count());
        }
        script.push_back(step);
        t = next;
    }
    return script;
}

// A free accessor asks near the current time: some of its requests are for a
// time already passed, some exactly now, some ahead.
std::vector<ScriptStep> free_script(Gen& g, const Scenario& s)
{
    const std::int64_t dt = s.dt.count();
    std::vector<ScriptStep> script;
    const std::int64_t n = g.uniform(2, 40);
    for (std::int64_t k = 0; k < n; ++k) {
        ScriptStep step;
        const std::int64_t offsets[] = {-2 * dt, -dt / 2, 0, 0, dt / 3, dt, 2 * dt, 5 * dt};
        step.relative = true;
        step.request = t_ns(g.pick(offsets));
        // A free accessor may name its next request too: the handler ignores it.
        const std::int64_t nexts[] = {0, dt, 4 * dt};
        if (g.chance(25)) step.next = t_ns(g.pick(nexts));
        script.push_back(step);
    }
    return script;
}

} // namespace

Scenario generate_scenario(std::uint64_t seed)
{
    Gen g(seed);
    Scenario s;
    s.seed = seed;
    const SimDuration dts[] = {std::chrono::milliseconds(1), std::chrono::microseconds(250), std::chrono::milliseconds(3)};
    s.dt = g.pick(dts);
    const Rounding roundings[] = {Rounding::nearest, Rounding::up, Rounding::down};
    s.rounding = g.pick(roundings);
    s.step_thread = g.chance(25) ? StepThread::host : StepThread::any;
    s.end = SimTime{s.dt * g.uniform(8, 120)};
    s.op.enabled = g.chance(65);
    s.start_paused = s.op.enabled && g.chance(30);
    s.op.checkpoints = s.op.enabled ? static_cast<int>(g.uniform(0, 3)) : 0;
    s.op.max_gap_us = static_cast<int>(g.uniform(20, 400));
    s.noise.sleep_percent = static_cast<int>(g.uniform(0, 10));
    s.noise.yield_percent = static_cast<int>(g.uniform(0, 40));
    s.noise.max_sleep_us = static_cast<int>(g.uniform(5, 80));

    const bool lockstep_only = g.chance(45);
    const std::size_t n = static_cast<std::size_t>(g.uniform(1, 8));
    for (std::size_t i = 0; i < n; ++i) {
        AccessorSpec a;
        a.name = "acc" + std::to_string(i);
        const std::int64_t role_pick = g.uniform(0, 99);
        a.role = lockstep_only || role_pick < 60 ? Role::steady : role_pick < 80 ? Role::free : Role::switching;
        a.options.kind = a.role == Role::free ? AccessorKind::free
                         : a.role == Role::switching && g.chance(50) ? AccessorKind::free
                                                                      : AccessorKind::lockstep;
        a.options.mode = g.chance(50) ? AccessMode::exclusive : AccessMode::shared;
        const int priorities[] = {-1, 0, 0, 1, 2};
        a.options.priority = g.chance(5) ? (g.chance(50) ? std::numeric_limits<int>::min() : std::numeric_limits<int>::max())
                                         : g.pick(priorities);
        if (a.role != Role::free) {
            const std::int64_t pick = g.uniform(0, 99);
            if (pick < 25) a.options.lookahead = s.dt * g.uniform(1, 5);
            else if (pick < 35) a.options.lookahead = SimDuration{g.uniform(1, 4 * s.dt.count())}; // off the grid
            if (a.options.kind == AccessorKind::lockstep && g.chance(40)) {
                // On or off the grid; the script starts at or after it.
                const std::int64_t fr = g.uniform(0, s.end.time_since_epoch().count() / 3);
                a.options.first_request = SimTime{SimDuration{g.chance(50) ? fr - fr % s.dt.count() : fr}};
            }
        }
        // Every way to wait, mixed in one handler; plain blocking a little more often.
        const DriverKind drivers[] = {DriverKind::blocking,       DriverKind::blocking,       DriverKind::blocking_timed,
                                      DriverKind::blocking_try,   DriverKind::async_callback, DriverKind::coroutine,
                                      DriverKind::inline_system,  DriverKind::fused_blocking, DriverKind::fused_async,
                                      DriverKind::persistent_system};
        a.driver = g.pick(drivers);
        a.script = a.role == Role::free ? free_script(g, s) : lockstep_script(g, s, a.options, a.role == Role::switching);
        s.accessors.push_back(std::move(a));
    }
    return s;
}

Scenario fixed_rates_scenario(std::size_t n, SimTime end)
{
    Scenario s;
    s.seed = 0;
    s.dt = std::chrono::milliseconds(1);
    s.end = end;
    const SimDuration periods[] = {std::chrono::milliseconds(1), std::chrono::milliseconds(2), std::chrono::milliseconds(3),
                                   std::chrono::milliseconds(5), std::chrono::milliseconds(7), std::chrono::milliseconds(10),
                                   SimDuration{33'333'333}, std::chrono::microseconds(600)};
    const SimDuration offsets[] = {std::chrono::milliseconds(0), std::chrono::milliseconds(1), std::chrono::microseconds(2500)};
    for (std::size_t i = 0; i < n; ++i) {
        AccessorSpec a;
        a.name = "acc" + std::to_string(i);
        a.options.kind = AccessorKind::lockstep;
        a.options.mode = i % 2 == 0 ? AccessMode::exclusive : AccessMode::shared;
        a.options.priority = static_cast<int>(i % 3);
        a.options.first_request = SimTime{offsets[(i / 2) % 3]};
        for (std::int64_t k = 0;; ++k) {
            const SimTime t{offsets[(i / 2) % 3] + k * periods[i % 8]};
            if (t > end) break;
            ScriptStep step;
            step.request = t;
            step.next = SimTime{offsets[(i / 2) % 3] + (k + 1) * periods[i % 8]};
            a.script.push_back(step);
        }
        s.accessors.push_back(std::move(a));
    }
    return s;
}

} // namespace simsync::model

#pragma once
// A scenario for the model-based determinism check: a handler configuration,
// accessors with options and a script each, an operator, and the noise the
// drivers inject. Everything is derived from one 64-bit seed, so a failure is
// reproduced by its seed alone (SIMSYNC_MODEL_SEED).

#include <simsync/core/accessor.hpp>
#include <simsync/core/handler.hpp>
#include <simsync/core/time.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace simsync::model {

/// How an accessor behaves over the run, which decides what the contract fixes
/// about its grants.
enum class Role {
    /// Lockstep from start to end, never asks before its declared bound: every
    /// request is granted at its rounded time and the order of these grants is
    /// fixed by the contract.
    steady,
    /// Free from start to end, asking near the current time: requests may be
    /// refused (time_passed); which ones depends on thread timing.
    free,
    /// Switches between lockstep and free (set_kind) inside its accesses and
    /// between them: deterministic while lockstep, best effort while free.
    switching,
};

/// How an accessor waits for its grants: one class per kind in harness.cpp.
enum class DriverKind {
    blocking,       ///< a thread blocked in request_access
    blocking_timed, ///< a thread in request_access_for with short timeouts, retrying
    blocking_try,   ///< a thread trying try_request_access first, then blocking
    async_callback, ///< async_request_access with a callback on a shared io_context (some requests cancelled)
    coroutine,      ///< a C++20 coroutine co_awaiting async_request_access on that io_context
    inline_system,  ///< async_request_access with run_inline: completed on the stepping thread
    fused_blocking, ///< a thread going from one access to the next with release_and_request
    fused_async,    ///< async_release_and_request with a callback on the shared io_context
    persistent_system, ///< Accessor::run_system: called on the stepping thread, released and asked again in one
};
inline constexpr DriverKind kAllDriverKinds[] = {
    DriverKind::blocking,       DriverKind::blocking_timed, DriverKind::blocking_try,
    DriverKind::async_callback, DriverKind::coroutine,      DriverKind::inline_system,
    DriverKind::fused_blocking, DriverKind::fused_async,    DriverKind::persistent_system};
const char* to_string(DriverKind kind);
const char* to_string(Role role);

/// One request of a script and what the accessor does around it.
struct ScriptStep {
    /// The requested time (before rounding). With `relative` set (free
    /// accessors): an offset from the handler's time read just before asking, and
    /// `next` an offset from the granted time.
    SimTime request{};
    bool relative = false;
    /// set_kind while idle, just before asking.
    std::optional<AccessorKind> switch_before;
    /// set_kind inside the access, before releasing.
    std::optional<AccessorKind> switch_inside;
    /// release(next) if set, else a plain release() (lookahead).
    std::optional<SimTime> next;
};

struct AccessorSpec {
    std::string name;
    Role role = Role::steady;
    AccessorOptions options;
    DriverKind driver = DriverKind::blocking;
    std::vector<ScriptStep> script;
};

struct OperatorSpec {
    bool enabled = false;
    /// Deterministic checkpoints: pause, run_until(now + k * dt), wait until
    /// paused, snapshot; the run is then checked against the model at that instant.
    int checkpoints = 0;
    /// Wall-time spacing of the random actions, microseconds.
    int max_gap_us = 200;
};

struct NoiseSpec {
    int sleep_percent = 5; ///< chance of a short sleep at each pause point
    int yield_percent = 20;
    int max_sleep_us = 60;
};

struct Scenario {
    std::uint64_t seed = 0;
    SimDuration dt{std::chrono::milliseconds(1)};
    Rounding rounding = Rounding::nearest;
    StepThread step_thread = StepThread::any;
    bool start_paused = false;
    /// No script asks beyond `end`; a keeper holds time at end + dt.
    SimTime end{};
    std::vector<AccessorSpec> accessors;
    OperatorSpec op;
    NoiseSpec noise;

    bool lockstep_only() const;
    std::string describe() const;
};

/// The scenario a seed stands for. Pure: the same seed, the same scenario.
Scenario generate_scenario(std::uint64_t seed);

/// A fixed mix that exercises every ordering rule (kept from the first version
/// of the determinism test): equal instants from different rates, priorities,
/// shared and exclusive, a rate faster than the step.
Scenario fixed_rates_scenario(std::size_t accessors, SimTime end);

std::string show(SimTime t);
std::string show(SimDuration d);

} // namespace simsync::model

#pragma once
// What a run of a scenario on the real handler leaves behind: one record per
// request of every accessor, the operator's checkpoints and the world's state.
// Written by the threads of the run, read by the test thread after joining them.

#include <simsync/core/handler.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace simsync::model {

struct RequestRecord {
    std::size_t step = 0;      ///< index in the accessor's script
    SimTime requested{};       ///< what was asked for (absolute, before rounding)
    SimTime now_before{};      ///< handler.now() read just before the last attempt
    SimTime now_after{};       ///< handler.now() read just after a refusal
    SimTime world_begun_after{}; ///< the instant the world was being stepped to, read after now_after
    /// A refusal for a time now() had not passed: the time reached within a second
    /// after (handler or world, whichever is later).
    SimTime passed_later{};
    AccessorKind kind{};       ///< the accessor's kind when it asked
    bool switched_before = false; ///< set_kind while idle just before asking
    std::error_code error;     ///< empty: granted
    std::uint32_t retries = 0; ///< timed_out / would_block attempts before the outcome
    // Granted only:
    SimTime granted{};
    std::uint64_t sequence = 0;
    AccessMode mode{};
    bool world_at_granted = true; ///< world and handler time equal the granted time inside
    AccessorKind kind_at_release{};
    std::optional<SimTime> next; ///< release(next); none: plain release()
    bool fused = false;          ///< released by the next request's release_and_request (or the system's)
    bool granted_ok() const { return !error; }
};

/// The operator paused, ran until `target` and waited until paused.
struct CheckpointRecord {
    bool paused_in_time = false;
    SimTime before{}; ///< now after pause(), before run_until
    SimTime target{};
    Snapshot snapshot;
};

struct Observation {
    std::vector<std::vector<RequestRecord>> records; ///< per accessor, scenario order
    std::vector<CheckpointRecord> checkpoints;
    std::uint64_t det_hash = 0;       ///< the world's state written by steady exclusive accessors
    std::uint64_t world_steps = 0;
    std::uint64_t handler_steps = 0;
    SimTime final_now{};
    std::uint64_t probe_violations = 0; ///< an exclusive access not alone, a reader meeting a writer
    std::uint64_t step_violations = 0;  ///< a step during an access, two at once, a wrong dt
    std::vector<std::string> errors;    ///< exceptions and stalls in the run itself
};

/// The world state a steady exclusive accessor writes at each grant.
inline std::uint64_t mix(std::uint64_t h, std::size_t accessor, SimTime t)
{
    h ^= static_cast<std::uint64_t>(t.time_since_epoch().count()) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h = h * 1'000'003ULL + accessor * 7919ULL + 1;
    return h;
}

} // namespace simsync::model

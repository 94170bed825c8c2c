#pragma once
/// @file
/// Operator commands: the one vocabulary of the terminal console and the web
/// console (pause, resume, step N, run until T, scale X, revoke NAME), parsed and
/// validated in one place and carried out through the handler's public API.

#include <simsync/clock/time_scale.hpp>
#include <simsync/core/handler.hpp>
#include <simsync/core/time.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace simsync {

/// One operator command, parsed and validated (see parse_operator_command).
///
/// Copy/move: both (plain value). Thread safety: distinct objects: safe. Shared
/// objects: const use from several threads is safe.
struct OperatorCommand {
    enum class Kind {
        pause,     ///< SimSyncHandler::pause
        resume,    ///< SimSyncHandler::resume
        step,      ///< SimSyncHandler::step(steps)
        run_until, ///< SimSyncHandler::run_until(until)
        scale,     ///< TimeScale::set(scale)
        revoke,    ///< SimSyncHandler::revoke(name)
        status,    ///< the caller prints or sends its status (nothing to apply)
        quit,      ///< the caller ends the program (nothing to apply)
    };
    Kind kind = Kind::status;
    /// step: how many steps, 1 .. kMaxSteps.
    std::uint64_t steps = 0;
    /// run_until: where to pause, >= 0 (not yet rounded to the step grid).
    SimTime until{};
    /// scale: the new time scale, TimeScale::kMin .. TimeScale::kMax.
    double scale = 0;
    /// revoke: the accessor's name (as registered; may contain spaces).
    std::string name;

    /// Largest `step N` accepted: a typing slip should not run for days.
    static constexpr std::uint64_t kMaxSteps = 1'000'000'000;
};

const char* to_string(OperatorCommand::Kind kind) noexcept;

/// Parses one command line. Words are separated by blanks; leading and trailing
/// blanks are ignored.
///
///     pause | resume | step [N] | until T | run_until T | scale X | revoke NAME
///     | status | quit
///
/// `step` without N is one step. T is in simulated seconds ("12.5", "12.5s").
/// Numbers must be complete (no trailing characters), finite and in range.
/// Pure function; any thread.
/// @throws simsync::Error (invalid_argument) with a message that names the command
///         and quotes the offending text, e.g. `step: expected a whole number of
///         steps from 1 to 1000000000, got '-3'`.
OperatorCommand parse_operator_command(std::string_view line);

/// Carries out `command` through the handler's public API and the time scale, as
/// the terminal keys do. Returns a short sentence saying what was done
/// ("paused at 1.234000000 s"). `status` and `quit` change nothing (the caller
/// handles them) and return "".
///
/// Checks what depends on the moment before acting, and then changes nothing if
/// it fails: `run_until` a time not after the current time (checked when called:
/// if time passes it in between, the handler pauses at the current time),
/// `revoke` of a name no accessor has, `scale` without a time scale (`scale` is
/// null). Any thread; the effect is that of the handler call it makes.
/// @throws simsync::Error (invalid_argument, or invalid_state without a scale)
///         for those cases, naming the value.
std::string apply_operator_command(const OperatorCommand& command, SimSyncHandler& handler, TimeScale* scale);

} // namespace simsync

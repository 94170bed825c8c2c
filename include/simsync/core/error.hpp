#pragma once
/// @file
/// Error codes and the one exception type of simsync.
///
/// Three kinds of failure are kept apart:
///  - an expected outcome of a request (time passed, stopped, timed out, ...) is a
///    value: an `Access` that converts to false and carries an `errc`;
///  - bad input from the caller (a negative step, a duplicate name, a release time
///    in the past) throws `simsync::Error` with the offending values in the message;
///  - a broken internal invariant asserts.

#include <stdexcept>
#include <string>
#include <system_error>

namespace simsync {

enum class errc {
    // Refusals of a request: returned as values, never thrown.
    time_passed = 1, ///< the requested (rounded) time lies before the current time
    stopped,         ///< the handler was stopped before the access could be granted
    timed_out,       ///< the wall-clock deadline of a timed request passed
    not_registered,  ///< the accessor was deregistered or revoked
    would_block,     ///< a try-request could not be granted without waiting
    world_failed,    ///< World::step threw; the handler stopped (see SimSyncHandler::failure)
    cancelled,       ///< withdrawn through a std::stop_token or an Asio cancellation slot
    // Caller errors: thrown as simsync::Error.
    invalid_argument = 100, ///< a value out of range; the message names the field
    duplicate_name,         ///< an accessor of that name is already registered
    busy,                   ///< an accessor used by two requests at once, or asked while holding
    invalid_state,          ///< an operation that the current state forbids
};

/// The category of simsync's error codes (name "simsync").
const std::error_category& error_category() noexcept;

std::error_code make_error_code(errc e) noexcept;

/// The one exception type simsync throws. Carries an `errc` and a message that
/// names the offending field and value; what() is that message, unadorned.
/// Copy/move: a value type, like std::runtime_error; distinct objects are
/// independent, and const use of one object from several threads is safe.
class Error : public std::runtime_error {
public:
    Error(errc code, const std::string& what);
    const std::error_code& code() const noexcept { return code_; }

private:
    std::error_code code_;
};

} // namespace simsync

template <>
struct std::is_error_code_enum<simsync::errc> : std::true_type {};

#include <simsync/core/error.hpp>

namespace simsync {

namespace {
class Category final : public std::error_category {
public:
    const char* name() const noexcept override { return "simsync"; }
    // `cancelled` is the standard operation_canceled, so code that checks for
    // std::errc::operation_canceled (or Asio's operation_aborted) sees it too.
    bool equivalent(int code, const std::error_condition& condition) const noexcept override
    {
        if (static_cast<errc>(code) == errc::cancelled &&
            condition == std::make_error_condition(std::errc::operation_canceled)) {
            return true;
        }
        return default_error_condition(code) == condition;
    }
    std::string message(int code) const override
    {
        switch (static_cast<errc>(code)) {
        case errc::time_passed: return "the requested time has already passed";
        case errc::stopped: return "the simulation was stopped";
        case errc::timed_out: return "the request timed out";
        case errc::not_registered: return "the accessor is not registered";
        case errc::would_block: return "the access cannot be granted without waiting";
        case errc::world_failed: return "the world failed to step; the simulation stopped";
        case errc::cancelled: return "the request was cancelled";
        case errc::invalid_argument: return "invalid argument";
        case errc::duplicate_name: return "duplicate accessor name";
        case errc::busy: return "the accessor is already in a request or holds an access";
        case errc::invalid_state: return "operation not allowed in the current state";
        }
        return "unknown simsync error " + std::to_string(code);
    }
};
} // namespace

const std::error_category& error_category() noexcept
{
    static const Category category;
    return category;
}

std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), error_category()}; }

Error::Error(errc code, const std::string& what) : std::runtime_error(what), code_(make_error_code(code)) {}

} // namespace simsync

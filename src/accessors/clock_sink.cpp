#include <simsync/accessors/clock_sink.hpp>
#include <simsync/core/error.hpp>

#include <utility>

namespace simsync {

CallbackClockSink::CallbackClockSink(Callback callback) : callback_(std::move(callback))
{
    if (!callback_) throw Error(errc::invalid_argument, "CallbackClockSink: the callback is empty");
}

void CallbackClockSink::publish(const ClockMessage& message) { callback_(message); }

} // namespace simsync

#include "stop_signals.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <atomic>
#include <csignal>
#include <thread>

namespace simsync::examples {

struct StopOnSignals::State {
    boost::asio::io_context io;
    boost::asio::signal_set signals{io, SIGINT, SIGTERM};
    std::atomic<int> received{0};
    std::thread thread;
};

StopOnSignals::StopOnSignals(std::function<void(int)> on_signal) : state_(std::make_unique<State>())
{
    State& s = *state_;
    s.signals.async_wait([&s, on_signal = std::move(on_signal)](const boost::system::error_code& ec, int number) {
        if (ec) return; // cancelled: the object is being destroyed
        s.received = number;
        boost::system::error_code ignored;
        s.signals.clear(ignored); // the default actions again: a second signal ends the process
        on_signal(number);
    });
    s.thread = std::thread([&s] { s.io.run(); });
}

StopOnSignals::~StopOnSignals()
{
    boost::system::error_code ignored;
    state_->signals.cancel(ignored);
    state_->io.stop();
    if (state_->thread.joinable()) state_->thread.join();
}

int StopOnSignals::received() const noexcept { return state_->received.load(); }

const char* signal_name(int number) noexcept
{
    switch (number) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
    }
}

} // namespace simsync::examples

// Four ways to be an accessor, all in one handler: the styles of 01-04 mix freely
// under one grant rule and one order. At each instant: by priority, then
// registration order; never by style, nor by which thread comes first. Four
// exclusive accessors at 100 Hz, one of each style, log their grants by sequence.

#include <simsync/core/asio.hpp>
#include <simsync/simsync.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>

using namespace std::chrono_literals;
namespace asio = boost::asio;

constexpr std::int64_t kLast = 10; // instants 0, 10, ... 100 ms
simsync::SimTime at(std::int64_t n) { return simsync::sim_time(n * 10ms); }

std::mutex grants_mutex;
std::map<std::uint64_t, std::string> grants; // grant sequence number (the handler's total order) -> who
void note(const simsync::Access& a, const char* who) { std::lock_guard l(grants_mutex); grants[a.sequence()] = who; }

// Re-arms from its completion; `wrap` makes it a callback on an executor, or an inline system.
template <class Wrap>
void every_10ms(simsync::Accessor& accessor, std::int64_t n, const char* name, Wrap wrap)
{
    accessor.async_request_access(at(n), wrap([&accessor, n, name, wrap](std::error_code ec, simsync::Access a) {
        if (ec) return;
        note(a, name);
        a.release(at(n + 1));
        if (n < kLast) every_10ms(accessor, n + 1, name, wrap);
    }));
}

int main()
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    auto controller = handler.register_accessor("controller", {.priority = 3});
    auto logger = handler.register_accessor("logger", {.priority = 1});
    auto planner = handler.register_accessor("planner", {.priority = 4});
    auto monitor = handler.register_accessor("monitor", {.priority = 2});
    asio::io_context io; // the callback's and the coroutine's executor, run by one thread
    every_10ms(logger, 0, "logger(callback)", [&io](auto h) { return asio::bind_executor(io, std::move(h)); });
    every_10ms(monitor, 0, "monitor(inline)", [](auto h) { return simsync::run_inline(std::move(h)); });
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        for (std::int64_t n = 0; n <= kLast; ++n) {
            auto [ec, a] = co_await planner.async_request_access(at(n), asio::use_awaitable);
            if (ec) co_return;
            note(a, "planner(coroutine)");
            a.release(at(n + 1));
        }
    }, asio::detached);
    std::thread io_thread([&] { io.run(); });
    for (std::int64_t n = 0; n <= kLast; ++n) { // the blocking controller: this thread
        simsync::Access a = controller.request_access(at(n));
        if (!a) break;
        note(a, "controller(blocking)");
        a.release(at(n + 1));
    }
    io_thread.join();
    std::string order;
    bool same = grants.size() == 4 * (kLast + 1);
    for (const auto& [sequence, who] : grants) {
        if (sequence < 4) order += " " + who;
        same = same && grants[sequence % 4] == who; // instant k: sequences 4k .. 4k+3
    }
    std::printf("order at 0 ms:%s\n%zu grants, this order at all %lld instants: %s\n", order.c_str(), grants.size(),
                static_cast<long long>(kLast + 1), same ? "yes" : "no");
    return same ? 0 : 1;
}

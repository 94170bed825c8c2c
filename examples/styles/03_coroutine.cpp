// Four ways to be an accessor, 3 of 4: a C++20 coroutine.
//
// The camera loop of 01, almost line for line, but `co_await` instead of a
// blocking call: while the coroutine waits for its grant it holds no thread.
// So a thousand accessors fit on an io_context run by two threads: here the
// camera plus 1000 tactile sensors at 100 Hz, 200 ms of simulated time.
// The completion token boost::asio::use_awaitable makes the request return
// (error_code, Access) as a tuple: a refusal is a value, not an exception.
// Next: 04_inline_system.cpp, an accessor with no executor at all.

#include <simsync/core/asio.hpp>
#include <simsync/simsync.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace std::chrono_literals;
namespace asio = boost::asio;

// One periodic reader up to 200 ms, as straight-line code. `granted` lists its times.
asio::awaitable<void> sensor(simsync::Accessor& accessor, simsync::PeriodicSchedule rate, std::string& granted,
                             std::atomic<long>& grants)
{
    auto [ec, access] = co_await accessor.async_request_access(rate.at(0), asio::use_awaitable);
    for (std::int64_t n = 0;; ++n) {
        if (ec) {
            std::printf("%s refused: %s\n", accessor.name().c_str(), ec.message().c_str());
            co_return;
        }
        granted += " " + std::to_string(access.granted_time().time_since_epoch() / 1ms);
        ++grants;
        if (rate.at(n + 1) > simsync::sim_time(200ms)) break;
        // Release and ask again in one operation: one completion per grant, and
        // no allocation per request once the accessor's completion is warm.
        std::tie(ec, access) =
            co_await accessor.async_release_and_request(std::move(access), rate.at(n + 1), asio::use_awaitable);
    }
    access = {};
    accessor.deregister(); // done: time no longer waits for this sensor
}

int main()
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    const simsync::AccessorOptions shared{.mode = simsync::AccessMode::shared};
    asio::io_context io(2); // a concurrency hint: two threads will run it

    std::atomic<long> grants{0};
    simsync::Accessor camera = handler.register_accessor("camera", shared);
    std::string camera_granted;
    asio::co_spawn(io, sensor(camera, simsync::PeriodicSchedule::from_rate(30), camera_granted, grants), asio::detached);

    std::vector<simsync::Accessor> tactile;
    std::vector<std::string> tactile_granted(1000);
    for (int i = 0; i < 1000; ++i) tactile.push_back(handler.register_accessor("tactile_" + std::to_string(i), shared));
    for (int i = 0; i < 1000; ++i) {
        asio::co_spawn(io, sensor(tactile[i], simsync::PeriodicSchedule::from_rate(100), tactile_granted[i], grants),
                       asio::detached);
    }

    std::thread second([&] { io.run(); }); // two threads serve all 1001 coroutines
    io.run();
    second.join();

    std::printf("camera granted at (ms):%s\n", camera_granted.c_str());
    std::printf("tactile_999 granted at (ms):%s\n", tactile_granted[999].c_str());
    std::printf("1001 coroutine accessors on 2 threads: %ld grants\n", grants.load());
    return 0;
}

// Four ways to be an accessor, 2 of 4: a callback on an Asio executor.
//
// The camera of 01, and a 10 Hz GPS, without a thread each. A request is
// asynchronous: async_request_access returns at once, and its completion
// handler, bound to an io_context, runs there once the access is granted
// (signature void(std::error_code, simsync::Access)). Each handler re-arms
// itself by asking for its next instant. The thread in io.run() also does the
// stepping those grants need, so two accessors cost one thread, ours.
// Next: 03_coroutine.cpp, the same loop written as straight-line code.

#include <simsync/core/asio.hpp>
#include <simsync/simsync.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <set>
#include <string>
#include <thread>

using namespace std::chrono_literals;
namespace asio = boost::asio;

struct World final : simsync::World {
    std::set<std::thread::id> stepped_by; // never two steps at once: no lock needed
    void step(simsync::SimDuration) override { stepped_by.insert(std::this_thread::get_id()); }
};

// A periodic reader whose every grant is a callback on `io`, up to 200 ms.
struct Sensor {
    simsync::Accessor accessor;
    simsync::PeriodicSchedule rate;
    asio::io_context& io;
    std::string granted{};
    std::set<std::thread::id> ran_on{};
    std::int64_t n = 0;

    void request()
    {
        auto on_grant = [this](std::error_code ec, simsync::Access access) {
            if (ec) return (void)std::printf("%s refused: %s\n", accessor.name().c_str(), ec.message().c_str());
            ran_on.insert(std::this_thread::get_id());
            granted += " " + std::to_string(access.granted_time().time_since_epoch() / 1ms);
            access.release(rate.at(++n)); // lockstep: time waits for our next instant
            if (rate.at(n) <= simsync::sim_time(200ms)) request();
        };
        accessor.async_request_access(rate.at(n), asio::bind_executor(io, on_grant));
    }
};

int main()
{
    World world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    const simsync::AccessorOptions shared{.mode = simsync::AccessMode::shared};
    asio::io_context io;
    Sensor camera{handler.register_accessor("camera", shared), simsync::PeriodicSchedule::from_rate(30), io};
    Sensor gps{handler.register_accessor("gps", shared), simsync::PeriodicSchedule::from_rate(10), io};
    camera.request(); // returns at once; the callbacks run inside io.run()
    gps.request();
    io.run(); // returns when both have stopped asking: a pending request keeps io busy

    std::printf("camera granted at (ms):%s\n", camera.granted.c_str());
    std::printf("gps granted at (ms):%s\n", gps.granted.c_str());
    const std::set<std::thread::id> me{std::this_thread::get_id()};
    const bool one_thread = camera.ran_on == me && gps.ran_on == me && world.stepped_by == me;
    std::printf("callbacks and steps all on the thread in io.run(): %s\n", one_thread ? "yes" : "no");
    return 0;
}

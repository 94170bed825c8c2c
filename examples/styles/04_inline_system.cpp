// Four ways to be an accessor, 4 of 4: an inline system.
//
// A completion handler with no executor of its own (a plain lambda, or one
// wrapped in simsync::run_inline to say so) is an inline system: the handler
// runs it on the thread that steps the world, right after the step, with no
// thread handoff at all. This is the Gazebo PostUpdate / Drake periodic-event
// model. Here the host owns the engine (StepThread::host): its thread sits in
// handler.run(), steps the world and runs the camera and the GPS; nobody else
// touches the world. A system re-arms from inside its own completion; the
// handler runs the new completion after this one returns, so the stack stays flat.
// Same grant rule and order as every other style: 05_mixed.cpp puts all four together.

#include <simsync/asio.hpp>
#include <simsync/simsync.hpp>

#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <thread>

using namespace std::chrono_literals;

struct World final : simsync::World {
    std::set<std::thread::id> stepped_by;
    void step(simsync::SimDuration) override { stepped_by.insert(std::this_thread::get_id()); }
};

// A periodic reader up to 200 ms; the last system to finish stops the simulation.
struct System {
    simsync::SimSyncHandler& handler;
    simsync::Accessor accessor;
    simsync::PeriodicSchedule rate;
    std::string granted{};
    std::set<std::thread::id> ran_on{};
    std::int64_t n = 0;
    static inline int running = 0;

    void request()
    {
        accessor.async_request_access(rate.at(n), simsync::run_inline([this](std::error_code ec, simsync::Access a) {
            if (ec) return (void)std::printf("%s refused: %s\n", accessor.name().c_str(), ec.message().c_str());
            ran_on.insert(std::this_thread::get_id());
            granted += " " + std::to_string(a.granted_time().time_since_epoch() / 1ms);
            a.release(rate.at(++n)); // lockstep: time waits for our next instant
            if (rate.at(n) <= simsync::sim_time(200ms)) request();
            else if (--running == 0) handler.stop(); // the host's run() returns
        }));
    }
};

int main()
{
    World world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .step_thread = simsync::StepThread::host});
    const simsync::AccessorOptions shared{.mode = simsync::AccessMode::shared};
    System camera{handler, handler.register_accessor("camera", shared), simsync::PeriodicSchedule::from_rate(30)};
    System gps{handler, handler.register_accessor("gps", shared), simsync::PeriodicSchedule::from_rate(10)};
    System::running = 2;
    camera.request(); // made here, but run by the host thread: nothing has run yet
    gps.request();

    handler.run(); // the host loop: steps and runs the systems until stop()

    std::printf("camera granted at (ms):%s\n", camera.granted.c_str());
    std::printf("gps granted at (ms):%s\n", gps.granted.c_str());
    const std::set<std::thread::id> host{std::this_thread::get_id()};
    const bool one_thread = camera.ran_on == host && gps.ran_on == host && world.stepped_by == host;
    std::printf("systems and steps all on the host thread, in handler.run(): %s\n", one_thread ? "yes" : "no");
    return 0;
}

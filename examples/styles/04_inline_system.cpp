// Four ways to be an accessor, 4 of 4: an inline system.
//
// A system registered with Accessor::run_system is called by the handler on
// the thread that steps the world, right after the step that reaches each
// instant it asks for, and returns the instant it wants next: no completion,
// no queue, no thread handoff, no allocation per call. This is the Gazebo
// PostUpdate / Drake periodic-event model. Here the host owns the engine
// (StepThread::host): its thread sits in handler.run(), steps the world and
// runs the camera and the GPS; nobody else touches the world. (A one-off
// inline completion is async_request_access with simsync::run_inline.)
// Same grant rule and order as every other style: 05_mixed.cpp puts all four together.

#include <simsync/core/asio.hpp>
#include <simsync/simsync.hpp>

#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <thread>

using namespace std::chrono_literals;

struct World final : simsync::World {
    std::set<std::thread::id> stepped_by;
    void step(simsync::SimDuration) override { stepped_by.insert(std::this_thread::get_id()); }
};

// A periodic reader up to 200 ms; the last system to finish stops the simulation.
struct Reader {
    simsync::Accessor accessor;
    simsync::PeriodicSchedule rate;
    std::string granted{};
    std::set<std::thread::id> ran_on{};
    std::int64_t n = 0;

    void start(simsync::SimSyncHandler& handler, int& running)
    {
        accessor.run_system(rate.at(0), [this, &handler, &running](simsync::Access& a) -> std::optional<simsync::SimTime> {
            if (!a) { // a refusal is a value here too: stopped, not_registered, ...
                std::printf("%s refused: %s\n", accessor.name().c_str(), a.error().message().c_str());
                return std::nullopt;
            }
            ran_on.insert(std::this_thread::get_id());
            granted += " " + std::to_string(a.granted_time().time_since_epoch() / 1ms);
            if (rate.at(++n) <= simsync::sim_time(200ms)) return rate.at(n); // released, and asked again
            if (--running == 0) handler.stop(); // the host's run() returns
            return std::nullopt;
        });
    }
};

int main()
{
    World world;
    simsync::SimSyncHandler handler(world, {.step = 1ms, .step_thread = simsync::StepThread::host});
    const simsync::AccessorOptions shared{.mode = simsync::AccessMode::shared};
    Reader camera{handler.register_accessor("camera", shared), simsync::PeriodicSchedule::from_rate(30)};
    Reader gps{handler.register_accessor("gps", shared), simsync::PeriodicSchedule::from_rate(10)};
    int running = 2;
    camera.start(handler, running); // registered here, but run by the host thread: nothing has run yet
    gps.start(handler, running);

    handler.run(); // the host loop: steps and runs the systems until stop()

    std::printf("camera granted at (ms):%s\n", camera.granted.c_str());
    std::printf("gps granted at (ms):%s\n", gps.granted.c_str());
    const std::set<std::thread::id> host{std::this_thread::get_id()};
    const bool one_thread = camera.ran_on == host && gps.ran_on == host && world.stepped_by == host;
    std::printf("systems and steps all on the host thread, in handler.run(): %s\n", one_thread ? "yes" : "no");
    return 0;
}

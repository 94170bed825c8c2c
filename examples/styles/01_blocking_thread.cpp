// Four ways to be an accessor, 1 of 4: a blocking request on a thread of its own.
//
// A 30 Hz camera asks for the simulated instants n/30 s. Each request blocks its
// thread until the handler has stepped the world there and it is the camera's
// turn; the handler rounds every request to the 1 ms step grid, so the frames are
// granted at 0, 33, 67, 100, 133, 167, 200 ms (simsync::round_to_grid,
// include/simsync/core/time.hpp).
// A lone accessor steps the world itself on its way to each grant: no other
// thread is involved. Its cost: a thread per accessor and, once several share a
// handler, a thread wake-up for most grants.
// Next: 02_callback_on_executor.cpp, the same camera without a thread of its own.

#include <simsync/simsync.hpp>

#include <cstdio>
#include <set>
#include <string>
#include <thread>

using namespace std::chrono_literals;

// Your engine goes behind simsync::World; this one only notes who steps it.
struct World final : simsync::World {
    std::set<std::thread::id> stepped_by; // never two steps at once: no lock needed
    void step(simsync::SimDuration) override { stepped_by.insert(std::this_thread::get_id()); }
};

int main()
{
    World world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    // Lockstep (the default): time never passes an instant the camera could still ask for.
    simsync::Accessor camera = handler.register_accessor("camera", {.mode = simsync::AccessMode::shared});
    const auto frames = simsync::PeriodicSchedule::from_rate(30); // n/30 s, exact

    std::string granted;
    bool refused = false;
    std::thread camera_thread([&] {
        simsync::Access access = camera.request_access(frames.at(0)); // blocks until granted
        for (int n = 0; n < 7; ++n) {
            if (!access) { // a refusal is a value: stopped, time_passed, ...
                std::printf("refused: %s\n", access.error().message().c_str());
                refused = true;
                return;
            }
            // The world stands still while the access is held: read it here.
            granted += " " + std::to_string(access.granted_time().time_since_epoch() / 1ms);
            // Release and ask for the next frame in one call, under one lock:
            // time cannot slip past it, and this thread steps the world there.
            if (n + 1 < 7) access = camera.release_and_request(std::move(access), frames.at(n + 1));
        }
        camera.deregister(); // done: a lockstep accessor would otherwise hold time at its last bound
    });
    const std::thread::id camera_id = camera_thread.get_id();
    camera_thread.join();

    std::printf("camera granted at (ms):%s\n", granted.c_str());
    std::printf("world stepped to %lld ms by the camera's own thread: %s\n",
                static_cast<long long>(handler.now().time_since_epoch() / 1ms),
                world.stepped_by == std::set{camera_id} ? "yes" : "no");
    return refused ? 1 : 0;
}

#include <simsync/simsync.hpp>
// One header of each layer by its own path: the installed tree mirrors include/simsync/.
#include <simsync/accessors/pacer.hpp>
#include <simsync/clock/event_loop.hpp>
#include <simsync/config/config.hpp>
#include <simsync/core/asio.hpp>
#include <simsync/core/handler.hpp>
#include <simsync/operator/operator_commands.hpp>

using namespace std::chrono_literals;

int main()
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    auto a = handler.register_accessor("consumer");
    simsync::Access access = a.request_access(simsync::sim_time(10ms));
    return access && world.steps() == 10 ? 0 : 1;
}

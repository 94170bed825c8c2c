#include <simsync/simsync.hpp>

using namespace std::chrono_literals;

int main()
{
    simsync::CountingWorld world;
    simsync::SimSyncHandler handler(world, {.step = 1ms});
    auto a = handler.register_accessor("consumer");
    simsync::Access access = a.request_access(simsync::sim_time(10ms));
    return access && world.steps() == 10 ? 0 : 1;
}

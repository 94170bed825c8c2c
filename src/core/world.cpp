#include <simsync/core/world.hpp>

namespace simsync {

void CountingWorld::step(SimDuration dt)
{
    elapsed_ns_.fetch_add(dt.count(), std::memory_order_acq_rel);
    steps_.fetch_add(1, std::memory_order_acq_rel);
}

} // namespace simsync

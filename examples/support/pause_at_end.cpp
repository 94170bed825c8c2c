#include "pause_at_end.hpp"

#include <simsync/core/asio.hpp>

#include <climits>

namespace simsync::examples {

struct PauseAtEnd::State {
    State(SimSyncHandler& h, std::function<void()> f) : handler(h), on_reached(std::move(f)) {}
    SimSyncHandler& handler;
    std::function<void()> on_reached;
    std::atomic<bool> reached{false};
    Accessor accessor;
};

PauseAtEnd::PauseAtEnd(SimSyncHandler& handler, SimTime end, std::function<void()> on_reached)
    : state_(std::make_shared<State>(handler, std::move(on_reached)))
{
    state_->accessor = handler.register_accessor(
        kName, {.kind = AccessorKind::free, .mode = AccessMode::shared, .priority = INT_MIN});
    state_->accessor.async_request_access(
        end, run_inline([state = state_](std::error_code ec, Access access) {
            if (ec) return; // stopped before the end
            state->handler.pause();
            access.release();
            state->reached = true;
            if (state->on_reached) state->on_reached();
        }));
}

PauseAtEnd::~PauseAtEnd() { state_->accessor.deregister(); }

bool PauseAtEnd::reached() const noexcept { return state_->reached.load(); }

} // namespace simsync::examples

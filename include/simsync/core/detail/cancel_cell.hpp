#pragma once
/// @file
/// Internal, not API: how an asynchronous request is withdrawn through an Asio
/// cancellation slot. One mechanism for every asynchronous request of simsync
/// (Accessor::async_request_access in simsync/core/asio.hpp, and the dds adapter's
/// RemoteAccessor::async_request_access in simsync/dds/remote_asio.hpp).

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/cancellation_type.hpp>

#include <memory>
#include <mutex>
#include <utility>

namespace simsync::detail {

// The request a cancellation slot withdraws: `Ticket` names it, `Cancel`
// withdraws it if it is still pending (a no-op for a finished one; noexcept,
// any thread).
//
// The slot's handler is installed before the request starts, because the
// request's completion can run before the initiating call returns (inline on
// that thread, or posted and run on another thread of a multi-threaded
// executor) and re-arm through the same slot: installed afterwards, the
// finished request's handler would replace the live one's, and the two
// installations would race. So the ticket arrives after the handler, and an
// emission in between is kept and applied when it does. Emission and
// installation are on whatever thread the slot's owner serialises them on
// (Asio's rule for slots); the cell only bridges that thread and the
// initiating one.
template <class Ticket, void (*Cancel)(const Ticket&) noexcept>
class CancelCell {
public:
    void cancel() noexcept
    {
        Ticket ticket;
        {
            std::lock_guard<std::mutex> guard(mutex_);
            if (!started_) {
                cancelled_ = true;
                return;
            }
            ticket = ticket_;
        }
        Cancel(ticket);
    }
    void started(Ticket ticket) noexcept
    {
        bool cancelled = false;
        {
            std::lock_guard<std::mutex> guard(mutex_);
            ticket_ = ticket;
            started_ = true;
            cancelled = cancelled_;
        }
        if (cancelled) Cancel(ticket);
    }

private:
    std::mutex mutex_;
    bool started_ = false;
    bool cancelled_ = false;
    Ticket ticket_{};
};

// The slot's handler: withdraws the cell's request on a terminal, partial or
// total emission (after completion: a no-op, the ticket names a finished request).
template <class Cell>
struct CancelThroughCell {
    std::shared_ptr<Cell> cell;
    void operator()(boost::asio::cancellation_type type) const noexcept
    {
        if ((type & (boost::asio::cancellation_type::terminal | boost::asio::cancellation_type::partial |
                     boost::asio::cancellation_type::total)) != boost::asio::cancellation_type::none) {
            // The withdrawn completion may run here and re-arm through the
            // same slot, replacing this handler: nothing of it is used after.
            const std::shared_ptr<Cell> keep = cell;
            keep->cancel();
        }
    }
};

// Starts an asynchronous request completed by `handler`: `start(std::move(handler))`
// starts it and returns its ticket. If the handler's associated cancellation
// slot is connected, its handler is installed first and given the ticket
// once `start` returns (see CancelCell).
template <class Ticket, void (*Cancel)(const Ticket&) noexcept, class Handler, class Start>
void start_cancellable(Handler handler, Start&& start)
{
    using Cell = CancelCell<Ticket, Cancel>;
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    std::shared_ptr<Cell> cell;
    if (slot.is_connected()) {
        cell = std::make_shared<Cell>();
        slot.template emplace<CancelThroughCell<Cell>>(CancelThroughCell<Cell>{cell});
    }
    const Ticket ticket = std::forward<Start>(start)(std::move(handler));
    if (cell) cell->started(ticket);
}

} // namespace simsync::detail

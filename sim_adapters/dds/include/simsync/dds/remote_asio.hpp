#pragma once
/// @file
/// RemoteAccessor::async_request_access on Boost.Asio (as simsync/core/asio.hpp is
/// for the local Accessor). Include it only where asynchronous remote requests
/// are used.

#include <simsync/core/detail/cancel_cell.hpp>
#include <simsync/dds/remote_accessor.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>

#include <memory>
#include <system_error>
#include <utility>

namespace simsync::dds {

namespace detail {

// Owns the completion handler and keeps its executor's work count up until the
// request completes (io_context::run() does not return meanwhile).
template <class Handler>
class RemoteAsioCompletion final : public RemoteCompletion {
    using Executor = boost::asio::associated_executor_t<Handler>;
    using Tracked = std::decay_t<decltype(boost::asio::prefer(std::declval<Executor>(),
                                                              boost::asio::execution::outstanding_work.tracked))>;

public:
    explicit RemoteAsioCompletion(Handler handler)
        : executor_(boost::asio::prefer(boost::asio::get_associated_executor(handler),
                                        boost::asio::execution::outstanding_work.tracked)),
          handler_(std::move(handler))
    {
    }

    void complete(std::error_code error, RemoteAccess access) override
    {
        boost::asio::post(executor_, boost::asio::append(std::move(handler_), error, std::move(access)));
    }

private:
    Tracked executor_; // first: destroyed after the handler
    Handler handler_;
};

} // namespace detail

template <class CompletionToken>
auto RemoteAccessor::async_request_access(SimTime t, CompletionToken&& token)
{
    return boost::asio::async_initiate<CompletionToken, void(std::error_code, RemoteAccess)>(
        [this, t](auto handler) {
            // The slot's handler goes in before the request starts: the reply
            // may complete on another thread of the executor and re-arm
            // through the same slot before start_async returns.
            simsync::detail::start_cancellable<detail::RemoteTicket, &detail::cancel_remote>(
                std::move(handler), [this, t](auto h) {
                    using Handler = decltype(h);
                    return start_async(t, std::make_unique<detail::RemoteAsioCompletion<Handler>>(std::move(h)));
                });
        },
        token);
}

template <class CompletionToken>
auto RemoteAccessor::async_release_and_request(RemoteAccess&& held, SimTime next, std::vector<std::uint8_t> commands,
                                               CompletionToken&& token)
{
    // The access moves into the initiation, which a deferred token runs later;
    // what can refuse it is checked first, while the caller still holds it.
    check_async_release(held, next, commands);
    return boost::asio::async_initiate<CompletionToken, void(std::error_code, RemoteAccess)>(
        [this, next, access = std::move(held), bytes = std::move(commands)](auto handler) mutable {
            simsync::detail::start_cancellable<detail::RemoteTicket, &detail::cancel_remote>(
                std::move(handler), [&](auto h) {
                    using Handler = decltype(h);
                    return start_async(next, std::make_unique<detail::RemoteAsioCompletion<Handler>>(std::move(h)),
                                       &access, bytes);
                });
        },
        token);
}

} // namespace simsync::dds

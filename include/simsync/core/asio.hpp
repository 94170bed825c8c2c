#pragma once
/// @file
/// Asynchronous grants on Boost.Asio: Accessor::async_request_access and the
/// inline-system marker. The one public header of simsync that includes Boost;
/// include it only where asynchronous accessors are used.
///
/// The library instantiates Asio itself (EventLoop, LoopExecutor): every
/// translation unit of a program must see Asio configured the same way (no
/// BOOST_ASIO_* configuration macro in one target only), or the one-definition
/// rule breaks (a mismatch shows as a crash in a timer wait).

#include <simsync/clock/event_loop.hpp>
#include <simsync/core/accessor.hpp>
#include <simsync/core/detail/cancel_cell.hpp>
#include <simsync/core/error.hpp>

#include <boost/asio/io_context.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/execution/blocking.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/system_executor.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <system_error>
#include <type_traits>
#include <utility>

namespace simsync {

/// A completion handler marked as an inline system (see
/// Accessor::async_request_access): it completes on the thread that steps the
/// world, whatever executor it is associated with. Made by run_inline().
template <class Handler>
struct InlineHandler {
    Handler handler;
    template <class... Args>
    void operator()(Args&&... args)
    {
        std::move(handler)(std::forward<Args>(args)...);
    }
};

/// Marks `handler` as an inline system: `accessor.async_request_access(t,
/// simsync::run_inline([](std::error_code, simsync::Access a) { ... }))`.
/// A plain callable without an associated executor is already one; this makes
/// the choice explicit.
template <class Handler>
InlineHandler<std::decay_t<Handler>> run_inline(Handler&& handler)
{
    return {std::forward<Handler>(handler)};
}

namespace detail {

template <class T>
struct IsInlineHandler : std::false_type {};
template <class H>
struct IsInlineHandler<InlineHandler<H>> : std::true_type {};
// run_inline() inside a cancellation slot binder stays an inline system.
template <class H, class Slot>
struct IsInlineHandler<boost::asio::cancellation_slot_binder<H, Slot>> : IsInlineHandler<H> {};

// The Asio side of an asynchronous request: owns the completion handler and,
// for a handler with an executor of its own, keeps that executor's work count
// up until the request completes (io_context::run() does not return meanwhile).
template <class Handler>
class AsioCompletion final : public AsyncCompletion {
    using Executor = boost::asio::associated_executor_t<Handler>;
    static constexpr bool kInline =
        IsInlineHandler<Handler>::value || std::is_same_v<Executor, boost::asio::system_executor>;
    using Tracked = std::conditional_t<kInline, Executor,
                                       std::decay_t<decltype(boost::asio::prefer(
                                           std::declval<Executor>(),
                                           boost::asio::execution::outstanding_work.tracked))>>;

public:
    explicit AsioCompletion(Handler handler)
        : executor_(make_tracked(boost::asio::get_associated_executor(handler))), handler_(std::move(handler))
    {
    }

    bool runs_inline() const noexcept override { return kInline; }

    void complete(std::error_code error, Access access) override
    {
        if constexpr (kInline) {
            CompletionScope::refuse_if_revoked(error, access);
            std::move(handler_)(error, std::move(access));
        } else {
            // Posted, never run here: the completion must not run inside the
            // initiating call, nor on the thread of whoever granted it.
            boost::asio::post(executor_, Granted{std::move(handler_), error, std::move(access)});
        }
    }

    std::function<void(std::function<void()>)> poster() const override
    {
        if constexpr (kInline) {
            return [](std::function<void()> job) { job(); };
        } else {
            return [executor = executor_](std::function<void()> job) {
                boost::asio::post(executor, std::move(job));
            };
        }
    }

private:
    // The posted completion. While the handler runs, its thread holds the
    // access (CompletionScope); a grant revoked or abandoned before it ran
    // arrives as that refusal.
    struct Granted {
        Handler handler;
        std::error_code error;
        Access access;
        void operator()()
        {
            CompletionScope scope(error, access);
            std::move(handler)(error, std::move(access));
        }
    };

    static Tracked make_tracked(const Executor& executor)
    {
        if constexpr (kInline) {
            return executor;
        } else {
            return boost::asio::prefer(executor, boost::asio::execution::outstanding_work.tracked);
        }
    }

    // The executor first: members are destroyed in reverse order, so the
    // handler (which may own what runs on that executor, a strand say) goes
    // before the tracked work that keeps the executor's context alive.
    Tracked executor_;
    Handler handler_;
};

boost::asio::io_context& io_context_of(const Executor& executor);

} // namespace detail

/// An Asio executor that runs work on an EventLoop's thread (asio_executor()).
/// It posts through the loop's Executor handle, which keeps the loop alive for
/// the length of each post, or finds it gone: a plain io_context executor
/// would not own its context, and the thread that grants a request (or posts
/// a step duty) may still be inside that post when the completion has already
/// run on the loop and the loop has been destroyed. Work posted to a loop that
/// is gone is dropped (destroyed on the posting thread). It tracks no
/// outstanding work: the loop's own work guard keeps it running.
///
/// Copy/move: a value type. Thread safety: as Executor.
class LoopExecutor {
public:
    explicit LoopExecutor(const Executor& executor)
        : executor_(executor), context_(&detail::io_context_of(executor))
    {
    }

    // Never blocking: every job is posted (Asio's post() requires saying so).
    LoopExecutor require(boost::asio::execution::blocking_t::never_t) const noexcept { return *this; }
    static constexpr boost::asio::execution::blocking_t query(boost::asio::execution::blocking_t) noexcept
    {
        return boost::asio::execution::blocking.never;
    }
    /// The loop's io_context (valid while the loop lives).
    boost::asio::io_context& query(boost::asio::execution::context_t) const noexcept { return *context_; }

    template <class Function>
    void execute(Function&& f) const
    {
        auto job = std::make_shared<std::decay_t<Function>>(std::forward<Function>(f));
        try {
            executor_.post([job] { (*job)(); });
        } catch (const Error&) {
            // The loop is gone: the job (and an access it carries) ends here.
        }
    }

    /// Equal executors post to one loop.
    friend bool operator==(const LoopExecutor& a, const LoopExecutor& b) noexcept { return a.context_ == b.context_; }
    friend bool operator!=(const LoopExecutor& a, const LoopExecutor& b) noexcept { return !(a == b); }

private:
    Executor executor_;
    boost::asio::io_context* context_;
};

/// The Asio executor of an EventLoop, for asynchronous accessors that should
/// complete on the loop's thread (beside the pacer and the clock publisher):
/// `bind_executor(simsync::asio_executor(loop.executor()), handler)`.
/// @throws simsync::Error (invalid_state) if the loop is gone.
inline LoopExecutor asio_executor(const Executor& executor) { return LoopExecutor(executor); }

namespace detail {
// The initiation shared by async_request_access and async_release_and_request:
// the cancellation slot's handler first (detail::start_cancellable), the
// completion in the accessor's CompletionMemory, then the request (after
// releasing the access the caller passed on).
template <class Handler, class Start>
void initiate_request(Handler handler, CompletionMemory* memory, Start start)
{
    start_cancellable<AsyncTicket, &cancel_async>(std::move(handler), [&](Handler h) {
        return start(make_completion<AsioCompletion<Handler>>(memory, std::move(h)));
    });
}
} // namespace detail

template <class CompletionToken>
auto Accessor::async_request_access(SimTime t, CompletionToken&& token)
{
    return boost::asio::async_initiate<CompletionToken, void(std::error_code, Access)>(
        [this, t](auto handler) {
            detail::initiate_request(std::move(handler), completion_memory(), [&](auto completion) {
                return start_async(t, std::move(completion));
            });
        },
        token);
}

template <class CompletionToken>
auto Accessor::async_release_and_request(Access&& held, SimTime next, CompletionToken&& token)
{
    // The access moves into the initiation, which a deferred token (an
    // awaitable) runs later: it is released then, in one operation with the
    // request.
    return boost::asio::async_initiate<CompletionToken, void(std::error_code, Access)>(
        [this, next, access = std::move(held)](auto handler) mutable {
            detail::initiate_request(std::move(handler), completion_memory(), [&](auto completion) {
                return start_async(next, std::move(completion), &access);
            });
        },
        token);
}

} // namespace simsync

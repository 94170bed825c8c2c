#pragma once
// What an accepted connection counts against the console's limits.

#include "console_impl.hpp"

namespace simsync::web {

// What one accepted connection holds against the limits, from accept until it
// is gone: a pending slot until its hello, and its peer address's count while
// it is anonymous (not a controller). Network thread only; released by its
// destructor, also when stop() destroys leftover handlers.
struct WebConsole::Impl::Admission {
    Admission(Impl& owner, asio::ip::address address) : impl(owner), peer(address)
    {
        ++impl.pending;
        ++impl.per_address[peer];
    }
    Admission(const Admission&) = delete;
    Admission& operator=(const Admission&) = delete;
    ~Admission()
    {
        leave_pending();
        authenticated();
    }
    void leave_pending()
    {
        if (!pending) return;
        pending = false;
        --impl.pending;
    }
    // A controller no longer counts against its address: a flood from the
    // operator's own address must not close the operator's open connection.
    void authenticated()
    {
        if (!anonymous) return;
        anonymous = false;
        const auto it = impl.per_address.find(peer);
        if (--it->second == 0) impl.per_address.erase(it);
    }

    Impl& impl;
    asio::ip::address peer;
    bool pending = true;
    bool anonymous = true;
};

} // namespace simsync::web

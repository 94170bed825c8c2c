#pragma once
// Test and benchmark support for the DDS adapter: isolation and child processes.

#include <simsync/core/time.hpp>
#include <simsync/dds/domain.hpp>

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace simsync::dds::testing {

/// First and last DDS domain id that tests lease: above Linux's ephemeral port
/// range (their ports start at 7400 + 250 x 215 = 61150 > 60999, so an
/// unrelated socket can never take a discovery port) and outside ROS 2's
/// recommended 0-101, so a developer's ROS 2 nodes are not disturbed.
inline constexpr std::uint32_t kFirstTestDomain = 215;
inline constexpr std::uint32_t kLastTestDomain = 232;
/// The last one for tests with DDS Security (kMaxSecuredDomainId).
inline constexpr std::uint32_t kLastSecuredTestDomain = kMaxSecuredDomainId;

/// A DDS domain id that this process holds exclusively, among all processes of
/// the machine that lease ids through this class, for the life of the object:
/// an exclusive flock on /tmp/simsync-dds-domains/<id>.lock (close-on-exec, so
/// children do not keep it; the kernel releases it when the process dies, even
/// by a crash). Parallel ctest runs therefore never share a domain, and a test's
/// peers in other processes get the id on their command line.
/// Copy/move: neither. Thread safety: construct and destroy on one thread.

class DomainLease {
public:
    /// Takes a free id in [first, last], trying from a pid-dependent start;
    /// when all are taken, waits for one (polling every 50 ms) up to `wait`.
    /// @throws std::runtime_error if none became free in time.
    explicit DomainLease(std::uint32_t first = kFirstTestDomain, std::uint32_t last = kLastTestDomain,
                         WallClock::duration wait = std::chrono::seconds(120));
    ~DomainLease();
    DomainLease(const DomainLease&) = delete;
    DomainLease& operator=(const DomainLease&) = delete;

    std::uint32_t id() const noexcept { return id_; }
    /// A Cyclone discovery tag unique to this lease (pid and a random part): for
    /// Cyclone-only tests, a second fence besides the domain id.
    const std::string& tag() const noexcept { return tag_; }
    /// A loopback DomainConfig on the leased id; with the tag if `tagged`
    /// (never for tests that talk to Fast DDS, which knows no tags).
    DomainConfig config(bool tagged) const;

private:
    std::uint32_t id_ = 0;
    int fd_ = -1;
    std::string tag_;
};

/// Throwaway DDS Security material for one test: a temporary directory filled
/// by scripts/make-dds-certs (two fresh CAs, a signed governance, and per
/// identity a certificate, key and signed permissions) and removed again. No
/// secret is kept in the repository; every run has its own CAs.
/// Copy/move: neither. Thread safety: construct and destroy on one thread.
class TestCertificates {
public:
    /// Runs make-dds-certs with `roles` ("host:host", "participant:controller",
    /// ...; see the script) and `options` (e.g. {"--partition", "p"}).
    /// @throws std::runtime_error if the script is missing or fails.
    explicit TestCertificates(const std::vector<std::string>& roles, const std::vector<std::string>& options = {});
    ~TestCertificates();
    TestCertificates(const TestCertificates&) = delete;
    TestCertificates& operator=(const TestCertificates&) = delete;

    /// The directory the script wrote.
    const std::string& dir() const noexcept { return dir_; }
    /// The directory of identity `name`.
    std::string identity_dir(const std::string& name) const { return dir_ + "/" + name; }
    /// Its security.yaml (what --security takes).
    std::string security_file(const std::string& name) const { return identity_dir(name) + "/security.yaml"; }
    /// Its six files.
    SecurityFiles files(const std::string& name) const;
    /// A loopback domain on `lease`'s id (no tag: all these tests must also
    /// run against Fast DDS) secured as `name`. The lease must be of an id up
    /// to kLastSecuredTestDomain.
    DomainConfig secured(const DomainLease& lease, const std::string& name) const;

    /// The handshake key make-dds-certs printed for identity `name` (the first
    /// bytes of its GUID prefix, in hex: of two participants, the lower
    /// starts the authentication handshake). Empty if unknown.
    std::string handshake_key(const std::string& name) const;

    /// Where make-dds-certs is (the source tree's scripts/, fixed at build time).
    static std::string script();

private:
    std::string dir_;
    std::vector<std::string> output_; // the script's lines
};

/// A program run as a child process: stdout read line by line through a pipe,
/// stdin a pipe the test may close, stderr inherited (so its diagnostics reach
/// the test log). Killed (SIGKILL) and reaped on destruction if still running.
/// Copy/move: neither. Thread safety: one thread at a time.
class ChildProcess {
public:
    /// Starts `argv[0]` (a path) with the remaining arguments.
    /// @throws std::runtime_error naming the program if it cannot be started.
    explicit ChildProcess(const std::vector<std::string>& argv);
    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    pid_t pid() const noexcept { return pid_; }
    /// The next line of stdout (without the newline), or nullopt when `timeout`
    /// passes first or stdout reached its end.
    std::optional<std::string> read_line(WallClock::duration timeout);
    /// Reads lines until one satisfies `match` (returned) or `timeout` passes or
    /// stdout ends (nullopt). Every line read is also kept in `lines()`.
    std::optional<std::string> read_until(const std::function<bool(const std::string&)>& match,
                                          WallClock::duration timeout);
    /// Reads the rest of stdout until its end or `timeout`; true if it ended.
    bool read_to_end(WallClock::duration timeout);
    /// Every line read so far.
    const std::vector<std::string>& lines() const noexcept { return lines_; }
    /// Writes `line` and a newline to the child's stdin.
    /// @throws std::runtime_error if it cannot (stdin closed, child gone).
    void write_line(const std::string& line);
    /// Closes the child's stdin (a peer that reads stdin takes it as "stop").
    void close_stdin();
    /// Sends `sig`.
    void signal(int sig);
    /// Waits for the exit: the exit status, 128 + signal number if killed by a
    /// signal, nullopt if it is still running after `timeout`.
    std::optional<int> wait(WallClock::duration timeout);

private:
    pid_t pid_ = -1;
    int pidfd_ = -1;
    int out_ = -1;
    int in_ = -1;
    std::string buffer_;
    bool eof_ = false;
    std::optional<int> status_;
    std::vector<std::string> lines_;
};

/// Moves this process into a network namespace of its own, holding only `lo`
/// (brought up), through a user namespace of its own where the user may not
/// create a network namespace directly. Call it first in a test, while the
/// process has its one thread: what it starts afterwards (Cyclone's threads,
/// child processes) is in that namespace too, so that traffic over `lo` stays
/// within the test and set_loopback(false) cuts it for the test alone.
/// @return why it could not (the test should then skip, saying so), or
///         nullopt once it is in.
std::optional<std::string> enter_private_network();

/// Takes `lo` of this process's network namespace up or down (`ip link set lo
/// up|down`): with it down, every packet between the processes of the
/// namespace is dropped.
/// @throws std::runtime_error if the kernel refuses.
void set_loopback(bool up);

} // namespace simsync::dds::testing

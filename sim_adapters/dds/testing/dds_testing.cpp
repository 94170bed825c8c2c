#include "dds_testing.hpp"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace simsync::dds::testing {

namespace {

const char* const kLockDir = "/tmp/simsync-dds-domains";

int poll_ms(WallTime deadline)
{
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - WallClock::now()).count();
    return static_cast<int>(std::clamp<std::int64_t>(left, 0, 1000));
}

} // namespace

DomainLease::DomainLease(std::uint32_t first, std::uint32_t last, WallClock::duration wait)
{
    if (first > last || last > kMaxDomainId) throw std::runtime_error("DomainLease: bad id range");
    ::mkdir(kLockDir, 01777);
    ::chmod(kLockDir, 01777); // shared by every user of the machine; sticky like /tmp
    const std::uint32_t n = last - first + 1;
    const auto start = static_cast<std::uint32_t>(::getpid()) % n;
    const WallTime deadline = WallClock::now() + wait;
    for (;;) {
        for (std::uint32_t k = 0; k < n; ++k) {
            const std::uint32_t id = first + (start + k) % n;
            const std::string path = std::string(kLockDir) + "/" + std::to_string(id) + ".lock";
            const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
            if (fd < 0) continue;
            if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
                id_ = id;
                fd_ = fd;
                std::random_device rd;
                tag_ = "simsync-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
                return;
            }
            ::close(fd);
        }
        if (WallClock::now() >= deadline) {
            throw std::runtime_error("DomainLease: every DDS domain id " + std::to_string(first) + ".." +
                                     std::to_string(last) + " stayed taken (lock files in " + kLockDir + ")");
        }
        // All taken by other test processes: wait for one to finish.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

DomainLease::~DomainLease()
{
    if (fd_ >= 0) ::close(fd_); // releases the flock
}

DomainConfig DomainLease::config(bool tagged) const
{
    DomainConfig c = DomainConfig::loopback(id_);
    if (tagged) c.tag = tag_;
    return c;
}

// -------------------------------------------------------- TestCertificates

std::string TestCertificates::script() { return SIMSYNC_MAKE_DDS_CERTS; }

TestCertificates::TestCertificates(const std::vector<std::string>& roles, const std::vector<std::string>& options)
{
    char pattern[] = "/tmp/simsync-dds-certs-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("TestCertificates: mkdtemp failed");
    dir_ = pattern;
    std::vector<std::string> argv{script()};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(dir_);
    argv.insert(argv.end(), roles.begin(), roles.end());
    ChildProcess child(argv);
    child.close_stdin();
    const bool ended = child.read_to_end(std::chrono::seconds(60));
    const std::optional<int> status = ended ? child.wait(std::chrono::seconds(10)) : std::nullopt;
    if (status != 0) {
        std::string out;
        for (const std::string& line : child.lines()) out += "\n  " + line;
        throw std::runtime_error("TestCertificates: " + script() + " failed (exit " +
                                 (status ? std::to_string(*status) : std::string("?")) + ")" + out);
    }
    output_ = child.lines();
}

std::string TestCertificates::handshake_key(const std::string& name) const
{
    const std::string file = security_file(name) + " ";
    const std::string key = "handshake key ";
    for (const std::string& line : output_) {
        const auto at = line.find(key);
        if (line.rfind(file, 0) == 0 && at != std::string::npos) return line.substr(at + key.size(), 12);
    }
    return {};
}

TestCertificates::~TestCertificates()
{
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

SecurityFiles TestCertificates::files(const std::string& name) const
{
    SecurityFiles s;
    s.identity_ca = dir_ + "/identity_ca.pem";
    s.certificate = identity_dir(name) + "/cert.pem";
    s.private_key = identity_dir(name) + "/key.pem";
    s.permissions_ca = dir_ + "/permissions_ca.pem";
    s.governance = dir_ + "/governance.p7s";
    s.permissions = identity_dir(name) + "/permissions.p7s";
    return s;
}

DomainConfig TestCertificates::secured(const DomainLease& lease, const std::string& name) const
{
    DomainConfig c = lease.config(false);
    c.security = files(name);
    return c;
}

// ------------------------------------------------------------ ChildProcess

ChildProcess::ChildProcess(const std::vector<std::string>& argv)
{
    if (argv.empty()) throw std::runtime_error("ChildProcess: no program");
    // A write to the stdin of a child that has died must fail (write_line
    // throws), not kill the test process.
    ::signal(SIGPIPE, SIG_IGN);
    int out[2];
    int in[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("ChildProcess: pipe failed");
    if (::pipe2(in, O_CLOEXEC) != 0) {
        ::close(out[0]);
        ::close(out[1]);
        throw std::runtime_error("ChildProcess: pipe failed");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, argv[0].c_str(), &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    ::close(in[0]);
    out_ = out[0];
    in_ = in[1];
    if (rc != 0) {
        ::close(out_);
        ::close(in_);
        throw std::runtime_error("ChildProcess: cannot start " + argv[0] + ": " + std::strerror(rc));
    }
    // Readable once the child exits: wait() needs no polling. (glibc 2.36 has no
    // C++-usable declaration of pidfd_open.)
    pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
}

ChildProcess::~ChildProcess()
{
    if (!status_) {
        ::kill(pid_, SIGKILL);
        int st = 0;
        ::waitpid(pid_, &st, 0);
    }
    if (pidfd_ >= 0) ::close(pidfd_);
    if (out_ >= 0) ::close(out_);
    if (in_ >= 0) ::close(in_);
}

std::optional<std::string> ChildProcess::read_line(WallClock::duration timeout)
{
    const WallTime deadline = WallClock::now() + timeout;
    for (;;) {
        const auto nl = buffer_.find('\n');
        if (nl != std::string::npos) {
            std::string line = buffer_.substr(0, nl);
            buffer_.erase(0, nl + 1);
            lines_.push_back(line);
            return line;
        }
        if (eof_) {
            if (buffer_.empty()) return std::nullopt;
            std::string line = std::move(buffer_);
            buffer_.clear();
            lines_.push_back(line);
            return line;
        }
        if (WallClock::now() >= deadline) return std::nullopt;
        pollfd p{out_, POLLIN, 0};
        const int r = ::poll(&p, 1, poll_ms(deadline));
        if (r < 0 && errno != EINTR) return std::nullopt;
        if (r <= 0) continue;
        char chunk[4096];
        const ssize_t got = ::read(out_, chunk, sizeof chunk);
        if (got > 0) {
            buffer_.append(chunk, static_cast<std::size_t>(got));
        } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
            eof_ = true;
        }
    }
}

std::optional<std::string> ChildProcess::read_until(const std::function<bool(const std::string&)>& match,
                                                    WallClock::duration timeout)
{
    const WallTime deadline = WallClock::now() + timeout;
    for (;;) {
        const auto left = deadline - WallClock::now();
        if (left <= WallClock::duration::zero()) return std::nullopt;
        auto line = read_line(left);
        if (!line) return std::nullopt;
        if (match(*line)) return line;
    }
}

bool ChildProcess::read_to_end(WallClock::duration timeout)
{
    const WallTime deadline = WallClock::now() + timeout;
    while (read_line(deadline - WallClock::now())) {
    }
    return eof_ && buffer_.empty();
}

void ChildProcess::write_line(const std::string& line)
{
    const std::string text = line + "\n";
    std::size_t done = 0;
    while (in_ >= 0 && done < text.size()) {
        const ssize_t n = ::write(in_, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
    if (done != text.size()) throw std::runtime_error("ChildProcess: cannot write to the child's stdin");
}

void ChildProcess::close_stdin()
{
    if (in_ >= 0) ::close(in_);
    in_ = -1;
}

void ChildProcess::signal(int sig)
{
    if (!status_) ::kill(pid_, sig);
}

std::optional<int> ChildProcess::wait(WallClock::duration timeout)
{
    if (status_) return status_;
    const WallTime deadline = WallClock::now() + timeout;
    for (;;) {
        int st = 0;
        const pid_t r = ::waitpid(pid_, &st, WNOHANG);
        if (r == pid_) {
            status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            return status_;
        }
        if (WallClock::now() >= deadline) return std::nullopt;
        if (pidfd_ >= 0) {
            pollfd p{pidfd_, POLLIN, 0}; // readable once the child has exited
            ::poll(&p, 1, poll_ms(deadline));
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
}

// ------------------------------------------------------- network namespace

namespace {

bool write_file(const char* path, const std::string& text)
{
    std::ofstream out(path);
    out << text;
    out.flush();
    return static_cast<bool>(out);
}

} // namespace

std::optional<std::string> enter_private_network()
{
    if (::unshare(CLONE_NEWNET) != 0) {
        const std::string direct = std::strerror(errno);
        const uid_t uid = ::getuid();
        const gid_t gid = ::getgid();
        if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
            return "this process may not create a network namespace (unshare(CLONE_NEWNET): " + direct +
                   "; with a user namespace: " + std::strerror(errno) + ")";
        }
        // Root in the new user namespace (so: of its network namespace) is us.
        if (!write_file("/proc/self/setgroups", "deny") ||
            !write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
            !write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1")) {
            return std::string("the user namespace's id maps could not be written");
        }
    }
    try {
        set_loopback(true);
    } catch (const std::exception& e) {
        return std::string("in the new network namespace: ") + e.what();
    }
    return std::nullopt;
}

void set_loopback(bool up)
{
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("set_loopback: socket: ") + std::strerror(errno));
    ifreq request{};
    std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
    int rc = ::ioctl(fd, SIOCGIFFLAGS, &request);
    if (rc == 0) {
        if (up) {
            request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP);
        } else {
            request.ifr_flags = static_cast<short>(request.ifr_flags & ~IFF_UP);
        }
        rc = ::ioctl(fd, SIOCSIFFLAGS, &request);
    }
    const int error = errno;
    ::close(fd);
    if (rc != 0) {
        throw std::runtime_error(std::string("taking lo ") + (up ? "up" : "down") + ": " + std::strerror(error));
    }
}

} // namespace simsync::dds::testing

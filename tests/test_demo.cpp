// The pause/resume demo, driven through its standard input as a script would:
// pause, two status lines agree while paused, resume, time advances, quit exits 0,
// and the trace file parses as JSON.

#include <doctest/doctest.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#ifndef SIMSYNC_DEMO_PATH
#error "SIMSYNC_DEMO_PATH must name the simsync-demo binary"
#endif

namespace {

// A child process with pipes to its stdin and stdout.
class Child {
public:
    explicit Child(const std::vector<std::string>& args)
    {
        int to_child[2];
        int from_child[2];
        REQUIRE(pipe(to_child) == 0);
        REQUIRE(pipe(from_child) == 0);
        pid_ = fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            dup2(to_child[0], STDIN_FILENO);
            dup2(from_child[1], STDOUT_FILENO);
            close(to_child[1]);
            close(from_child[0]);
            std::vector<char*> argv;
            for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
            argv.push_back(nullptr);
            execv(argv[0], argv.data());
            _exit(127);
        }
        close(to_child[0]);
        close(from_child[1]);
        in_ = to_child[1];
        out_ = from_child[0];
    }
    ~Child()
    {
        if (in_ >= 0) close(in_);
        if (out_ >= 0) close(out_);
        if (pid_ > 0 && !reaped_) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    void send(const std::string& line)
    {
        const std::string l = line + "\n";
        REQUIRE(write(in_, l.data(), l.size()) == static_cast<ssize_t>(l.size()));
    }

    // The next line of output, or nullopt after `timeout`.
    std::optional<std::string> line(std::chrono::milliseconds timeout = std::chrono::milliseconds(10000))
    {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            const auto eol = buffer_.find('\n');
            if (eol != std::string::npos) {
                std::string l = buffer_.substr(0, eol);
                buffer_.erase(0, eol + 1);
                return l;
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return std::nullopt;
            pollfd fd{out_, POLLIN, 0};
            if (poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
            char buf[512];
            const ssize_t n = read(out_, buf, sizeof buf);
            if (n <= 0) return std::nullopt;
            buffer_.append(buf, static_cast<std::size_t>(n));
        }
    }

    // The next line that starts with `prefix`.
    std::optional<std::string> line_starting(const std::string& prefix)
    {
        while (auto l = line()) {
            if (l->rfind(prefix, 0) == 0) return l;
        }
        return std::nullopt;
    }

    int wait_exit()
    {
        close(in_);
        in_ = -1;
        int status = 0;
        waitpid(pid_, &status, 0);
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

private:
    pid_t pid_ = -1;
    int in_ = -1;
    int out_ = -1;
    bool reaped_ = false;
    std::string buffer_;
};

std::string field(const std::string& status, const std::string& key)
{
    const auto at = status.find(key + "=");
    REQUIRE(at != std::string::npos);
    const auto start = at + key.size() + 1;
    return status.substr(start, status.find(' ', start) - start);
}

std::string status_of(Child& demo)
{
    demo.send("status");
    const auto l = demo.line_starting("status ");
    REQUIRE(l);
    return *l;
}

} // namespace

TEST_CASE("Demo.Script.PauseStatusResumeQuit" * doctest::timeout(60))
{
    const std::string trace = "simsync_demo_test_trace.json";
    Child demo({SIMSYNC_DEMO_PATH, "--trace", trace});
    status_of(demo); // running
    demo.send("pause");
    const std::string paused1 = status_of(demo);
    const std::string paused2 = status_of(demo);
    CHECK(field(paused1, "state") == "paused");
    CHECK(field(paused1, "sim_time") == field(paused2, "sim_time"));
    demo.send("resume");
    // Paced at 1x, simulated time moves on within a few status requests.
    std::string resumed = status_of(demo);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::stod(field(resumed, "sim_time")) <= std::stod(field(paused2, "sim_time")) &&
           std::chrono::steady_clock::now() < deadline) {
        resumed = status_of(demo);
    }
    CHECK(field(resumed, "state") == "running");
    CHECK(std::stod(field(resumed, "sim_time")) > std::stod(field(paused2, "sim_time")));
    demo.send("step 5");
    demo.send("quit");
    CHECK(demo.wait_exit() == 0);

    boost::property_tree::ptree tree;
    CHECK_NOTHROW(boost::property_tree::read_json(trace, tree));
    CHECK(tree.get_child("traceEvents").size() > 4);
    std::remove(trace.c_str());
}

TEST_CASE("Demo.Duration.EndsByItself" * doctest::timeout(60))
{
    Child demo({SIMSYNC_DEMO_PATH, "--duration", "0.5", "--scale", "10"});
    const auto summary = demo.line_starting("simulated ");
    REQUIRE(summary);
    CHECK(summary->find("simulated 0.500 s") != std::string::npos);
    CHECK(demo.wait_exit() == 0);
}

TEST_CASE("Demo.Errors.BadConfigNamesThePlace" * doctest::timeout(60))
{
    const std::string file = "simsync_demo_bad.yaml";
    {
        FILE* f = std::fopen(file.c_str(), "w");
        REQUIRE(f);
        std::fputs("accessors:\n  - name: a\n    rate: fast\n", f);
        std::fclose(f);
    }
    Child demo({SIMSYNC_DEMO_PATH, "--config", file});
    CHECK(demo.wait_exit() == 2); // the message goes to stderr
    std::remove(file.c_str());
}

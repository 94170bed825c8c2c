// The pause/resume demo, driven through its standard input as a script would:
// pause, two status lines agree while paused, resume, time advances, quit exits 0,
// and the trace file parses as JSON. Its command line (--help, errors naming the
// option, --scale 0 unpaced) and, on a pseudo-terminal, the live status line that
// clears to the end of the line on every redraw. How a run ends: --duration
// also when an accessor asks twice at one instant, never at the end of input,
// on SIGINT / SIGTERM with the summary; a run that starts paused says how to
// resume it.

#include <doctest/doctest.h>

#include <simsync/accessors/clock_udp.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#ifndef SIMSYNC_DEMO_PATH
#error "SIMSYNC_DEMO_PATH must name the simsync-demo binary"
#endif

namespace {

// A child process with pipes to its stdin and stdout (and stderr, if merged),
// or with a pseudo-terminal as its stdin, stdout and stderr.
class Child {
public:
    enum class Io { pipes, pipes_with_stderr, terminal };

    explicit Child(const std::vector<std::string>& args, Io io = Io::pipes)
    {
        std::vector<char*> argv;
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        if (io == Io::terminal) {
            int master = -1;
            winsize size{};
            size.ws_row = 24;
            size.ws_col = 200;
            pid_ = forkpty(&master, nullptr, nullptr, &size);
            REQUIRE(pid_ >= 0);
            if (pid_ == 0) {
                execv(argv[0], argv.data());
                _exit(127);
            }
            in_ = master;
            out_ = dup(master);
            return;
        }
        int to_child[2];
        int from_child[2];
        REQUIRE(pipe(to_child) == 0);
        REQUIRE(pipe(from_child) == 0);
        pid_ = fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            dup2(to_child[0], STDIN_FILENO);
            dup2(from_child[1], STDOUT_FILENO);
            if (io == Io::pipes_with_stderr) dup2(from_child[1], STDERR_FILENO);
            close(to_child[1]);
            close(from_child[0]);
            execv(argv[0], argv.data());
            _exit(127);
        }
        close(to_child[0]);
        close(from_child[1]);
        in_ = to_child[1];
        out_ = from_child[0];
    }

    // Closes the child's standard input: what it reads next is the end of input.
    void close_input()
    {
        if (in_ >= 0) close(in_);
        in_ = -1;
    }

    void signal(int number) { REQUIRE(kill(pid_, number) == 0); }

    // Writes `bytes` as they are (a terminal's single keys).
    void type(const std::string& bytes)
    {
        REQUIRE(write(in_, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    }

    // Everything the child writes until it closes its output (or `timeout`).
    std::string rest(std::chrono::milliseconds timeout = std::chrono::milliseconds(30000))
    {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (fill(deadline)) {
        }
        std::string all = buffer_;
        buffer_.clear();
        return all;
    }

    // Reads output until `text` appears at or after offset `from` of seen();
    // returns where, or npos after `timeout`.
    std::size_t wait_for(const std::string& text, std::size_t from = 0,
                         std::chrono::milliseconds timeout = std::chrono::milliseconds(20000))
    {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        std::size_t at;
        while ((at = buffer_.find(text, from)) == std::string::npos) {
            if (!fill(deadline)) return std::string::npos;
        }
        return at;
    }
    const std::string& seen() const { return buffer_; }
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

    // Appends what arrives before `deadline`; false at end of output or the deadline.
    bool fill(std::chrono::steady_clock::time_point deadline)
    {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        pollfd fd{out_, POLLIN, 0};
        if (poll(&fd, 1, static_cast<int>(left.count())) <= 0) return std::chrono::steady_clock::now() < deadline;
        char buf[512];
        const ssize_t n = read(out_, buf, sizeof buf); // a terminal's master reads EIO once the child is gone
        if (n <= 0) return false;
        buffer_.append(buf, static_cast<std::size_t>(n));
        return true;
    }

    int wait_exit()
    {
        close_input();
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
    // Plain seconds, or a unit as in the scenario files.
    for (const char* duration : {"0.5", "500ms", "0.5s"}) {
        CAPTURE(duration);
        Child demo({SIMSYNC_DEMO_PATH, "--duration", duration, "--scale", "10"});
        const auto summary = demo.line_starting("simulated ");
        REQUIRE(summary);
        CHECK(summary->find("simulated 0.500 s") != std::string::npos);
        CHECK(demo.wait_exit() == 0);
    }
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

namespace {

void write_file(const std::string& path, const std::string& text)
{
    std::ofstream out(path);
    REQUIRE(out);
    out << text;
}

} // namespace

TEST_CASE("Demo.Errors.ScenarioErrorsNameFileLineColumnAndKey" * doctest::timeout(60))
{
    struct Row {
        const char* yaml;
        const char* says;
    };
    const Row rows[] = {
        {"accessors:\n  - name: a\n    rate: fast\n", ":3:11: accessors[0].rate: expected a rate in Hz"},
        // The demo's own world type, checked at load by its registered validator.
        {"world:\n  type: bouncing_balls\n  bodies: 0\n", ":3:11: world.bodies: expected 1..10000 bodies, got 0"},
        {"world:\n  type: bouncing_balls\n  restitution: 1.5\n", ":3:16: world.restitution: expected a restitution in [0, 1], got 1.5"},
        // The first error in document order: a bad value before an unknown key.
        {"accessors:\n  - {name: a, rate: fast, colour: red}\n", ":2:21: accessors[0].rate: expected a rate in Hz"},
        {"world:\n  type: bullet\n", ":2:9: world.type: unknown world type 'bullet'; this program knows: bouncing_balls"},
        // Roles, checked right after loading (before: thrown without a place, exit 1).
        {"accessors:\n  - {name: a, rate: 10, role: pilot}\n", ":2:31: accessors[0].role: expected a role of sensor or controller"},
        {"accessors:\n  - {name: a, rate: 10, role: controller}\n", ":2:5: accessors[0]: a controller writes"},
        {"time:\n  scale: 0\n", ":2:10: time.scale: expected a time scale"},
    };
    const std::string file = "simsync_demo_bad_scenario.yaml";
    for (const Row& row : rows) {
        CAPTURE(std::string(row.yaml));
        write_file(file, row.yaml);
        Child demo({SIMSYNC_DEMO_PATH, "--config", file}, Child::Io::pipes_with_stderr);
        const std::string out = demo.rest();
        CAPTURE(out);
        CHECK(out.find(file + row.says) != std::string::npos);
        CHECK(demo.wait_exit() == 2);
    }
    std::remove(file.c_str());
}

TEST_CASE("Demo.Options.HelpListsEveryOption" * doctest::timeout(60))
{
    for (const char* flag : {"--help", "-h"}) {
        Child demo({SIMSYNC_DEMO_PATH, flag});
        const std::string help = demo.rest();
        CAPTURE(help);
        for (const char* option : {"--config FILE", "--duration DURATION", "--scale X", "--clock-udp HOST:PORT",
                                   "--trace FILE", "--help"}) {
            CHECK(help.find(option) != std::string::npos);
        }
        CHECK(help.find("0: unpaced") != std::string::npos);
        CHECK(demo.wait_exit() == 0);
    }
}

TEST_CASE("Demo.Options.ErrorsNameTheOptionAndExitTwo" * doctest::timeout(60))
{
    struct Row {
        std::vector<std::string> args;
        const char* says;
    };
    const Row rows[] = {
        {{"--scale", "-1"}, "--scale: expected 0 (unpaced) or a time scale in [1e-06, 1e+06]"},
        {{"--scale", "2e6"}, "--scale: expected 0 (unpaced)"},
        {{"--scale", "nan"}, "--scale: expected 0 (unpaced)"},
        // What was expected, not Boost's "the argument ('fast') for option '--scale' is invalid".
        {{"--scale", "fast"}, "--scale: expected 0 (unpaced) or a time scale in [1e-06, 1e+06], got 'fast'"},
        {{"--scale"}, "'--scale' is missing"},
        {{"--duration", "0"}, "--duration: expected simulated time in (0, 1e6 s], got 0.000000000 s"},
        {{"--duration", "2000000"}, "--duration: expected simulated time in (0, 1e6 s], got 2000000.000000000 s"},
        {{"--duration", "abc"},
         "--duration: expected a duration: seconds (2.5) or a number and a unit: ns, us, ms, s, min (1ms, 2.5s), "
         "got 'abc'"},
        {{"--duration", "-1s"}, "--duration: expected a duration"},
        {{"--duration", "1h"}, "--duration: expected a duration"},
        {{"--clock-udp", "localhost"}, "--clock-udp: expected host:port"},
        {{"--bogus"}, "unrecognised option '--bogus'"},
        {{"--sca", "2"}, "unrecognised option '--sca'"}, // no abbreviations
    };
    for (const Row& row : rows) {
        std::vector<std::string> args{SIMSYNC_DEMO_PATH};
        args.insert(args.end(), row.args.begin(), row.args.end());
        Child demo(args, Child::Io::pipes_with_stderr);
        const std::string out = demo.rest();
        CAPTURE(out);
        CHECK(out.rfind("simsync-demo: ", 0) == 0);
        CHECK(out.find(row.says) != std::string::npos);
        CHECK(out.find("usage: simsync-demo") != std::string::npos);
        CHECK(demo.wait_exit() == 2);
    }
}

TEST_CASE("Demo.Scale.ZeroRunsUnpaced" * doctest::timeout(120))
{
    // Before: refused (exit 2), while simsync-bullet-host read 0 as "unpaced".
    Child unpaced({SIMSYNC_DEMO_PATH, "--scale", "0", "--duration", "1"});
    const std::string out = unpaced.rest();
    CAPTURE(out);
    CHECK(unpaced.wait_exit() == 0);
    CHECK(out.find("unpaced (as fast as possible)") != std::string::npos);
    CHECK(out.find("\npacer: ") == std::string::npos); // no pacer ran
    CHECK(out.find("simulated 1.000 s") != std::string::npos);

    // A non-zero scale paces, at that scale, even where the scenario had no pacer.
    const std::string file = "simsync_demo_no_pacer.yaml";
    write_file(file, "pacer: {enabled: false}\naccessors: [{name: a, rate: 100}]\n");
    Child paced({SIMSYNC_DEMO_PATH, "--config", file, "--scale", "4", "--duration", "0.2"});
    const std::string paced_out = paced.rest();
    CAPTURE(paced_out);
    CHECK(paced.wait_exit() == 0);
    CHECK(paced_out.find("paced at 4x") != std::string::npos);
    CHECK(paced_out.find("\npacer: ") != std::string::npos);
    CHECK(paced_out.find("target factor 4.000") != std::string::npos);
    std::remove(file.c_str());
}

TEST_CASE("Demo.Terminal.StatusLineClearsToEndOfLine" * doctest::timeout(60))
{
    // On a terminal the status line is redrawn in place. Every redraw must erase
    // what is left of the previous one (ESC [ K) before anything else starts:
    // before, a line that got shorter left the old line's tail on screen.
    Child demo({SIMSYNC_DEMO_PATH}, Child::Io::terminal);
    // A few redraws, across a pause and a resume (the line's fields change length).
    const std::size_t running = demo.wait_for("state=running");
    REQUIRE(running != std::string::npos);
    demo.type("p");
    const std::size_t paused = demo.wait_for("state=paused", running);
    REQUIRE(paused != std::string::npos);
    demo.type("r");
    REQUIRE(demo.wait_for("state=running", paused) != std::string::npos);
    demo.type("q");
    const std::string out = demo.seen() + demo.rest();
    CHECK(demo.wait_exit() == 0);

    std::size_t redraws = 0;
    for (std::size_t at = out.find("\rstatus "); at != std::string::npos; at = out.find("\rstatus ", at + 1)) {
        ++redraws;
        const std::size_t next = out.find_first_of("\r\n", at + 1);
        const std::size_t erase = out.find("\x1b[K", at);
        CAPTURE(out.substr(at, std::min<std::size_t>(out.size() - at, 220)));
        CHECK(erase != std::string::npos);
        CHECK(erase < next); // erased before the next redraw or line
    }
    CHECK(redraws >= 3);
    // Time never stood still for a second here (the pacer holds it for up to a
    // period at a time): no "waiting_for=" (before: "waiting_for=pacer (0.0 s)"
    // on every redraw).
    CHECK(out.find("waiting_for=") == std::string::npos);
}

namespace {

// Clock datagrams (docs/clock_udp.md) on a loopback port of the test's own.
class ClockReceiver {
public:
    ClockReceiver() : socket_(io_, boost::asio::ip::udp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)) {}
    std::string destination() const { return "127.0.0.1:" + std::to_string(socket_.local_endpoint().port()); }

    // Reads datagrams until one carries a simulation time of at least `at`;
    // false after `timeout`.
    bool wait_for_sim_time(std::chrono::nanoseconds at, std::chrono::milliseconds timeout)
    {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return false;
            pollfd fd{socket_.native_handle(), POLLIN, 0};
            if (poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
            std::array<std::byte, 64> buffer{};
            boost::system::error_code ec;
            const std::size_t n = socket_.receive(boost::asio::buffer(buffer), 0, ec);
            if (ec || n != 32) continue;
            const simsync::ClockMessage m = simsync::decode_clock_datagram(std::span<const std::byte>(buffer.data(), n));
            last_ = m.sim_time.time_since_epoch();
            if (last_ >= at) return true;
        }
    }
    std::chrono::nanoseconds last() const { return last_; }

private:
    boost::asio::io_context io_;
    boost::asio::ip::udp::socket socket_;
    std::chrono::nanoseconds last_{-1};
};

} // namespace

TEST_CASE("Demo.Duration.EndsWhenAnAccessorAsksTwiceAtOneInstant" * doctest::timeout(120))
{
    // Before: the demo's own end marker, a lockstep accessor named 'end', held
    // every second request at the end instant back, so the run hung there
    // ("waiting for 'end'", an accessor the scenario never declared).
    struct Row {
        const char* yaml;
        const char* duration;
        const char* summary;
    };
    const Row rows[] = {
        {"accessors:\n  - {name: fast, rate: 2000, mode: shared}\n", "0.2", "simulated 0.200 s"},
        {"handler: {step: 20ms}\npacer: {period: 20ms}\naccessors:\n  - {name: a, rate: 100, mode: shared}\n"
         "  - {name: c, rate: 100, mode: exclusive, role: controller}\n",
         "400ms", "simulated 0.400 s"},
    };
    const std::string file = "simsync_demo_two_at_one_instant.yaml";
    for (const Row& row : rows) {
        CAPTURE(std::string(row.yaml));
        write_file(file, row.yaml);
        Child demo({SIMSYNC_DEMO_PATH, "--config", file, "--duration", row.duration, "--scale", "0"},
                   Child::Io::pipes_with_stderr);
        const std::string out = demo.rest(std::chrono::milliseconds(30000));
        CAPTURE(out);
        REQUIRE(out.find(row.summary) != std::string::npos); // else it hangs: the destructor kills it
        CHECK(out.find("waiting for") == std::string::npos);
        CHECK(demo.wait_exit() == 0);
    }
    std::remove(file.c_str());

    // The end marker's name is the option's: a scenario cannot take it.
    write_file(file, "accessors:\n  - {name: --duration, rate: 10}\n");
    Child taken({SIMSYNC_DEMO_PATH, "--config", file}, Child::Io::pipes_with_stderr);
    const std::string out = taken.rest();
    CAPTURE(out);
    CHECK(out.find(file + ":2:12: accessors[0].name: the name '--duration' is taken by the end marker of --duration") !=
          std::string::npos);
    CHECK(taken.wait_exit() == 2);
    std::remove(file.c_str());
}

TEST_CASE("Demo.Input.EndOfInputIsNotQuitAndSigtermEndsWithTheSummary" * doctest::timeout(120))
{
    // stdin at its end from the start (</dev/null, nohup, systemd, docker
    // without -t). Before: the demo quit at once, exit 0, 0.005 s simulated.
    ClockReceiver clock;
    Child demo({SIMSYNC_DEMO_PATH, "--scale", "0", "--clock-udp", clock.destination()});
    demo.close_input();
    CHECK(clock.wait_for_sim_time(std::chrono::milliseconds(500), std::chrono::milliseconds(30000)));
    CAPTURE(clock.last().count());
    demo.signal(SIGTERM);
    const std::string out = demo.rest();
    CAPTURE(out);
    CHECK(out.find("ended by SIGTERM at ") != std::string::npos);
    CHECK(out.find("\nsimulated ") != std::string::npos); // the summary
    CHECK(demo.wait_exit() == 0);
}

TEST_CASE("Demo.StartPaused.SaysHowToResumeAndSigintEndsIt" * doctest::timeout(120))
{
    // Before: no word, and (stdin at its end) an exit at once.
    const std::string file = "simsync_demo_start_paused.yaml";
    write_file(file, "handler: {start_paused: true}\naccessors: [{name: a, rate: 10}]\n");
    Child demo({SIMSYNC_DEMO_PATH, "--config", file}, Child::Io::pipes_with_stderr);
    REQUIRE(demo.wait_for("time waits for 'resume'; type it on standard input") != std::string::npos);
    demo.close_input();
    REQUIRE(demo.wait_for("standard input has ended while the run is paused, so nothing can resume it: SIGINT or "
                          "SIGTERM ends it") != std::string::npos);
    demo.signal(SIGINT);
    const std::string out = demo.seen() + demo.rest();
    CAPTURE(out);
    CHECK(out.find("ended by SIGINT at 0.000000000 s") != std::string::npos);
    CHECK(out.find("simulated 0.000 s") != std::string::npos);
    CHECK(demo.wait_exit() == 0);
    std::remove(file.c_str());
}

namespace {

// The rows of the summary's accessor table, up to the grants and refusals
// (the wall-time columns differ from run to run).
std::string grant_table(const std::string& out)
{
    std::string table;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        std::string name, kind, mode, grants, refused;
        if (!(words >> name >> kind >> mode >> grants >> refused)) continue;
        if (kind != "lockstep" && kind != "free") continue;
        table += name + " " + kind + " " + mode + " " + grants + " " + refused + "\n";
    }
    return table;
}

} // namespace

TEST_CASE("Demo.Scenario.TheShippedFileIsTheEmbeddedScenario" * doctest::timeout(120))
{
    // Before: the embedded scenario existed only as a C++ string, so a user had
    // nothing to start from (--config replaces it wholesale).
    Child embedded({SIMSYNC_DEMO_PATH, "--duration", "0.3", "--scale", "0"});
    const std::string a = embedded.rest();
    CHECK(embedded.wait_exit() == 0);
    Child from_file({SIMSYNC_DEMO_PATH, "--config", SIMSYNC_DEMO_SCENARIO_FILE, "--duration", "0.3", "--scale", "0"});
    const std::string b = from_file.rest();
    CHECK(from_file.wait_exit() == 0);
    CAPTURE(a);
    CAPTURE(b);
    CHECK(grant_table(a).find("controller lockstep exclusive 31 0") != std::string::npos);
    CHECK(grant_table(a) == grant_table(b));
    CHECK(a.find("clock: 31 messages from time source 'sim' to udp 127.0.0.1:15555") != std::string::npos);
    CHECK(b.find("clock: 31 messages from time source 'sim' to udp 127.0.0.1:15555") != std::string::npos);
}

TEST_CASE("Demo.Scenario.TheSummarySaysWhereClockMessagesWent" * doctest::timeout(120))
{
    // Before: "clock: N messages from time source 'sim' at every 0.010000000 s",
    // whether they went anywhere or not; and `external` published 0 without a word.
    const std::string file = "simsync_demo_no_sinks.yaml";
    write_file(file, "accessors: [{name: a, rate: 100}]\n");
    {
        Child demo({SIMSYNC_DEMO_PATH, "--config", file, "--duration", "0.2", "--scale", "0"});
        const std::string out = demo.rest();
        CAPTURE(out);
        CHECK(out.find("clock: time source 'sim', every 0.010000000 s of simulated time, to no sink (clock.sinks is "
                       "empty)") != std::string::npos);
        CHECK(out.find("clock: 21 ticks, sent nowhere (no sink: clock.sinks is empty)") != std::string::npos);
        CHECK(demo.wait_exit() == 0);
    }
    {
        ClockReceiver clock;
        Child demo({SIMSYNC_DEMO_PATH, "--config", file, "--duration", "0.2", "--scale", "0", "--clock-udp",
                    clock.destination()});
        const std::string out = demo.rest();
        CAPTURE(out);
        CHECK(out.find("clock: 21 messages from time source 'sim' to udp " + clock.destination()) != std::string::npos);
        CHECK(demo.wait_exit() == 0);
    }
    write_file(file, "time: {source: external}\naccessors: [{name: a, rate: 100}]\n");
    {
        Child demo({SIMSYNC_DEMO_PATH, "--config", file, "--duration", "0.2", "--scale", "0"},
                   Child::Io::pipes_with_stderr);
        const std::string out = demo.rest();
        CAPTURE(out);
        CHECK(out.find("simsync-demo: warning: time.source 'external' is set from outside") != std::string::npos);
        CHECK(demo.wait_exit() == 0);
    }
    std::remove(file.c_str());
}

TEST_CASE("Demo.Trace.AnUnwritablePathIsRefusedBeforeTheRun" * doctest::timeout(60))
{
    // Before: the whole run, then "cannot write the trace file", exit 1, no reason.
    Child demo({SIMSYNC_DEMO_PATH, "--trace", "/nonexistent-simsync-dir/trace.json", "--duration", "0.2", "--scale", "0"},
               Child::Io::pipes_with_stderr);
    const std::string out = demo.rest();
    CAPTURE(out);
    CHECK(out.find("simsync-demo: --trace: cannot write the trace file '/nonexistent-simsync-dir/trace.json': No such "
                   "file or directory") != std::string::npos);
    CHECK(out.find("simulated ") == std::string::npos); // no run
    CHECK(demo.wait_exit() == 2);
}

TEST_CASE("Demo.Trace.WaitAndHoldAreSeparateSlices" * doctest::timeout(60))
{
    // Before: one slice from the request to the release, so every track looked busy.
    const std::string trace = "simsync_demo_test_slices.json";
    Child demo({SIMSYNC_DEMO_PATH, "--trace", trace, "--duration", "0.2", "--scale", "0"});
    CHECK(demo.wait_exit() == 0);
    boost::property_tree::ptree tree;
    REQUIRE_NOTHROW(boost::property_tree::read_json(trace, tree));
    struct Last {
        std::string name;
        double end = 0;
        std::int64_t granted_ns = -1;
    };
    std::map<int, Last> last; // per track
    std::map<std::string, int> count;
    for (const auto& [key, e] : tree.get_child("traceEvents")) {
        if (e.get<std::string>("ph") != "X") continue;
        const int tid = e.get<int>("tid");
        const std::string name = e.get<std::string>("name");
        const double ts = e.get<double>("ts");
        const double dur = e.get<double>("dur");
        const std::int64_t granted_ns = e.get<std::int64_t>("args.granted_ns");
        CAPTURE(tid);
        CAPTURE(ts);
        CHECK(dur >= 0);
        ++count[name];
        Last& l = last[tid];
        if (name == "hold") {
            // Right after the wait of the same access.
            CHECK(l.name == "wait");
            CHECK(std::abs(ts - l.end) < 0.002);
            CHECK(granted_ns == l.granted_ns);
        } else {
            CHECK(name == "wait");
            CHECK((l.name.empty() || l.name == "hold"));
            CHECK(ts >= l.end - 0.002);
        }
        l = {name, ts + dur, granted_ns};
    }
    CHECK(count["wait"] == 41 + 7 + 3 + 21); // lidar, camera, gps, controller in 0.2 s
    CHECK(count["wait"] == count["hold"]);
    CHECK(count.size() == 2);
    std::remove(trace.c_str());
}

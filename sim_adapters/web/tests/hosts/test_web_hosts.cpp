// `--web` on the real hosts, simsync-demo, simsync-bullet-host and
// simsync-mujoco-host, through a raw WebSocket client: the URL is printed, the
// page is served, frames carry the world (the demo's balls, the Bullet host's
// bodies, the MuJoCo host's geoms) and the accessors, commands
// act as the terminal's, and the program still quits cleanly.

#include "test_certificate.hpp"
#include "ws_client.hpp"

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#ifndef SIMSYNC_DEMO_PATH
#error "SIMSYNC_DEMO_PATH must name the simsync-demo binary"
#endif

using namespace simsync::web::test;

namespace {

// A child process with pipes to its stdin and from its stdout and stderr.
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
            dup2(from_child[1], STDERR_FILENO);
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

    // The next line that matches `pattern` (30 s at most); its captures.
    std::optional<std::smatch> line_matching(const std::regex& pattern, std::chrono::milliseconds timeout = 30000ms)
    {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            const auto eol = buffer_.find('\n');
            if (eol != std::string::npos) {
                line_ = buffer_.substr(0, eol);
                buffer_.erase(0, eol + 1);
                output_ += line_ + "\n";
                std::smatch m;
                if (std::regex_search(line_, m, pattern)) return m;
                continue;
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return std::nullopt;
            pollfd fd{out_, POLLIN, 0};
            if (poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
            char buf[1024];
            const ssize_t n = read(out_, buf, sizeof buf);
            if (n <= 0) return std::nullopt;
            buffer_.append(buf, static_cast<std::size_t>(n));
        }
    }

    // Ends the child's standard input (as </dev/null, nohup or a launch file do).
    void close_input()
    {
        if (in_ >= 0) close(in_);
        in_ = -1;
    }

    void signal(int number) { REQUIRE(kill(pid_, number) == 0); }

    // Closes stdin and waits (bounded) for the exit code; -1 if killed.
    int wait_exit(std::chrono::milliseconds timeout = 60000ms)
    {
        close_input();
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        int status = 0;
        while (waitpid(pid_, &status, WNOHANG) == 0) {
            if (std::chrono::steady_clock::now() >= deadline) {
                kill(pid_, SIGKILL);
                waitpid(pid_, &status, 0);
                reaped_ = true;
                return -1;
            }
            // Drain the output so that the child never blocks on a full pipe.
            pollfd fd{out_, POLLIN, 0};
            if (poll(&fd, 1, 50) > 0) {
                char buf[4096];
                const ssize_t n = read(out_, buf, sizeof buf);
                if (n > 0) output_.append(buf, static_cast<std::size_t>(n));
            }
        }
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

    const std::string& output() const { return output_; }

private:
    pid_t pid_ = -1;
    int in_ = -1;
    int out_ = -1;
    bool reaped_ = false;
    std::string buffer_;
    std::string line_;
    std::string output_;
};

const std::regex kUrl(R"(^web console: http://127\.0\.0\.1:(\d+)/$)");

std::uint16_t port_of(const std::smatch& m) { return static_cast<std::uint16_t>(std::stoi(m[1].str())); }

std::set<std::string> accessor_names(const boost::json::object& frame)
{
    std::set<std::string> names;
    for (const auto& a : frame.at("accessors").as_array()) names.insert(str(a.at("name")));
    return names;
}

// A physics host's page (host_kit), `client` connected to the URL `host`
// printed: its title, the first frame with a picture, and the host's accessors in it.
boost::json::object first_host_frame(Child& host, WsClient& client, const std::string& title)
{
    const auto url = host.line_matching(kUrl);
    REQUIRE(url);
    REQUIRE(client.connect(port_of(*url)) == "");
    const auto welcome = client.next("welcome");
    REQUIRE(welcome);
    CHECK(str(welcome->at("title")) == title);
    CHECK(welcome->at("has_scene").as_bool());
    const auto frame = client.frame_where([](const auto& f) { return !f.at("scene").at("time").is_null(); });
    REQUIRE(frame);
    const auto names = accessor_names(*frame);
    for (const char* n : {"controller_100hz", "lidar_200hz", "camera_30hz", "gps_10hz", "pacer", "web_console"}) {
        CAPTURE(n);
        CHECK(names.count(n) == 1);
    }
    return *frame;
}

// Pauses from the page; the steps at which time stands.
std::uint64_t pause_from_page(WsClient& client)
{
    const auto reply = client.command("pause");
    REQUIRE(reply);
    CHECK(reply->at("ok").as_bool());
    const auto paused = client.frame_where([](const auto& f) { return str(f.at("state")) == "paused"; });
    REQUIRE(paused);
    return steps_of(*paused);
}

// `step n` from the page while paused at `from`: the first frame that shows it done.
boost::json::object step_from_page(WsClient& client, std::uint64_t from, int n)
{
    const auto reply = client.command("step " + std::to_string(n));
    REQUIRE(reply);
    CHECK(reply->at("ok").as_bool());
    const auto done = client.frame_where([&](const auto& f) {
        return str(f.at("state")) == "paused" && f.at("pause_at").is_null() &&
               steps_of(f) == from + static_cast<std::uint64_t>(n);
    });
    REQUIRE(done);
    return *done;
}

// The next frame after `frame`.
boost::json::object frame_after(WsClient& client, const boost::json::object& frame)
{
    const auto next = client.frame_where([&](const auto& f) { return f.at("seq").as_int64() > frame.at("seq").as_int64(); });
    REQUIRE(next);
    return *next;
}

} // namespace

TEST_CASE("WebConsole.Demo.ShowsTheBallsAndObeysThePage" * doctest::timeout(120))
{
    Child demo({SIMSYNC_DEMO_PATH, "--web", "0"});
    const auto url = demo.line_matching(kUrl);
    REQUIRE(url);
    const std::uint16_t port = port_of(*url);
    CHECK(http_request(port, http::verb::get, "/").status == 200);

    WsClient client;
    REQUIRE(client.connect(port) == "");
    const auto welcome = client.next("welcome");
    REQUIRE(welcome);
    CHECK(str(welcome->at("title")) == "simsync-demo");
    CHECK(welcome->at("paced").as_bool());
    CHECK(welcome->at("has_scene").as_bool());
    CHECK(welcome->at("has_timeline").as_bool());

    const auto frame = client.frame_where([](const auto& f) { return !f.at("scene").at("time").is_null(); });
    REQUIRE(frame);
    const auto& shapes = frame->at("scene").at("shapes").as_array();
    REQUIRE(shapes.size() == 3); // the three balls
    for (const auto& s : shapes) CHECK(s.as_array()[1].as_int64() == 0); // spheres
    const auto names = accessor_names(*frame);
    for (const char* n : {"lidar", "camera", "gps", "controller", "pacer", "web_console"}) {
        CAPTURE(n);
        CHECK(names.count(n) == 1);
    }
    // The timeline has the demo's own accessors.
    const auto with_spans = client.frame_where([](const auto& f) {
        for (const auto& t : f.at("timeline").as_array()) {
            if (str(t.at("name")) == "controller" && !t.at("spans").as_array().empty()) return true;
        }
        return false;
    });
    CHECK(with_spans);

    step_from_page(client, pause_from_page(client), 12);
    auto reply = client.command("step x");
    REQUIRE(reply);
    CHECK_FALSE(reply->at("ok").as_bool());
    reply = client.command("resume");
    REQUIRE(reply);
    CHECK(reply->at("ok").as_bool());

    demo.send("quit");
    CHECK(demo.wait_exit() == 0);
}

#ifdef SIMSYNC_BULLET_HOST_PATH
TEST_CASE("WebConsole.BulletHost.ShowsTheBodiesAndObeysThePage" * doctest::timeout(180))
{
    Child host({SIMSYNC_BULLET_HOST_PATH, "--web", "127.0.0.1:0", "--duration", "600", "--scale", "1"});
    WsClient client;
    const boost::json::object frame = first_host_frame(host, client, "simsync-bullet-host");
    const auto& scene = frame.at("scene").as_object();
    const auto& shapes = scene.at("shapes").as_array();
    REQUIRE(shapes.size() == 100); // the default scene's boxes
    for (const auto& s : shapes) CHECK(s.as_array()[1].as_int64() == 1);
    CHECK(number(scene.at("ground")) == 0.0);

    const std::uint64_t s0 = pause_from_page(client);
    // The pushed box (body 0) is where the world says: the picture is read in
    // an access, so while paused two pictures agree exactly.
    const boost::json::object a = step_from_page(client, s0, 5);
    const boost::json::object b = frame_after(client, a);
    CHECK(boost::json::serialize(a.at("scene").at("shapes")) == boost::json::serialize(b.at("scene").at("shapes")));

    host.send("quit");
    CHECK(host.line_matching(std::regex("^trajectory_hash=[0-9a-f]{16}$")));
    CHECK(host.wait_exit() == 0);
}
#endif

#ifdef SIMSYNC_MUJOCO_HOST_PATH
TEST_CASE("WebConsole.MujocoHost.ShowsTheGeomsAndObeysThePage" * doctest::timeout(180))
{
    Child host({SIMSYNC_MUJOCO_HOST_PATH, "--web", "127.0.0.1:0", "--duration", "600", "--scale", "1"});
    WsClient client;
    const boost::json::object frame = first_host_frame(host, client, "simsync-mujoco-host");
    const auto& scene = frame.at("scene").as_object();
    const auto& shapes = scene.at("shapes").as_array();
    // arm.xml's geoms but the floor: the base, two links, three boxes (boxes)
    // and the ball (a sphere); the floor is the ground grid at z = 0.
    REQUIRE(shapes.size() == 7);
    int spheres = 0;
    for (const auto& s : shapes) spheres += s.as_array()[1].as_int64() == 0 ? 1 : 0;
    CHECK(spheres == 1);
    CHECK(number(scene.at("ground")) == 0.0);

    const std::uint64_t s0 = pause_from_page(client);
    // While paused two pictures agree exactly (the picture is read in an access) ...
    const auto before = client.frame_where([&](const auto& f) { return steps_of(f) == s0; });
    REQUIRE(before);
    CHECK(boost::json::serialize(before->at("scene").at("shapes")) ==
          boost::json::serialize(frame_after(client, *before).at("scene").at("shapes")));
    // ... and 300 steps later the arm, driven by its controller, is elsewhere.
    const boost::json::object after = step_from_page(client, s0, 300);
    CHECK(boost::json::serialize(before->at("scene").at("shapes")) !=
          boost::json::serialize(after.at("scene").at("shapes")));

    host.send("quit");
    CHECK(host.line_matching(std::regex("^trajectory_hash=[0-9a-f]{16}$")));
    CHECK(host.wait_exit() == 0);
}
#endif

TEST_CASE("WebConsole.Demo.RunsOnWhenStandardInputEnds" * doctest::timeout(120))
{
    // The demo started with its stdin at its end (no terminal: docker without -t,
    // a launch file) and --web: the page is its console. Before, the end of input
    // was a quit: the URL was printed and the demo was gone.
    Child demo({SIMSYNC_DEMO_PATH, "--web", "0"});
    demo.close_input();
    const auto url = demo.line_matching(kUrl);
    REQUIRE(url);
    WsClient client;
    REQUIRE(client.connect(port_of(*url)) == "");
    const auto first = client.frame_where([](const auto& f) { return steps_of(f) > 0; });
    REQUIRE(first);
    // Time goes on (a 1x run: 100 steps of 1 ms in 0.1 s of wall time) ...
    const std::uint64_t s0 = steps_of(*first);
    CHECK(client.frame_where([&](const auto& f) { return str(f.at("state")) == "running" && steps_of(f) >= s0 + 100; }));
    // ... and the page still commands it.
    auto reply = client.command("pause");
    REQUIRE(reply);
    CHECK(reply->at("ok").as_bool());
    CHECK(client.frame_where([](const auto& f) { return str(f.at("state")) == "paused"; }));
    demo.signal(SIGTERM);
    CHECK(demo.line_matching(std::regex("ended by SIGTERM at ")));
    CHECK(demo.wait_exit() == 0);
}

TEST_CASE("WebConsole.Demo.BadWebOptionIsRefused" * doctest::timeout(60))
{
    for (const char* bad : {"99999", "example.org:80", "[::1", ""}) {
        CAPTURE(bad);
        Child demo({SIMSYNC_DEMO_PATH, "--web", bad});
        CHECK(demo.wait_exit() == 2);
        CHECK(demo.output().find("web endpoint") != std::string::npos);
    }
}

// ------------------------------------------------------------ TLS, off loopback

namespace {

// A program with --web off loopback and neither TLS nor --web-insecure refuses
// to start and says why; with --web-insecure it gets past that (to the bind,
// which fails: 192.0.2.1 is no interface of this machine).
void refuses_plain_http_off_loopback(const char* program, std::vector<std::string> extra)
{
    std::vector<std::string> args{program, "--web", "192.0.2.1:0"};
    args.insert(args.end(), extra.begin(), extra.end());
    Child refused(args);
    CHECK(refused.wait_exit() == 2);
    CHECK(refused.output().find("192.0.2.1, which is not a loopback address, needs TLS") != std::string::npos);
    CHECK(refused.output().find("--web-insecure") != std::string::npos);
    CHECK(refused.output().find("web console: http") == std::string::npos);

    args.push_back("--web-insecure");
    Child insecure(args);
    CHECK(insecure.wait_exit() == 1);
    CHECK(insecure.output().find("needs TLS") == std::string::npos);
    CHECK(insecure.output().find("cannot listen on 192.0.2.1") != std::string::npos);
}

// The program serves TLS with the certificate it was given: the page over
// https (checked against that certificate alone), plain HTTP answered in plain
// text that it is not served, and the page's own WebSocket (wss, its Origin)
// in control with the token from the printed URL's fragment.
void serves_tls(Child& program, const TestCertificate& cert)
{
    const auto url = program.line_matching(std::regex(R"(^web console: https://127\.0\.0\.1:(\d+)/#token=([0-9a-f]{32})$)"));
    REQUIRE(url);
    const std::uint16_t port = static_cast<std::uint16_t>(std::stoi((*url)[1].str()));
    const std::string token = (*url)[2].str();
    auto trusting = cert.client_context();
    const HttpResult page = http_request(port, http::verb::get, "/", "", {.tls = &trusting});
    REQUIRE(page.ok);
    CHECK(page.status == 200);
    const std::string plain = raw_exchange(port, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    CHECK(plain.find("this console serves HTTPS only") != std::string::npos);
    WsClient client;
    REQUIRE(client.connect(port, {.origin = "https://127.0.0.1:" + std::to_string(port),
                                  .route = {.tls = &trusting}, .hello = token}) == "");
    const auto welcome = client.next("welcome");
    REQUIRE(welcome);
    CHECK(welcome->at("control").as_bool());
    const auto reply = client.command("pause");
    REQUIRE(reply);
    CHECK(reply->at("ok").as_bool());
}

} // namespace

TEST_CASE("WebConsole.Demo.OffLoopbackPlainHttpIsRefusedUnlessSaidAndTlsIsServed" * doctest::timeout(120))
{
    refuses_plain_http_off_loopback(SIMSYNC_DEMO_PATH, {});
    TestCertificate cert;
    REQUIRE_MESSAGE(cert.made(), "openssl could not make a test certificate in " << cert.directory());
    {
        Child demo({SIMSYNC_DEMO_PATH, "--web", "127.0.0.1:0", "--web-cert", cert.certificate(), "--web-key",
                    cert.key(), "--duration", "600"});
        // Loopback with TLS: control needs no token there; ask for one through
        // the scenario below instead. Here: https and plain refused.
        const auto url = demo.line_matching(std::regex(R"(^web console: https://127\.0\.0\.1:(\d+)/$)"));
        REQUIRE(url);
        const std::uint16_t port = static_cast<std::uint16_t>(std::stoi((*url)[1].str()));
        auto trusting = cert.client_context();
        CHECK(http_request(port, http::verb::get, "/", "", {.tls = &trusting}).status == 200);
        CHECK(raw_exchange(port, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").find("HTTPS only") != std::string::npos);
        demo.send("quit");
        CHECK(demo.wait_exit() == 0);
    }
    // The same from the scenario's web: section, with the token required.
    std::ifstream in(SIMSYNC_DEMO_SCENARIO_PATH);
    std::stringstream scenario;
    scenario << in.rdbuf();
    const std::string file = cert.directory() + "/scenario.yaml";
    std::ofstream(file) << scenario.str() << "\nweb:\n  listen: 127.0.0.1:0\n  certificate: " << cert.certificate()
                        << "\n  private_key: " << cert.key() << "\n  require_token: true\n";
    Child demo({SIMSYNC_DEMO_PATH, "--config", file, "--duration", "600"});
    serves_tls(demo, cert);
    demo.send("quit");
    CHECK(demo.wait_exit() == 0);
}

#ifdef SIMSYNC_BULLET_HOST_PATH
TEST_CASE("WebConsole.BulletHost.OffLoopbackPlainHttpIsRefusedUnlessSaidAndTlsIsServed" * doctest::timeout(180))
{
    refuses_plain_http_off_loopback(SIMSYNC_BULLET_HOST_PATH, {"--duration", "600"});
    TestCertificate cert;
    REQUIRE_MESSAGE(cert.made(), "openssl could not make a test certificate in " << cert.directory());
    const std::string file = cert.directory() + "/web.yaml";
    // The bullet host reads its scenario from --config too; only the web: part here.
    std::ofstream(file) << "web:\n  require_token: true\n";
    Child host({SIMSYNC_BULLET_HOST_PATH, "--config", file, "--web", "127.0.0.1:0", "--web-cert", cert.certificate(),
                "--web-key", cert.key(), "--duration", "600", "--scale", "1"});
    serves_tls(host, cert);
    host.send("quit");
    CHECK(host.wait_exit() == 0);
}
#endif

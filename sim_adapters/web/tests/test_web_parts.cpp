// The web adapter's parts that need no socket: the `--web [HOST:]PORT` parser,
// the loopback test, the grant timeline (bounded, incremental, thread-safe) and
// the JSON writer's escaping (every string on the wire is valid UTF-8 JSON).

#include "json_writer.hpp"
#include "protocol.hpp"

#include <simsync/core/error.hpp>
#include <simsync/web/web.hpp>

#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

using namespace simsync;
using namespace simsync::web;

TEST_CASE("WebEndpoint.Parse.GoodTexts")
{
    struct Row {
        const char* text;
        const char* host;
        std::uint16_t port;
    };
    const Row rows[] = {
        {"8080", "127.0.0.1", 8080},
        {"0", "127.0.0.1", 0},
        {"65535", "127.0.0.1", 65535},
        {"0.0.0.0:8080", "0.0.0.0", 8080},
        {"192.0.2.7:80", "192.0.2.7", 80},
        {"localhost:9000", "localhost", 9000},
        {"[::1]:8080", "::1", 8080},
        {"[::]:0", "::", 0},
    };
    for (const Row& r : rows) {
        CAPTURE(r.text);
        const Endpoint e = parse_endpoint(r.text);
        CHECK(e.host == r.host);
        CHECK(e.port == r.port);
    }
}

TEST_CASE("WebEndpoint.Parse.BadTextsSayWhy")
{
    struct Row {
        const char* text;
        const char* expected;
    };
    const Row rows[] = {
        {"", "the port is missing"},
        {"127.0.0.1:", "the port is missing"},
        {"65536", "from 0 to 65535, got '65536'"},
        {"-1", "got '-1'"},
        {"80x", "got '80x'"},
        {"example.org:80", "'example.org' is not an IPv4 or IPv6 address"},
        {":8080", "the host before ':' is empty"},
        {"::1:8080", "write an IPv6 address in brackets"},
        {"[::1:8080", "closing ']'"},
        {"[::1]8080", "expected ':PORT'"},
        {"300.1.1.1:80", "not an IPv4 or IPv6 address"},
    };
    for (const Row& r : rows) {
        CAPTURE(r.text);
        try {
            parse_endpoint(r.text);
            FAIL("no exception");
        } catch (const Error& e) {
            CHECK(e.code() == errc::invalid_argument);
            const std::string what = e.what();
            CHECK(what.find(std::string("web endpoint '") + r.text + "'") != std::string::npos);
            CHECK(what.find(r.expected) != std::string::npos);
        }
    }
}

TEST_CASE("WebEndpoint.IsLoopback.Table")
{
    CHECK(is_loopback("127.0.0.1"));
    CHECK(is_loopback("127.3.2.1"));
    CHECK(is_loopback("localhost"));
    CHECK(is_loopback("::1"));
    CHECK(is_loopback("::ffff:127.0.0.1"));
    CHECK_FALSE(is_loopback("0.0.0.0"));
    CHECK_FALSE(is_loopback("::"));
    CHECK_FALSE(is_loopback("192.168.1.2"));
    CHECK_FALSE(is_loopback("10.0.0.1"));
    CHECK_FALSE(is_loopback("::ffff:10.0.0.1"));
    CHECK_THROWS_AS(is_loopback("example.org"), Error);
}

namespace {

GrantSpan span(std::int64_t n)
{
    const WallTime w{std::chrono::milliseconds(n)};
    return {.requested = SimTime{SimDuration{n}}, .granted = SimTime{SimDuration{n}}, .asked = w, .granted_at = w,
            .released = w};
}

} // namespace

TEST_CASE("GrantTimeline.Read.IncrementalAndBounded")
{
    CHECK_THROWS_AS(GrantTimeline(0), Error);
    GrantTimeline timeline(4);
    auto& a = timeline.add_track("a", "shared");
    auto& b = timeline.add_track("b", "exclusive");
    CHECK(timeline.size() == 2);
    GrantTimeline::Cursor cursor;
    for (int n = 0; n < 3; ++n) a.record(span(n));
    auto r = timeline.read(cursor);
    REQUIRE(r.size() == 2);
    CHECK(r[0].name == "a");
    CHECK(r[0].category == "shared");
    REQUIRE(r[0].spans.size() == 3);
    CHECK(r[0].spans[2].granted.time_since_epoch().count() == 2);
    CHECK(r[0].missed == 0);
    CHECK(r[1].spans.empty());
    // Nothing new: nothing returned.
    r = timeline.read(cursor);
    CHECK(r[0].spans.empty());
    // Ten more on a, capacity 4: the reader gets the last 4 and counts 6 missed.
    for (int n = 3; n < 13; ++n) a.record(span(n));
    b.record(span(100));
    r = timeline.read(cursor);
    REQUIRE(r[0].spans.size() == 4);
    CHECK(r[0].missed == 6);
    CHECK(r[0].spans.front().granted.time_since_epoch().count() == 9);
    CHECK(r[0].spans.back().granted.time_since_epoch().count() == 12);
    REQUIRE(r[1].spans.size() == 1);
    // A second reader has its own cursor.
    GrantTimeline::Cursor other;
    r = timeline.read(other);
    CHECK(r[0].spans.size() == 4);
    CHECK(r[0].missed == 9);
}

TEST_CASE("GrantTimeline.Concurrency.WritersAndAReader" * doctest::timeout(120))
{
    for (int writers : {1, 4}) {
        CAPTURE(writers);
        GrantTimeline timeline(64);
        constexpr int kPerWriter = 20000;
        std::vector<std::thread> threads;
        std::atomic<int> started{0};
        for (int w = 0; w < writers; ++w) {
            threads.emplace_back([&, w] {
                auto& track = timeline.add_track("w" + std::to_string(w));
                ++started;
                for (int n = 0; n < kPerWriter; ++n) track.record(span(n));
            });
        }
        GrantTimeline::Cursor cursor;
        std::vector<std::uint64_t> seen(static_cast<std::size_t>(writers), 0);
        std::vector<std::int64_t> last(static_cast<std::size_t>(writers), -1);
        bool ordered = true;
        auto drain = [&] {
            for (const auto& t : timeline.read(cursor)) {
                seen[t.track] += t.spans.size() + t.missed;
                for (const auto& s : t.spans) {
                    const auto v = s.granted.time_since_epoch().count();
                    ordered = ordered && v > last[t.track];
                    last[t.track] = v;
                }
            }
        };
        while (started.load() < writers) drain();
        for (int i = 0; i < 200; ++i) drain();
        for (auto& t : threads) t.join();
        drain();
        CHECK(ordered);
        for (int w = 0; w < writers; ++w) {
            CHECK(seen[static_cast<std::size_t>(w)] == kPerWriter); // read or counted as missed, never both
            CHECK(last[static_cast<std::size_t>(w)] == kPerWriter - 1);
        }
    }
}

TEST_CASE("WebJson.Quote.EscapesAndKeepsUtf8Valid")
{
    using simsync::web::detail::json_quote;
    CHECK(json_quote("plain") == "\"plain\"");
    CHECK(json_quote("a\"b\\c\n\t\x01") == "\"a\\\"b\\\\c\\n\\t\\u0001\"");
    CHECK(json_quote("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
    // Bytes that are not UTF-8 become U+FFFD: lone continuation, truncated
    // sequence, overlong encoding, surrogate, beyond U+10FFFF.
    CHECK(json_quote("\x80") == "\"\xef\xbf\xbd\"");
    CHECK(json_quote("a\xc3") == "\"a\xef\xbf\xbd\"");
    CHECK(json_quote("\xc0\xaf") == "\"\xef\xbf\xbd\xef\xbf\xbd\"");
    CHECK(json_quote("\xed\xa0\x80") == "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
    CHECK(json_quote("\xf4\x90\x80\x80") == "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
}

TEST_CASE("WebJson.Writer.CommasNumbersAndNulls")
{
    simsync::web::detail::JsonWriter w;
    w.begin_object();
    w.key("a").integer(-3);
    w.key("b").begin_array();
    w.fixed(1.23456, 2);
    w.fixed(-0.0001, 2);
    w.number(1.0 / 0.0);
    w.number(0.000123456, 3);
    w.unsigned_integer(18446744073709551615ull);
    w.boolean(true);
    w.null();
    w.end_array();
    w.key("c").begin_object();
    w.end_object();
    w.key("d").string("x");
    w.end_object();
    CHECK(w.str() == R"({"a":-3,"b":[1.23,0.00,null,0.000123,18446744073709551615,true,null],"c":{},"d":"x"})");
}

TEST_CASE("WebProtocol.Incoming.GoodAndBadMessages")
{
    using simsync::web::detail::parse_incoming;
    std::string error;
    auto ok = parse_incoming(R"( {"type" : "command", "id": 42, "text": "step 5"} )", error);
    REQUIRE(ok);
    CHECK(ok->id == 42);
    CHECK(ok->text == "step 5");
    ok = parse_incoming(R"({"text":"revoke caf\u00e9 \ud83d\ude00 \"x\"","type":"command"})", error);
    REQUIRE(ok);
    CHECK_FALSE(ok->id);
    CHECK(ok->text == "revoke caf\xc3\xa9 \xf0\x9f\x98\x80 \"x\"");
    using Kind = simsync::web::detail::IncomingCommand::Kind;
    CHECK(ok->kind == Kind::command);
    ok = parse_incoming(R"({"type":"hello","token":"abc_-9"})", error);
    REQUIRE(ok);
    CHECK(ok->kind == Kind::hello);
    CHECK(ok->token == "abc_-9");
    ok = parse_incoming(R"({"type":"hello"})", error);
    REQUIRE(ok);
    CHECK(ok->kind == Kind::hello);
    CHECK(ok->token.empty());
    ok = parse_incoming(R"({"type":"ping"})", error);
    REQUIRE(ok);
    CHECK(ok->kind == Kind::ping);
    struct Row {
        const char* message;
        const char* expected;
    };
    const Row rows[] = {
        {"", "not a JSON object"},
        {"[]", "not a JSON object"},
        {"{", "expected a quoted field name"},
        {"{}", "a message needs \"type\""},
        {R"({"type":"command"})", "a command needs \"text\""},
        {R"({"type":"command","text":"pause","token":"t"})", "\"token\" belongs in the hello only"},
        {R"({"type":"hello","text":"pause"})", "a hello takes \"token\" only"},
        {R"({"type":"hello","token":5})", "\"token\" must be a string"},
        {R"({"type":"hello","token":"a","token":"b"})", "field \"token\" given twice"},
        {R"({"type":"ping","id":1})", "a ping takes no fields"},
        {R"({"type":"command","text":"a","text":"b"})", "field \"text\" given twice"},
        {R"({"type":"command","text":"a"}{})", "text after the object"},
        {R"({"type":"command","text":"a",})", "expected a quoted field name"},
        {R"({"type":"command" "text":"a"})", "expected ',' or '}'"},
        {R"({"type":"reply","text":"a"})", "\"type\" must be \"hello\", \"command\" or \"ping\""},
        {R"({"type":"command","text":null})", "\"text\" must be a string"},
        {R"({"type":"command","text":"a","id":1.5})", "\"id\" must be an integer"},
        {R"({"type":"command","text":"a","id":01})", "\"id\" must be an integer"},
        {R"({"type":"command","text":"a","id":99999999999999999999})", "\"id\" must be an integer"},
        {R"({"type":"command","text":"bad \q escape"})", "a bad string"},
        {R"({"type":"command","text":"lone \udc00"})", "a bad string"},
        {"{\"type\":\"command\",\"text\":\"raw\ttab\"}", "a bad string"},
        {R"({"type":"command","text":"unterminated})", "a bad string"},
    };
    for (const Row& r : rows) {
        CAPTURE(r.message);
        error.clear();
        CHECK_FALSE(parse_incoming(r.message, error));
        CHECK(error.find(r.expected) != std::string::npos);
    }
}

TEST_CASE("WebScenario.Section.ReadsEveryKeyAndRefusesBadValuesAtTheirPlace")
{
    // A file the section may name: this test's own source, readable everywhere it
    // builds. By the absolute path CMake gives: __FILE__ is relative where ccache
    // rewrites paths under its base_dir, and the test runs in another directory.
    const std::string readable = SIMSYNC_WEB_PARTS_SOURCE;
    const ConfigNode full = ConfigNode::parse("web:\n"
                                              "  listen: 0.0.0.0:8443\n"
                                              "  certificate: " + readable + "\n"
                                              "  private_key: " + readable + "\n"
                                              "  insecure: true\n"
                                              "  allowed_hosts: [sim.example.org, Other-Host]\n"
                                              "  require_token: true\n"
                                              "  max_connections: 10\n"
                                              "  reserved_for_control: 3\n"
                                              "  max_per_address: 2\n"
                                              "  max_pending: 20\n"
                                              "  handshake_timeout: 1500ms\n"
                                              "  viewer_idle_timeout: 1min\n"
                                              "  frame_period: 50ms\n",
                                              "full.yaml");
    const WebSection s = read_web_section(full.at("web"));
    REQUIRE(s.listen);
    CHECK(s.listen->host == "0.0.0.0");
    CHECK(s.listen->port == 8443);
    CHECK(s.config.tls_certificate_file == readable);
    CHECK(s.config.tls_private_key_file == readable);
    CHECK(s.config.allow_insecure);
    CHECK(s.config.allowed_hosts == std::vector<std::string>{"sim.example.org", "Other-Host"});
    CHECK(s.config.require_token);
    CHECK(s.config.max_connections == 10);
    CHECK(s.config.reserved_for_control == 3);
    CHECK(s.config.max_per_address == 2);
    CHECK(s.config.max_pending == 20);
    CHECK(s.config.handshake_timeout == std::chrono::milliseconds(1500));
    CHECK(s.config.viewer_idle_timeout == std::chrono::minutes(1));
    CHECK(s.config.frame_period == std::chrono::milliseconds(50));

    // `web:` alone (a null node, as the loader keeps it): the defaults, and nowhere to listen.
    ScenarioExtensions extensions;
    register_web_section(extensions);
    const WebSection empty =
        read_web_section(load_scenario_string("web:\n", "empty.yaml", extensions).sections.at("web"));
    CHECK_FALSE(empty.listen);
    CHECK(empty.config.handshake_timeout == WebConsoleConfig{}.handshake_timeout);
    CHECK(empty.config.reserved_for_control == WebConsoleConfig{}.reserved_for_control);

    struct Row {
        std::string yaml; // the section's body, after "web:\n"
        const char* where; // "file:line:column: key"
        const char* what;
    };
    const Row rows[] = {
        {"  port: 80\n", "bad.yaml:2:3", "port"},
        {"  listen: example.org:80\n", "bad.yaml:2:11: web.listen", "is not an IPv4 or IPv6 address"},
        {"  certificate: /nonexistent/cert.pem\n  private_key: " + readable + "\n", "bad.yaml:2:16: web.certificate",
         "cannot read '/nonexistent/cert.pem'"},
        {"  certificate: " + readable + "\n", "bad.yaml:2:3: web", "certificate needs its private_key"},
        {"  max_connections: 0\n", "bad.yaml:2:20: web.max_connections", "must be > 0, got 0"},
        {"  max_connections: 3\n  reserved_for_control: 4\n", "bad.yaml:3:25: web.reserved_for_control",
         "must be from 0 to max_connections (3), got 4"},
        {"  handshake_timeout: 0s\n", "bad.yaml:2:22: web.handshake_timeout", "must be > 0"},
        {"  allowed_hosts: [\"sim.example.org:8443\"]\n", "bad.yaml:2:19: web.allowed_hosts[0]",
         "is not a host name (no port, no scheme)"},
        {"  insecure: maybe\n", "bad.yaml:2:13: web.insecure", ""},
    };
    for (const Row& r : rows) {
        CAPTURE(r.yaml);
        try {
            read_web_section(ConfigNode::parse("web:\n" + r.yaml, "bad.yaml").at("web"));
            FAIL("accepted");
        } catch (const ConfigError& e) {
            const std::string what = e.what();
            CAPTURE(what);
            CHECK(what.find(r.where) != std::string::npos);
            CHECK(what.find(r.what) != std::string::npos);
        }
    }

    // Registered, the section is checked when the scenario loads.
    CHECK_THROWS_WITH_AS(load_scenario_string("web:\n  max_pending: -1\n", "load.yaml", extensions),
                         doctest::Contains("load.yaml:2:16: web.max_pending"), ConfigError);
    const ScenarioConfig loaded = load_scenario_string("web:\n  listen: 8080\n", "load.yaml", extensions);
    REQUIRE(loaded.sections.count("web") == 1);
    CHECK(read_web_section(loaded.sections.at("web")).listen->port == 8080);
}

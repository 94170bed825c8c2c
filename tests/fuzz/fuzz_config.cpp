// libFuzzer target: the scenario loader over arbitrary bytes.
//
// Every input must either load or throw simsync::Error (ConfigError names the
// place). Only simsync::Error is caught here, so any other exception escapes
// and libFuzzer reports it as a crash, like a sanitizer finding or a hang.
// The extensions register the world type, clock sink kind, section and time
// source that docs/config.md's examples (the seed corpus) use, with validators
// that read every node with every conversion, so the fuzzer reaches all of
// ConfigNode, not only the core's schema.
//
// Built as `fuzz_config` by the `fuzz` preset (clang, -fsanitize=fuzzer) and,
// in every test build, as `fuzz_config_replay`, which runs the kept corpus
// (tests/fuzz/corpus/config) once as a regression test.

#include <simsync/config/config.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace {

// Reads everything below `n` through the public API, as an adapter's
// validator might; conversion errors are expected outcomes here.
void read_everything(const simsync::ConfigNode& n, int& budget)
{
    if (--budget < 0) return; // aliases can make a small file visit many nodes
    (void)n.path();
    (void)n.line();
    (void)n.column();
    if (n.is_map()) {
        for (const std::string& key : n.keys()) {
            if (auto child = n.find(key)) read_everything(*child, budget);
        }
        try {
            n.allow_only({"type", "name", "rate"});
        } catch (const simsync::ConfigError&) {
        }
        return;
    }
    if (n.is_list()) {
        for (const simsync::ConfigNode& e : n.elements()) read_everything(e, budget);
        return;
    }
    if (n.is_null()) return;
    auto attempt = [](auto&& convert) {
        try {
            convert();
        } catch (const simsync::ConfigError&) {
        }
    };
    attempt([&] { (void)n.as_string(); });
    attempt([&] { (void)n.as_bool(); });
    attempt([&] { (void)n.as_int(); });
    attempt([&] { (void)n.as_double(); });
    attempt([&] { (void)n.as_duration(); });
    attempt([&] { (void)n.as_rate(); });
    attempt([&] { (void)n.as_choice({"a", "b"}); });
    try {
        (void)simsync::parse_udp_sink(n.as_string());
    } catch (const simsync::Error&) {
    }
}

void validate(const simsync::ConfigNode& n)
{
    int budget = 2000;
    read_everything(n, budget);
    // Fail on one value, as a real validator does, so the error path is taken too.
    if (n.is_map()) {
        if (auto bad = n.find("bad")) bad->fail("a registered validator refused this");
    }
}

const simsync::ScenarioExtensions& extensions()
{
    static const simsync::ScenarioExtensions e = [] {
        simsync::ScenarioExtensions x;
        x.add_world_type("bouncing_balls", validate);
        x.add_clock_sink("ros2", validate);
        x.add_section("web", validate);
        x.add_time_source("gps");
        return x;
    }();
    return e;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    std::optional<simsync::ConfigNode> root;
    try {
        root = simsync::ConfigNode::parse(text, "fuzz.yaml");
    } catch (const simsync::Error&) {
        return 0;
    }
    try {
        const simsync::ScenarioConfig config = simsync::load_scenario(*root, extensions());
        (void)config;
    } catch (const simsync::Error&) {
    }
    // The same document as an adapter's own, read through every accessor.
    try {
        validate(*root);
    } catch (const simsync::Error&) {
    }
    return 0;
}

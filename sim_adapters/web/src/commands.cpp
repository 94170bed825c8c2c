// What the console says to a new connection, and the operator commands it
// applies for a controller.

#include "console_impl.hpp"

namespace simsync::web {

std::string WebConsole::Impl::welcome(bool control) const
{
    JsonWriter w;
    w.begin_object();
    w.key("type").string("welcome");
    w.key("title").string(config.title);
    w.key("control").boolean(control);
    w.key("token_required").boolean(token_required);
    w.key("idle_timeout_s").number(seconds(config.viewer_idle_timeout));
    // Plain HTTP off loopback (allow_insecure): the page says so to whoever uses it.
    w.key("insecure").boolean(!loopback && !tls());
    w.key("step_s").number(std::chrono::duration<double>(handler.step_size()).count(), 9);
    w.key("frame_period_s").number(seconds(config.frame_period));
    w.key("timeline_window_s").number(seconds(config.timeline_window));
    w.key("history_window_s").number(seconds(config.history_window));
    w.key("paced").boolean(sources.pacer != nullptr);
    w.key("has_scale").boolean(sources.scale != nullptr);
    w.key("has_scene").boolean(sources.scene != nullptr);
    w.key("has_timeline").boolean(sources.timeline != nullptr);
    w.end_object();
    return w.take();
}

std::string WebConsole::Impl::handle_command(std::string_view text, std::optional<std::int64_t> id, bool control)
{
    JsonWriter w;
    w.begin_object();
    w.key("type").string("reply");
    w.key("id");
    if (id) {
        w.integer(*id);
    } else {
        w.null();
    }
    w.key("command").string(text);
    std::string error;
    std::string done;
    try {
        const OperatorCommand c = parse_operator_command(text);
        if (c.kind == OperatorCommand::Kind::status || c.kind == OperatorCommand::Kind::quit) {
            error = std::string(to_string(c.kind)) + ": not available from the web console";
        } else if (!control) {
            error = "view only: control needs the token printed with the console's URL";
        } else {
            done = apply_operator_command(c, handler, sources.scale);
        }
    } catch (const Error& e) {
        error = e.what();
    }
    if (error.empty()) {
        ++applied;
        w.key("ok").boolean(true);
        w.key("message").string(done);
    } else {
        ++rejected;
        w.key("ok").boolean(false);
        w.key("message").string(error);
    }
    w.end_object();
    return w.take();
}

} // namespace simsync::web

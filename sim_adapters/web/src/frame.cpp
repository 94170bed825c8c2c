// The frame format: the frame message sent at the frame rate, and the history
// message a new page gets first.

#include "console_impl.hpp"

namespace simsync::web {

namespace {

void write_span(JsonWriter& w, const GrantSpan& s, WallTime origin)
{
    w.begin_array();
    w.fixed(seconds(s.asked - origin), 5);
    w.fixed(seconds(s.granted_at - origin), 5);
    w.fixed(seconds(s.released - origin), 5);
    w.fixed(seconds(s.requested), 6);
    w.fixed(seconds(s.granted), 6);
    w.end_array();
}

void write_optional(JsonWriter& w, const std::optional<double>& v)
{
    if (v) {
        w.number(*v, 5);
    } else {
        w.null();
    }
}

} // namespace

std::string WebConsole::Impl::build_frame(const Snapshot& snap, WallTime wall, std::optional<double> achieved,
                                          std::optional<double> target, double measured, double grant_rate,
                                          const std::vector<GrantTimeline::TrackSpans>& fresh)
{
    JsonWriter w;
    w.begin_object();
    w.key("type").string("frame");
    w.key("seq").unsigned_integer(++sequence);
    w.key("wall").fixed(seconds(wall - origin), 4);
    w.key("now").fixed(seconds(snap.now), 9);
    w.key("now_ns").string(std::to_string(snap.now.time_since_epoch().count()));
    w.key("state").string(to_string(snap.state));
    w.key("steps").unsigned_integer(snap.steps);
    w.key("grants").unsigned_integer(snap.grants);
    w.key("pause_at");
    if (snap.pause_at) {
        w.fixed(seconds(*snap.pause_at), 9);
    } else {
        w.null();
    }
    w.key("rtf").begin_object();
    w.key("target");
    write_optional(w, target);
    w.key("achieved");
    write_optional(w, achieved);
    w.key("measured").number(measured, 5);
    w.end_object();
    w.key("grants_per_s").number(grant_rate, 6);
    w.key("waiting_for").begin_array();
    for (const auto& n : snap.waiting_for) w.string(n);
    w.end_array();
    w.key("waiting_for_s").fixed(seconds(snap.waiting_for_how_long), 3);
    w.key("accessors").begin_array();
    for (const AccessorStatus& a : snap.accessors) {
        w.begin_object();
        w.key("name").string(a.name);
        w.key("kind").string(to_string(a.kind));
        w.key("mode").string(to_string(a.mode));
        w.key("priority").integer(a.priority);
        w.key("registered").boolean(a.registered);
        w.key("activity").string(to_string(a.activity));
        w.key("time").fixed(seconds(a.time), 6);
        w.key("for_s").fixed(seconds(a.for_how_long), 4);
        w.key("grants").unsigned_integer(a.grants);
        w.end_object();
    }
    w.end_array();
    if (sources.timeline != nullptr) {
        // Only what is new; a page keeps the rest. At most the window's worth.
        w.key("timeline").begin_array();
        for (const auto& t : fresh) {
            w.begin_object();
            w.key("track").unsigned_integer(t.track);
            w.key("name").string(t.name);
            w.key("category").string(t.category);
            w.key("spans").begin_array();
            std::size_t first = t.spans.size() > kMaxSpansPerTrack ? t.spans.size() - kMaxSpansPerTrack : 0;
            while (first < t.spans.size() && wall - t.spans[first].released > config.timeline_window) ++first;
            for (std::size_t i = first; i < t.spans.size(); ++i) write_span(w, t.spans[i], origin);
            w.end_array();
            w.end_object();
        }
        w.end_array();
    }
    if (accessor) {
        w.key("scene").begin_object();
        w.key("time");
        if (scene_time) {
            w.fixed(seconds(*scene_time), 9);
        } else {
            w.null();
        }
        w.key("error");
        if (scene_error.empty()) {
            w.null();
        } else {
            w.string(scene_error);
        }
        w.key("bounds");
        if (scene_frame.bounds) {
            const Bounds& b = *scene_frame.bounds;
            w.begin_array();
            for (double v : {b.min.x, b.min.y, b.min.z, b.max.x, b.max.y, b.max.z}) w.fixed(v, 3);
            w.end_array();
        } else {
            w.null();
        }
        w.key("ground");
        if (scene_frame.ground_z) {
            w.fixed(*scene_frame.ground_z, 3);
        } else {
            w.null();
        }
        w.key("camera");
        if (scene_frame.camera) {
            w.begin_array();
            w.fixed(scene_frame.camera->azimuth_deg, 2);
            w.fixed(scene_frame.camera->elevation_deg, 2);
            w.end_array();
        } else {
            w.null();
        }
        // [id, kind (0 sphere, 1 box), x, y, z, qx, qy, qz, qw, sx, sy, sz, colour]
        w.key("shapes").begin_array();
        for (const Shape& s : scene_frame.shapes) {
            w.begin_array();
            w.unsigned_integer(s.id);
            w.integer(s.kind == ShapeKind::box ? 1 : 0);
            w.fixed(s.position.x, 4);
            w.fixed(s.position.y, 4);
            w.fixed(s.position.z, 4);
            w.fixed(s.orientation.x, 5);
            w.fixed(s.orientation.y, 5);
            w.fixed(s.orientation.z, 5);
            w.fixed(s.orientation.w, 5);
            w.fixed(s.size.x, 4);
            w.fixed(s.size.y, 4);
            w.fixed(s.size.z, 4);
            w.unsigned_integer(s.colour & 0xFFFFFFu);
            w.end_array();
        }
        w.end_array();
        w.end_object();
    }
    w.end_object();
    return w.take();
}

std::string WebConsole::Impl::build_history(WallTime wall) const
{
    JsonWriter w;
    w.begin_object();
    w.key("type").string("history");
    w.key("wall").fixed(seconds(wall - origin), 4);
    // [wall, achieved, target] per frame over the history window.
    w.key("rtf").begin_array();
    for (const HistoryPoint& p : history) {
        w.begin_array();
        w.fixed(seconds(p.wall - origin), 3);
        write_optional(w, p.achieved);
        write_optional(w, p.target);
        w.end_array();
    }
    w.end_array();
    w.key("timeline").begin_array();
    for (std::size_t i = 0; i < recent.size(); ++i) {
        w.begin_object();
        w.key("track").unsigned_integer(i);
        w.key("name").string(recent[i].name);
        w.key("category").string(recent[i].category);
        w.key("spans").begin_array();
        for (const GrantSpan& s : recent[i].spans) write_span(w, s, origin);
        w.end_array();
        w.end_object();
    }
    w.end_array();
    w.end_object();
    return w.take();
}

} // namespace simsync::web

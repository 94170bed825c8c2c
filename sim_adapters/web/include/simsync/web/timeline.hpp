#pragma once
/// @file
/// GrantTimeline: the spans of the last grants per accessor, as a host's own
/// accessor threads report them, for the web console's live timeline (the
/// `--trace` picture, live).

#include <simsync/core/time.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace simsync::web {

/// One access as the accessor's thread saw it: when it asked, when it was
/// granted, when it released, and the simulated times involved.
struct GrantSpan {
    SimTime requested{};
    SimTime granted{};
    WallTime asked{};
    WallTime granted_at{};
    WallTime released{};
};

/// A bounded record of the latest grants of each of a host's accessors.
///
/// The handler's public API has no grant events, so the host's accessor threads
/// report their own accesses: each registers a Track once and calls
/// Track::record after every release. Each track keeps its last `capacity`
/// spans (older ones are overwritten); a reader (the web console's sampler)
/// picks up what is new since its last read through a Cursor, and learns how
/// many spans it missed if it read too rarely.
///
/// Copy/move: neither (tracks refer to it).
/// Thread safety: every member is safe from any thread. Each track has its own
/// mutex, taken by `record` for a copy of one span and by `read` for the copy of
/// that track's new spans, so a recording thread waits at most for one track's
/// copy and never for another track or for the console's network.
/// Lifetime: tracks live as long as the timeline.
///
/// @code
/// simsync::web::GrantTimeline timeline;
/// auto& track = timeline.add_track("camera", "shared");   // once, any thread
/// ...                                                   // on the camera's thread:
/// track.record({.requested = want, .granted = a.granted_time(),
///               .asked = asked, .granted_at = granted_at, .released = WallClock::now()});
/// @endcode
class GrantTimeline {
public:
    /// One accessor's spans. Reached by reference from add_track.
    class Track {
    public:
        Track(const Track&) = delete;
        Track& operator=(const Track&) = delete;
        /// Appends a span (overwriting the oldest if full). Thread-safe; called
        /// by the accessor's own thread after it released.
        void record(const GrantSpan& span);
        const std::string& name() const noexcept { return name_; }
        const std::string& category() const noexcept { return category_; }

    private:
        friend class GrantTimeline;
        Track(std::string name, std::string category, std::size_t capacity);
        std::string name_;
        std::string category_;
        std::size_t capacity_;
        mutable std::mutex m_;
        std::vector<GrantSpan> ring_; // span n at n % capacity_; allocated up front
        std::uint64_t recorded_ = 0;  // spans ever recorded
    };

    /// Where a reader is: spans read so far, per track.
    struct Cursor {
        std::vector<std::uint64_t> read;
    };

    /// What read returns for one track.
    struct TrackSpans {
        std::size_t track = 0; ///< index in add_track order
        std::string name;
        std::string category;
        std::vector<GrantSpan> spans; ///< new since the cursor, oldest first
        std::uint64_t missed = 0;     ///< overwritten before this reader saw them
    };

    /// @param capacity spans kept per track; @throws simsync::Error
    ///        (invalid_argument) if 0.
    explicit GrantTimeline(std::size_t capacity = 2048);
    GrantTimeline(const GrantTimeline&) = delete;
    GrantTimeline& operator=(const GrantTimeline&) = delete;
    ~GrantTimeline();

    /// Adds a track (its index is the number of tracks before it). Names need
    /// not be unique. Thread-safe; the reference stays valid for the life of the
    /// timeline.
    Track& add_track(std::string name, std::string category = {});

    /// Number of tracks so far. Thread-safe.
    std::size_t size() const;

    /// Every track's spans recorded since `cursor` (all tracks, in order, also
    /// those with nothing new), and moves the cursor past them. Thread-safe; one
    /// cursor belongs to one reader.
    std::vector<TrackSpans> read(Cursor& cursor) const;

private:
    std::size_t capacity_;
    mutable std::mutex tracks_mutex_; // guards the vector, not the tracks' contents
    std::vector<std::unique_ptr<Track>> tracks_;
};

} // namespace simsync::web

#include <simsync/core/error.hpp>
#include <simsync/web/timeline.hpp>

#include <algorithm>

namespace simsync::web {

GrantTimeline::Track::Track(std::string name, std::string category, std::size_t capacity)
    : name_(std::move(name)), category_(std::move(category)), capacity_(capacity), ring_(capacity)
{
}

void GrantTimeline::Track::record(const GrantSpan& span)
{
    std::lock_guard<std::mutex> g(m_);
    ring_[recorded_ % capacity_] = span;
    ++recorded_;
}

GrantTimeline::GrantTimeline(std::size_t capacity) : capacity_(capacity)
{
    if (capacity == 0) throw Error(errc::invalid_argument, "GrantTimeline: capacity must be > 0, got 0");
}

GrantTimeline::~GrantTimeline() = default;

GrantTimeline::Track& GrantTimeline::add_track(std::string name, std::string category)
{
    std::lock_guard<std::mutex> g(tracks_mutex_);
    tracks_.push_back(std::unique_ptr<Track>(new Track(std::move(name), std::move(category), capacity_)));
    return *tracks_.back();
}

std::size_t GrantTimeline::size() const
{
    std::lock_guard<std::mutex> g(tracks_mutex_);
    return tracks_.size();
}

std::vector<GrantTimeline::TrackSpans> GrantTimeline::read(Cursor& cursor) const
{
    std::vector<const Track*> tracks;
    {
        std::lock_guard<std::mutex> g(tracks_mutex_);
        for (const auto& t : tracks_) tracks.push_back(t.get());
    }
    cursor.read.resize(std::max(cursor.read.size(), tracks.size()), 0);
    std::vector<TrackSpans> out(tracks.size());
    for (std::size_t i = 0; i < tracks.size(); ++i) {
        const Track& t = *tracks[i];
        TrackSpans& o = out[i];
        o.track = i;
        o.name = t.name_;
        o.category = t.category_;
        std::lock_guard<std::mutex> g(t.m_);
        const std::uint64_t oldest = t.recorded_ > t.capacity_ ? t.recorded_ - t.capacity_ : 0;
        std::uint64_t from = cursor.read[i];
        if (from < oldest) {
            o.missed = oldest - from;
            from = oldest;
        }
        o.spans.reserve(static_cast<std::size_t>(t.recorded_ - from));
        for (std::uint64_t n = from; n < t.recorded_; ++n) o.spans.push_back(t.ring_[n % t.capacity_]);
        cursor.read[i] = t.recorded_;
    }
    return out;
}

} // namespace simsync::web

#include "model/check.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace simsync::model {

namespace {

ModelOptions model_options(const AccessorOptions& o)
{
    ModelOptions m;
    m.kind = o.kind;
    m.mode = o.mode;
    m.priority = o.priority;
    if (o.first_request != SimTime::min()) m.first_request = o.first_request;
    m.lookahead = o.lookahead;
    return m;
}

ModelOptions keeper_options(const Scenario& s)
{
    ModelOptions k;
    k.kind = AccessorKind::lockstep;
    k.priority = std::numeric_limits<int>::min();
    k.first_request = s.end + s.dt;
    return k;
}

std::string who(const Scenario& s, std::size_t i) { return s.accessors.at(i).name; }

} // namespace

// ------------------------------------------------------------- model runs

ExpectedRun model_run(const Scenario& s, std::uint64_t schedule_seed, RepeatOrder order)
{
    GrantModel m(s.dt, s.rounding, false, order);
    enum class St { asking, waiting, holding, done };
    struct Proc {
        std::size_t spec;
        std::size_t index; // in the model
        std::size_t step = 0;
        St st = St::asking;
    };
    std::vector<Proc> procs;
    std::map<std::size_t, std::size_t> proc_of; // model index -> proc
    for (std::size_t i = 0; i < s.accessors.size(); ++i) {
        if (s.accessors[i].role != Role::steady) continue;
        const std::size_t idx = m.add(model_options(s.accessors[i].options));
        proc_of[idx] = procs.size();
        procs.push_back({i, idx});
        if (s.accessors[i].script.empty()) {
            m.deregister(idx);
            procs.back().st = St::done;
        }
    }
    m.add(keeper_options(s));

    ExpectedRun out;
    auto request = [&](Proc& p) {
        const ScriptStep& step = s.accessors[p.spec].script[p.step];
        if (!m.request(p.index, step.request)) {
            throw std::logic_error("model run: " + who(s, p.spec) + " asks for " + show(step.request) +
                                   ", which has passed (the scenario breaks its own rule)");
        }
        p.st = St::waiting;
    };
    auto release = [&](Proc& p) {
        const ScriptStep& step = s.accessors[p.spec].script[p.step];
        if (step.next) m.release(p.index, *step.next);
        else m.release(p.index);
        if (++p.step == s.accessors[p.spec].script.size()) {
            m.deregister(p.index);
            p.st = St::done;
        } else {
            p.st = St::asking;
        }
    };
    auto grant = [&](std::size_t idx, std::size_t choices) {
        Proc& p = procs[proc_of.at(idx)];
        const ModelGrant g = m.grant(idx);
        if (choices > 1) out.ambiguous = true;
        out.grants.push_back({p.spec, p.step, g.time, g.repeat});
        if (s.accessors[p.spec].options.mode == AccessMode::exclusive) out.det_hash = mix(out.det_hash, p.spec, g.time);
        out.last = g.time;
        p.st = St::holding;
    };
    // The canonical choice among grants the contract leaves open: priority, then
    // registration (only ever needed among repeats).
    auto canonical = [&](const std::vector<std::size_t>& g) { return g.front(); };

    std::mt19937_64 rng(schedule_seed);
    for (;;) {
        if (schedule_seed == 0) {
            bool acted = false;
            for (Proc& p : procs) {
                if (p.st == St::asking) {
                    request(p);
                    acted = true;
                }
            }
            if (acted) continue;
            if (m.advance()) continue;
            const auto g = m.grantable();
            if (!g.empty()) {
                grant(canonical(g), g.size());
                continue;
            }
            for (Proc& p : procs) {
                if (p.st == St::holding) {
                    release(p);
                    acted = true;
                }
            }
            if (!acted) break;
        } else {
            // Any event that may happen now, chosen at random.
            enum class Ev { ask_ev, release_ev, grant_ev, advance_ev };
            std::vector<std::pair<Ev, std::size_t>> events;
            for (std::size_t k = 0; k < procs.size(); ++k) {
                if (procs[k].st == St::asking) events.emplace_back(Ev::ask_ev, k);
                if (procs[k].st == St::holding) events.emplace_back(Ev::release_ev, k);
            }
            const auto g = m.grantable();
            for (std::size_t idx : g) events.emplace_back(Ev::grant_ev, idx);
            if (m.advance_target()) events.emplace_back(Ev::advance_ev, 0);
            if (events.empty()) break;
            const auto [ev, k] = events[std::uniform_int_distribution<std::size_t>(0, events.size() - 1)(rng)];
            switch (ev) {
            case Ev::ask_ev: request(procs[k]); break;
            case Ev::release_ev: release(procs[k]); break;
            case Ev::grant_ev: grant(k, g.size()); break;
            case Ev::advance_ev: m.advance(); break;
            }
        }
    }
    for (const Proc& p : procs) {
        if (p.st != St::done) {
            throw std::logic_error("model run stalled at " + show(m.now()) + ": " + who(s, p.spec) + " at step " +
                                   std::to_string(p.step));
        }
    }
    out.max_shared_together = m.max_shared_together();
    return out;
}

std::vector<ExpectedGrant> normalise(std::vector<ExpectedGrant> grants)
{
    std::size_t begin = 0;
    while (begin < grants.size()) {
        std::size_t end = begin;
        while (end < grants.size() && grants[end].time == grants[begin].time) ++end;
        std::vector<std::size_t> positions;
        std::vector<ExpectedGrant> repeats;
        for (std::size_t k = begin; k < end; ++k) {
            if (grants[k].repeat) {
                positions.push_back(k);
                repeats.push_back(grants[k]);
            }
        }
        std::sort(repeats.begin(), repeats.end(), [](const ExpectedGrant& a, const ExpectedGrant& b) {
            return std::tie(a.accessor, a.step) < std::tie(b.accessor, b.step);
        });
        for (std::size_t k = 0; k < positions.size(); ++k) grants[positions[k]] = repeats[k];
        begin = end;
    }
    return grants;
}

std::vector<ExpectedGrant> observed_steady(const Scenario& s, const Observation& obs)
{
    std::vector<std::pair<std::uint64_t, ExpectedGrant>> all;
    for (std::size_t a = 0; a < obs.records.size(); ++a) {
        if (s.accessors[a].role != Role::steady) continue;
        SimTime last = SimTime::min();
        for (const RequestRecord& r : obs.records[a]) {
            if (!r.granted_ok()) continue;
            all.emplace_back(r.sequence, ExpectedGrant{a, r.step, r.granted, r.granted == last});
            last = r.granted;
        }
    }
    std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<ExpectedGrant> out;
    for (auto& [seq, g] : all) out.push_back(g);
    return out;
}

std::string first_difference(const Scenario& s, const std::vector<ExpectedGrant>& expected,
                             const std::vector<ExpectedGrant>& observed)
{
    const auto e = normalise(expected);
    const auto o = normalise(observed);
    std::size_t k = 0;
    while (k < e.size() && k < o.size() && e[k] == o[k]) ++k;
    if (k == e.size() && k == o.size()) return "";
    auto line = [&](const std::vector<ExpectedGrant>& v, std::size_t i) {
        if (i >= v.size()) return std::string("(none)");
        std::ostringstream out;
        out << who(s, v[i].accessor) << " step " << v[i].step << " at " << show(v[i].time)
            << (v[i].repeat ? " (repeat)" : "");
        return out.str();
    };
    std::ostringstream out;
    out << "steady grants: first difference at #" << k << " of " << e.size() << " expected / " << o.size()
        << " observed:\n";
    const std::size_t from = k >= 3 ? k - 3 : 0;
    for (std::size_t i = from; i < k + 3 && (i < e.size() || i < o.size()); ++i) {
        out << (i == k ? "  > #" : "    #") << i << "  expected " << line(e, i) << "  |  observed " << line(o, i)
            << '\n';
    }
    return out.str();
}

std::string CheckReport::text() const
{
    std::ostringstream out;
    const std::size_t shown = std::min<std::size_t>(violations.size(), 8);
    for (std::size_t i = 0; i < shown; ++i) out << "  - " << violations[i] << '\n';
    if (violations.size() > shown) out << "  ... and " << violations.size() - shown << " more\n";
    return out.str();
}

// ------------------------------------------------------------------ check

CheckReport check_observation(const Scenario& s, const Observation& obs, const ExpectedRun& expected)
{
    CheckReport rep;
    auto fail = [&](const std::string& v) { rep.violations.push_back(v); };
    for (const std::string& e : obs.errors) fail("run: " + e);
    if (obs.probe_violations != 0) fail("an exclusive access was not alone (" + std::to_string(obs.probe_violations) + " times)");
    if (obs.step_violations != 0) fail("a step during an access, two at once or of a wrong dt (" + std::to_string(obs.step_violations) + " times)");

    const GrantModel rounding(s.dt, s.rounding);
    struct Ref {
        std::size_t accessor;
        std::size_t record;
    };
    std::map<std::uint64_t, Ref> by_seq;
    SimTime last_granted{};

    // Each record on its own.
    for (std::size_t a = 0; a < obs.records.size(); ++a) {
        const AccessorSpec& spec = s.accessors[a];
        bool prev_lockstep = spec.options.kind == AccessorKind::lockstep;
        bool prev_granted = true; // registration counts as a release
        for (std::size_t j = 0; j < obs.records[a].size(); ++j) {
            const RequestRecord& r = obs.records[a][j];
            const bool deterministic = prev_granted && prev_lockstep && !r.switched_before;
            const std::string at = spec.name + " step " + std::to_string(r.step) + " (asked " + show(r.requested) + "): ";
            const SimTime rounded = rounding.round(r.requested);
            if (r.granted_ok()) {
                if (!by_seq.emplace(r.sequence, Ref{a, j}).second) fail(at + "sequence number " + std::to_string(r.sequence) + " given twice");
                if (r.granted != rounded) fail(at + "granted at " + show(r.granted) + ", the rounding says " + show(rounded));
                if (r.granted < r.now_before) fail(at + "granted at " + show(r.granted) + " although time was already " + show(r.now_before) + " when it asked");
                if (!r.world_at_granted) fail(at + "inside the access the world or the handler was not at the granted time");
                if (r.mode != spec.options.mode) fail(at + "granted in the wrong mode");
                last_granted = std::max(last_granted, r.granted);
                prev_lockstep = r.kind_at_release == AccessorKind::lockstep;
                prev_granted = true;
            } else {
                if (r.error != errc::time_passed) fail(at + "refused with '" + r.error.message() + "'");
                else if (!(rounded < r.now_after)) {
                    // handler.now() had not passed it. Tolerated (and counted) only if
                    // time did pass it soon: a step towards a later instant had been
                    // decided when the request came (issue 10 point 4).
                    if (rounded < std::max(r.world_begun_after, r.passed_later)) ++rep.refused_during_step;
                    else fail(at + "refused with time_passed, yet time was " + show(r.now_after) + " after the refusal and had not passed it a second later (" + show(r.passed_later) + ")");
                }
                if (deterministic) fail(at + "a lockstep request at or after its declared bound was refused (" + r.error.message() + ")");
                prev_lockstep = r.kind == AccessorKind::lockstep;
                prev_granted = false;
            }
        }
    }
    // Sequence numbers: 0, 1, 2 ... with no gap (every grant recorded once).
    {
        std::uint64_t expect = 0;
        for (const auto& [seq, ref] : by_seq) {
            if (seq != expect) {
                fail("sequence numbers are not dense: " + std::to_string(expect) + " missing before " + std::to_string(seq));
                break;
            }
            ++expect;
        }
    }

    // The whole run replayed through the model in sequence order.
    GrantModel m(s.dt, s.rounding, false);
    const std::size_t n = s.accessors.size();
    std::vector<std::size_t> cursor(n, 0);        // next record of each accessor
    std::vector<bool> deterministic_next(n, false); // is that record's request known to the model already?
    auto next_is_deterministic = [&](std::size_t a, bool after_lockstep_grant) {
        const auto& recs = obs.records[a];
        return cursor[a] < recs.size() && after_lockstep_grant && !recs[cursor[a]].switched_before;
    };
    // After registration or a grant: the deterministic next request goes into
    // the model at once (the engine must wait for it anyway: it could still
    // ask); anything else is unknown until it shows in the trace.
    auto prepare = [&](std::size_t a, bool after_lockstep_grant) {
        const auto& recs = obs.records[a];
        if (cursor[a] >= recs.size()) {
            m.deregister(a);
            return;
        }
        if (next_is_deterministic(a, after_lockstep_grant)) {
            deterministic_next[a] = true;
            if (!m.request(a, recs[cursor[a]].requested)) {
                fail(s.accessors[a].name + " step " + std::to_string(recs[cursor[a]].step) +
                     ": the scenario asks a lockstep accessor for a passed time (test bug)");
            }
        } else {
            deterministic_next[a] = false;
            m.set_kind(a, AccessorKind::free); // its timing is unknown: it constrains nobody
        }
    };
    for (std::size_t a = 0; a < n; ++a) m.add(model_options(s.accessors[a].options), s.accessors[a].name);
    m.add(keeper_options(s), "keeper");
    for (std::size_t a = 0; a < n; ++a) prepare(a, s.accessors[a].options.kind == AccessorKind::lockstep);

    bool replay_ok = true;
    for (const auto& [seq, ref] : by_seq) {
        if (!replay_ok) break;
        const std::size_t a = ref.accessor;
        const auto& recs = obs.records[a];
        // Refusals before this grant: not in the total order; checked above.
        while (cursor[a] < ref.record) {
            if (deterministic_next[a] && m.pending(a)) m.withdraw(a); // refused: flagged above
            deterministic_next[a] = false;
            m.set_kind(a, AccessorKind::free);
            ++cursor[a];
        }
        const RequestRecord& r = recs[ref.record];
        const std::string at = "grant #" + std::to_string(seq) + " (" + s.accessors[a].name + " step " +
                               std::to_string(r.step) + " at " + show(r.granted) + "): ";
        if (!deterministic_next[a]) {
            if (!m.idle(a)) m.withdraw(a);
            if (!m.request(a, r.requested)) {
                fail(at + "the model's time was already " + show(m.now()) + " (a passed time granted)");
                replay_ok = false;
                break;
            }
        }
        if (r.granted < m.now()) {
            fail(at + "time went back from " + show(m.now()));
            replay_ok = false;
            break;
        }
        if (r.granted > m.now()) {
            if (!m.may_advance_to(r.granted)) {
                std::ostringstream why;
                why << at << "time moved from " << show(m.now()) << " past";
                for (std::size_t y = 0; y < n; ++y) {
                    if (y == a) continue;
                    if (const auto p = m.pending_time(y); p && *p < r.granted)
                        why << ' ' << s.accessors[y].name << "'s lockstep request at " << show(*p);
                    if (const auto b = m.bound(y); b && m.idle(y) && m.floor_to_grid(*b) < r.granted)
                        why << ' ' << s.accessors[y].name << "'s bound " << show(*b);
                }
                fail(why.str());
                replay_ok = false;
                break;
            }
            m.force_advance(r.granted);
        }
        if (!m.is_grantable(a)) {
            fail(at + m.why_not(a));
            replay_ok = false;
            break;
        }
        m.grant(a);
        m.set_kind(a, r.kind_at_release);
        if (r.next) m.release(a, *r.next);
        else m.release(a);
        ++cursor[a];
        prepare(a, r.kind_at_release == AccessorKind::lockstep);
    }
    // Every deterministic request was granted (a missing one stalls the model's replay).
    if (replay_ok) {
        for (std::size_t a = 0; a < n; ++a) {
            if (deterministic_next[a] && cursor[a] < obs.records[a].size() && obs.records[a][cursor[a]].granted_ok()) {
                fail(s.accessors[a].name + " step " + std::to_string(obs.records[a][cursor[a]].step) + " was granted but never replayed");
            }
        }
    }

    // The steady subsequence against the model's own run, and the world it wrote.
    const auto observed = observed_steady(s, obs);
    if (const std::string d = first_difference(s, expected.grants, observed); !d.empty()) fail(d);
    std::uint64_t observed_hash = 0;
    for (const ExpectedGrant& g : observed) {
        if (s.accessors[g.accessor].options.mode == AccessMode::exclusive) observed_hash = mix(observed_hash, g.accessor, g.time);
    }
    if (obs.det_hash != observed_hash) fail("the world's state does not follow the order of the sequence numbers");
    if (!expected.ambiguous && obs.det_hash != expected.det_hash) fail("the world's state differs from the model's");

    // Checkpoints: paused at the predicted instant, the grants before it done.
    for (std::size_t c = 0; c < obs.checkpoints.size(); ++c) {
        const CheckpointRecord& cp = obs.checkpoints[c];
        const std::string at = "checkpoint " + std::to_string(c) + " (run_until " + show(cp.target) + " from " + show(cp.before) + "): ";
        if (!cp.paused_in_time) {
            fail(at + "not paused within 20 s");
            continue;
        }
        GrantModel op(s.dt, s.rounding, true);
        op.force_advance(cp.before);
        op.run_until(cp.target);
        const SimTime expect_now = op.pause_target() ? *op.pause_target() : op.now();
        const SimTime p = cp.snapshot.now;
        if (p != expect_now) fail(at + "paused at " + show(p) + ", expected " + show(expect_now));
        if (cp.snapshot.state != HandlerState::paused) fail(at + "state " + std::string(to_string(cp.snapshot.state)));
        for (const auto& [seq, ref] : by_seq) {
            const SimTime t = obs.records[ref.accessor][ref.record].granted;
            if (seq < cp.snapshot.grants ? t > p : t < p) {
                fail(at + "grant #" + std::to_string(seq) + " at " + show(t) + " is on the wrong side of the pause (" +
                     std::to_string(cp.snapshot.grants) + " grants at the snapshot)");
                break;
            }
        }
        for (std::size_t a = 0; a < n; ++a) {
            std::vector<SimTime> times;
            for (const RequestRecord& r : obs.records[a]) {
                if (r.granted_ok()) times.push_back(r.granted);
            }
            std::uint64_t count = times.size(); // deregistered: all its grants came before
            for (const AccessorStatus& st : cp.snapshot.accessors) {
                if (st.name == s.accessors[a].name) count = st.grants;
            }
            for (std::size_t k = 0; k < times.size(); ++k) {
                const bool before = k < count;
                const bool wrong = before ? times[k] > p : times[k] < p;
                const bool missing = s.accessors[a].role == Role::steady && !before && times[k] < p;
                if (wrong || missing) {
                    fail(at + s.accessors[a].name + " grant " + std::to_string(k) + " at " + show(times[k]) +
                         " with " + std::to_string(count) + " grants counted at the pause");
                    break;
                }
            }
        }
    }

    // The end: the world stepped exactly to the handler's time, no further than the keeper.
    if (obs.world_steps != obs.handler_steps) fail("world stepped " + std::to_string(obs.world_steps) + " times, handler counts " + std::to_string(obs.handler_steps));
    if (SimTime{s.dt * static_cast<std::int64_t>(obs.handler_steps)} != obs.final_now) fail("steps * dt != now at the end");
    if (obs.final_now < last_granted) fail("time at the end " + show(obs.final_now) + " is before the last grant");
    if (obs.final_now > s.end + s.dt) fail("time ran past the keeper's bound: " + show(obs.final_now));
    return rep;
}

} // namespace simsync::model

#pragma once
// What the contract says a run of a scenario must look like, computed with the
// reference model (grant_model.hpp), and the check of an observed run against it.
//
// Deterministic by contract, and compared exactly:
//  - the sequence of the steady (lockstep throughout) accessors' grants: which
//    accessor, which of its requests, at which instant, in which order; only the
//    order among accessors that all had an instant already is left open (the
//    contract does not define it), and the run is then repeated to show it is
//    the same run after run;
//  - the world state those accessors write, which shows the order of the writes
//    in the world is the order of the sequence numbers;
//  - where time stands at an operator checkpoint, and which grants came before it.
// Timing-dependent by contract, and checked as "allowed":
//  - every grant of a free (or, while free, a switching) accessor: the model
//    replays the whole observed run in sequence order and accepts each grant only
//    if the contract allows it at that point (order at the instant against every
//    lockstep accessor that could still ask, time never past a lockstep bound);
//    never at a time that had passed when it asked; every refusal for a time
//    that had passed by the time it returned;
//  - exclusion and stepping (probes inside every access and every step);
//  - dense, distinct sequence numbers.

#include "model/grant_model.hpp"
#include "model/observation.hpp"
#include "model/scenario.hpp"

#include <string>
#include <vector>

namespace simsync::model {

struct ExpectedGrant {
    std::size_t accessor = 0;
    std::size_t step = 0;
    SimTime time{};
    bool repeat = false;
    friend bool operator==(const ExpectedGrant&, const ExpectedGrant&) = default;
};

struct ExpectedRun {
    std::vector<ExpectedGrant> grants; ///< the steady accessors' grants, in order
    /// Two or more accessors asked again at one instant: the contract leaves their
    /// order open.
    bool ambiguous = false;
    std::uint64_t det_hash = 0;
    std::size_t max_shared_together = 0;
    SimTime last{}; ///< time of the last grant
};

/// The steady accessors of the scenario run in the model alone (the contract
/// makes their grants independent of everyone else's). `schedule_seed` 0: every
/// accessor asks again at once and holders release when nothing else can happen
/// (shared accesses at one instant are held together); any other seed: a random
/// interleaving of grants, releases, requests and time advances, as arbitrary
/// thread timing would produce.
ExpectedRun model_run(const Scenario& scenario, std::uint64_t schedule_seed,
                      RepeatOrder order = RepeatOrder::unspecified);

/// Sorts the repeats of each instant by accessor: two sequences the contract
/// does not tell apart become equal.
std::vector<ExpectedGrant> normalise(std::vector<ExpectedGrant> grants);

/// The steady accessors' grants of an observed run, in sequence order.
std::vector<ExpectedGrant> observed_steady(const Scenario& scenario, const Observation& obs);

struct CheckReport {
    std::vector<std::string> violations;
    /// Refusals (time_passed) of a request not before handler.now() read after the
    /// refusal, where time did pass the request soon after: now() lags the instant
    /// the handler has decided to step to. Counted, not failed here;
    /// Handler.Refuse.CurrentTimeWhileAStepIsUnderWay pins it down (issue 10 point 4).
    std::size_t refused_during_step = 0;
    bool ok() const { return violations.empty(); }
    std::string text() const;
};

CheckReport check_observation(const Scenario& scenario, const Observation& obs, const ExpectedRun& expected);

/// "first difference at #k: expected ... observed ...", with the neighbours.
std::string first_difference(const Scenario& scenario, const std::vector<ExpectedGrant>& expected,
                             const std::vector<ExpectedGrant>& observed);

} // namespace simsync::model

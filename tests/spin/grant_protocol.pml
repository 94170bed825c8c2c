/*
 * The handler's wait/wake grant protocol (src/core/core.cpp), for Spin.
 * tests/spin/check.sh runs it; tests/spin/README.md explains it.
 *
 * WHAT IS MODELLED
 * Three accessors, exclusive, priority 0, registered at time 0 in the order
 * C, A, B (so at one instant C comes first, and the asynchronous request is
 * the one handed the step duty whenever it is among the earliest):
 *   A  lockstep, blocking (request_access on a thread of its own): asks for
 *      1, releases naming 2, asks for 2, releases plainly (lookahead 0).
 *   B  free, blocking, with a std::stop_token: asks for 1 (B_REQUESTS).
 *   C  asynchronous, completed on an executor (Waiting::executor): the
 *      executor's thread (proctype Exec) starts C's request for 1 and, from
 *      its completion, any next one (C_REQUESTS); free unless -DC_LOCKSTEP=1.
 *      The executor's loop may be destroyed at any moment while C has a
 *      request open (mortal, chosen at the start): jobs queued there are then
 *      destroyed on its thread, jobs posted later on the posting thread, as
 *      LoopExecutor::execute (asio.hpp) does with a loop that is gone.
 * An Operator: up to NOPS (default 2) of pause, resume, step(1),
 * revoke(A|B|C), stopping B's stop_token, cancelling C's request; then at
 * once, or once nothing else can move, the handler's destructor
 * (Core::shutdown: stop, then wait for the holders). With -DCANCELLER the
 * cancelling is a thread of its own (proctype Canceller), concurrent with
 * the operator (a larger state space: check.sh --deep).
 *
 * THE BASELINE is the protocol as src/core implements it at e824770 (with
 * issue 22's fix of defect 5: Core::duty_dropped, executor_unreachable; and
 * of defect 4: shutdown abandons a grant whose executor completion has not
 * begun), with two changes this model showed it needed (made in the code
 * since), each switched back to the old behaviour by a SEED_ switch below:
 *  1. flush_and_unlock reports (returns true) that a destroyed job's
 *     destructor ran the core's code on this thread, so request() looks at
 *     its slot again before it sleeps (SEED_NO_RECHECK);
 *  2. grant_at_now grants nothing once stopped (SEED_GRANT_AFTER_STOP).
 *
 * WHICH CODE EACH PART STANDS FOR (src/core/core.cpp unless named)
 *   proctype Blocking     a thread in Accessor::request_access, then the
 *                         Access's use and release (Access::release)
 *     request_entry       Core::request up to its loop (checks, insertion,
 *                         Waiter::reset, advance, the stop_callback)
 *     request_loop        one turn of Core::request's loop (granted / not
 *                         registered / stopped / carry the duty / cancelled,
 *                         else flush_and_unlock and Waiter::wait_until)
 *   proctype Exec         the executor's thread: C's async_request_access
 *                         (Core::start_async: start_async), the posted step
 *                         duty (Core::run_step_duty), C's completion (asio.hpp's
 *                         Granted: CompletionScope, Core::begin_completion,
 *                         then the handler), the loop's destruction
 *   proctype Operator     Core::pause, resume, step, revoke, shutdown (with
 *                         the abandoning of a queued completion); and
 *                         std::stop_source::request_stop (B's stop_callback
 *                         notifies its Waiter), an emission of C's
 *                         cancellation slot (CancelRequest: cancel_async)
 *   proctype Canceller    the last two, on a thread of its own (-DCANCELLER)
 *   ENGINE                what any thread does inside the handler:
 *     step_decision       one turn of Core::run_steps' loop (step_goal, then
 *                         a step, or stepping_ = false and grant_at_now)
 *     step_done           the same loop after World::step (relock, now_ += dt)
 *     dropped_job         the destructor of a job destroyed on this thread:
 *                         Core::duty_dropped for a step duty (deliver's
 *                         Ticket), ~Access (Core::release) for a granted
 *                         completion
 *   advance, step_goal, grant_at_now, grant, withdraw, detach (revoke=true),
 *   end_hold, add_bound, stop_locked, complete_async, wake, cancel_async: the
 *   functions of the same names; release_body: the second Core::release
 *   (release_hold up to its advance); grantable: grant_at_now's test.
 *   unlock_swap           Core::flush_and_unlock: takes wakes_ and
 *                         deliveries_ under the lock, unlocks, notifies,
 *                         delivers (Core::deliver)
 *
 * ABSTRACTIONS
 *  - Time is the step index, bounded by the scripts (requests at 1 and 2,
 *    NOPS operator steps). KEY packs (time, round, order) into a byte.
 *  - The handler's mutex is mtx. Each stretch of code it covers is one
 *    d_step/atomic: only lock-free statements of other threads (notifies,
 *    waits, the loop's destruction, a stop request) interleave between two
 *    stretches of one thread that holds it throughout (inside run_steps, in
 *    request's loop).
 *  - The Waiter is a sticky flag (notify sets it, wait consumes it, reset
 *    clears it: waiter.hpp), without deadline: a wait ends only by a notify,
 *    so a lost notify is a thread stuck for good. state_cv_ is a sticky flag
 *    too, set by every flush_and_unlock that finds state_waiters_ > 0.
 *  - Deliveries happen at the unlock, in the same step: the notifies and the
 *    posts touch nothing the lock guards and every receiver re-reads the
 *    guarded state under the lock, so delivering them later only reorders
 *    lock-free statements. grant() signals an awake blocking waiter itself,
 *    under the lock, after setting granted (Waiter::notify_if_awake): inside
 *    the same atomic stretch as the unlock here, so the same model. What does matter is modelled: a job destroyed
 *    because its loop is gone runs its destructor, which takes the lock, on
 *    the delivering thread after the unlock and before that thread goes on
 *    (ENGINE: dropped_job).
 *  - C's cancellation ticket is read when the slot is emitted: with C's one
 *    request an earlier read could only name no request or that one.
 *  - Not modelled: shared access, priorities, set_kind, deregister (revoke
 *    covers detach), registrations while running (settle), StepThread::host
 *    and run(), inline systems, try_request and deadlines, World::step
 *    throwing, events (so neither run_steps giving the duty up while
 *    subscribers run nor wait_until_paused taking it up: take_up_duty), the
 *    watchdog, hold_sequence (no Access here outlives its slot's next grant),
 *    the refusal codes (C's handler only ends on one), and an executor that
 *    is stopped but never destroyed (its jobs wait there for good; shutdown
 *    no longer waits for them).
 *
 * PROPERTIES (asserts, and Spin's end-state check)
 *  P1 no deadlock, no lost wake-up: every process ends; the Operator waits
 *     for all of them after stop (invalid end state otherwise).
 *  P2 no stall: when nothing but the Operator can move (timeout), no step
 *     duty is assigned (stepping), no step could be taken (step_goal), nothing
 *     could be granted now (grantable), no sleeping thread has been granted,
 *     refused, handed the duty or cancelled, and no answered asynchronous
 *     request waits for its completion (quiescent_check).
 *  P3 every request ends granted or refused exactly once: only a waiting,
 *     pending request is granted (grant); C's request is answered once
 *     (answer_c), its completion runs or is destroyed once (completion_ends),
 *     and at the end every request has ended (final_check).
 *  P4 time never passes a lockstep bound, a pending request or the pause
 *     limit (step_decision before each step, step_done after it); an idle
 *     registered lockstep accessor always has a bound.
 *  P5 never two steps at once, never a step during an access: no step
 *     starts while one is in flight or an access is held (step_decision),
 *     nothing is granted while a step is in flight (grant), and an accessor
 *     using its access is the core's one holder (use_world), unless revoked.
 *  P6 nothing is granted after stop (grant): handler.hpp says every waiting
 *     request then returns `stopped`.
 *  P7 (the liveness run, -DNP) no cycle without progress.
 *
 * SEEDED DEFECTS (-D switches; check.sh expects each run to FAIL)
 *  SEED_DEFECT_5          a step duty posted to a loop that is gone is
 *                         destroyed and nothing hands it back (defect 5 of
 *                         issue 22, the code at 8165b2f). P2.
 *  SEED_NO_RECHECK        flush_and_unlock returns false after a destroyed
 *                         job's destructor ran the core's code on the thread
 *                         (the code at e824770). P1/P2.
 *  SEED_NO_HANDBACK_ON_CANCEL  cancel_async withdraws without handing back
 *                         an unstarted duty. P2.
 *  SEED_GRANT_AFTER_STOP  grant_at_now grants after stop (the code at
 *                         e824770). P6.
 *  SEED_HANDBACK_LOOP     duty_dropped hands the duty back but advance does
 *                         not heed executor_unreachable: the duty is posted to
 *                         the same gone loop again, for ever. P7 only (the
 *                         safety run passes).
 * Other switches: NOPS, B_REQUESTS, C_REQUESTS (1 or 2), C_LOCKSTEP,
 * CANCELLER, NO_HIDDEN (for a breadth-first search: check.sh).
 */

#define A 0
#define B 1
#define C 2
#define NONE 255
#define INF 15

#ifndef C_LOCKSTEP
#define C_LOCKSTEP 0
#endif
#ifndef NOPS
#define NOPS 2
#endif
#ifndef B_REQUESTS
#define B_REQUESTS 1
#endif
#ifndef C_REQUESTS
#define C_REQUESTS 1
#endif

/* Slot::activity */
#define IDLE 0
#define WAITING 1
#define HOLDING 2

/* outcomes of a blocking request */
#define R_NONE 0
#define R_GRANTED 1
#define R_REFUSED 2

/* deliveries (Delivery::Kind, and for a completion whether it grants) and
 * the jobs they post to C's executor */
#define D_DUTY 1
#define D_GRANT 2
#define D_REFUSE 3

#define LOCKSTEP(s) ((s) == A || ((s) == C && C_LOCKSTEP))
#define ORDER(s) ((s) == C -> 0 : (s) + 1)
#define KEY(t, r, s) ((t) * 16 + (r) * 4 + ORDER(s))
#define KEY_TIME(k) ((k) / 16)
#define ROUND_AT(s, t) (rinst[s] == (t) -> rcount[s] : 0)
#define EFF_NOW (in_flight -> now + 1 : now)
#define THREAD(s) ((s) + 1) /* pids: init 0, A 1, B 2, Exec 3 (C's thread) */
#define CANCEL_REQ(s) ((s) == B && stop_req)
#define NAME(s) ((s) == A -> 'A' : ((s) == B -> 'B' : 'C'))
/* threads in the trails: A, B (theirs), C (the loop of C's executor), O (the
 * operator), K (the canceller, with -DCANCELLER) */
#ifdef CANCELLER
#define TNAME(p) ((p) < 4 -> NAME((p) - 1) : ((p) == 4 -> 'K' : 'O'))
#else
#define TNAME(p) ((p) < 4 -> NAME((p) - 1) : 'O')
#endif

/* ---------------------------------------------------------- Core's state */
byte mtx;                  /* Core::mutex_: 0 free, else the holder's pid */
byte now;                  /* now_, in steps */
byte limit;                /* limit_ (INF: none) */
byte target;               /* target_ (NONE: none) */
bool stopped, stepping, in_flight; /* stopped_, stepping_, step_in_flight_ */
byte stepper;              /* stepper_ (0 when no step is in flight) */
bool excl_held;            /* exclusive_held_ */
byte state_waiters;        /* state_waiters_ */
byte wakes;                /* wakes_, one bit per blocking slot */
chan dq = [4] of { byte }; /* deliveries_ */

/* Slot */
bool registered[3], revoked[3];
byte activity[3];
bool in_pend[3]; byte pkey[3];  /* in pending_, pending_key (time: request_time) */
bool in_bound[3]; byte bkey[3]; /* in bounds_, bound_key */
bool in_hold[3]; byte hkey[3];  /* in holders_, holder_key */
byte rinst[3], rcount[3];       /* round_instant, round_count */
bool granted[3], duty[3];       /* granted, step_duty */
bool waiter[3];                 /* Slot::waiter: the sticky signal */
byte creq;                      /* C's request_id (cancellation tickets) */
bool unreach;                   /* C's executor_unreachable */
bool c_queued, c_abandoned;     /* C's completion_queued, completion_abandoned */

/* the world outside the core */
bool state_sig;            /* state_cv_ notified (the Operator is its only waiter) */
bool stop_req;             /* B's stop_source */
bool cb_on;                /* B's stop_callback registered */
bool gone;                 /* C's executor (its event loop) destroyed */
chan execq = [4] of { byte }; /* jobs posted to C's executor */

/* ghosts, for the properties */
bool sleeping[3];          /* blocked in Waiter::wait_until */
bool c_open;               /* C started a request whose completion has not run or been destroyed */
bool c_answered;           /* ... and the core has answered it */
bool c_done;               /* C's script is over */
byte nfinished;

/* scratch, only inside one d_step (booleans as bytes: Spin cannot hide a
 * bit); not hidden for a breadth-first search (-DNO_HIDDEN), which needs
 * every variable in the state */
#ifdef NO_HIDDEN
#define SCRATCH
#else
#define SCRATCH hidden
#endif
SCRATCH byte mp, mb, mh, goal, k_, xk, gr, was_waiting, held, self_, who;

/* --------------------------------------------------------------- the sets */
inline min_pending() {
  mp = NONE;
  if :: in_pend[0] -> mp = 0 :: else -> skip fi;
  if :: in_pend[1] && (mp == NONE || pkey[1] < pkey[mp]) -> mp = 1 :: else -> skip fi;
  if :: in_pend[2] && (mp == NONE || pkey[2] < pkey[mp]) -> mp = 2 :: else -> skip fi
}
inline min_bound() {
  mb = NONE;
  if :: in_bound[0] -> mb = 0 :: else -> skip fi;
  if :: in_bound[1] && (mb == NONE || bkey[1] < bkey[mb]) -> mb = 1 :: else -> skip fi;
  if :: in_bound[2] && (mb == NONE || bkey[2] < bkey[mb]) -> mb = 2 :: else -> skip fi
}
inline min_holder() {
  mh = NONE;
  if :: in_hold[0] -> mh = 0 :: else -> skip fi;
  if :: in_hold[1] && (mh == NONE || hkey[1] < hkey[mh]) -> mh = 1 :: else -> skip fi;
  if :: in_hold[2] && (mh == NONE || hkey[2] < hkey[mh]) -> mh = 2 :: else -> skip fi
}

inline add_bound(s, t) {
  assert(t >= now);
  bkey[s] = KEY(t, ROUND_AT(s, t), s);
  in_bound[s] = true
}

inline end_hold(s) {
  in_hold[s] = false;
  hkey[s] = 0;
  excl_held = false;
  activity[s] = IDLE
}

inline wake(s) {
  if
  :: s != C && THREAD(s) != _pid -> wakes = wakes | (1 << s)
  :: else -> skip /* the calling thread's own slot: it looks at its flags before it sleeps */
  fi
}

/* C's request is answered (granted or refused) by the core: once. */
inline answer_c() {
  assert(c_open && !c_answered);
  c_answered = true
}
/* C's completion runs, or is destroyed unrun: once. */
inline completion_ends() {
  assert(c_open && c_answered);
  c_open = false
}

inline complete_async() {
  answer_c();
  assert(nfull(dq));
  dq!D_REFUSE
}

/* ------------------------------------------------------- the grant engine */
/* gr: the earliest pending request (mp) may be granted now */
inline grantable() {
  gr = false;
  if
  :: !in_flight ->
     min_pending();
     if
     :: mp != NONE && KEY_TIME(pkey[mp]) == now && !excl_held ->
        min_bound();
        min_holder();
        gr = (mb == NONE || bkey[mb] > pkey[mp]) && (mh == NONE || hkey[mh] > pkey[mp])
     :: else -> skip
     fi
  :: else -> skip
  fi
}

inline grant(s) {
  printf("MSC: grant %c at %d\n", NAME(s), now);
  assert(!in_flight && !excl_held); /* P5 */
  assert(activity[s] == WAITING && in_pend[s] && KEY_TIME(pkey[s]) == now); /* P3 */
  assert(!stopped); /* P6 */
  in_pend[s] = false;
  pkey[s] = 0;
  if
  :: rinst[s] == now -> rcount[s]++
  :: else -> rinst[s] = now; rcount[s] = 1
  fi;
  assert(rcount[s] <= 3);
  excl_held = true;
  if
  :: LOCKSTEP(s) -> hkey[s] = KEY(now, rcount[s], s); in_hold[s] = true
  :: else -> skip
  fi;
  activity[s] = HOLDING;
  if
  :: s == C ->
     answer_c();
     c_queued = true;
     c_abandoned = false;
     assert(nfull(dq));
     dq!D_GRANT
  :: else -> granted[s] = true; wake(s)
  fi
}

inline grant_at_now() {
#ifdef SEED_GRANT_AFTER_STOP
  grantable();
#else
  gr = false;
  if :: !stopped -> grantable() :: else -> skip fi;
#endif
  if :: gr -> grant(mp) :: else -> skip fi
}

inline step_goal() {
  goal = NONE;
  if
  :: !stopped && !excl_held && !in_flight ->
     min_pending();
     if
     :: mp != NONE && KEY_TIME(pkey[mp]) == now -> skip /* grant here first */
     :: else ->
        if :: mp != NONE -> goal = KEY_TIME(pkey[mp]) :: else -> skip fi;
        if :: target != NONE && target < goal -> goal = target :: else -> skip fi;
        if
        :: goal != NONE ->
           if :: limit < goal -> goal = limit :: else -> skip fi;
           min_bound();
           if :: mb != NONE && KEY_TIME(bkey[mb]) < goal -> goal = KEY_TIME(bkey[mb]) :: else -> skip fi;
           if :: goal <= now -> goal = NONE :: else -> skip fi
        :: else -> skip
        fi
     fi
  :: else -> skip
  fi
}

/* Sets must_step when the calling thread is to run the steps itself: its
 * own request is next, or only a target remains, or the next request's
 * executor dropped a duty before (executor_unreachable). */
#ifdef SEED_HANDBACK_LOOP
#define UNREACHABLE_STEPS_HERE false
#else
#define UNREACHABLE_STEPS_HERE unreach
#endif
inline advance(self) {
  if
  :: !stopped ->
     grant_at_now();
     step_goal();
     if
     :: !stepping && goal != NONE ->
        stepping = true;
        min_pending();
        if
        :: mp != NONE && mp != self && !(mp == C && UNREACHABLE_STEPS_HERE) ->
           printf("MSC: step duty to %c\n", NAME(mp));
           duty[mp] = true;
           if
           :: mp == C -> assert(nfull(dq)); dq!D_DUTY /* posted to its executor */
           :: else -> wake(mp)
           fi
        :: else -> printf("MSC: thread %c steps itself\n", TNAME(_pid)); must_step = true
        fi
     :: else -> skip
     fi
  :: else -> skip
  fi
}

inline withdraw(s) {
  if
  :: activity[s] == WAITING ->
     k_ = KEY_TIME(pkey[s]); /* request_time */
     in_pend[s] = false;
     pkey[s] = 0;
     activity[s] = IDLE;
     if
     :: LOCKSTEP(s) && !stopped && registered[s] ->
        if :: EFF_NOW > k_ -> k_ = EFF_NOW :: else -> skip fi;
        add_bound(s, k_)
     :: else -> skip
     fi
  :: else -> skip
  fi
}

inline detach(s) {
  registered[s] = false;
  in_pend[s] = false; in_bound[s] = false; in_hold[s] = false; /* remove_from_sets */
  pkey[s] = 0; bkey[s] = 0; hkey[s] = 0;
  if
  :: activity[s] == HOLDING -> revoked[s] = true; end_hold(s)
  :: else -> skip
  fi;
  was_waiting = (activity[s] == WAITING);
  if
  :: was_waiting && duty[s] -> duty[s] = false; stepping = false /* hand it back */
  :: else -> skip
  fi;
  activity[s] = IDLE;
  if
  :: was_waiting && s == C -> complete_async() /* not_registered */
  :: else -> wake(s)
  fi
}

inline stop_locked() {
  if
  :: !stopped ->
     stopped = true;
     limit = EFF_NOW;
     target = NONE;
     if :: in_pend[A] -> wake(A) :: else -> skip fi;
     if :: in_pend[B] -> wake(B) :: else -> skip fi;
     if
     :: in_pend[C] ->
        if :: duty[C] -> duty[C] = false; stepping = false :: else -> skip fi;
        in_pend[C] = false;
        pkey[C] = 0;
        activity[C] = IDLE;
        complete_async() /* stopped */
     :: else -> skip
     fi;
     in_bound[0] = false; in_bound[1] = false; in_bound[2] = false;
     bkey[0] = 0; bkey[1] = 0; bkey[2] = 0
  :: else -> skip
  fi
}

/* the second Core::release (nx: the next request's time, or NONE), up to
 * its advance(lock, nullptr), which the caller makes if held (so that each
 * thread's code has few copies of advance) */
inline release_hold(s, nx) {
  held = (activity[s] == HOLDING);
  if
  :: held ->
     end_hold(s);
     if
     :: LOCKSTEP(s) && !stopped && registered[s] ->
        if :: nx == NONE -> k_ = now :: else -> k_ = nx fi; /* lookahead 0 */
        if :: k_ < now -> k_ = now :: else -> skip fi;
        add_bound(s, k_)
     :: else -> skip
     fi
  :: else -> skip /* revoked or already released */
  fi
}
#define release_body(s, nx) release_hold(s, nx); if :: held -> advance(NONE) :: else -> skip fi

/* ------------------------------------------------------- a thread's engine
 * Every thread is one event loop over its own program counter pc. What the
 * C++ does on a thread inside the handler's functions the same way wherever
 * it is called from (a run of steps, the destructor of a job dropped there)
 * is in ENGINE, whose options come first; the thread's own next action (pc)
 * is taken only when its engine is idle. The thread-local state: */
#define THREAD_LOCALS \
  bool must_step;    /* advance() asked this thread to run the steps */ \
  bool decide;       /* inside run_steps */ \
  bool stepping_now; /* ... with its World::step in flight */ \
  byte cont;         /* after run_steps: K_LOCKED or K_UNLOCK */ \
  byte ndrop_duty, ndrop_grant; /* jobs destroyed here, destructors still to run */ \
  bool ran           /* flush_and_unlock's result: it ran code that took the lock */

#define K_LOCKED 1 /* the caller goes on under the lock (request's loop, carry_duty) */
#define K_UNLOCK 2 /* the caller's critical section ends with the run of steps */

#define IDLE_ENGINE (!decide && !stepping_now && ndrop_duty == 0 && ndrop_grant == 0)

/* Core::flush_and_unlock: takes wakes_ and deliveries_, unlocks, notifies,
 * delivers (Core::deliver). A delivery posts to C's executor
 * (AsioCompletion::complete, the duty's poster), or, once its loop is gone,
 * the job is destroyed here: its destructor runs next (dropped_job). */
inline unlock_swap() {
  assert(mtx == _pid);
  if :: wakes & 1 -> waiter[A] = true :: else -> skip fi;
  if :: wakes & 2 -> waiter[B] = true :: else -> skip fi;
  wakes = 0;
  if :: state_waiters > 0 -> state_sig = true :: else -> skip fi;
  do
  :: dq?xk ->
     if
     :: !gone -> assert(nfull(execq)); execq!xk
     :: gone && xk == D_DUTY ->
        /* inside run_steps this thread owns stepping_: no duty was handed out */
        assert(!decide);
        printf("MSC: thread %c: the step duty's job is destroyed (C's loop is gone)\n", TNAME(_pid));
#ifndef SEED_DEFECT_5
        ndrop_duty++
#else
        skip /* the job, and the duty with it, is gone: stepping_ stays true */
#endif
     :: gone && xk == D_GRANT ->
        assert(!decide); /* a holder stops the stepping: no grant precedes a step */
        printf("MSC: thread %c: C's granted completion is destroyed (C's loop is gone)\n", TNAME(_pid));
        completion_ends();
        ndrop_grant++ /* the Access in it is destroyed: ~Access releases */
     :: gone && xk == D_REFUSE -> completion_ends()
     fi
  :: empty(dq) -> break
  od;
  xk = 0;
  mtx = 0
}

/* One turn of Core::run_steps' loop, under the lock: a step (unlock; the
 * World::step; relock: step_done), or the end of the run (stepping_ = false,
 * grant_at_now, then the caller's continuation). */
inline step_decision() {
  assert(mtx == _pid && stepping && !in_flight);
  step_goal();
  if
  :: goal != NONE ->
     /* P4, P5: the step from now to now + 1 */
     assert(!excl_held);
     assert(now + 1 <= limit);
     assert(!in_bound[0] || now + 1 <= KEY_TIME(bkey[0]));
     assert(!in_bound[1] || now + 1 <= KEY_TIME(bkey[1]));
     assert(!in_bound[2] || now + 1 <= KEY_TIME(bkey[2]));
     assert(!in_pend[0] || now + 1 <= KEY_TIME(pkey[0]));
     assert(!in_pend[1] || now + 1 <= KEY_TIME(pkey[1]));
     assert(!in_pend[2] || now + 1 <= KEY_TIME(pkey[2]));
     /* a registered idle lockstep accessor holds time at a bound */
     assert(!(registered[A] && activity[A] == IDLE) || in_bound[A]);
     assert(!(C_LOCKSTEP && registered[C] && activity[C] == IDLE) || in_bound[C]);
     printf("MSC: thread %c steps %d -> %d\n", TNAME(_pid), now, now + 1);
     in_flight = true;
     stepper = _pid;
     unlock_swap(); /* flush_and_unlock(lock, false) */
     stepping_now = true
  :: else ->
     stepping = false;
     grant_at_now();
     decide = false;
     if :: cont == K_UNLOCK -> unlock_swap() :: else -> skip fi;
     cont = 0
  fi
}

/* After advance(): run the steps here, or end the section (k). */
inline after_advance(k) {
  if
  :: must_step -> must_step = false; decide = true; cont = k /* ENGINE: step_decision */
  :: !must_step && k == K_UNLOCK -> unlock_swap()
  :: else -> skip
  fi
}

/* After World::step: relock, count the step. */
inline step_done() {
  mtx = _pid;
  in_flight = false;
  stepper = 0;
  stepping_now = false;
  now++;
  assert(now <= limit);
  assert(!in_bound[0] || now <= KEY_TIME(bkey[0]));
  assert(!in_bound[1] || now <= KEY_TIME(bkey[1]));
  assert(!in_bound[2] || now <= KEY_TIME(bkey[2]));
  assert(!in_pend[0] || now <= KEY_TIME(pkey[0]));
  assert(!in_pend[1] || now <= KEY_TIME(pkey[1]));
  assert(!in_pend[2] || now <= KEY_TIME(pkey[2]));
  if :: target != NONE && now >= target -> target = NONE :: else -> skip fi
}

/* The destructor of a job destroyed on this thread, under the lock:
 *  - a step duty: Core::duty_dropped (the fix of defect 5) hands the duty
 *    back and marks the request's executor unreachable, so that advance
 *    steps here rather than post it to the same gone loop again;
 *  - a granted completion: ~Access, that is Core::release.
 * It took the lock on this thread, so flush_and_unlock must say so (ran):
 * a thread about to sleep in request() would otherwise miss what it did to
 * its own slot (wake() skips the calling thread). */
inline dropped_job() {
  mtx = _pid;
  if
  :: ndrop_duty > 0 ->
     ndrop_duty--;
     held = (duty[C] && activity[C] == WAITING); /* else withdrawn, or handed back meanwhile */
     if
     :: held ->
        printf("MSC: thread %c: the destroyed duty's destructor hands it back\n", TNAME(_pid));
        duty[C] = false;
        unreach = true;
        stepping = false
     :: else -> skip
     fi;
     self_ = NONE
  :: else ->
     ndrop_grant--;
     printf("MSC: thread %c: ~Access releases C\n", TNAME(_pid));
     release_hold(C, NONE);
     self_ = NONE
  fi;
  if :: held -> advance(self_) :: else -> skip fi;
  self_ = 0;
#ifndef SEED_NO_RECHECK
  ran = true;
#endif
  after_advance(K_UNLOCK)
}

#define ENGINE \
  :: d_step { decide && !stepping_now && mtx == _pid -> step_decision() } \
  :: d_step { stepping_now && mtx == 0 -> step_done(); step_decision() } \
  :: d_step { mtx == 0 && !decide && (ndrop_duty > 0 || ndrop_grant > 0) -> dropped_job() }

/* P5 for the user: while an access is held (and not revoked), the core
 * counts it as the one exclusive holder and no step is in flight. */
inline use_world(s) {
  assert(revoked[s] || (activity[s] == HOLDING && excl_held && !in_flight))
}

/* ------------------------------------------------- blocking accessors A, B */
#define P_REQ 1   /* Core::request: entry */
#define P_LOOP 2  /* Core::request: the loop (lock held) */
#define P_SLEEP 3 /* Waiter::wait_until, then relock and loop */
#define P_REL 4   /* use the world, Access::release */
#define P_END 5
#define REQUESTS(s) ((s) == A -> 2 : B_REQUESTS)

/* Core::request up to its loop; t: the (rounded) time asked for */
inline request_entry(s, t) {
  res = R_NONE;
  if
  :: !registered[s] -> res = R_REFUSED /* not_registered */
  :: registered[s] && stopped -> res = R_REFUSED /* stopped */
  :: registered[s] && !stopped && CANCEL_REQ(s) -> res = R_REFUSED /* cancelled */
  :: registered[s] && !stopped && !CANCEL_REQ(s) && t < EFF_NOW -> res = R_REFUSED /* time_passed */
  :: else ->
     printf("MSC: %c asks for %d (now %d)\n", NAME(s), t, now);
     in_bound[s] = false;
     bkey[s] = 0;
     activity[s] = WAITING;
     granted[s] = false;
     duty[s] = false;
     pkey[s] = KEY(t, ROUND_AT(s, t), s);
     in_pend[s] = true;
     waiter[s] = false; /* Waiter::reset */
     advance(s);
     /* the stop_callback (it runs at once if stop was requested already) */
     if
     :: s == B -> cb_on = true; if :: stop_req -> waiter[B] = true :: else -> skip fi
     :: else -> skip
     fi
  fi;
  if
  :: res == R_NONE -> pc = P_LOOP; after_advance(K_LOCKED) /* the loop follows under the lock */
  :: else ->
     printf("MSC: %c's request for %d is refused at once\n", NAME(s), t);
     res = R_NONE; pc = P_END; unlock_swap() /* refused: the accessor ends */
  fi
}

/* One turn of Core::request's loop, lock held. */
inline request_loop(s) {
  if
  :: granted[s] -> res = R_GRANTED
  :: !granted[s] && !registered[s] -> res = R_REFUSED /* not_registered */
  :: !granted[s] && registered[s] && stopped -> withdraw(s); res = R_REFUSED /* stopped */
  :: !granted[s] && registered[s] && !stopped && duty[s] && !CANCEL_REQ(s) ->
     duty[s] = false; /* carry the duty: run_steps, then look again */
     decide = true;
     cont = K_LOCKED
  :: !granted[s] && registered[s] && !stopped && CANCEL_REQ(s) ->
     if :: duty[s] -> duty[s] = false; stepping = false :: else -> skip fi; /* hand it back */
     withdraw(s);
     advance(NONE);
     res = R_REFUSED /* cancelled */
  :: else -> ran = false; pc = P_SLEEP; unlock_swap() /* flush_and_unlock, then sleep */
  fi;
  if
  :: res == R_NONE -> skip
  :: else ->
     if
     :: res == R_GRANTED -> printf("MSC: %c's request returns its access\n", NAME(s))
     :: else -> printf("MSC: %c's request returns a refusal\n", NAME(s))
     fi;
     if :: s == B -> cb_on = false :: else -> skip fi;
     if :: res == R_GRANTED -> pc = P_REL :: else -> pc = P_END fi;
     res = R_NONE;
     granted[s] = false; /* dead from here on */
     duty[s] = false;
     after_advance(K_UNLOCK)
  fi
}

proctype Blocking(byte s) {
  THREAD_LOCALS;
  byte pc = P_REQ, i, res;

  do
  ENGINE
  :: d_step {
       IDLE_ENGINE && ((pc == P_REQ && mtx == 0) || (pc == P_LOOP && mtx == _pid)) ->
       if :: pc == P_REQ -> mtx = _pid; request_entry(s, i + 1) :: else -> skip fi;
       /* the loop's first turn is under the same lock, unless this thread steps first */
       if :: pc == P_LOOP && !decide -> request_loop(s) :: else -> skip fi
     }
  :: atomic {
       IDLE_ENGINE && pc == P_SLEEP ->
       if
       :: ran -> ran = false /* flush_and_unlock returned true: look again */
       :: else ->
          printf("MSC: %c sleeps\n", NAME(s));
          sleeping[s] = true;
          waiter[s]; /* blocks here (the atomic yields) until notified */
          printf("MSC: %c wakes\n", NAME(s));
          waiter[s] = false;
          sleeping[s] = false
       fi;
       mtx == 0; /* relock */
       mtx = _pid;
       pc = P_LOOP
     }
  :: d_step {
       IDLE_ENGINE && pc == P_REL && mtx == 0 ->
       use_world(s);
       printf("MSC: %c releases\n", NAME(s));
       mtx = _pid;
       /* A releases naming its next request (2) the first time, then plainly */
       if :: LOCKSTEP(s) && i == 0 -> release_body(s, 2) :: else -> release_body(s, NONE) fi;
       i++;
       if :: i < REQUESTS(s) -> pc = P_REQ :: else -> pc = P_END fi;
       after_advance(K_UNLOCK)
     }
  :: IDLE_ENGINE && pc == P_END -> break
  od;
  nfinished++
}

/* --------------------------------------------------- C, on its executor */
#define X_START 1 /* Core::start_async for time i */
#define X_IDLE 2  /* the loop waits for a job */
#define X_CARRY 3 /* Core::carry_duty after its run_steps (lock held) */
#define X_END 4
#define X_RUN 5   /* C's completion handler, granted, after begin_completion */

inline start_async(t) {
  assert(!c_open);
  c_open = true;
  c_answered = false;
  creq++;
  if
  :: !registered[C] -> printf("MSC: C's request is refused at once\n"); complete_async() /* not_registered */
  :: registered[C] && stopped -> complete_async() /* stopped */
  :: registered[C] && !stopped && t < EFF_NOW -> complete_async() /* time_passed */
  :: else ->
     printf("MSC: C asks for %d (now %d)\n", t, now);
     in_bound[C] = false;
     bkey[C] = 0;
     activity[C] = WAITING;
     duty[C] = false;
     unreach = false;
     pkey[C] = KEY(t, ROUND_AT(C, t), C);
     in_pend[C] = true;
     advance(C) /* the initiating thread steps if C is next */
  fi;
  after_advance(K_UNLOCK)
}

proctype Exec() {
  THREAD_LOCALS;
  byte pc = X_START, i = 1, jk;
  bool mortal;

  if :: mortal = true :: mortal = false fi;
  do
  ENGINE
  :: d_step { IDLE_ENGINE && pc == X_START && mtx == 0 -> mtx = _pid; pc = X_IDLE; start_async(i) }
  :: d_step {
       IDLE_ENGINE && pc == X_IDLE && execq?[D_DUTY] && mtx == 0 ->
       /* the job: Core::carry_duty */
       execq?jk;
       jk = 0;
       mtx = _pid;
       if
       :: duty[C] && activity[C] == WAITING ->
          printf("MSC: C's loop carries the step duty\n");
          duty[C] = false;
          pc = X_CARRY;
          decide = true;
          cont = K_LOCKED
       :: else ->
          printf("MSC: C's loop runs the step duty's job: nothing to carry\n");
          unlock_swap() /* withdrawn, or handed back meanwhile */
       fi
     }
  :: d_step {
       IDLE_ENGINE && pc == X_CARRY && mtx == _pid ->
       pc = X_IDLE;
       advance(NONE);
       after_advance(K_UNLOCK)
     }
  :: d_step {
       IDLE_ENGINE && pc == X_IDLE && execq?[D_GRANT] && (revoked[C] || mtx == 0) ->
       /* the job (asio.hpp's Granted): CompletionScope, Core::begin_completion */
       execq?jk;
       jk = 0;
       if
       :: revoked[C] -> pc = X_RUN /* the scope does nothing */
       :: !revoked[C] && c_abandoned ->
          /* shutdown ended the hold while the job was queued: `stopped` */
          printf("MSC: C's completion runs: abandoned by the handler's destructor\n");
          completion_ends();
          c_done = true
       :: else -> c_queued = false; pc = X_RUN
       fi
       /* (begin_completion unlocks without a flush: it queued nothing) */
     }
  :: d_step {
       IDLE_ENGINE && pc == X_RUN && mtx == 0 ->
       /* C's completion handler uses the world, releases, asks again */
       printf("MSC: C's completion runs: granted; C releases\n");
       completion_ends();
       if :: !revoked[C] -> use_world(C) :: else -> skip fi; /* a revoked Access is false */
       mtx = _pid;
       if :: C_LOCKSTEP && i == 1 -> release_body(C, 2) :: else -> release_body(C, NONE) fi;
       if :: i < C_REQUESTS -> i++; pc = X_START :: else -> c_done = true; pc = X_IDLE fi;
       after_advance(K_UNLOCK)
     }
  :: d_step {
       IDLE_ENGINE && pc == X_IDLE && execq?[D_REFUSE] ->
       /* the job: C's completion handler, refused: C ends */
       printf("MSC: C's completion runs: refused\n");
       execq?jk;
       jk = 0;
       completion_ends();
       c_done = true
     }
  :: d_step {
       IDLE_ENGINE && pc == X_IDLE && mortal && (c_open || nempty(execq)) && mtx != _pid ->
       /* the loop is destroyed: the jobs queued there are destroyed on this
        * thread, as if delivered again to a loop that is gone */
       printf("MSC: C's loop is destroyed\n");
       gone = true;
       do
       :: execq?jk ->
          if
          :: jk == D_DUTY -> ndrop_duty++
          :: jk == D_GRANT -> completion_ends(); ndrop_grant++
          :: jk == D_REFUSE -> completion_ends()
          fi
       :: empty(execq) -> break
       od;
       jk = 0;
       pc = X_END
     }
  :: IDLE_ENGINE && pc == X_IDLE && c_done && empty(execq) -> break
  :: IDLE_ENGINE && pc == X_END -> break
  od;
  nfinished++
}

/* ------------------------------------------------------------ cancellation */
/* Core::cancel_async up to its advance, which the caller makes if held, for
 * the request C has open: the ticket is read when the slot is emitted (with
 * one request of C's, an earlier read could only name no request or that
 * one). */
inline cancel_async() {
  held = (activity[C] == WAITING);
  if
  :: held ->
#ifndef SEED_NO_HANDBACK_ON_CANCEL
     if :: duty[C] -> duty[C] = false; stepping = false :: else -> skip fi;
#endif
     withdraw(C);
     complete_async() /* cancelled */
  :: else -> skip
  fi
}

#define K_STOP 1
#define K_CANCEL 3
#define K_END 4

proctype Canceller() {
  THREAD_LOCALS;
  byte pc;

  if :: pc = K_STOP :: pc = K_CANCEL fi;
  do
  ENGINE
  :: atomic {
       pc == K_STOP ->
       /* std::stop_source::request_stop; the stop_callback notifies B's Waiter */
       printf("MSC: B's stop_token is stopped\n");
       stop_req = true;
       if :: cb_on -> waiter[B] = true :: else -> skip fi;
       pc = K_END
     }
  :: d_step {
       IDLE_ENGINE && pc == K_CANCEL && mtx == 0 ->
       printf("MSC: C's request is cancelled\n");
       mtx = _pid;
       cancel_async();
       if :: held -> advance(NONE) :: else -> skip fi;
       pc = K_END;
       after_advance(K_UNLOCK)
     }
  :: IDLE_ENGINE && pc == K_END -> break
  od;
  nfinished++
}

/* ------------------------------------------------------------- operator */
#define O_CHOOSE 1
#define O_ACT 2       /* resume, step(1) or revoke(x), by op */
#define O_PAUSE 3
#define O_PAUSE_CV 4  /* pause() waits on state_cv_ for the step in flight */
#define O_QUIET 5
#define O_STOP 6      /* Core::shutdown: stop_locked, flush */
#define O_HOLDERS 7   /* Core::shutdown: wait for the holders */
#define O_HOLDERS_CV 8
#define O_FINAL 9

#define OP_RESUME 1
#define OP_STEP 2
#define OP_REVOKE_A 3
#define OP_REVOKE_B 4
#define OP_REVOKE_C 5
#define OP_STOP_B 6
#define OP_CANCEL_C 7

#define OTHERS_ACTIVE (in_flight || activity[0] == HOLDING || activity[1] == HOLDING || \
                       activity[2] == HOLDING)

/* P2, when nothing but the operator can move */
inline quiescent_check() {
  assert(mtx == 0 && !in_flight);
  assert(!stepping);              /* a step duty that nobody carries */
  step_goal();
  assert(goal == NONE);           /* time could move, and nobody moves it */
  grantable();
  assert(!gr);                    /* a request could be granted now, and is not */
  assert(!sleeping[A] || (in_pend[A] && !granted[A] && !duty[A] && registered[A]));
  assert(!sleeping[B] || (in_pend[B] && !granted[B] && !duty[B] && registered[B] && !stop_req));
  assert(!(c_open && c_answered)) /* an answer whose completion never runs */
}

/* P1, P3, once everything ended */
inline final_check() {
  assert(!c_open);
  assert(!in_pend[0] && !in_pend[1] && !in_pend[2]);
  assert(!in_flight && !excl_held && mtx == 0);
  assert(wakes == 0 && empty(dq))
}

proctype Operator() {
  THREAD_LOCALS;
  byte pc = O_CHOOSE, op, ops;

  do
  ENGINE
  :: IDLE_ENGINE && pc == O_CHOOSE && ops < NOPS ->
     ops++;
     if
     :: pc = O_PAUSE
     :: op = OP_RESUME; pc = O_ACT
     :: op = OP_STEP; pc = O_ACT
     :: op = OP_REVOKE_A; pc = O_ACT
     :: op = OP_REVOKE_B; pc = O_ACT
     :: op = OP_REVOKE_C; pc = O_ACT
#ifndef CANCELLER
     :: op = OP_STOP_B; pc = O_ACT
     :: op = OP_CANCEL_C; pc = O_ACT
#endif
     fi
  :: IDLE_ENGINE && pc == O_CHOOSE ->
     if :: pc = O_QUIET :: pc = O_STOP fi /* shutdown once all stands still, or now */
  :: d_step {
       IDLE_ENGINE && pc == O_ACT && op != OP_STOP_B && mtx == 0 ->
       mtx = _pid;
       if
       :: op == OP_RESUME -> printf("MSC: operator: resume\n"); limit = INF; target = NONE; held = true
       :: op == OP_STEP ->
          printf("MSC: operator: step(1)\n");
          held = true;
          if
          :: limit == INF -> k_ = EFF_NOW
          :: else -> k_ = limit; if :: EFF_NOW > k_ -> k_ = EFF_NOW :: else -> skip fi
          fi;
          limit = k_ + 1;
          target = limit
       :: op >= OP_REVOKE_A && op <= OP_REVOKE_C ->
          who = op - OP_REVOKE_A; /* the slot */
          printf("MSC: operator: revoke %c\n", NAME(who));
          held = registered[who]; /* an unknown name: Core::revoke returns at once */
          if :: held -> detach(who) :: else -> skip fi
       :: op == OP_CANCEL_C -> printf("MSC: operator: cancels C's request\n"); cancel_async()
       fi;
       if :: held -> advance(NONE) :: else -> skip fi;
       op = 0;
       pc = O_CHOOSE;
       after_advance(K_UNLOCK)
     }
  :: atomic {
       IDLE_ENGINE && pc == O_ACT && op == OP_STOP_B ->
       /* std::stop_source::request_stop: no lock; the stop_callback notifies
        * B's Waiter */
       printf("MSC: operator: stops B's stop_token\n");
       stop_req = true;
       if :: cb_on -> waiter[B] = true :: else -> skip fi;
       op = 0;
       pc = O_CHOOSE
     }
  :: d_step {
       IDLE_ENGINE && pc == O_PAUSE && mtx == 0 ->
       /* Core::pause: returns once a step in flight has ended */
       printf("MSC: operator: pause\n");
       mtx = _pid;
       limit = EFF_NOW;
       target = NONE;
       if
       :: in_flight && stepper != _pid ->
          assert(wakes == 0 && empty(dq)); /* a wait unlocks without a flush */
          state_waiters++;
          mtx = 0;
          pc = O_PAUSE_CV
       :: else -> pc = O_CHOOSE; unlock_swap()
       fi
     }
  :: atomic {
       IDLE_ENGINE && pc == O_PAUSE_CV && state_sig ->
       state_sig = false;
       mtx == 0;
       mtx = _pid;
       if
       :: in_flight -> mtx = 0
       :: else -> state_waiters--; pc = O_CHOOSE; unlock_swap()
       fi
     }
  :: atomic {
       IDLE_ENGINE && pc == O_QUIET && timeout ->
       printf("MSC: all but the operator stand still (now %d)\n", now);
       quiescent_check();
       pc = O_STOP
     }
  :: d_step {
       IDLE_ENGINE && pc == O_STOP && mtx == 0 ->
       printf("MSC: operator: stop (the handler's destructor)\n");
       mtx = _pid;
       stop_locked();
       /* a grant whose executor completion has not begun: its hold ends */
       if
       :: activity[C] == HOLDING && c_queued -> c_queued = false; c_abandoned = true; end_hold(C)
       :: else -> skip
       fi;
       pc = O_HOLDERS;
       unlock_swap()
     }
  :: d_step {
       IDLE_ENGINE && pc == O_HOLDERS && mtx == 0 ->
       mtx = _pid;
       assert(wakes == 0 && empty(dq));
       if
       :: OTHERS_ACTIVE -> state_waiters++; pc = O_HOLDERS_CV
       :: else -> pc = O_FINAL
       fi;
       mtx = 0 /* a wait, or shutdown's return: no flush */
     }
  :: atomic {
       IDLE_ENGINE && pc == O_HOLDERS_CV && state_sig ->
       state_sig = false;
       mtx == 0;
       mtx = _pid;
       if
       :: OTHERS_ACTIVE -> skip
       :: else -> state_waiters--; pc = O_FINAL
       fi;
       mtx = 0
     }
  :: atomic { IDLE_ENGINE && pc == O_FINAL && nfinished == 4 -> final_check(); break }
  od
}

init {
  atomic {
    limit = INF;
    target = NONE;
    rinst[0] = NONE; rinst[1] = NONE; rinst[2] = NONE;
    registered[0] = true; registered[1] = true; registered[2] = true;
    /* a lockstep accessor registered without a first request holds time at now */
    bkey[A] = KEY(0, 0, A); in_bound[A] = true;
    if :: C_LOCKSTEP -> bkey[C] = KEY(0, 0, C); in_bound[C] = true :: else -> skip fi;
    run Blocking(A);
    run Blocking(B);
    run Exec();
#ifdef CANCELLER
    run Canceller();
#else
    nfinished++; /* the Operator cancels */
#endif
    run Operator()
  }
}

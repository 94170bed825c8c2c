"""The grant contract driven from Python: threads, asyncio tasks and inline systems mixed
in one handler, compared with the C++ reference model's sequence for the same scenario
(tests/model/grant_model.hpp, bound as _grant_model for the tests)."""

import asyncio
import random
import threading
from fractions import Fraction

import pytest

import simsync
from _grant_model import GrantModel

from conftest import MS, Worker, wait_for, wait_until_waiting

# ------------------------------------------------------------------ scenario
# Steady lockstep accessors (each always asks again at once): the contract fixes
# their whole sequence of grants. Each one's rounded times are strictly increasing,
# so no accessor repeats an instant and the order is fully fixed.

DT = MS


def times(period_ns, count, offset_ns=0):
    return [offset_ns + n * period_ns for n in range(count)]


SCENARIO = [
    # name, driver, mode, priority, request times
    ("controller", "thread_fused", "exclusive", 0, times(simsync.ms(3), 40)),
    ("camera", "asyncio", "shared", 0, [simsync.seconds(Fraction(n, 30)) for n in range(4)]),
    ("lidar", "thread_release_next", "shared", 1, times(simsync.ms(2), 55, simsync.ms(1))),
    ("logger", "inline", "shared", -1, times(simsync.ms(5), 25)),
    ("planner", "asyncio", "exclusive", 2, times(simsync.ms(7), 17, simsync.ms(2))),
    ("monitor", "inline", "exclusive", 0, times(simsync.ms(4), 30, simsync.ms(3))),
]


def model_sequence(rounding="nearest"):
    """The sequence the contract fixes, from the reference model: [(name, time)] in grant order,
    and the values each access reads from the world (writers add their granted time in ms)."""
    model = GrantModel(DT, rounding)
    idx = {}
    for name, _, mode, priority, ts in SCENARIO:
        idx[name] = model.add(lockstep=True, shared=(mode == "shared"), priority=priority,
                              first_request=ts[0], name=name)
    names = {i: name for name, i in idx.items()}
    position = {name: 0 for name in idx}
    scripts = {name: ts for name, _, _, _, ts in SCENARIO}
    for name, i in idx.items():
        model.request(i, scripts[name][0])
    sequence, holders = [], []
    while True:
        grantable = model.grantable()
        if grantable:
            i = grantable[0]
            _, t, _, _ = model.grant(i)
            sequence.append((names[i], t))
            holders.append(i)
            continue
        if holders:  # release when nothing else can happen, asking again at once
            for i in holders:
                name = names[i]
                position[name] += 1
                if position[name] < len(scripts[name]):
                    nxt = scripts[name][position[name]]
                    model.release_next(i, nxt)
                    model.request(i, nxt)
                else:
                    model.release_next(i, simsync.NEVER)
            holders = []
            continue
        if not model.advance():
            break
    modes = {name: mode for name, _, mode, _, _ in SCENARIO}
    value, reads = 0, []
    for name, t in sequence:
        reads.append((name, t, value))
        if modes[name] == "exclusive":
            value = value * 31 % 1_000_003 + t // MS
    return sequence, reads


def run_on_handler(operator_noise, seed=1):
    """Runs SCENARIO on a real handler with its mixed drivers; returns [(name, time, value read)]
    in sequence order."""
    world = simsync.CountingWorld()
    records = []  # (sequence, name, time, value read); list.append is atomic
    with simsync.Handler(world, step=DT, stall_timeout=0) as handler:
        accessors = {
            name: handler.register_accessor(name, mode=mode, priority=priority, first_request=ts[0])
            for name, _, mode, priority, ts in SCENARIO
        }

        def body(name, mode, access):
            view = access.world
            records.append((access.sequence, name, access.granted_time, view.value))
            if mode == "exclusive":
                view.value = view.value * 31 % 1_000_003 + access.granted_time // MS

        def thread_fused(name, mode, ts):
            a = accessors[name]
            access = a.request(ts[0])
            for t in ts[1:]:
                assert access, access.refusal
                body(name, mode, access)
                access = a.release_and_request(access, t)
            body(name, mode, access)
            access.release(simsync.NEVER)

        def thread_release_next(name, mode, ts):
            a = accessors[name]
            for k, t in enumerate(ts):
                access = a.request(t)
                assert access, access.refusal
                body(name, mode, access)
                access.release(ts[k + 1] if k + 1 < len(ts) else simsync.NEVER)

        async def task(name, mode, ts):
            a = accessors[name]
            access = await a.request_async(ts[0])
            for t in ts[1:]:
                assert access, access.refusal
                body(name, mode, access)
                access = await a.release_and_request_async(access, t)
            body(name, mode, access)
            access.release(simsync.NEVER)

        async def all_tasks(specs):
            await asyncio.gather(*(task(*spec) for spec in specs))

        done = threading.Event()
        ended = []

        def start_system(name, mode, ts):
            remaining = list(ts[1:])

            def system(access):
                if not access:
                    ended.append((name, access.refusal))
                    return None
                body(name, mode, access)
                if remaining:
                    return remaining.pop(0)
                access.release(simsync.NEVER)
                ended.append((name, None))
                return None

            accessors[name].run_system(ts[0], system)

        workers, async_specs = [], []
        for name, driver, mode, _, ts in SCENARIO:
            if driver == "thread_fused":
                workers.append(Worker(lambda n=name, m=mode, t=ts: thread_fused(n, m, t), name))
            elif driver == "thread_release_next":
                workers.append(Worker(lambda n=name, m=mode, t=ts: thread_release_next(n, m, t), name))
            elif driver == "asyncio":
                async_specs.append((name, mode, ts))
            else:
                start_system(name, mode, ts)
        workers.append(Worker(lambda: asyncio.run(all_tasks(async_specs)), "asyncio"))

        operator = None
        if operator_noise:
            rng = random.Random(seed)

            def noise():
                while not done.is_set():
                    action = rng.choice(["pause", "resume", "step", "run_until"])
                    if action == "pause":
                        handler.pause()
                    elif action == "resume":
                        handler.resume()
                    elif action == "step":
                        handler.step(rng.randint(1, 3))
                    else:
                        handler.run_until(handler.now + rng.randint(1, 5) * MS)
                handler.resume()

            operator = threading.Thread(target=noise, daemon=True)
            operator.start()
        for w in workers:
            w.start()
        try:
            for w in workers:
                w.join_result(timeout=120)
        finally:
            done.set()
            if operator:
                operator.join(30)
                handler.resume()
        wait_for(lambda: len(ended) == 2, "the inline systems to end")
    assert sorted(ended) == [("logger", None), ("monitor", None)]
    records.sort()
    assert [r[0] for r in records] == list(range(len(records))), "sequence numbers are dense and distinct"
    return [(name, t, value) for _, name, t, value in records]


def test_model_sequence_is_not_trivial():
    sequence, _ = model_sequence()
    assert len(sequence) == sum(len(ts) for *_, ts in SCENARIO)
    # order at one instant: priority, then registration order
    at_15 = [name for name, t in sequence if t == simsync.ms(15)]
    assert at_15 == ["lidar", "controller", "monitor", "logger"]  # 1, 0, 0 (registered before), -1
    at_9 = [name for name, t in sequence if t == simsync.ms(9)]
    assert at_9 == ["planner", "lidar", "controller"]  # priority 2, 1, then 0


@pytest.mark.parametrize("operator_noise", [False, True], ids=["plain", "pause_resume_step_noise"])
def test_mixed_drivers_follow_the_reference_model(operator_noise):
    sequence, reads = model_sequence()
    observed = run_on_handler(operator_noise)
    assert [(n, t) for n, t, _ in observed] == sequence
    assert observed == reads  # every access read what the writers before it wrote


def test_same_scenario_same_run():
    assert run_on_handler(False) == run_on_handler(True, seed=7)


# ------------------------------------------------------------------ single rules

def test_order_at_one_instant_is_priority_then_registration(handler):
    names = ["low", "high", "mid", "mid2"]
    priorities = {"low": -1, "high": 5, "mid": 0, "mid2": 0}
    accessors = {n: handler.register_accessor(n, priority=priorities[n], first_request=simsync.ms(5)) for n in names}
    grants = []

    def ask(name):
        with accessors[name].request(simsync.ms(5)) as access:
            grants.append((access.sequence, name))

    workers = [Worker(lambda n=n: ask(n), n) for n in reversed(names)]  # arrival order reversed
    for w in workers:
        w.start()
    for w in workers:
        w.join_result()
    assert [n for _, n in sorted(grants)] == ["high", "mid", "mid2", "low"]


def test_lockstep_bound_holds_time_and_is_named(handler):
    slow = handler.register_accessor("slow", lookahead=simsync.ms(5))
    fast = handler.register_accessor("fast", kind="free")
    slow.request(0).release()  # plain release: holds time at 0 + lookahead
    waiter = Worker(lambda: fast.request(simsync.ms(10)).granted_time, "fast")
    waiter.start()
    wait_until_waiting(handler, "fast")
    snapshot = handler.snapshot()
    assert snapshot.now <= simsync.ms(5)
    assert snapshot.waiting_for == ["slow"]
    with slow.request(simsync.ms(10)) as access:
        assert access.granted_time == simsync.ms(10)
    assert waiter.join_result() == simsync.ms(10)


def test_free_accessor_never_holds_time(handler):
    free = handler.register_accessor("free", kind="free")
    with free.request(0):
        pass
    lockstep = handler.register_accessor("lockstep")
    with lockstep.request(simsync.ms(20)):
        pass
    assert free.request(simsync.ms(10)).refusal is simsync.Refusal.time_passed


def test_pause_serves_now_and_steps_on_demand(handler, world):
    a = handler.register_accessor("a")
    handler.pause()
    with a.request(0) as access:  # the current instant is still served
        assert access
    waiter = Worker(lambda: a.request(simsync.ms(3)).granted_time)
    waiter.start()
    wait_until_waiting(handler, "a")
    assert handler.now == 0 and handler.state == simsync.HandlerState.paused
    handler.step(2)
    assert handler.wait_until_paused(timeout=10)
    assert handler.now == simsync.ms(2)
    handler.run_until(simsync.ms(3))
    assert waiter.join_result() == simsync.ms(3)
    assert world.steps == 3


def test_events_are_delivered_in_generation_order(handler):
    events = []
    a = handler.register_accessor("a", kind="free")
    with handler.subscribe(events.append):
        handler.pause()
        handler.step(2)
        with a.request(simsync.ms(2)):
            pass
        assert handler.wait_until_paused(timeout=10)
        handler.resume()
        handler.stop()
    kinds = [e.kind for e in events]
    assert kinds == ["paused", "stepping", "target_reached", "resumed", "stopped"]
    assert [e.generation for e in events] == sorted(e.generation for e in events)
    assert events[1].pause_at == simsync.ms(2)


def test_rounding_policies_on_the_handler(world):
    for rounding, expected in [("nearest", [0, 33, 67, 100]), ("up", [0, 34, 67, 100]), ("down", [0, 33, 66, 100])]:
        with simsync.Handler(simsync.CountingWorld(), step=MS, rounding=rounding, stall_timeout=0) as h:
            camera = h.register_accessor("camera")
            got = []
            for n in range(4):
                with camera.request(simsync.seconds(Fraction(n, 30))) as access:
                    got.append(access.granted_time // MS)
            assert got == expected, rounding


def test_stop_ends_every_waiter(handler):
    holder = handler.register_accessor("holder")
    others = [handler.register_accessor(f"w{k}") for k in range(4)]
    held = holder.request(0)
    workers = [Worker(lambda a=a: a.request(simsync.ms(1)).refusal) for a in others]
    for w in workers:
        w.start()
    for k in range(4):
        wait_until_waiting(handler, f"w{k}")
    handler.stop()
    assert [w.join_result() for w in workers] == [simsync.Refusal.stopped] * 4
    assert held  # holders finish their accesses
    held.release()


def test_exception_inside_an_access_releases_it(handler):
    a = handler.register_accessor("a")
    with pytest.raises(RuntimeError):
        with a.request(0) as access:
            raise RuntimeError("boom")
    assert not access
    assert handler.snapshot().accessors[0].activity == "idle"

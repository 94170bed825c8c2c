#!/usr/bin/env python3
"""Benchmarks of the Python package (issue 27), ratios measured in one run.

1. A Python blocking accessor's grant against a C++ blocking accessor's, same handler
   set-up (a lone accessor stepping 1 step per grant, release_and_request): the cost
   of the binding and the GIL. The two alternate in short batches and each side keeps
   its best batch, so a burst of load from elsewhere hits both. Goal: at most 3x.
2. 1000 asyncio accessor tasks on one event loop against 1000 Python threads, every
   accessor asking at every instant: grants per second. Goal: asyncio at least 5x.
3. The learning environment's step (examples/python/arm_env.py: 10 ms of control, ten
   1 ms MuJoCo steps, sensors at 500 Hz and 30 Hz) against the same model stepped by a
   lone C++ accessor one step per grant (mj_step plus a C++ grant): overhead per step,
   reported only (no goal).

Usage: PYTHONPATH=build/default/python python3 bench/python_bench.py [--quick] [--json PATH]
scripts/bench runs it (with the interpreter CMake chose) when the Python package is
built. Prints the tables and goals; with --json writes the results document of
bench/report.hpp (id "python"). Exits 0 whether or not the goals are met (the figures
are the result).
"""

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import threading
import time

import simsync


def lone_grants_python(n):
    world = simsync.CountingWorld()
    with simsync.Handler(world, step=simsync.ms(1), stall_timeout=0) as h:
        a = h.register_accessor("python")
        t, dt = 0, h.step_size
        start, cpu = time.perf_counter_ns(), time.thread_time_ns()
        access = a.request(t)
        for _ in range(1, n):
            t += dt
            access = a.release_and_request(access, t)
        elapsed, cpu = time.perf_counter_ns() - start, time.thread_time_ns() - cpu
        access.release(simsync.NEVER)
    _cpu_ns.append(cpu / n)
    return elapsed / n


# The calling thread's CPU time per grant of each lone_grants_* run (wall time is
# the figure; this one moves less with other processes' load: a lone accessor
# steps the world on its own thread, so its CPU time is the grant's work).
_cpu_ns = []


def lone_grants_python_thread(n):
    result = []
    thread = threading.Thread(target=lambda: result.append(lone_grants_python(n)))
    thread.start()
    thread.join()
    return result[0]


def lone_grants_cpp(n):
    world = simsync.CountingWorld()
    with simsync.Handler(world, step=simsync.ms(1), stall_timeout=0) as h:
        cpu = time.thread_time_ns()
        elapsed = simsync._simsync._cpp_blocking_grants(h, "cpp", n)
        _cpu_ns.append((time.thread_time_ns() - cpu) / n)
        return elapsed / n


def many_asyncio(accessors, rounds):
    world = simsync.CountingWorld()
    with simsync.Handler(world, step=simsync.ms(1), stall_timeout=0) as h:
        acc = [h.register_accessor(f"a{k}") for k in range(accessors)]

        dt = h.step_size

        async def task(a):
            access = await a.request_async(0)
            for r in range(1, rounds):
                access = await a.release_and_request_async(access, r * dt)
            access.release(simsync.NEVER)

        async def main():
            await asyncio.gather(*(task(a) for a in acc))

        start, cpu = time.perf_counter(), time.process_time()
        asyncio.run(main())
        grants = accessors * rounds
        return grants / (time.perf_counter() - start), (time.process_time() - cpu) / grants * 1e6


def many_threads(accessors, rounds):
    world = simsync.CountingWorld()
    with simsync.Handler(world, step=simsync.ms(1), stall_timeout=0) as h:
        acc = [h.register_accessor(f"t{k}") for k in range(accessors)]

        dt = h.step_size

        def body(a):
            access = a.request(0)
            for r in range(1, rounds):
                access = a.release_and_request(access, r * dt)
            access.release(simsync.NEVER)

        threads = [threading.Thread(target=body, args=(a,)) for a in acc]
        start, cpu = time.perf_counter(), time.process_time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        grants = accessors * rounds
        return grants / (time.perf_counter() - start), (time.process_time() - cpu) / grants * 1e6


EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "python")


def env_step_ns(steps):
    sys.path.insert(0, EXAMPLES)
    import arm_env

    env = arm_env.ArmEnv(episode_steps=steps + 1)
    try:
        env.reset(seed=1)
        action = [0.3, -0.2]
        start = time.perf_counter_ns()
        for _ in range(steps):
            env.step(action)
        return (time.perf_counter_ns() - start) / steps
    finally:
        env.close()


def raw_mujoco_step_ns(steps):
    sys.path.insert(0, EXAMPLES)
    import arm_env

    world = simsync.MujocoWorld(path=arm_env.DEFAULT_MODEL)
    with simsync.Handler(world, step=world.timestep, stall_timeout=0) as h:
        return simsync._simsync._cpp_blocking_grants(h, "raw", steps) / steps


# ------------------------------------------------------------------ results document


def decided(measured, compare, target, decimals=2):
    """`measured` with as many decimals as it takes to hold against `target` exactly when
    the true value does (bench/report.hpp's decided())."""
    holds = {"<=": measured <= target, ">=": measured >= target}[compare]
    for d in range(decimals, 10):
        text = f"{measured:.{d}f}"
        if {"<=": float(text) <= target, ">=": float(text) >= target}[compare] == holds:
            return text
    return repr(measured)


def goal(goal_id, text, measured, compare, target, unit, detail):
    met = {"<=": measured <= target, ">=": measured >= target}[compare] if math.isfinite(measured) else False
    shown = decided(measured, compare, target) if math.isfinite(measured) else "not measured"
    return {"id": goal_id, "goal": text, "target": f"{compare} {target:g}{unit}",
            "measured": f"{shown}{unit} ({detail})", "met": met, "checked": True,
            "value": measured if math.isfinite(measured) else None, "target_value": target,
            "compare": compare, "unit": unit}


def print_report(report):
    for table in report["tables"]:
        print(f"\n{table['caption']}")
        rows = [table["columns"]] + table["rows"]
        widths = [max(len(r[i]) for r in rows) for i in range(len(table["columns"]))]
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    print()
    for g in report["goals"]:
        verdict = "met" if g["met"] else "MISSED"
        print(f"goal {verdict}: {g['goal']} (target {g['target']}, measured {g['measured']})")
    for n in report["notes"]:
        print(f"note: {n}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (a few seconds; figures not to be trusted)")
    parser.add_argument("--json", metavar="PATH", help="write the results document (bench/report.hpp) there")
    parser.add_argument("--reference", metavar="PATH",
                        help="accepted for scripts/bench; unused (no goal here is stated against an earlier run)")
    args = parser.parse_args()
    quick = args.quick
    n = 2_000 if quick else 20_000
    batches = 5 if quick else 25
    rounds = 3 if quick else 20
    repetitions = 1 if quick else 3
    accessors = 1000

    # 1. Lone blocking grant, Python against C++, alternating batches.
    lone_grants_python(1000)  # warm up
    lone_grants_cpp(1000)
    python_ns, cpp_ns, python_thread_ns = [], [], []
    python_cpu, cpp_cpu, python_thread_cpu = [], [], []
    for _ in range(batches):
        python_ns.append(lone_grants_python(n))
        python_cpu.append(_cpu_ns[-1])
        cpp_ns.append(lone_grants_cpp(n))
        cpp_cpu.append(_cpu_ns[-1])
    for _ in range(max(1, batches // 5)):
        python_thread_ns.append(lone_grants_python_thread(n))
        python_thread_cpu.append(_cpu_ns[-1])
    best_python, best_cpp = min(python_ns), min(cpp_ns)
    ratio = best_python / best_cpp

    # 2. 1000 asyncio tasks against 1000 threads, alternating repetitions.
    tasks, threads, tasks_cpu, threads_cpu = [], [], [], []
    for _ in range(repetitions):
        rate, cpu = many_asyncio(accessors, rounds)
        tasks.append(rate)
        tasks_cpu.append(cpu)
        rate, cpu = many_threads(accessors, rounds)
        threads.append(rate)
        threads_cpu.append(cpu)
    tasks_rate, threads_rate = statistics.median(tasks), statistics.median(threads)
    speedup = tasks_rate / threads_rate

    # 3. The learning environment against the raw MuJoCo loop.
    env_ns = raw_ns = None
    if simsync.HAVE_MUJOCO:
        env_steps = 50 if quick else 500
        env_ns = min(env_step_ns(env_steps) for _ in range(repetitions))
        raw_ns = min(raw_mujoco_step_ns(env_steps * 10) for _ in range(repetitions))

    lone_rows = [
        ["Python blocking grant, main thread (lone accessor, release_and_request)",
         f"{best_python:.0f}", f"{statistics.median(python_ns):.0f}", f"{best_python / best_cpp:.2f}x",
         f"{min(python_cpu):.0f}", f"{min(python_cpu) / min(cpp_cpu):.2f}x"],
        ["Python blocking grant, the same loop on another thread",
         f"{min(python_thread_ns):.0f}", f"{statistics.median(python_thread_ns):.0f}",
         f"{min(python_thread_ns) / best_cpp:.2f}x", f"{min(python_thread_cpu):.0f}",
         f"{min(python_thread_cpu) / min(cpp_cpu):.2f}x"],
        ["C++ blocking grant, same handler set-up (baseline)",
         f"{best_cpp:.0f}", f"{statistics.median(cpp_ns):.0f}", "1x", f"{min(cpp_cpu):.0f}", "1x"],
    ]
    many_rows = [
        [f"{accessors} asyncio tasks, one event loop", f"{tasks_rate:,.0f}",
         f"{min(tasks):,.0f}-{max(tasks):,.0f}", f"{speedup:.2f}x", f"{statistics.median(tasks_cpu):.2f}"],
        [f"{accessors} Python threads (baseline)", f"{threads_rate:,.0f}",
         f"{min(threads):,.0f}-{max(threads):,.0f}", "1x", f"{statistics.median(threads_cpu):.2f}"],
    ]
    tables = [
        {"caption": f"One accessor, one 1 ms step per grant: ns per grant, best and median of {batches} "
                    f"alternating batches of {n:,} grants",
         "columns": ["what", "best ns/grant", "median", "ratio to C++ (best)", "thread CPU ns/grant (best)",
                     "CPU ratio"],
         "rows": lone_rows},
        {"caption": f"{accessors} accessors asking at each of {rounds} instants: grants per second, median of "
                    f"{repetitions} alternating repetitions",
         "columns": ["what", "grants/s", "min-max", "ratio to threads", "CPU us/grant (process, median)"],
         "rows": many_rows},
    ]
    notes = []
    if env_ns is not None:
        tables.append({
            "caption": f"The learning environment (examples/python/arm_env.py), best of {repetitions}",
            "columns": ["what", "us per 10 ms of control"],
            "rows": [["ArmEnv.step (ten 1 ms MuJoCo steps, sensors at 500 Hz and 30 Hz)", f"{env_ns / 1000:.1f}"],
                     ["ten MuJoCo steps of the same model, lone C++ accessor (baseline)", f"{10 * raw_ns / 1000:.1f}"],
                     ["environment overhead per step", f"{(env_ns - 10 * raw_ns) / 1000:.1f}"]]})
    else:
        notes.append("the learning environment was not measured: the package was built without MuJoCo")
    report = {
        "id": "python",
        "title": "Python package (bench/python_bench.py)",
        "description": (
            "The Python package `simsync` (sim_adapters/python, issue 27) against C++ on the same handler set-up "
            "in the same process: a lone blocking accessor's grant (the cost of the binding and the GIL), 1000 "
            "asyncio accessor tasks on one event loop against 1000 Python threads, and the learning "
            "environment's `step` against the same MuJoCo model stepped by a C++ accessor (reported, no goal). "
            f"Python {sys.version.split()[0]}."),
        "mode": "quick" if quick else "full",
        "tables": tables,
        "goals": [
            goal("python_grant_vs_cpp", "a Python blocking grant at most 3x a C++ blocking grant, same handler",
                 ratio, "<=", 3, "x", f"{best_python:.0f} ns vs {best_cpp:.0f} ns"),
            goal("asyncio_vs_threads", f"{accessors} asyncio tasks on one loop at least 5x the grants/s of "
                 f"{accessors} Python threads", speedup, ">=", 5, "x",
                 f"{tasks_rate:,.0f} vs {threads_rate:,.0f} grants/s"),
        ],
        "plots": [],
        "notes": notes,
    }
    print_report(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()

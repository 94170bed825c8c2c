#!/usr/bin/env python3
"""Benchmarks of the Python package (issue 27), ratios measured in one run.

1. A Python blocking accessor's grant against a C++ blocking accessor's, same handler
   (a lone accessor stepping 1 step per grant, release_and_request): the cost of the
   binding and the GIL. Goal: at most 3x.
2. 1000 asyncio accessor tasks on one event loop against 1000 Python threads, every
   accessor asking at every instant: grants per second. Goal: asyncio at least 5x.

Usage: PYTHONPATH=build/default/python python3 bench/python_bench.py [--quick]
Prints a table; exits 0 whether or not the goals are met (the figures are the result).
"""

import argparse
import asyncio
import threading
import time

import simsync


def lone_grants_python(n):
    world = simsync.CountingWorld()
    with simsync.Handler(world, step=simsync.ms(1), stall_timeout=0) as h:
        a = h.register_accessor("python")
        t, dt = 0, h.step_size
        start = time.perf_counter_ns()
        access = a.request(t)
        for _ in range(1, n):
            t += dt
            access = a.release_and_request(access, t)
        elapsed = time.perf_counter_ns() - start
        access.release(simsync.NEVER)
    return elapsed / n


def lone_grants_cpp(n):
    world = simsync.CountingWorld()
    with simsync.Handler(world, step=simsync.ms(1), stall_timeout=0) as h:
        return simsync._simsync._cpp_blocking_grants(h, "cpp", n) / n


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

        start = time.perf_counter()
        asyncio.run(main())
        return accessors * rounds / (time.perf_counter() - start)


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
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return accessors * rounds / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (a few seconds)")
    args = parser.parse_args()
    n = 5_000 if args.quick else 100_000
    rounds = 3 if args.quick else 20
    accessors = 1000

    lone_grants_python(1000)  # warm up
    lone_grants_cpp(1000)
    python_ns = min(lone_grants_python(n) for _ in range(3))
    cpp_ns = min(lone_grants_cpp(n) for _ in range(3))
    tasks = many_asyncio(accessors, rounds)
    threads = many_threads(accessors, rounds)
    print("| what | figure |")
    print("|---|---|")
    print(f"| Python blocking grant (lone accessor, release_and_request) | {python_ns / 1000:.2f} us |")
    print(f"| C++ blocking grant, same handler setup | {cpp_ns / 1000:.2f} us |")
    print(f"| ratio Python / C++ (goal <= 3x) | {python_ns / cpp_ns:.1f}x |")
    print(f"| {accessors} asyncio tasks, one loop, {rounds} instants | {tasks:,.0f} grants/s |")
    print(f"| {accessors} Python threads, {rounds} instants | {threads:,.0f} grants/s |")
    print(f"| ratio asyncio / threads (goal >= 5x) | {tasks / threads:.1f}x |")


if __name__ == "__main__":
    main()

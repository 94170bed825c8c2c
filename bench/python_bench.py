#!/usr/bin/env python3
"""Benchmarks of the Python package (issue 27), ratios measured in one run.

1. A Python blocking accessor's grant against a C++ blocking accessor's, same handler
   (a lone accessor stepping 1 step per grant, release_and_request): the cost of the
   binding and the GIL. Goal: at most 3x.
2. 1000 asyncio accessor tasks on one event loop against 1000 Python threads, every
   accessor asking at every instant: grants per second. Goal: asyncio at least 5x.
3. The learning environment's step (examples/python/arm_env.py: 10 ms of control, ten
   1 ms MuJoCo steps, sensors at 500 Hz and 30 Hz) against the same model stepped by a
   lone C++ accessor one step per grant (mj_step plus a C++ grant): overhead per step.

Usage: PYTHONPATH=build/default/python python3 bench/python_bench.py [--quick]
Prints a table; exits 0 whether or not the goals are met (the figures are the result).
"""

import argparse
import asyncio
import os
import sys
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
    env_ns = raw_ns = None
    if simsync.HAVE_MUJOCO:
        env_steps = 50 if args.quick else 500
        env_ns = min(env_step_ns(env_steps) for _ in range(3))
        raw_ns = min(raw_mujoco_step_ns(env_steps * 10) for _ in range(3))
    print("| what | figure |")
    print("|---|---|")
    print(f"| Python blocking grant (lone accessor, release_and_request) | {python_ns / 1000:.2f} us |")
    print(f"| C++ blocking grant, same handler setup | {cpp_ns / 1000:.2f} us |")
    print(f"| ratio Python / C++ (goal <= 3x) | {python_ns / cpp_ns:.1f}x |")
    print(f"| {accessors} asyncio tasks, one loop, {rounds} instants | {tasks:,.0f} grants/s |")
    print(f"| {accessors} Python threads, {rounds} instants | {threads:,.0f} grants/s |")
    print(f"| ratio asyncio / threads (goal >= 5x) | {tasks / threads:.1f}x |")
    if env_ns is not None:
        print(f"| learning environment step (10 ms: 10 MuJoCo steps, 6 sensor samples) | {env_ns / 1000:.1f} us |")
        print(f"| 10 MuJoCo steps of the same model, lone C++ accessor | {10 * raw_ns / 1000:.1f} us |")
        print(f"| environment overhead per step | {(env_ns - 10 * raw_ns) / 1000:.1f} us |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the benchmark results page from the benchmarks' results documents.

Called by scripts/bench; every figure on the page comes out of the JSON files
(bench/report.hpp) of one run. This script only lays them out: a goals summary,
then per benchmark its description, tables, plots (gnuplot, PNG), the run's own
notes and the hand-written analysis kept beside the benchmark's source
(bench/<id>.notes.md), so that regenerating the page keeps it.

Usage: bench_page.py --out DIR --mode full|quick --command CMD [--machine MACHINE.json]
                     [--date D] [--commit C] [--failed NAME:EXIT ...] RESULT.json ...
       bench_page.py --record-machine MACHINE.json [--date D] [--commit C]

The machine facts (CPU, which vCPUs share a core, lscpu, load) are recorded when
the run starts (--record-machine, by scripts/bench) and kept beside the results,
so that a page laid out again from kept results describes the machine they were
measured on.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    try:
        return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def current_commit():
    commit = run(["git", "rev-parse", "--short", "HEAD"]) or "unknown"
    # The page and its plots are this run's own output, not local changes.
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", ".", ":!docs/benchmarks.md", ":!docs/benchmarks"],
                           cwd=ROOT).returncode != 0
    return commit + (" (with local changes)" if dirty else "")


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def lscpu():
    """lscpu's "Key: value" lines as a dict (empty if lscpu is missing)."""
    out = {}
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=False,
                              env=dict(os.environ, LC_ALL="C")).stdout
    except OSError:
        return out
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def topology():
    """Per online CPU: its thread siblings (the vCPUs sharing its core), core and package."""
    cpus = []
    base = "/sys/devices/system/cpu"
    try:
        names = sorted((n for n in os.listdir(base) if re.fullmatch(r"cpu\d+", n)), key=lambda n: int(n[3:]))
    except OSError:
        return cpus
    for name in names:
        topo = os.path.join(base, name, "topology")
        siblings = read(os.path.join(topo, "thread_siblings_list"))
        if siblings is None:  # offline
            continue
        cpus.append({"cpu": int(name[3:]), "thread_siblings": siblings,
                     "core_id": read(os.path.join(topo, "core_id")),
                     "package_id": read(os.path.join(topo, "physical_package_id"))})
    return cpus


def record_machine(date, commit):
    """What the page says about the machine, taken when the run starts (scripts/bench)."""
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = read("/proc/loadavg")
    compiler = run(["c++", "--version"]).splitlines()
    info = lscpu()
    keep = ["Thread(s) per core", "Core(s) per socket", "Socket(s)", "NUMA node(s)", "Hypervisor vendor",
            "Virtualization type", "L1d cache", "L2 cache", "L3 cache"]
    return {
        "date": date,
        "commit": commit,
        "cpu": cpu,
        "cores_online": os.cpu_count(),
        "kernel": f"{platform.system()} {platform.release()}",
        "load_at_start": " ".join(load.split()[:3]) if load else "unknown",
        "compiler": compiler[0] if compiler else "unknown compiler",
        "clocksource": read("/sys/devices/system/clocksource/clocksource0/current_clocksource") or "unknown",
        "topology": topology(),
        "lscpu": {k: info[k] for k in keep if k in info},
    }


def topology_text(machine):
    cpus = machine.get("topology") or []
    if not cpus:
        return "not recorded"
    groups = []
    for c in cpus:
        if c["thread_siblings"] not in groups:
            groups.append(c["thread_siblings"])
    shared = [g for g in groups if re.search(r"[,-]", g)]
    verdict = ("vCPUs sharing a core: " + "; ".join(shared)) if shared else "no two vCPUs share a core"
    per_cpu = "; ".join(f"cpu{c['cpu']}: {c['thread_siblings']}" for c in cpus)
    return f"{verdict} (thread siblings per vCPU, /sys/devices/system/cpu/cpu*/topology: {per_cpu})"


def lscpu_text(machine):
    l = machine.get("lscpu") or {}
    if not l:
        return "not recorded"
    parts = []
    if "Socket(s)" in l:
        parts.append(f"{l['Socket(s)']} socket(s) x {l.get('Core(s) per socket', '?')} core(s) x "
                     f"{l.get('Thread(s) per core', '?')} thread(s) per core")
    if "NUMA node(s)" in l:
        parts.append(f"{l['NUMA node(s)']} NUMA node(s)")
    if "Hypervisor vendor" in l:
        parts.append(f"hypervisor {l['Hypervisor vendor']} ({l.get('Virtualization type', '?')} virtualisation)")
    caches = [f"{k.split()[0]} {l[k]}" for k in ("L1d cache", "L2 cache", "L3 cache") if k in l]
    if caches:
        parts.append("caches: " + ", ".join(caches))
    return "; ".join(parts)


def machine_rows(machine, recorded):
    try:
        with open("/proc/loadavg") as f:
            load_now = " ".join(f.read().split()[:3])
    except OSError:
        load_now = "unknown"
    rows = [
        ("date of the run", machine["date"]),
        ("commit", machine["commit"]),
        ("CPU", machine["cpu"]),
        ("cores", f"{machine['cores_online']} online"),
        ("CPU topology", topology_text(machine)),
        ("lscpu", lscpu_text(machine)),
        ("clock source", machine.get("clocksource", "unknown")),
        ("kernel", machine["kernel"]),
    ]
    if recorded:
        rows.append(("load average at the start of the run", machine.get("load_at_start", "unknown")))
    rows.append(("load average when the page was written", load_now))
    rows.append(("build", "RelWithDebInfo (preset default), " + machine["compiler"]))
    if not recorded:
        rows.append(("note", "**the run recorded no machine facts: these were read when the page was laid out, "
                             "possibly elsewhere**"))
    return rows


NUMERIC = re.compile(r"^[-+]?(\d[\d,.]*|\.\d+)(e[-+]?\d+)?\s*[kMG%x]?$|^-$|^n/a$")


def verdict(goal):
    if not goal.get("checked", True):
        return "not run"
    return "met" if goal["met"] else "**missed**"


def md_cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def md_table(columns, rows):
    # Right-align columns whose every cell reads as a number: figures line up.
    align = []
    for i in range(len(columns)):
        cells = [r[i] for r in rows if i < len(r) and r[i] != ""]
        align.append("---:" if cells and all(NUMERIC.match(c.strip()) for c in cells) else "---")
    out = ["| " + " | ".join(md_cell(c) for c in columns) + " |", "|" + "|".join(align) + "|"]
    for r in rows:
        r = list(r) + [""] * (len(columns) - len(r))
        out.append("| " + " | ".join(md_cell(c) for c in r) + " |")
    return "\n".join(out)


def gp_string(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_plot(plot, plot_dir, gnuplot):
    """Renders one plot to plot_dir/plot['file']; returns an error string or None."""
    series = [s for s in plot["series"] if any(p[0] is not None and p[1] is not None for p in s["points"])]
    if not series:
        return "no data"
    with tempfile.TemporaryDirectory() as tmp:
        lines = [
            "set terminal pngcairo size 800,520 enhanced font 'sans,10'",
            "set output " + gp_string(os.path.join(plot_dir, plot["file"])),
            "set title " + gp_string(plot["title"]) + " noenhanced",
            "set xlabel " + gp_string(plot["xlabel"]) + " noenhanced",
            "set ylabel " + gp_string(plot["ylabel"]) + " noenhanced",
            "set grid",
            "set key outside below noenhanced",
        ]
        if plot.get("logx"):
            lines.append("set logscale x")
        if plot.get("logy"):
            lines.append("set logscale y")
        style = plot.get("style") or "linespoints"
        if style == "steps":  # cumulative fractions: keep a line at 1 off the border
            lines.append("set yrange [0:1.05]")
        items = []
        for n, s in enumerate(series):
            data = os.path.join(tmp, f"s{n}.dat")
            with open(data, "w") as f:
                for x, y in s["points"]:
                    if x is None or y is None:
                        continue
                    if (plot.get("logx") and x <= 0) or (plot.get("logy") and y <= 0):
                        continue
                    f.write(f"{x!r} {y!r}\n")
            items.append(f"{gp_string(data)} using 1:2 with {style} lw 2 title {gp_string(s['name'])}")
        lines.append("plot " + ", \\\n     ".join(items))
        script = os.path.join(tmp, "plot.gp")
        with open(script, "w") as f:
            f.write("\n".join(lines) + "\n")
        result = subprocess.run([gnuplot, script], capture_output=True, text=True)
        if result.returncode != 0:
            return "gnuplot failed: " + result.stderr.strip()[:300]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="directory of benchmarks.md (plots go to OUT/benchmarks/)")
    ap.add_argument("--mode", choices=["full", "quick"])
    ap.add_argument("--command")
    ap.add_argument("--date", help="when the run started (default: now)")
    ap.add_argument("--commit", help="the commit measured (default: HEAD, checked for local changes)")
    ap.add_argument("--failed", action="append", default=[], help="NAME:EXIT of a benchmark that failed")
    ap.add_argument("--machine", help="the machine facts the run recorded (--record-machine), e.g. "
                                      "docs/benchmarks/machine.json")
    ap.add_argument("--record-machine", metavar="FILE",
                    help="only record the machine facts (CPU, topology, lscpu, load) in FILE and exit; "
                         "scripts/bench does this when the run starts")
    ap.add_argument("results", nargs="*")
    args = ap.parse_args()
    date = args.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    if args.record_machine:
        with open(args.record_machine, "w") as f:
            json.dump(record_machine(date, args.commit or current_commit()), f, indent=1)
            f.write("\n")
        return
    if args.out is None or args.mode is None or args.command is None:
        ap.error("--out, --mode and --command are required to write the page")

    recorded = args.machine is not None
    if recorded:
        with open(args.machine) as f:
            try:
                machine = json.load(f)
            except json.JSONDecodeError as e:
                sys.exit(f"{args.machine}:{e.lineno}:{e.colno}: not a machine record: {e.msg}")
        # Given explicitly, the run's date and commit win over the record's.
        if args.date:
            machine["date"] = args.date
        if args.commit:
            machine["commit"] = args.commit
    else:
        machine = record_machine(date, args.commit or current_commit())

    reports = []
    for path in args.results:
        with open(path) as f:
            try:
                reports.append(json.load(f))
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{e.lineno}:{e.colno}: not a results document: {e.msg}")

    plot_dir = os.path.join(args.out, "benchmarks")
    os.makedirs(plot_dir, exist_ok=True)
    for old in os.listdir(plot_dir):  # from scratch: no plot of an earlier run survives
        if old.endswith(".png"):
            os.remove(os.path.join(plot_dir, old))
    gnuplot = shutil.which("gnuplot")

    page = ["# simsync benchmarks", "",
            f"Generated by `{args.command}` from one run; do not edit by hand (hand-written analysis "
            "lives in `bench/<benchmark>.notes.md` and is copied in).", ""]
    page.append(md_table(["", ""], machine_rows(machine, recorded)))
    page.append("")
    if args.mode == "quick":
        page += ["**Quick mode: a smoke run that checks every benchmark runs. These figures are not to be "
                 "trusted.**", ""]
    page += ["Every figure stands beside a baseline measured in the same run, on the same machine, "
             "minutes apart: this is a shared 2-vCPU VM where absolute times move with other people's "
             "load, and the ratios move much less. Goals are checked by the benchmarks against their own "
             "figures, and a measured value is printed with as many digits as it takes to see from them "
             "whether it meets its target. Latency tables give p50, p99 and max over every sample of "
             "every repetition (exact, nearest rank); tables of times per operation give the median and "
             "min-max over a few repetitions, where a p99 over the repetitions would be their max; a "
             "column that gives anything else (a median of per-repetition percentiles) says so in its "
             "heading.", ""]

    page += ["## Goals", ""]
    goal_rows = []
    for r in reports:
        for g in r.get("goals", []):
            goal_rows.append([r["title"], g["goal"], g["target"], g["measured"], verdict(g)])
    for f in args.failed:
        name, _, code = f.partition(":")
        goal_rows.append([name, "the benchmark runs", "exit 0", f"exit {code}", "**failed**"])
    page.append(md_table(["benchmark", "goal", "target", "measured", ""], goal_rows) if goal_rows else "No goals.")
    page.append("")

    for r in reports:
        page += [f"## {r['title']}", ""]
        if r.get("mode") == "quick" and args.mode != "quick":
            page += ["*(quick mode)*", ""]
        if r.get("description"):
            page += [r["description"], ""]
        for t in r.get("tables", []):
            if t.get("caption"):
                page += [f"**{t['caption']}**", ""]
            page += [md_table(t["columns"], t["rows"]), ""]
        for p in r.get("plots", []):
            if gnuplot is None:
                page += [f"*(plot `{p['file']}` not drawn: gnuplot is not installed)*", ""]
                continue
            error = render_plot(p, plot_dir, gnuplot)
            if error:
                page += [f"*(plot `{p['file']}` not drawn: {error})*", ""]
            else:
                page += [f"![{p['title']}](benchmarks/{p['file']})", ""]
        if r.get("goals"):
            for g in r["goals"]:
                page.append(f"- Goal {verdict(g)}: {g['goal']} (target {g['target']}, "
                            f"measured {g['measured']}).")
            page.append("")
        for n in r.get("notes", []):
            page.append(f"- {n}")
        if r.get("notes"):
            page.append("")
        notes = os.path.join(ROOT, "bench", f"{r['id']}.notes.md")
        if os.path.exists(notes):
            with open(notes) as f:
                page += [f.read().rstrip(), ""]

    with open(os.path.join(args.out, "benchmarks.md"), "w") as f:
        f.write("\n".join(page))
    print(f"wrote {os.path.join(args.out, 'benchmarks.md')}")


if __name__ == "__main__":
    main()

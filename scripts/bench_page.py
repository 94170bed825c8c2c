#!/usr/bin/env python3
"""Writes the benchmark results page from the benchmarks' results documents.

Called by scripts/bench; every figure on the page comes out of the JSON files
(bench/report.hpp) of one run. This script only lays them out: a goals summary,
then per benchmark its description, tables, plots (gnuplot, PNG), the run's own
notes and the hand-written analysis kept beside the benchmark's source
(bench/<id>.notes.md), so that regenerating the page keeps it.

Usage: bench_page.py --out DIR --mode full|quick --command CMD
                     [--failed NAME:EXIT ...] RESULT.json ...
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


def machine_rows(date, commit):
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/proc/loadavg") as f:
            load = " ".join(f.read().split()[:3])
    except OSError:
        load = "unknown"
    compiler = run(["c++", "--version"]).splitlines()
    return [
        ("date of the run", date),
        ("commit", commit),
        ("CPU", cpu),
        ("cores", f"{os.cpu_count()} online"),
        ("kernel", f"{platform.system()} {platform.release()}"),
        ("load average when the page was written", load),
        ("build", "RelWithDebInfo (preset default), " + (compiler[0] if compiler else "unknown compiler")),
    ]


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
    ap.add_argument("--out", required=True, help="directory of benchmarks.md (plots go to OUT/benchmarks/)")
    ap.add_argument("--mode", choices=["full", "quick"], required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--date", help="when the run started (default: now)")
    ap.add_argument("--commit", help="the commit measured (default: HEAD, checked for local changes)")
    ap.add_argument("--failed", action="append", default=[], help="NAME:EXIT of a benchmark that failed")
    ap.add_argument("results", nargs="*")
    args = ap.parse_args()

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
    date = args.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page.append(md_table(["", ""], machine_rows(date, args.commit or current_commit())))
    page.append("")
    if args.mode == "quick":
        page += ["**Quick mode: a smoke run that checks every benchmark runs. These figures are not to be "
                 "trusted.**", ""]
    page += ["Every figure stands beside a baseline measured in the same run, on the same machine, "
             "minutes apart: this is a shared 2-vCPU VM where absolute times move with other people's "
             "load, and the ratios move much less. Goals are checked by the benchmarks against their own "
             "figures. Latency tables give p50, p99 and max over every sample; tables of times per "
             "operation give the median and min-max over a few repetitions, where a p99 over the "
             "repetitions would be their max.", ""]

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

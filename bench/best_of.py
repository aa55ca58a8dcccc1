#!/usr/bin/env python3
"""Merges several runs of a benchmark into one Markdown table (for docs/performance.md), each
row keeping its best (smallest) time over the runs.

    bench_apps --json > apps1.json; bench_apps --json > apps2.json
    bench/best_of.py apps1.json apps2.json
        the bench_apps table, derived columns and target checks recomputed from the merged rows

    bench_micro --benchmark_repetitions=3 --benchmark_out=micro1.json ...  (twice)
    bench/best_of.py micro1.json micro2.json
        Google Benchmark output: the `_min` aggregate of each benchmark (bench_micro registers a
        "min" statistic), best over the files

On a shared, noisy machine the best of separate runs is the closest to what the code does.
"""
import json
import sys


def key(r):
    return (r["case"], r["variant"], r["workers"])


def merge(runs):
    order, best = [], {}
    for rows in runs:
        for r in rows:
            k = key(r)
            if k not in best:
                order.append(k)
                best[k] = r
            elif r["built"] and (not best[k]["built"] or r["seconds"] < best[k]["seconds"]):
                best[k] = r
    return [best[k] for k in order]


def find(rows, case, variant, workers):
    for r in rows:
        if r["case"] == case and r["variant"] == variant and r["workers"] == workers and r["built"]:
            return r
    return None


def derive(rows, r):
    d = {}
    if not r["built"]:
        return d
    par = r["variant"] != "sequential"
    seq = find(rows, r["case"], "sequential", 1)
    if seq:
        d["vs_seq"] = r["seconds"] / seq["seconds"]
        if par and r["tasks"] > 0:
            d["ns"] = r["seconds"] * 1e9 / r["tasks"]
            d["ovh"] = (r["seconds"] - seq["seconds"]) * 1e9 / r["tasks"]
    if par:
        tbb = find(rows, r["case"], "tbb", r["workers"])
        if tbb:
            d["vs_tbb"] = r["seconds"] / tbb["seconds"]
        if r["workers"] != 1:
            one = find(rows, r["case"], r["variant"], 1)
            if one:
                d["speedup"] = one["seconds"] / r["seconds"]
    return d


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def table(rows):
    out = ["| case | variant | w | seconds | cpu/wall | vs seq | vs tbb | 2w/1w | tasks "
           "| ns/task | ovh ns/task |",
           "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in rows:
        par = r["variant"] != "sequential"
        w = str(r["workers"]) if par else "-"
        if not r["built"]:
            out.append(f"| {r['case']} | {r['variant']} | {w} | peer not built |"
                       " | | | | | | |")
            continue
        d = derive(rows, r)
        out.append("| " + " | ".join([
            r["case"], r["variant"], w, f"{r['seconds']:.4f}",
            f"{r['cpu_seconds'] / r['seconds']:.2f}", fmt(d.get("vs_seq"), ".2f"),
            fmt(d.get("vs_tbb"), ".2f"), fmt(d.get("speedup"), ".2f"),
            str(r["tasks"]) if par else "-", fmt(d.get("ns"), ".1f"),
            fmt(d.get("ovh"), ".1f")]) + " |")
    return "\n".join(out)


def checks(rows):
    out = []
    cases = []
    for r in rows:
        if r["case"] not in [c[0] for c in cases]:
            cases.append((r["case"], r["app"], r["coarse"], r["one_task_per_call"]))
    verdict = lambda ok: "PASS" if ok else "MISS"
    for case, app, coarse, one_task_per_call in cases:
        seq = find(rows, case, "sequential", 1)
        for v in ("apgas-wf", "apgas-hf"):
            one, two = find(rows, case, v, 1), find(rows, case, v, 2)
            tbb = find(rows, case, "tbb", 1)
            if one_task_per_call and one and tbb:
                na = one["seconds"] * 1e9 / one["tasks"]
                nt = tbb["seconds"] * 1e9 / tbb["tasks"]
                out.append(f"- (a) {v} {case}, 1 worker: {na:.1f} ns/task vs TBB {nt:.1f} "
                           f"(limit {nt / 3:.1f}): **{verdict(na <= nt / 3)}**")
            if app in ("fib", "integrate", "nqueens") and one and two:
                sp = one["seconds"] / two["seconds"]
                out.append(f"- (b) {v} {case}: speedup 2w/1w {sp:.3f} (>= 1.80): "
                           f"**{verdict(sp >= 1.8)}**")
            if coarse and one and seq:
                ratio = one["seconds"] / seq["seconds"]
                out.append(f"- (c) {v} {case}, 1 worker / sequential: {ratio:.3f} (<= 1.050): "
                           f"**{verdict(ratio <= 1.05)}**")
    return "\n".join(out)


def micro_table(runs):
    best, order = {}, []
    for run in runs:
        for b in run["benchmarks"]:
            if b.get("aggregate_name") != "min":
                continue
            n = b["run_name"]
            if n not in best:
                order.append(n)
                best[n] = b
            elif b["real_time"] < best[n]["real_time"]:
                best[n] = b
    if not order:
        sys.exit("no `_min` aggregates: run bench_micro with --benchmark_repetitions=N (N >= 2)")
    out = ["| benchmark | label | time (ns) | process CPU (ns) | ns per task |",
           "|---|---|--:|--:|--:|"]
    scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
    for n in order:
        b = best[n]
        unit = scale[b.get("time_unit", "ns")]
        name = n
        for suffix in ("/process_time", "/real_time", "/manual_time"):
            name = name.replace(suffix, "")
        per_task = b.get("per_task")
        out.append(f"| {name} | {b.get('label', '')} | {b['real_time'] * unit:.1f} | "
                   f"{b['cpu_time'] * unit:.1f} | "
                   f"{'' if per_task is None else format(per_task * 1e9, '.1f')} |")
    return "\n".join(out)


def main(paths):
    if not paths:
        sys.exit(__doc__)
    runs = []
    for p in paths:
        with open(p) as f:
            runs.append(json.load(f))
    if all(isinstance(r, dict) and "benchmarks" in r for r in runs):
        print(micro_table(runs))
        return
    rows = merge(runs)
    print(table(rows))
    print()
    print(checks(rows))


if __name__ == "__main__":
    main(sys.argv[1:])

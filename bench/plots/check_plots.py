#!/usr/bin/env python3
"""Checks bench/plots/plot.py on the sample outputs in bench/plots/samples/ (the ctest test
plots_from_samples; no benchmark run, no MPI).

    bench/plots/check_plots.py [--keep DIR]

Renders every chart with `plot.py all` into a temporary directory (or DIR with --keep, to look
at them), and the scaling chart from the simulator's CSV in docs/plots/data/, and checks that each SVG is well-formed XML, self-contained, drawn (data elements,
axes, a title) and labelled (the expected legend entries); then that bad input fails the
documented way: exit status 2 and a one-line message, never a Python traceback.
Exit status 0 when every check passes, 1 otherwise (each failure listed on stderr).
"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
PLOT = os.path.join(HERE, "plot.py")
SAMPLES = os.path.join(HERE, "samples")
# The simulated protocols (sim_protocols --csv): deterministic, so the data the docs plot.
SCALING_CSV = os.path.join(HERE, "..", "..", "docs", "plots", "data", "scaling.csv")
SVG = "{http://www.w3.org/2000/svg}"

# Per chart: legend texts that must be there and the least number of data elements the samples
# give (3 place counts; 3 payloads x 3 bars; 3 pairs x 2 bars; 4 cases x 4 schedulers;
# 6 cases x 3 schedulers).
EXPECTED = {
    "finish_messages.svg": (["2 places", "3 places", "4 places", "limit 2 x ideal"], 3),
    "at_latency.svg": (["raw MPI", "the transport's MPI calls alone", "apgas at",
                        "limit 1.5 x raw median"], 9),
    "async_throughput.svg": (["coalescing on", "coalescing off", "target: 10 x off"], 6),
    "apps_ns_per_task.svg": (["apgas work-first", "apgas help-first", "TBB", "OpenMP"], 16),
    "speedup_vs_ceiling.svg": (["apgas work-first", "apgas help-first", "TBB",
                                "speedup = ceiling", "target 1.8"], 18),
}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def run_plot(*args):
    return subprocess.run([sys.executable, PLOT, *args], capture_output=True, text=True,
                          timeout=60)


def check_svg(path, legend, min_data):
    name = os.path.basename(path)
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        check(False, f"{name}: not well-formed XML: {e}")
        return
    check(root.tag == SVG + "svg", f"{name}: root element is {root.tag}, not svg")
    width = root.get("width", "")
    check(width.isdigit() and 600 <= int(width) <= 800, f"{name}: width {width!r}, not ~720")
    check(root.get("viewBox") is not None, f"{name}: no viewBox")
    everything = list(root.iter())
    # Self-contained: nothing fetched or run when the picture is opened.
    for el in everything:
        tag = el.tag.replace(SVG, "")
        check(tag not in ("script", "image", "foreignObject", "style"),
              f"{name}: has a <{tag}> element")
        for attr, value in el.attrib.items():
            check(not attr.endswith("href") and "url(" not in value,
                  f"{name}: external reference {attr}={value!r}")
    data = [el for el in everything
            if el.tag in (SVG + "path", SVG + "polyline", SVG + "rect")
            and "data" in el.get("class", "").split()]
    check(len(data) >= min_data, f"{name}: {len(data)} data elements, expected >= {min_data}")
    texts = ["".join(el.itertext()) for el in everything if el.tag == SVG + "text"]
    check(any(el.tag == SVG + "title" for el in root), f"{name}: no <title>")
    check(len(texts) >= 10, f"{name}: only {len(texts)} texts (tick labels, titles?)")
    legends = ["".join(el.itertext()) for el in everything
               if el.tag == SVG + "text" and "legend" in el.get("class", "").split()]
    for want in legend:
        check(any(want in t for t in legends), f"{name}: no legend entry containing {want!r} "
              f"(legend: {legends})")


def check_at_latency_without_split(tmp):
    """An output of bench_at_latency without its second table (older runs) plots two bars per
    payload."""
    with open(os.path.join(SAMPLES, "at_latency.txt")) as f:
        text = f.read()
    older = os.path.join(tmp, "at_latency_older.txt")
    with open(older, "w") as f:
        f.write(text.split("where the time goes")[0])
    out = os.path.join(tmp, "at_latency_older.svg")
    r = run_plot("at-latency", older, "-o", out)
    if check(r.returncode == 0, f"plot.py at-latency (no second table): exit status "
                                f"{r.returncode}\n{r.stderr}"):
        check_svg(out, ["raw MPI", "apgas at"], 6)
        with open(out) as f:
            check("transport" not in f.read(), "at_latency_older.svg: a bar for a missing table")


def check_scaling(outdir):
    """The scaling chart: two panels (the busiest place, the rounds), tree and flat lines."""
    out = os.path.join(outdir, "scaling.svg")
    r = run_plot("scaling", SCALING_CSV, "-o", out)
    if check(r.returncode == 0, f"plot.py scaling: exit status {r.returncode}\n{r.stderr}"):
        # 4 workloads x 2 schemes x 2 panels lines, and the tree's markers.
        check_svg(out, ["a finish, one activity per place", "for_each_place", "at_each_place",
                        "a clock phase", "tree of 32 children", "flat (dashed)"], 16)


def check_bad_input(tmp):
    """Each bad input: status 2, a message naming the problem, no traceback, no output file."""
    garbage = os.path.join(tmp, "garbage.txt")
    with open(garbage, "w") as f:
        f.write("no table here\n| a | b |\n")
    not_json = os.path.join(tmp, "not.json")
    with open(not_json, "w") as f:
        f.write("[{\"app\": ")
    wrong_json = os.path.join(tmp, "wrong.json")
    with open(wrong_json, "w") as f:
        f.write("{\"app\": \"fib\"}")
    empty_dir = os.path.join(tmp, "empty")
    os.makedirs(empty_dir, exist_ok=True)
    out = os.path.join(tmp, "bad.svg")
    cases = [
        ("finish-messages", garbage), ("at-latency", garbage), ("async-throughput", garbage),
        ("apps", garbage), ("apps", not_json), ("apps", wrong_json),
        ("speedup", not_json), ("speedup", wrong_json), ("scaling", garbage),
        ("scaling", not_json),
        ("finish-messages", os.path.join(tmp, "missing.txt")),
        ("at-latency", os.path.join(SAMPLES, "bench_apps.json")),
        ("all", empty_dir),
    ]
    for cmd, path in cases:
        r = run_plot(cmd, path, "-o", out if cmd != "all" else os.path.join(tmp, "badall"))
        what = f"plot.py {cmd} {os.path.basename(path)}"
        check(r.returncode == 2, f"{what}: exit status {r.returncode}, expected 2")
        check("Traceback" not in r.stderr, f"{what}: traceback on stderr:\n{r.stderr}")
        check(r.stderr.strip() != "" and len(r.stderr.strip().splitlines()) <= 2,
              f"{what}: expected a short message on stderr, got {r.stderr!r}")
        check(not os.path.exists(out), f"{what}: wrote {out} anyway")


def check_trace_timeline(tmp):
    """trace_timeline.py on a trace of trace_test at 2 places: rows, slices and arrows."""
    tool = os.path.join(HERE, "trace_timeline.py")
    out = os.path.join(tmp, "timeline.svg")
    r = subprocess.run([sys.executable, tool, os.path.join(SAMPLES, "trace.json"), "-o", out],
                       capture_output=True, text=True, timeout=60)
    if not check(r.returncode == 0, f"trace_timeline.py: exit status {r.returncode}\n{r.stderr}"):
        return
    root = ET.parse(out).getroot()
    texts = [t.text or "" for t in root.iter(SVG + "text")]
    for label in ["place 0 worker 0", "place 1 messages", "activities", "finish wait"]:
        check(any(label in t for t in texts), f"timeline.svg: no text {label!r}")
    titles = [t.text or "" for t in root.iter(SVG + "title")]
    check(any("activities" == t for t in titles), "timeline.svg: no activity slice")
    check(any("message" in t for t in titles), "timeline.svg: no message arrow")
    # trace_join.py rebuilds a trace.json from the places' files (here: one place's, cut out).
    joined = os.path.join(tmp, "joined")
    os.makedirs(joined)
    with open(os.path.join(SAMPLES, "trace.json")) as f:
        sample = json.load(f)["traceEvents"]
    with open(os.path.join(joined, "place-0.json"), "w") as f:
        json.dump({"traceEvents": [e for e in sample if e["pid"] == 0]}, f)
    r = subprocess.run([sys.executable, os.path.join(HERE, "trace_join.py"), joined],
                       capture_output=True, text=True, timeout=60)
    if check(r.returncode == 0, f"trace_join.py: exit status {r.returncode}\n{r.stderr}"):
        with open(os.path.join(joined, "trace.json")) as f:
            events = json.load(f)["traceEvents"]
        check(len(events) == sum(1 for e in sample if e["pid"] == 0),
              "trace_join.py: events lost or added")
    bad = os.path.join(tmp, "not_a_trace.json")
    with open(bad, "w") as f:
        f.write("{}")
    r = subprocess.run([sys.executable, tool, bad, "-o", os.path.join(tmp, "bad.svg")],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "Traceback" not in r.stderr,
          f"trace_timeline.py on no trace: exit status {r.returncode}, {r.stderr!r}")


def main():
    keep = None
    if sys.argv[1:2] == ["--keep"] and len(sys.argv) == 3:
        keep = sys.argv[2]
    elif len(sys.argv) > 1:
        print(__doc__, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="apgas_plots_") as tmp:
        outdir = keep or os.path.join(tmp, "svg")
        r = run_plot("all", SAMPLES, "-o", outdir)
        if check(r.returncode == 0, f"plot.py all samples: exit status {r.returncode}\n"
                                    f"{r.stderr}"):
            for name, (legend, min_data) in EXPECTED.items():
                path = os.path.join(outdir, name)
                if check(os.path.isfile(path), f"{name}: not written"):
                    check_svg(path, legend, min_data)
        check_scaling(outdir)
        check_at_latency_without_split(tmp)
        check_bad_input(tmp)
        check_trace_timeline(tmp)
    for f in failures:
        print(f"check_plots: FAIL: {f}", file=sys.stderr)
    if not failures:
        print(f"check_plots: OK ({len(EXPECTED)} SVGs from the samples and the scaling chart, "
              "bad input rejected)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

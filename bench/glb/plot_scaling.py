#!/usr/bin/env python3
"""Pictures of the lifeline protocol's simulation (bench_lifeline_sim --csv), in the style of
bench/plots/plot.py (whose chart helpers it uses).

Usage:
    bench/glb/plot_scaling.py FILE.csv -o OUTDIR
        FILE.csv: output of `bench_lifeline_sim --csv` over several place counts. Writes
        OUTDIR/glb_messages_per_place.svg (GLB's messages and lifeline activations per place,
        mean and most, against the number of places) and OUTDIR/glb_spread.svg (rounds until
        every place has work, against log3 of the number of places).

Exit status: 0 on success; 2 on bad usage or input.
"""

import argparse
import csv
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plots"))
import plot  # noqa: E402  (bench/plots/plot.py: Figure, Log, Linear, PALETTE, MARKERS)


def read_rows(path):
    try:
        with open(path, newline="") as f:
            rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]
    except (OSError, ValueError) as e:
        raise plot.InputError(f"{path}: {e}")
    if not rows:
        raise plot.InputError(f"{path}: no rows")
    return sorted(rows, key=lambda r: r["places"])


def places_axis(fig, rows):
    ps = [r["places"] for r in rows]
    xs = plot.Log(min(ps) / 10 ** 0.15, max(ps) * 10 ** 0.15, fig.left, fig.right)
    return xs


def series(fig, xs, ys, rows, key, color, mk, label, dash=None, fmt="{:.1f}"):
    pts = [(xs(r["places"]), ys(r[key])) for r in rows]
    fig.polyline(pts, color, 1.6 if dash else 2.2, dash=dash, tooltip=label)
    for r, (x, y) in zip(rows, pts):
        fig.marker(mk, x, y, color, f"{int(r['places'])} places: {label} {fmt.format(r[key])}")
    return ("line", (color, mk, dash), label)


def chart_messages(rows, source):
    fig = plot.Figure(
        "GLB messages per place as places grow (simulated)",
        ["Steal requests, their answers and lifeline registrations each place sends, and the "
         "lifeline loot it receives, over a run of 100 ms of work per place started at place 0.",
         "They grow with the lifelines per place (z, the smallest with 32^z >= places), not with "
         "the places."],
        source)
    xs = places_axis(fig, rows)
    top = max(max(r["messages_max"], r["received_max"]) for r in rows)
    ys = plot.Linear.from_zero(top, fig.bottom, fig.top)
    fig.value_axis(ys, "messages per place")
    fig.x_axis(xs, "places (log scale)")
    legend = [
        series(fig, xs, ys, rows, "messages_mean", plot.PALETTE[0], plot.MARKERS[0],
               "messages sent, mean"),
        series(fig, xs, ys, rows, "messages_max", plot.PALETTE[0], plot.MARKERS[0],
               "messages sent, most", dash="6 4", fmt="{:.0f}"),
        series(fig, xs, ys, rows, "received_max", plot.PALETTE[1], plot.MARKERS[1],
               "messages received, most", dash="6 4", fmt="{:.0f}"),
        series(fig, xs, ys, rows, "activations_mean", plot.PALETTE[2], plot.MARKERS[2],
               "lifeline activations, mean"),
    ]
    fig.frame()
    fig.legend(legend)
    return fig.render()


def chart_spread(rows, source):
    fig = plot.Figure(
        "Rounds until every place has work (simulated)",
        ["From one place holding all the work; a round is one message latency plus one batch of "
         "n items (the longest a request waits before its victim looks).",
         "The start tree feeds 3 places from each: log3 of the places, plus a constant."],
        source)
    xs = places_axis(fig, rows)
    for r in rows:
        r["log3"] = math.log(r["places"], 3)
    top = max(max(r["spread_rounds"], r["log3"]) for r in rows)
    ys = plot.Linear.from_zero(top, fig.bottom, fig.top, headroom=1.2)
    fig.value_axis(ys, "rounds")
    fig.x_axis(xs, "places (log scale)")
    legend = [
        series(fig, xs, ys, rows, "spread_rounds", plot.PALETTE[0], plot.MARKERS[0],
               "rounds until the last place works"),
        series(fig, xs, ys, rows, "log3", plot.PALETTE[6], plot.MARKERS[3], "log3(places)",
               dash="6 4"),
    ]
    fig.frame()
    fig.legend(legend)
    return fig.render()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="plot_scaling.py")
    ap.add_argument("csv")
    ap.add_argument("-o", dest="out", required=True)
    a = ap.parse_args(argv)
    try:
        rows = read_rows(a.csv)
    except plot.InputError as e:
        print(f"plot_scaling.py: {e}", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    source = os.path.basename(a.csv)
    plot.write(chart_messages(rows, source), os.path.join(a.out, "glb_messages_per_place.svg"))
    plot.write(chart_spread(rows, source), os.path.join(a.out, "glb_spread.svg"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

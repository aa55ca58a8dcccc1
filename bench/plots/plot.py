#!/usr/bin/env python3
"""Plots of apgas benchmark results as self-contained SVG files (Python 3 standard library only).

Usage:
    bench/plots/plot.py finish-messages FILE... -o OUT.svg
        FILE: output of bench_finish_messages (any number of files, e.g. one per place count;
        run_all.sh output works too). Control messages per finish against asyncs per finish,
        one line per place count, with the limit 2 x ideal dashed.
    bench/plots/plot.py at-latency FILE -o OUT.svg
        FILE: output of bench_at_latency. Raw MPI ping-pong against apgas `at` round trip per
        payload (medians, p90 whiskers), with the ratio and the target limit.
    bench/plots/plot.py async-throughput FILE -o OUT.svg
        FILE: output of bench/places/run_async_throughput.sh (or bench_async_throughput
        --compare yes). Asyncs per second with coalescing on and off, per pair of reps.
    bench/plots/plot.py apps FILE.json [--workers N] -o OUT.svg
        FILE.json: output of `bench_apps --json`. Nanoseconds per task of each scheduler on the
        fine-grained cases (no cutoff), at N workers (default 1).
    bench/plots/plot.py speedup FILE.json... -o OUT.svg
        FILE.json: outputs of `bench_apps --json` (any number of runs). Speedup of 2 workers
        over 1 of apgas (both policies) and TBB for fib, integrate and nqueens, against the
        machine's own ceiling measured in the same run (two copies of the sequential kernel at
        once against one): one point per case, scheduler and run.
    bench/plots/plot.py scaling FILE.csv -o OUT.svg
        FILE.csv: output of `sim_protocols --csv` (the protocols simulated at up to 100,000
        places, docs/scaling.md). Messages handled by the busiest place and rounds to the end
        against the number of places, per workload, along the tree and flat.
    bench/plots/plot.py all DIR -o OUTDIR
        Reads DIR/finish_messages.txt, DIR/at_latency.txt, DIR/async_throughput.txt and
        DIR/bench_apps.json (those present) and writes finish_messages.svg, at_latency.svg,
        async_throughput.svg, apps_ns_per_task.svg and speedup_vs_ceiling.svg into OUTDIR
        (created if needed).

    -o - writes the SVG to standard output (not for `all`).

Example (the pictures in docs/plots/ come from the samples):
    bench/plots/plot.py all bench/plots/samples -o docs/plots

Exit status: 0 on success; 2 on bad usage or bad input (a file missing or unreadable, or no
result rows in it), with a one-line message on stderr.

The output is deterministic (no timestamps, rounded coordinates), so regenerated pictures only
differ in git when the numbers do.
"""

import argparse
import json
import math
import os
import re
import statistics
import sys
from xml.sax.saxutils import escape

PROG = "plot.py"
WIDTH = 720

# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies. Markers differ
# too, so that the lines stay apart in grey-scale print.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]
MARKERS = ["circle", "square", "triangle", "diamond"]
INK = "#222222"
MUTED = "#555555"
GRID = "#e3e3e3"
FONT = "Helvetica, Arial, sans-serif"


class InputError(Exception):
    """Bad input: reported as one line on stderr with exit status 2, never as a traceback."""


# --------------------------------------------------------------------------------------------
# Reading the benchmark outputs

def read_text(path):
    try:
        # errors="replace": a stray byte (or a binary file) then simply yields no rows, which is
        # reported as such, instead of a decoding error on some line nobody looks at.
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None


def table_cells(line):
    """The cells of a Markdown table row, or None. Header and separator rows come back too;
    the callers drop them because their cells are not numbers."""
    s = line.strip()
    if len(s) < 2 or not (s.startswith("|") and s.endswith("|")):
        return None
    return [c.strip() for c in s[1:-1].split("|")]


def number(s):
    try:
        v = float(s)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def config_summary(text, with_coalesce=True):
    """'places 2, threads/place 1, coalesce yes' from a benchmark's description line: the part
    that changes what the numbers mean; the rest (buffer sizes, MPI level) is in the file."""
    for line in text.splitlines():
        m = re.match(r"\s+(places \d+, threads/place \d+)(, coalesce \w+)", line)
        if m:
            return m.group(1) + (m.group(2) if with_coalesce else "")
    return None


# bench_finish_messages rows: 10 cells since finishes ask for the later reports, 9 before.
FINISH_COLUMNS = {
    10: ("places", "asyncs", "finishes", "reports", "asks", "cleanups", "control", "ideal",
         "mpi", "us"),
    9: ("places", "asyncs", "finishes", "reports", "cleanups", "control", "ideal", "mpi", "us"),
}


def parse_finish_messages(paths):
    rows = {}
    for path in paths:
        found = 0
        for line in read_text(path).splitlines():
            cells = table_cells(line)
            if cells is None or len(cells) not in FINISH_COLUMNS:
                continue
            values = [number(c) for c in cells]
            if any(v is None for v in values):
                continue
            r = dict(zip(FINISH_COLUMNS[len(cells)], values))
            if r["places"] < 1 or r["asyncs"] < 1:
                continue
            # A later file (or a later run in the same file) replaces an earlier measurement of
            # the same point rather than drawing a zigzag through both.
            rows[(int(r["places"]), int(r["asyncs"]))] = r
            found += 1
        if not found:
            raise InputError(f"{path}: no bench_finish_messages rows found (expected table rows "
                             "like '| 4 | 10000 | 30 | 6.00 | 3.00 | 3.00 | 12.00 | 6 | 14.1 | "
                             "375.2 |')")
    return rows


def at_latency_pattern(text):
    """The first "where the time goes" table of a bench_at_latency output, if any: per payload,
    the median of the ping-pong made of the transport's own MPI calls."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("where the time goes")]
    pattern = {}
    for line in lines[starts[0] + 1:] if starts else []:
        cells = table_cells(line)
        if cells is None:
            if pattern:
                break  # the end of the table
            continue
        values = [number(c) for c in cells[1:4]] if len(cells) == 6 else [None]
        if all(v is not None and v > 0 for v in values):
            pattern[cells[0]] = values[1]
    return pattern


def parse_at_latency(path):
    text = read_text(path)
    tables, current = [], None
    pattern = at_latency_pattern(text)
    for line in text.splitlines():
        cells = table_cells(line)
        row = None
        if cells is not None and len(cells) == 8:
            values = [number(c) for c in cells[1:7]]
            if all(v is not None for v in values) and values[0] > 0 and values[2] > 0:
                m = re.match(r"([\d.]+)\s*(?:\(([\d.]+)\))?", cells[7])
                row = {"payload": cells[0], "raw_median": values[0], "raw_p90": values[1],
                       "at_median": values[2], "at_p90": values[3], "ratio_median": values[4],
                       "ratio_p90": values[5],
                       "msgs": float(m.group(1)) if m else None}
        if row is not None:
            if current is None:
                current = []
                tables.append(current)
            current.append(row)
        elif cells is None:
            current = None  # header and separator rows belong to the table that follows
    if not tables:
        raise InputError(f"{path}: no bench_at_latency table rows found (expected rows like "
                         "'| 8 B | 0.85 | 0.96 | 1.05 | 1.16 | 1.24 | 1.21 | 2.00 (2.00) |')")
    if len(tables) > 1:
        # run_all.sh prints several runs (default threads, diagnosis settings): the first is
        # the one-worker-per-place run that the target refers to.
        note(f"{path}: {len(tables)} bench_at_latency tables, plotting the first")
    m = re.search(r"target: at median <= ([\d.]+) x raw median", text)
    target = float(m.group(1)) if m else 1.5
    for r in tables[0]:
        r["pattern_median"] = pattern.get(r["payload"])
    return {"rows": tables[0], "target": target, "config": config_summary(text)}


def parse_async_throughput(path):
    text = read_text(path)
    reps = {}
    for line in text.splitlines():
        cells = table_cells(line)
        if cells is None or len(cells) != 7 or cells[1] not in ("on", "off"):
            continue
        rep, rate = number(cells[0]), number(cells[3])
        if rep is None or rate is None or rate <= 0:
            continue
        reps.setdefault(int(rep), {})[cells[1]] = rate
    compare = re.search(r"^RESULT compare on_asyncs_per_s=([\d.]+) off_asyncs_per_s=([\d.]+) "
                        r"ratio=([\d.]+)", text, re.M)
    single = re.search(r"^RESULT coalesce=(yes|no) asyncs_per_s=([\d.]+)", text, re.M)
    if not reps and not compare and not single:
        raise InputError(f"{path}: no bench_async_throughput rows or RESULT line found (expected "
                         "rows like '| 0 | on | 0.027 | 7376765 | ... |' or 'RESULT compare "
                         "on_asyncs_per_s=... off_asyncs_per_s=... ratio=...')")
    m = re.search(r"one finish of (\d+) async_at", text)
    result = None
    if compare:
        result = {"on": float(compare.group(1)), "off": float(compare.group(2)),
                  "ratio": float(compare.group(3))}
    elif single:
        result = {"on" if single.group(1) == "yes" else "off": float(single.group(2))}
    # Without "coalesce": a comparison runs both ways whatever the default says.
    return {"reps": reps, "result": result, "asyncs": int(m.group(1)) if m else None,
            "config": config_summary(text, with_coalesce=False)}


def parse_apps(path):
    text = read_text(path)
    try:
        rows = json.loads(text)
    except ValueError as e:
        raise InputError(f"{path}: not JSON (expected `bench_apps --json` output): {e}") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise InputError(f"{path}: expected a JSON array of objects (`bench_apps --json` "
                         "output)")
    return rows


SCALING_COLUMNS = ("workload", "places", "scheme", "arity", "most_handled", "end_round")


def parse_scaling(path):
    """Rows of a sim_protocols CSV: {(workload, scheme): [(places, row), ...]} sorted by places,
    and the tree's arity."""
    lines = read_text(path).splitlines()
    if not lines or any(c not in lines[0].split(",") for c in SCALING_COLUMNS):
        raise InputError(f"{path}: not a sim_protocols CSV (expected a header line with "
                         f"{', '.join(SCALING_COLUMNS)})")
    header = lines[0].split(",")
    series, arity = {}, None
    for line in lines[1:]:
        cells = line.split(",")
        if len(cells) != len(header):
            continue
        r = dict(zip(header, cells))
        values = {k: number(r[k]) for k in ("places", "arity", "most_handled", "end_round")}
        if any(v is None or v < 0 for v in values.values()) or values["places"] < 1 \
                or r["scheme"] not in ("tree", "flat"):
            continue
        if r["scheme"] == "tree":
            arity = int(values["arity"])
        series.setdefault((r["workload"], r["scheme"]), []).append((int(values["places"]),
                                                                    values))
    if not series:
        raise InputError(f"{path}: no sim_protocols rows found (expected rows like "
                         "'dense_finish,1000,tree,32,63,0,...')")
    for rows in series.values():
        rows.sort(key=lambda pr: pr[0])
    return {"series": series, "arity": arity}


# --------------------------------------------------------------------------------------------
# Scales and number formatting

def fmt_num(v):
    """Tick labels: 3 significant digits at most, k/M/G instead of exponents."""
    if v == 0:
        return "0"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return fmt_num(v / div) + suffix
    return f"{v:.3g}"


def fmt_value(v):
    """Values written on bars: whole numbers from 100 on, else 3 significant digits."""
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def nice_step(span, target_ticks=5):
    raw = span / target_ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw * 0.999:
            return m * mag
    return 10 * mag


class Linear:
    def __init__(self, lo, hi, a, b):
        self.lo, self.hi, self.a, self.b = lo, hi, a, b

    @classmethod
    def from_zero(cls, top_value, a, b, headroom=1.08):
        # The axis ends on a tick, with room above the highest point for its annotation.
        top = max(top_value * headroom, 1e-9)
        step = nice_step(top)
        return cls(0.0, step * math.ceil(top / step - 1e-9), a, b)

    def __call__(self, v):
        return self.a + (v - self.lo) / (self.hi - self.lo) * (self.b - self.a)

    def ticks(self):
        step = nice_step(self.hi - self.lo)
        k = math.ceil(self.lo / step - 1e-9)
        out = []
        while k * step <= self.hi * (1 + 1e-9) + 1e-12:
            out.append(k * step)
            k += 1
        return [(t, fmt_num(t), True) for t in out]


class Log:
    def __init__(self, lo, hi, a, b):
        self.lo, self.hi, self.a, self.b = lo, hi, a, b
        self.l0, self.l1 = math.log10(lo), math.log10(hi)

    def __call__(self, v):
        return self.a + (math.log10(v) - self.l0) / (self.l1 - self.l0) * (self.b - self.a)

    def ticks(self):
        """(value, label, major) for 1..9 x 10^k inside the domain: labels at 1-2-5 over a few
        decades, at powers of ten only over many; the rest are unlabelled minor grid lines."""
        decades = self.l1 - self.l0
        labelled = (1, 2, 5) if decades <= 3.2 else (1,)
        out = []
        # Minor lines too over many decades would be a grey haze.
        steps = range(1, 10) if decades <= 3.5 else (1,)
        for e in range(math.floor(self.l0), math.ceil(self.l1) + 1):
            for m in steps:
                v = m * 10.0 ** e
                if self.lo * (1 - 1e-9) <= v <= self.hi * (1 + 1e-9):
                    out.append((v, fmt_num(v) if m in labelled else "", m in labelled))
        return out


def bar_log_scale(values, a, b, headroom=0.15):
    """A log value axis for bars: the bars start at the power of ten below the smallest value
    (so each bar's length still grows with its value), with room above for annotations."""
    lo = 10 ** math.floor(math.log10(min(values)))
    top = math.log10(max(values))
    hi = 10 ** (top + headroom * max(top - math.log10(lo), 1.0))
    return Log(lo, hi, a, b)


# --------------------------------------------------------------------------------------------
# SVG drawing

def r1(v):
    # Rounded coordinates keep the files small and the output stable across platforms.
    return f"{v:.1f}".rstrip("0").rstrip(".")


def text_width(s, size):
    # No font metrics without a renderer: 0.6 em per character is about the widest of the usual
    # sans-serif fonts (DejaVu Sans), so legends and wrapped labels do not collide.
    return len(s) * size * 0.6


def wrap(s, max_width, size):
    words, lines, cur = s.split(), [], ""
    for w in words:
        cand = f"{cur} {w}" if cur else w
        if cur and text_width(cand, size) > max_width:
            lines.append(cur)
            cur = w
        else:
            cur = cand
    if cur:
        lines.append(cur)
    return lines or [""]


def marker_path(kind, x, y, r=4.0):
    if kind == "square":
        r *= 0.9
        return f"M{r1(x - r)},{r1(y - r)}h{r1(2 * r)}v{r1(2 * r)}h{r1(-2 * r)}Z"
    if kind == "triangle":
        r *= 1.15
        return (f"M{r1(x)},{r1(y - r)}L{r1(x + r * 0.95)},{r1(y + r * 0.7)}"
                f"L{r1(x - r * 0.95)},{r1(y + r * 0.7)}Z")
    if kind == "diamond":
        r *= 1.2
        return f"M{r1(x)},{r1(y - r)}L{r1(x + r)},{r1(y)}L{r1(x)},{r1(y + r)}L{r1(x - r)},{r1(y)}Z"
    # circle as a path: one element kind for every marker
    return (f"M{r1(x - r)},{r1(y)}a{r1(r)},{r1(r)} 0 1,0 {r1(2 * r)},0"
            f"a{r1(r)},{r1(r)} 0 1,0 {r1(-2 * r)},0Z")


def title_el(tooltip):
    return f"<title>{escape(tooltip)}</title>" if tooltip else ""


class Figure:
    """One chart: title, subtitle, a plot area with axes, and a legend below it. Elements are
    collected as strings; the height is known only once the legend is laid out."""

    def __init__(self, title, subtitle, source, plot_height=300, left=74, right=24):
        self.title, self.source = title, source
        self.body = []
        self.left, self.right = left, WIDTH - right
        y = 30
        self.head = [self._text(WIDTH / 2, y, title, 16, "middle", weight="bold")]
        for line in subtitle:
            for part in wrap(line, WIDTH - 40, 11.5):
                y += 16
                self.head.append(self._text(WIDTH / 2, y, part, 11.5, "middle", fill=MUTED))
        self.top = y + 22
        self.bottom = self.top + plot_height
        self.cursor = self.bottom  # lowest y used below the plot area so far

    @staticmethod
    def _text(x, y, s, size=12, anchor="start", weight=None, fill=INK, rotate=False,
              cls=None):
        attrs = [f'x="{r1(x)}"', f'y="{r1(y)}"', f'font-size="{size:g}"']
        if anchor != "start":
            attrs.append(f'text-anchor="{anchor}"')
        if weight:
            attrs.append(f'font-weight="{weight}"')
        if fill != INK:
            attrs.append(f'fill="{fill}"')
        if rotate:
            attrs.append(f'transform="rotate(-90 {r1(x)} {r1(y)})"')
        if cls:
            attrs.append(f'class="{cls}"')
        return f"<text {' '.join(attrs)}>{escape(s)}</text>"

    def text(self, *args, **kwargs):
        self.body.append(self._text(*args, **kwargs))

    def line(self, x1, y1, x2, y2, stroke=INK, width=1.0, dash=None, cls=None, tooltip=None):
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        extra += f' class="{cls}"' if cls else ""
        self.body.append(f'<line x1="{r1(x1)}" y1="{r1(y1)}" x2="{r1(x2)}" y2="{r1(y2)}" '
                         f'stroke="{stroke}" stroke-width="{width:g}"{extra}>'
                         f'{title_el(tooltip)}</line>')

    def polyline(self, points, stroke, width=2.0, dash=None, cls="data series", tooltip=None,
                 opacity=None):
        pts = " ".join(f"{r1(x)},{r1(y)}" for x, y in points)
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        extra += f' stroke-opacity="{opacity:g}"' if opacity is not None else ""
        self.body.append(f'<polyline class="{cls}" points="{pts}" fill="none" stroke="{stroke}" '
                         f'stroke-width="{width:g}" stroke-linejoin="round"{extra}>'
                         f'{title_el(tooltip)}</polyline>')

    def marker(self, kind, x, y, color, tooltip=None):
        self.body.append(f'<path class="data marker" d="{marker_path(kind, x, y)}" '
                         f'fill="{color}" stroke="#ffffff" stroke-width="0.8">'
                         f'{title_el(tooltip)}</path>')

    def bar(self, x, y, w, h, color, tooltip=None):
        self.body.append(f'<rect class="data bar" x="{r1(x)}" y="{r1(y)}" width="{r1(w)}" '
                         f'height="{r1(max(h, 0.0))}" fill="{color}">{title_el(tooltip)}</rect>')

    def value_axis(self, scale, label):
        """Horizontal grid lines with labels on the left, and the axis title rotated."""
        for v, lab, major in scale.ticks():
            y = scale(v)
            self.line(self.left, y, self.right, y, GRID if major else "#f1f1f1", 1)
            if lab:
                self.text(self.left - 7, y + 4, lab, 11, "end")
        self.text(18, (self.top + self.bottom) / 2, label, 12, "middle", rotate=True)

    def x_axis(self, scale, label):
        """Vertical grid lines with labels under the plot (any scale with ticks()), then the
        axis title."""
        for v, lab, major in scale.ticks():
            x = scale(v)
            self.line(x, self.top, x, self.bottom, GRID if major else "#f1f1f1", 1)
            if lab:
                self.line(x, self.bottom, x, self.bottom + 4, INK, 1)
                self.text(x, self.bottom + 17, lab, 11, "middle")
        self.cursor = self.bottom + 22
        self.x_title(label)

    def category_axis(self, centres, labels, max_width):
        lines_used = 1
        for x, lab in zip(centres, labels):
            parts = []
            for piece in lab.split("\n"):
                parts += wrap(piece, max_width, 11)
            for i, part in enumerate(parts):
                self.text(x, self.bottom + 17 + 13 * i, part, 11, "middle")
            lines_used = max(lines_used, len(parts))
        self.cursor = self.bottom + 22 + 13 * (lines_used - 1)

    def x_title(self, label):
        self.text((self.left + self.right) / 2, self.cursor + 16, label, 12, "middle")
        self.cursor += 22

    def frame(self):
        # Drawn last among the plot elements, so the axes sit on top of grid lines and bars.
        self.line(self.left, self.bottom, self.right, self.bottom, INK, 1.2)
        self.line(self.left, self.top, self.left, self.bottom, INK, 1.2)

    def legend(self, items):
        """items: (kind, style, label) with kind 'line' (style: colour, marker, dash), 'marker'
        (style: colour, marker; a point of a scatter plot) or 'bar' (style: colour). Laid out
        left to right under the axis title, wrapping as needed."""
        size, swatch, gap = 12, 28, 20
        x, y = self.left, self.cursor + 20
        for kind, style, label in items:
            w = swatch + 6 + text_width(label, size)
            if x > self.left and x + w > self.right:
                x, y = self.left, y + 19
            cy = y - 4
            if kind == "bar":
                self.body.append(f'<rect x="{r1(x + 6)}" y="{r1(cy - 6)}" width="16" '
                                 f'height="12" fill="{style[0]}"/>')
            elif kind == "marker":
                color, mk = style
                self.body.append(f'<path d="{marker_path(mk, x + swatch / 2, cy)}" '
                                 f'fill="{color}" stroke="#ffffff" stroke-width="0.8"/>')
            else:
                color, mk, dash = style
                self.line(x, cy, x + swatch, cy, color, 2 if not dash else 1.6, dash)
                if mk:
                    self.body.append(f'<path d="{marker_path(mk, x + swatch / 2, cy)}" '
                                     f'fill="{color}" stroke="#ffffff" stroke-width="0.8"/>')
            self.text(x + swatch + 6, y, label, size, cls="legend")
            x += w + gap
        self.cursor = y + 8

    def render(self):
        height = math.ceil(self.cursor + 14)
        head = [
            '<?xml version="1.0" encoding="UTF-8"?>',
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" font-family="{FONT}" fill="{INK}" role="img">',
            f"<title>{escape(self.title)}</title>",
            f"<desc>{escape(f'Generated by bench/plots/plot.py from {self.source}')}</desc>",
            f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
        ]
        return "\n".join(head + self.head + self.body + ["</svg>", ""])


# --------------------------------------------------------------------------------------------
# The charts

def plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def chart_finish_messages(rows, source):
    by_places = {}
    for (p, n), r in sorted(rows.items()):
        by_places.setdefault(p, []).append(r)
    ok = all(r["control"] <= 2 * r["ideal"] + 1e-9 for r in rows.values())
    places = sorted(by_places)
    span = f"{places[0]}" if len(places) == 1 else f"{places[0]} to {places[-1]}"
    fig = Figure(
        "Finish control messages per finish",
        ["Control messages grow with the number of places, not with the number of asyncs per "
         "finish.",
         f"Target: <= 2 x ideal at every size ({span} places): {'PASS' if ok else 'MISS'}"],
        source)
    asyncs = [n for (_, n) in rows]
    # Padded by a fifth of a decade so that the end markers are not cut by the frame.
    xs = Log(min(asyncs) / 10 ** 0.2, max(asyncs) * 10 ** 0.2, fig.left, fig.right)
    top = max(max(r["control"], 2 * r["ideal"]) for r in rows.values())
    ys = Linear.from_zero(max(top, 1.0), fig.bottom, fig.top)
    fig.value_axis(ys, "control messages per finish")
    fig.x_axis(xs, "asyncs per finish (log scale)")

    legend = []
    # Limits first, so that a line lying exactly on its limit stays visible on top of it.
    for i, p in enumerate(places):
        color = PALETTE[i % len(PALETTE)]
        pts = [(xs(r["asyncs"]), ys(2 * r["ideal"])) for r in by_places[p]]
        fig.polyline(pts, color, 1.4, dash="6 4", cls="limit", opacity=0.75,
                     tooltip=f"{plural(p, 'place')}: limit 2 x ideal")
    for i, p in enumerate(places):
        color, mk = PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)]
        pts = [(xs(r["asyncs"]), ys(r["control"])) for r in by_places[p]]
        fig.polyline(pts, color, 2.2, tooltip=f"{plural(p, 'place')}: control messages")
        for r, (x, y) in zip(by_places[p], pts):
            fig.marker(mk, x, y, color,
                       f"{plural(p, 'place')}, {int(r['asyncs'])} asyncs: {r['control']:.2f} "
                       f"control messages per finish (ideal {r['ideal']:g}, "
                       f"{r['us']:.1f} us per finish)")
        legend.append(("line", (color, mk, None), plural(p, "place")))
    legend.append(("line", ("#777777", None, "6 4"), "limit 2 x ideal (dashed, same colour)"))
    fig.frame()
    fig.legend(legend)
    return fig.render()


def chart_at_latency(data, source):
    rows, target = data["rows"], data["target"]
    ok = all(r["ratio_median"] <= target for r in rows)
    sub = [f"Target: at median <= {target:g} x raw median at every size: "
           f"{'PASS' if ok else 'MISS'}. Whiskers: p90."]
    if data["config"]:
        sub.append(data["config"])
    fig = Figure("apgas at round trip against a raw MPI ping-pong", sub, source)
    tops = [max(r["raw_p90"], r["at_p90"], target * r["raw_median"]) for r in rows]
    # Every bar's median: the axis starts below the smallest (the transport's MPI calls can be
    # faster than the raw ping-pong).
    medians = [r[k] for r in rows for k in ("raw_median", "pattern_median", "at_median")
               if r.get(k)]
    ys = bar_log_scale(medians + tops, fig.bottom, fig.top)
    fig.value_axis(ys, "round trip, microseconds (log scale)")

    raw_c, pattern_c, at_c = "#6b8fb8", "#b9c9dc", PALETTE[1]
    with_pattern = any(r.get("pattern_median") for r in rows)
    group = (fig.right - fig.left) / len(rows)
    bw = min(group * (0.22 if with_pattern else 0.28), 70)
    centres = []
    for i, r in enumerate(rows):
        cx = fig.left + group * (i + 0.5)
        centres.append(cx)
        bars = [("raw_median", "raw_p90", raw_c, "raw MPI")]
        if with_pattern:  # median only: the file gives no p90 for it
            bars.append(("pattern_median", None, pattern_c, "transport's MPI calls"))
        bars.append(("at_median", "at_p90", at_c, "apgas at"))
        width = len(bars) * bw + (len(bars) - 1) * 4  # the pair (or three), 4 px apart
        x_at = cx + width / 2 - bw
        for j, (key, p90, color, who) in enumerate(bars):
            x = cx - width / 2 + j * (bw + 4)
            v = r.get(key)
            if not v:
                continue
            tip = f"{who}, {r['payload']}: median {v:.2f} us"
            fig.bar(x, ys(v), bw, fig.bottom - ys(v), color,
                    tip + (f", p90 {r[p90]:.2f} us" if p90 else ""))
            if p90 and r[p90] > v:  # whisker up to p90
                fig.line(x + bw / 2, ys(v), x + bw / 2, ys(r[p90]), INK, 1)
                fig.line(x + bw / 2 - 5, ys(r[p90]), x + bw / 2 + 5, ys(r[p90]), INK, 1)
        # The target limit, drawn across the `at` bar: the bar must stay below it.
        lim = target * r["raw_median"]
        fig.line(x_at - 8, ys(lim), x_at + bw + 6, ys(lim), INK, 1.6, "5 3", cls="limit",
                 tooltip=f"limit {target:g} x raw median = {lim:.2f} us")
        y_top = ys(max(r["raw_p90"], r["at_p90"], lim))
        fig.text(cx, y_top - 8, f"{r['ratio_median']:.2f}x", 12, "middle", weight="bold")
    fig.category_axis(centres, [r["payload"] for r in rows], group - 8)
    fig.x_title("payload (ratio above each pair: at median / raw median)")
    fig.frame()
    legend = [("bar", (raw_c,), "raw MPI ping-pong (median)")]
    if with_pattern:
        legend.append(("bar", (pattern_c,), "the transport's MPI calls alone (median)"))
    legend += [("bar", (at_c,), "apgas at (median)"),
               ("line", (INK, None, "5 3"), f"limit {target:g} x raw median")]
    fig.legend(legend)
    return fig.render()


def chart_async_throughput(data, source):
    reps, result = data["reps"], data["result"] or {}
    on_c, off_c = PALETTE[0], "#999999"
    if reps:
        groups = [(f"rep {k}", reps[k]) for k in sorted(reps)]
    else:
        # Only the RESULT line: its medians, and its ratio (the median of the pairs' ratios,
        # which is not the ratio of the two medians).
        groups = [("median of the runs", {k: v for k, v in result.items() if k in ("on", "off")})]

    def ratio_of(g):
        if "on" not in g or "off" not in g:
            return None
        return g["on"] / g["off"] if reps else result.get("ratio", g["on"] / g["off"])

    ratios = [x for x in (ratio_of(g) for _, g in groups) if x is not None]
    sub = []
    if ratios:
        median_ratio = result.get("ratio", statistics.median(ratios))
        verdict = "PASS" if median_ratio >= 10 else "MISS"
        if reps:
            sub.append(f"Ratio on/off of each pair: median {median_ratio:.1f}x, lowest "
                       f"{min(ratios):.1f}x; target >= 10x: {verdict}")
        else:
            sub.append(f"Ratio on/off, median over the pairs: {median_ratio:.1f}x; target >= 10x: "
                       f"{verdict}")
        if reps and "on" in result and "off" in result:
            sub.append(f"Median asyncs/s: on {fmt_num(result['on'])}, "
                       f"off {fmt_num(result['off'])}")
    what = (f"{data['asyncs']} " if data["asyncs"] else "") + \
        "async_at(1, 8-byte argument) in one finish from place 0"
    sub.append(what + (f"; {data['config']}" if data["config"] else ""))
    modes = [k for k in ("on", "off") if any(k in g for _, g in groups)]
    title = "Remote asyncs per second, " + (
        "coalescing on and off" if len(modes) == 2 else f"coalescing {modes[0]}")
    fig = Figure(title, sub, source)

    top = max(max(g.values()) for _, g in groups)
    if ratios:
        top = max([top] + [10 * g["off"] for _, g in groups if "on" in g and "off" in g])
    ys = Linear.from_zero(top, fig.bottom, fig.top, headroom=1.12)
    fig.value_axis(ys, "asyncs per second")
    group = (fig.right - fig.left) / len(groups)
    bw = min(group * 0.3, 60)
    centres = []
    for i, (name, g) in enumerate(groups):
        cx = fig.left + group * (i + 0.5)
        centres.append(cx)
        present = [k for k in ("on", "off") if k in g]
        for j, k in enumerate(present):
            x = cx - bw * len(present) / 2 + j * bw + (j - (len(present) - 1) / 2) * 4
            v = g[k]
            fig.bar(x, ys(v), bw, fig.bottom - ys(v), on_c if k == "on" else off_c,
                    f"{name}, coalescing {k}: {v:.0f} asyncs/s")
        ratio = ratio_of(g)
        if ratio is not None:
            # The target drawn across the "on" bar: 10 times its "off" partner.
            lim = 10 * g["off"]
            x_on = cx - bw - 2
            fig.line(x_on - 6, ys(lim), x_on + bw + 6, ys(lim), INK, 1.6, "5 3", cls="limit",
                     tooltip=f"target: 10 x off = {lim:.0f} asyncs/s")
            fig.text(cx, ys(max(g["on"], lim)) - 8, f"{ratio:.1f}x", 12, "middle",
                     weight="bold")
    fig.category_axis(centres, [n for n, _ in groups], group - 8)
    if not ratios:
        fig.x_title("run")
    else:
        fig.x_title("pair of runs (ratio above each pair: on / off)" if reps
                    else "RESULT line (ratio above: median of the pairs' on / off)")
    fig.frame()
    legend = [("bar", (on_c if k == "on" else off_c,), f"coalescing {k}") for k in modes]
    if ratios:
        legend.append(("line", (INK, None, "5 3"), "target: 10 x off"))
    fig.legend(legend)
    return fig.render()


APP_VARIANTS = ["apgas-wf", "apgas-hf", "tbb", "omp"]
APP_NAMES = {"apgas-wf": "apgas work-first", "apgas-hf": "apgas help-first", "tbb": "TBB",
             "omp": "OpenMP"}


def is_fine_grained(r):
    # Cases without a cutoff: every call is a task, so ns/task shows the scheduler on the
    # smallest tasks. `coarse` is false for them; `one_task_per_call` (fib) implies it.
    return r.get("coarse") is False or r.get("one_task_per_call") is True


def mostly_waiting(r, workers):
    """True when the workers' CPU time is under half of the run time: such a run measured
    waiting (sleeping, descheduled) more than scheduling, so its ns/task deserves a flag."""
    cpu, wall = r.get("cpu_seconds"), r.get("seconds")
    if isinstance(cpu, bool) or isinstance(wall, bool):
        return False
    if not isinstance(cpu, (int, float)) or not isinstance(wall, (int, float)) or wall <= 0:
        return False
    return cpu / (wall * workers) < 0.5


def chart_apps(rows, path, source, workers=1):
    cases, values, tasks, waiting = [], {}, {}, set()
    for r in rows:
        ns = r.get("ns_per_task")
        if (r.get("workers") != workers or r.get("built") is False or not is_fine_grained(r)
                or r.get("variant") in (None, "sequential") or isinstance(ns, bool)
                or not isinstance(ns, (int, float)) or not ns > 0 or not math.isfinite(ns)):
            continue
        case = str(r.get("case", r.get("app", "?")))
        if case not in values:
            cases.append(case)
            values[case] = {}
        values[case][str(r["variant"])] = float(ns)
        if mostly_waiting(r, workers):
            waiting.add((case, str(r["variant"])))
        if isinstance(r.get("tasks"), int) and r["tasks"] > 0:
            tasks[case] = r["tasks"]
    if not cases:
        raise InputError(f"{path}: no fine-grained rows with ns_per_task at {workers} "
                         "worker(s) (expected `bench_apps --json` output)")
    seen = {v for c in cases for v in values[c]}
    # The known variants in a fixed order (same colour in every picture), then any new ones.
    variants = [v for v in APP_VARIANTS if v in seen] + sorted(seen - set(APP_VARIANTS))
    all_v = [x for c in cases for x in values[c].values()]
    log = max(all_v) / min(all_v) > 20
    fig = Figure(
        "Nanoseconds per task, fine-grained cases",
        [f"{plural(workers, 'worker')}; cases without a cutoff (every call a task): run time / "
         "tasks. Lower is better."]
        + (["*: CPU time under half of the run time (mostly waiting, not working)"]
           if waiting else []),
        source)
    ys = bar_log_scale(all_v, fig.bottom, fig.top) if log else \
        Linear.from_zero(max(all_v), fig.bottom, fig.top, headroom=1.12)
    fig.value_axis(ys, "ns per task" + (" (log scale)" if log else ""))
    group = (fig.right - fig.left) / len(cases)
    bw = min((group - 16) / len(variants), 48)
    centres = []
    for i, case in enumerate(cases):
        cx = fig.left + group * (i + 0.5)
        centres.append(cx)
        x0 = cx - bw * len(variants) / 2
        for j, v in enumerate(variants):
            if v not in values[case]:
                continue  # not built or not run: a gap keeps the other bars in place
            val = values[case][v]
            x = x0 + j * bw
            color = PALETTE[j % len(PALETTE)]
            flag = "*" if (case, v) in waiting else ""
            fig.bar(x + 1, ys(val), bw - 2, fig.bottom - ys(val), color,
                    f"{case}, {APP_NAMES.get(v, v)}: {val:.1f} ns per task"
                    + (" (CPU time under half of the run time)" if flag else ""))
            fig.text(x + bw / 2, ys(val) - 4, fmt_value(val) + flag, 9.5 if bw >= 26 else 8,
                     "middle")
    labels = [c + (f"\n{tasks[c]} tasks" if c in tasks else "") for c in cases]
    fig.category_axis(centres, labels, group - 6)
    fig.x_title("case")
    fig.frame()
    fig.legend([("bar", (PALETTE[j % len(PALETTE)],), APP_NAMES.get(v, v))
                for j, v in enumerate(variants)])
    return fig.render()


SPEEDUP_APPS = ("fib", "integrate", "nqueens")  # the apps target (b) names
SPEEDUP_VARIANTS = ("apgas-wf", "apgas-hf", "tbb")  # OpenMP's fine-grained runs do not scale
SPEEDUP_TARGET = 1.8
COPIES = "seq-copies"  # bench_apps' rows of the sequential kernel run as 1 and 2 copies at once


def speedup_points(rows, path):
    """(case, variant, ceiling, speedup) for every case of SPEEDUP_APPS with both a ceiling and
    1- and 2-worker rows of the variant."""
    seconds = {}
    for r in rows:
        t = r.get("seconds")
        if (r.get("built") is False or isinstance(t, bool) or not isinstance(t, (int, float))
                or not t > 0 or not math.isfinite(t)):
            continue
        seconds[(str(r.get("case")), str(r.get("variant")), r.get("workers"))] = (
            float(t), str(r.get("app")))
    points = []
    for (case, variant, workers), (one, app) in sorted(seconds.items()):
        if variant != COPIES or workers != 1 or app not in SPEEDUP_APPS:
            continue
        two = seconds.get((case, COPIES, 2))
        if two is None:
            continue
        ceiling = 2 * one / two[0]
        for v in SPEEDUP_VARIANTS:
            a, b = seconds.get((case, v, 1)), seconds.get((case, v, 2))
            if a is not None and b is not None:
                points.append((case, v, ceiling, a[0] / b[0]))
    if not points:
        raise InputError(f"{path}: no case of {', '.join(SPEEDUP_APPS)} with {COPIES} rows and "
                         "1- and 2-worker runs (expected `bench_apps --json` output)")
    return points


def chart_speedup(runs, source):
    """runs: one list of speedup_points per bench_apps run."""
    points = [p for run in runs for p in run]
    apgas = [p for p in points if p[1].startswith("apgas")]
    below = [p for p in apgas if p[2] < SPEEDUP_TARGET]
    above = [p for p in apgas if p[2] >= SPEEDUP_TARGET]
    tracks = sum(1 for p in below if p[3] >= 0.95 * p[2])
    meets = sum(1 for p in above if p[3] >= SPEEDUP_TARGET)
    sub = [f"{plural(len(runs), 'run')} of bench_apps, each point the best of its rounds. "
           "Ceiling: two copies of the sequential kernel at once against one, in the same "
           "rounds (what a perfect scheduler could reach then).",
           f"apgas: >= {SPEEDUP_TARGET:g} in {meets} of {len(above)} points where the machine "
           f"allowed {SPEEDUP_TARGET:g}; >= 95% of the ceiling in {tracks} of {len(below)} "
           "where it did not."]
    fig = Figure("Speedup of 2 workers over 1 against the machine's ceiling", sub, source,
                 plot_height=360)
    values = [p[2] for p in points] + [p[3] for p in points] + [SPEEDUP_TARGET]
    lo = math.floor((min(values) - 0.05) * 10) / 10
    hi = math.ceil((max(values) + 0.05) * 10) / 10
    xs = Linear(lo, hi, fig.left, fig.right)
    ys = Linear(lo, hi, fig.bottom, fig.top)
    fig.value_axis(ys, "speedup, 2 workers over 1")
    # What a perfect scheduler reaches (speedup = ceiling), and the target.
    fig.line(xs(lo), ys(lo), xs(hi), ys(hi), MUTED, 1.2, "6 4", cls="limit",
             tooltip="speedup = the machine's ceiling")
    fig.line(fig.left, ys(SPEEDUP_TARGET), fig.right, ys(SPEEDUP_TARGET), INK, 1.4, "2 3",
             cls="limit", tooltip=f"target {SPEEDUP_TARGET:g}")
    for j, v in enumerate(SPEEDUP_VARIANTS):
        for case, variant, ceiling, speedup in points:
            if variant == v:
                fig.marker(MARKERS[j % len(MARKERS)], xs(ceiling), ys(speedup),
                           PALETTE[j % len(PALETTE)],
                           f"{case}, {APP_NAMES.get(v, v)}: speedup {speedup:.2f}, "
                           f"ceiling {ceiling:.2f}")
    fig.x_axis(xs, "the machine's ceiling in the same run (2 copies of the sequential kernel)")
    fig.frame()
    fig.legend([("marker", (PALETTE[j % len(PALETTE)], MARKERS[j % len(MARKERS)]),
                 APP_NAMES.get(v, v)) for j, v in enumerate(SPEEDUP_VARIANTS)]
               + [("line", (MUTED, None, "6 4"), "speedup = ceiling"),
                  ("line", (INK, None, "2 3"), f"target {SPEEDUP_TARGET:g}")])
    return fig.render()


# The workloads drawn (sim_protocols names them), in a fixed order: the same colour everywhere.
SCALING_WORKLOADS = [("dense_finish", "a finish, one activity per place"),
                     ("for_each_place", "for_each_place"),
                     ("at_each_place", "at_each_place"),
                     ("clock_phase", "a clock phase, one registrant per place")]
FLAT_DASH = "6 4"


def render_stacked(figs, title, source):
    """Figures one above the other in one SVG (each keeps its own title and legend)."""
    parts, y = [], 0
    for fig in figs:
        parts.append(f'<g transform="translate(0 {y})">')
        parts += fig.head + fig.body
        parts.append("</g>")
        y += math.ceil(fig.cursor + 14)
    head = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{y}" '
        f'viewBox="0 0 {WIDTH} {y}" font-family="{FONT}" fill="{INK}" role="img">',
        f"<title>{escape(title)}</title>",
        f"<desc>{escape(f'Generated by bench/plots/plot.py from {source}')}</desc>",
        f'<rect width="{WIDTH}" height="{y}" fill="#ffffff"/>',
    ]
    return "\n".join(head + parts + ["</svg>", ""])


def chart_scaling(data, path, source):
    series, arity = data["series"], data["arity"]
    drawn = [(w, label) for w, label in SCALING_WORKLOADS
             if (w, "tree") in series or (w, "flat") in series]
    if not drawn:
        raise InputError(f"{path}: none of the workloads "
                         f"{', '.join(w for w, _ in SCALING_WORKLOADS)} in it")
    tree = f"tree of {arity} children" if arity else "tree"
    places = [p for w, _ in drawn for s in ("tree", "flat") for p, _ in series.get((w, s), [])]
    panels = [("most_handled", "Messages handled by the busiest place",
               "messages handled by the busiest place (log scale)", True,
               [f"The protocols simulated in rounds by sim_protocols; {tree} (flat up to "
                f"{arity + 1 if arity else '?'} places), or flat: every place a child of the "
                "home. Where lines coincide, the later ones are drawn narrower on top."]),
              ("end_round", "Rounds to the end (one hop each)", "rounds to the end", False,
               ["Until the finish completed, the broadcast was done, the phase ended everywhere. "
                "Flat: 2 rounds at any size; the tree: O(log P), at_each_place O(log² P) "
                "(see docs/scaling.md)."])]
    figs = []
    for field, title, ylabel, log, subtitle in panels:
        fig = Figure(title, subtitle, source, plot_height=260)
        xs = Log(max(1, min(places)), max(places), fig.left + 8, fig.right - 8)
        values = [v[field] for w, _ in drawn for s in ("tree", "flat")
                  for _, v in series.get((w, s), []) if not log or v[field] > 0]
        ys = bar_log_scale(values, fig.bottom, fig.top, headroom=0.08) if log else \
            Linear.from_zero(max(values), fig.bottom, fig.top, headroom=1.1)
        fig.value_axis(ys, ylabel)
        for j, (w, label) in enumerate(drawn):
            color, mk = PALETTE[j % len(PALETTE)], MARKERS[j % len(MARKERS)]
            for scheme in ("flat", "tree"):
                pts = [(p, v[field]) for p, v in series.get((w, scheme), [])
                       if not log or v[field] > 0]
                if not pts:
                    continue
                name = tree if scheme == "tree" else "flat"
                # Wider first, so that a line that coincides with a later one still shows.
                fig.polyline([(xs(p), ys(v)) for p, v in pts], color,
                             1.8 + 1.2 * (len(drawn) - 1 - j) if scheme == "tree" else 1.6,
                             None if scheme == "tree" else FLAT_DASH,
                             tooltip=f"{label}, {name}")
                if scheme == "tree":
                    for p, v in pts:
                        fig.marker(mk, xs(p), ys(v), color,
                                   f"{label}, {name}, {p} places: {v:g}")
        fig.x_axis(xs, "places (log scale)")
        fig.frame()
        fig.legend([("line", (PALETTE[j % len(PALETTE)], MARKERS[j % len(MARKERS)], None), label)
                    for j, (_, label) in enumerate(drawn)]
                   + [("line", (INK, None, None), tree),
                      ("line", (INK, None, FLAT_DASH), "flat (dashed)")])
        figs.append(fig)
    return render_stacked(figs, "Many places, simulated: the busiest place and the rounds",
                          source)


# --------------------------------------------------------------------------------------------
# Command line

def note(msg):
    print(f"{PROG}: {msg}", file=sys.stderr)


def write(svg, out):
    if out == "-":
        sys.stdout.write(svg)
        return
    try:
        with open(out, "w", encoding="utf-8") as f:
            f.write(svg)
    except OSError as e:
        raise InputError(f"{out}: cannot write: {e.strerror or e}") from None
    print(f"{PROG}: wrote {out}")


def render_one(kind, paths, workers=1):
    source = ", ".join(os.path.basename(p) for p in paths)
    if kind == "finish-messages":
        return chart_finish_messages(parse_finish_messages(paths), source)
    if kind == "at-latency":
        return chart_at_latency(parse_at_latency(paths[0]), source)
    if kind == "async-throughput":
        return chart_async_throughput(parse_async_throughput(paths[0]), source)
    if kind == "apps":
        return chart_apps(parse_apps(paths[0]), paths[0], source, workers)
    if kind == "speedup":
        return chart_speedup([speedup_points(parse_apps(p), p) for p in paths], source)
    if kind == "scaling":
        return chart_scaling(parse_scaling(paths[0]), paths[0], source)
    raise AssertionError(kind)


ALL = [("finish-messages", "finish_messages.txt", "finish_messages.svg"),
       ("at-latency", "at_latency.txt", "at_latency.svg"),
       ("async-throughput", "async_throughput.txt", "async_throughput.svg"),
       ("apps", "bench_apps.json", "apps_ns_per_task.svg"),
       ("speedup", "bench_apps.json", "speedup_vs_ceiling.svg")]


def run_all(directory, outdir):
    if not os.path.isdir(directory):
        raise InputError(f"{directory}: not a directory")
    # Render everything before writing anything: a bad input leaves OUTDIR untouched.
    done, missing = [], []
    for kind, name, out in ALL:
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            missing.append(f"{path} not found, {out} skipped")
            continue
        done.append((render_one(kind, [path]), out))
    if not done:
        raise InputError(f"{directory}: none of {', '.join(n for _, n, _ in ALL)} found")
    for m in missing:
        note(m)
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        raise InputError(f"{outdir}: cannot create: {e.strerror or e}") from None
    for svg, out in done:
        write(svg, os.path.join(outdir, out))


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog=PROG, description="Plots of apgas benchmark results as SVG (standard library only).",
        epilog="See the docstring at the top of bench/plots/plot.py for the inputs.")
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND")
    sub.required = True
    p = sub.add_parser("finish-messages", help="bench_finish_messages output(s)")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-o", dest="out", required=True, metavar="OUT.svg")
    for name, what in (("at-latency", "bench_at_latency output"),
                       ("async-throughput", "run_async_throughput.sh output")):
        p = sub.add_parser(name, help=what)
        p.add_argument("files", nargs=1, metavar="FILE")
        p.add_argument("-o", dest="out", required=True, metavar="OUT.svg")
    p = sub.add_parser("apps", help="bench_apps --json output")
    p.add_argument("files", nargs=1, metavar="FILE.json")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="plot the runs at N workers (default 1)")
    p.add_argument("-o", dest="out", required=True, metavar="OUT.svg")
    p = sub.add_parser("speedup", help="bench_apps --json output(s): speedup against the "
                       "machine's ceiling")
    p.add_argument("files", nargs="+", metavar="FILE.json")
    p.add_argument("-o", dest="out", required=True, metavar="OUT.svg")
    p = sub.add_parser("scaling", help="sim_protocols --csv output: the protocols simulated "
                       "at up to 100,000 places")
    p.add_argument("files", nargs=1, metavar="FILE.csv")
    p.add_argument("-o", dest="out", required=True, metavar="OUT.svg")
    p = sub.add_parser("all", help="every chart from the files in DIR")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("-o", dest="out", required=True, metavar="OUTDIR")
    args = ap.parse_args(argv)  # usage errors: argparse prints them and exits with status 2

    try:
        if args.cmd == "all":
            run_all(args.dir, args.out)
        else:
            write(render_one(args.cmd, args.files, getattr(args, "workers", 1)), args.out)
    except InputError as e:
        note(f"error: {e}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A timeline of an apgas trace (--trace DIR) as a self-contained SVG (standard library only).

Usage:
    bench/plots/trace_timeline.py DIR/trace.json -o OUT.svg [--from US] [--to US]
                                  [--width PX] [--arrows N] [--title TEXT]

One row per thread of each place (its workers, then its network's "messages" row), time on
x. Activity slices fill the top of a worker's row and waits (finish, at, clock phase, when,
parked, GLB) its bottom, coloured by kind; steals (black) and GLB lifeline marks (red) are
ticks at the row's top; messages are arrows from the sending place's row to the receiving
one's (at most N of them, spread over the run; default 400). --from and --to cut a window (microseconds on the trace's clock). Slices
narrower than a pixel are joined with their neighbours of the same kind, so a long run stays
a small file.

Exit status: 0 on success; 2 on bad usage or a file that is no apgas trace.
"""
import argparse
import json
import sys
from xml.sax.saxutils import escape

COLOURS = {
    "activities": "#4878b8",
    "parked": "#d0d0d0",
    "finish wait": "#e89c3c",
    "at wait": "#e8d03c",
    "clock phase wait": "#9a5cc6",
    "when wait": "#d86a9a",
    "GLB steal": "#c83c3c",
    "GLB idle": "#808080",
    "send": "#2f8f4f",
    "receive": "#2f8f4f",
}
TOP = {"activities"}  # drawn in the top half of a row; the rest in the bottom half
ROW = 18
LEFT = 130
LEGEND = 40


def fail(message):
    print(f"trace_timeline.py: {message}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail(f"{path}: no traceEvents array (not a Chrome trace)")
    return doc["traceEvents"]


def main():
    ap = argparse.ArgumentParser(add_help=True)
    ap.add_argument("trace")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--from", dest="t0", type=float)
    ap.add_argument("--to", dest="t1", type=float)
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--arrows", type=int, default=400)
    ap.add_argument("--title", default=None)
    args = ap.parse_args()
    events = load(args.trace)

    names = {}  # (pid, tid) -> thread name
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    if not names:
        fail(f"{args.trace}: no thread names (not an apgas trace)")
    rows = {key: i for i, key in enumerate(sorted(names))}
    timed = [e for e in events if e.get("ph") in ("X", "i")]
    if not timed:
        fail(f"{args.trace}: no events")
    t0 = args.t0 if args.t0 is not None else min(e["ts"] for e in timed)
    t1 = args.t1 if args.t1 is not None else max(e["ts"] + e.get("dur", 0) for e in timed)
    if t1 <= t0:
        fail("empty time window")
    plot_w = args.width - LEFT - 10
    scale = plot_w / (t1 - t0)

    def x(t):
        return LEFT + (min(max(t, t0), t1) - t0) * scale

    height = LEGEND + ROW * len(rows) + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{args.width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{args.width}" height="{height}" fill="white"/>',
    ]
    title = args.title or f"apgas trace: {len({p for p, _ in rows})} places"
    out.append(f'<text x="{LEFT}" y="14" font-size="13">{escape(title)}</text>')
    # Legend.
    lx = LEFT
    for name in ["activities", "parked", "finish wait", "at wait", "clock phase wait",
                 "when wait", "GLB steal", "GLB idle"]:
        out.append(f'<rect x="{lx}" y="22" width="10" height="10" fill="{COLOURS[name]}"/>')
        out.append(f'<text x="{lx + 13}" y="31">{escape(name)}</text>')
        lx += 14 + 7 * len(name) + 10
    out.append(f'<text x="{lx}" y="31" fill="#2f8f4f">&#8594; message</text>')

    def row_y(key):
        return LEGEND + rows[key] * ROW

    previous_pid = None
    for key in sorted(rows):
        y = row_y(key)
        if key[0] != previous_pid and previous_pid is not None:
            out.append(f'<line x1="0" x2="{args.width}" y1="{y}" y2="{y}" stroke="#888"/>')
        previous_pid = key[0]
        fill = "#f4f4f4" if rows[key] % 2 == 0 else "#ffffff"
        out.append(f'<rect x="{LEFT}" y="{y}" width="{plot_w}" height="{ROW}" fill="{fill}"/>')
        label = f"place {key[0]} {names[key]}"
        out.append(f'<text x="4" y="{y + ROW - 5}">{escape(label)}</text>')

    # Slices, joined per row and kind while they are closer than a pixel.
    open_rects = {}
    rects = []
    for e in sorted((e for e in timed if e["ph"] == "X"), key=lambda e: e["ts"]):
        name = e["name"]
        key = (e["pid"], e["tid"])
        if name in ("send", "receive") or key not in rows:
            continue
        start, end = e["ts"], e["ts"] + e["dur"]
        if end < t0 or start > t1:
            continue
        xs, xe = x(start), x(end)
        slot = (key, name)
        r = open_rects.get(slot)
        if r is not None and xs - r[2] < 1.0:
            r[2] = max(r[2], xe)
            continue
        if r is not None:
            rects.append(r)
        open_rects[slot] = [slot, xs, xe]
    rects.extend(open_rects.values())
    for (key, name), xs, xe in rects:
        y = row_y(key) + (1 if name in TOP else ROW // 2 + 1)
        h = ROW // 2 - 2 if name in TOP else ROW // 2 - 2
        w = max(xe - xs, 0.6)
        out.append(f'<rect x="{xs:.1f}" y="{y}" width="{w:.1f}" height="{h}" '
                   f'fill="{COLOURS.get(name, "#999")}"><title>{escape(name)}</title></rect>')

    # Marks: steals (black) and GLB lifeline registrations and loot (red), ticks at the top of
    # the row.
    for e in timed:
        if e["ph"] == "i" and t0 <= e["ts"] <= t1:
            key = (e["pid"], e["tid"])
            if key in rows:
                xs = x(e["ts"])
                y = row_y(key)
                colour = "black" if e["name"] == "steal" else "#c83c3c"
                out.append(f'<line x1="{xs:.1f}" x2="{xs:.1f}" y1="{y}" y2="{y + 5}" '
                           f'stroke="{colour}" stroke-width="0.8"><title>{escape(e["name"])}'
                           '</title></line>')

    # Messages: arrows from send to receive, spread over the window.
    sends = {e["bind_id"]: e for e in timed if e["name"] == "send" and "bind_id" in e}
    pairs = []
    for e in timed:
        if e["name"] == "receive" and e.get("bind_id") in sends:
            s = sends[e["bind_id"]]
            if t0 <= s["ts"] <= t1 or t0 <= e["ts"] <= t1:
                pairs.append((s, e))
    pairs.sort(key=lambda p: p[0]["ts"])
    step = max(1, len(pairs) // max(args.arrows, 1))
    out.append('<defs><marker id="head" markerWidth="6" markerHeight="6" refX="5" refY="3" '
               'orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#2f8f4f"/></marker></defs>')
    for s, r in pairs[::step]:
        ks, kr = (s["pid"], s["tid"]), (r["pid"], r["tid"])
        if ks not in rows or kr not in rows:
            continue
        count = s["args"].get("messages", 1)
        out.append(f'<line x1="{x(s["ts"]):.1f}" y1="{row_y(ks) + ROW / 2}" '
                   f'x2="{x(r["ts"]):.1f}" y2="{row_y(kr) + ROW / 2}" stroke="#2f8f4f" '
                   f'stroke-width="0.8" marker-end="url(#head)"><title>{count} message(s), '
                   f'{s["args"].get("bytes", 0)} bytes</title></line>')

    # Time axis.
    axis_y = LEGEND + ROW * len(rows) + 14
    span = t1 - t0
    unit, div = ("ms", 1000.0) if span >= 2000 else ("us", 1.0)
    for i in range(6):
        t = t0 + span * i / 5
        xs = x(t)
        out.append(f'<line x1="{xs:.1f}" x2="{xs:.1f}" y1="{axis_y - 10}" y2="{axis_y - 6}" '
                   'stroke="black"/>')
        out.append(f'<text x="{xs:.1f}" y="{axis_y + 4}" text-anchor="middle">'
                   f'{(t - t0) / div:.1f} {unit}</text>')
    if len(pairs) > args.arrows:
        out.append(f'<text x="{LEFT}" y="{axis_y + 20}">{len(pairs)} messages, '
                   f'one arrow in {step} drawn</text>')
    out.append("</svg>")
    text = "\n".join(out) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()

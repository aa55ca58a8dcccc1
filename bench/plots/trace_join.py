#!/usr/bin/env python3
"""Joins the places' trace files of a run (--trace DIR) into DIR/trace.json.

Usage:
    bench/plots/trace_join.py DIR

Place 0 does this itself at the end of a run when it sees every place's file. On several nodes
without a shared file system it does not: copy every node's DIR/place-<p>.json into one
directory and run this there. Exit status: 0 on success; 2 if a place's file is missing or is
not JSON.
"""
import glob
import json
import os
import re
import sys


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    directory = sys.argv[1]
    files = glob.glob(os.path.join(directory, "place-*.json"))
    places = sorted(int(re.search(r"place-(\d+)\.json$", f).group(1)) for f in files)
    if not places or places != list(range(len(places))):
        print(f"trace_join.py: {directory}: expected place-0.json .. place-N.json, found "
              f"{[os.path.basename(f) for f in files]}", file=sys.stderr)
        return 2
    events = []
    for p in places:
        path = os.path.join(directory, f"place-{p}.json")
        try:
            with open(path) as f:
                events.extend(json.load(f)["traceEvents"])
        except (OSError, ValueError, KeyError) as e:
            print(f"trace_join.py: {path}: {e}", file=sys.stderr)
            return 2
    with open(os.path.join(directory, "trace.json"), "w") as f:
        json.dump({"displayTimeUnit": "ns", "traceEvents": events}, f, separators=(",", ":"))
    print(f"trace_join.py: {len(places)} places, {len(events)} events")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Runs the applications at one place under several configurations, taking turns, and prints
the median of each configuration's times per app (each time the best of the app's own
--repeat), with the ratio of every configuration to the first.

A configuration is a label, a folder of app binaries and extra flags:

    bench/one_place_apps.py --config default=build/release/apps \\
        --config 'fence-off=/tmp/old/apps:--asymmetric-fence no' --runs 5

    --config LABEL=DIR[:FLAGS]   DIR holds the apps (DIR/<folder>/<app> as the build lays them
                                 out, or DIR/<app> flat); FLAGS are added to every command
    --runs N                     alternating rounds (default 3)
    --threads T                  workers (default 2)
    --only a,b                   apps by name (default: all of APPS below)
    --json                       one JSON object per app and configuration on stdout

Every app checks its own result; a run that fails or is not verified stops the script. Take
figures on a quiet machine (the load is printed first).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

# name -> (folder, arguments): sizes that run for 0.05 to 1 s at 2 workers.
APPS = {
    "averaging": ("averaging", ["--repeat", "3"]),
    "averaging-finish": ("averaging", ["--sync", "finish", "--repeat", "3"]),
    "heat": ("heat", ["--repeat", "3"]),
    "heat-512": ("heat", ["--n", "512", "--repeat", "3"]),
    "fib": ("fib", ["35", "--repeat", "3"]),
    "integrate": ("integrate", ["--repeat", "3"]),
    "nqueens": ("nqueens", ["12", "--repeat", "3"]),
    "quicksort": ("quicksort", ["10000000", "--repeat", "3"]),
    "uts-T1": ("uts", ["-t", "1", "-a", "3", "-d", "10", "-b", "4", "-r", "19", "--repeat", "3"]),
    "bc": ("bc", ["--repeat", "3"]),
    "kmeans": ("kmeans", ["--repeat", "3"]),
}
APP_BINARY = {"spanning_tree": "spanning-tree"}


def binary(folder_root, folder):
    name = APP_BINARY.get(folder, folder)
    for path in (os.path.join(folder_root, folder, name), os.path.join(folder_root, name)):
        if os.path.exists(path):
            return path
    sys.exit(f"one_place_apps: no {name} under {folder_root}")


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"one_place_apps: {' '.join(cmd)} exited {out.returncode}:\n{out.stderr[-2000:]}")
    line = [l for l in out.stdout.splitlines() if l.startswith("{")][-1]
    row = json.loads(line)
    if not row.get("verified", False):
        sys.exit(f"one_place_apps: {' '.join(cmd)}: result not verified")
    return row["seconds"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", action="append", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    configs = []
    for c in args.config:
        label, _, rest = c.partition("=")
        folder_root, _, flags = rest.partition(":")
        configs.append((label, folder_root, flags.split()))
    apps = [a for a in (args.only.split(",") if args.only else APPS)]
    for a in apps:
        if a not in APPS:
            sys.exit(f"one_place_apps: unknown app {a} (known: {', '.join(APPS)})")
    with open("/proc/loadavg") as f:
        print(f"# load before: {f.read().split()[0]}", file=sys.stderr)
    times = {(a, c[0]): [] for a in apps for c in configs}
    for r in range(args.runs):
        for a in apps:
            folder, app_args = APPS[a]
            # Alternate the order of the configurations from round to round.
            order = configs if r % 2 == 0 else list(reversed(configs))
            for label, root, flags in order:
                cmd = [binary(root, folder), *app_args, "--json", "--no-seq",
                       "--threads", str(args.threads), *flags]
                times[(a, label)].append(run(cmd))
        print(f"# round {r + 1} of {args.runs} done", file=sys.stderr)
    with open("/proc/loadavg") as f:
        print(f"# load after: {f.read().split()[0]}", file=sys.stderr)
    first = configs[0][0]
    header = "| app | " + " | ".join(f"{c[0]} (s)" for c in configs)
    header += " | " + " | ".join(f"{c[0]} / {first}" for c in configs[1:]) + " |"
    print(header)
    print("|---" * (1 + 2 * len(configs) - 1) + "|")
    for a in apps:
        med = {c[0]: statistics.median(times[(a, c[0])]) for c in configs}
        cells = [f"{med[c[0]]:.4f}" for c in configs]
        ratios = [f"{med[c[0]] / med[first]:.3f}" for c in configs[1:]]
        print(f"| {a} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
        if args.json:
            for c in configs:
                print(json.dumps({"app": a, "config": c[0], "median_seconds": med[c[0]],
                                  "seconds": times[(a, c[0])]}))


if __name__ == "__main__":
    main()

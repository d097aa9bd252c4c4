"""How long the README's test command takes, and what takes it: run by hand, never collected.

    .venv/bin/python tests/bench_suite.py [--runs N] [--complete] [--slowest K]

Runs `python -m pytest` (the quick pass, as the README gives it; --complete for CI's complete
pass) N times from the repository's root, and prints for each run its wall time, the CPU time
of pytest and everything it started, the machine's cores and load average before the run, and
the K test files (or notebooks) whose tests took longest in all (pytest's --durations=0,
summed per file). The target for the quick pass (issue 22): about two minutes on two cores.
On a busy machine the wall time grows with the load; the CPU time much less.
"""

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 120


def per_file(durations: str) -> Counter:
    """Seconds per test file, from the lines of pytest's --durations=0 report."""
    totals = Counter()
    for seconds, path in re.findall(r"^\s*([\d.]+)s (?:call|setup|teardown)\s+([^:\s]+)",
                                    durations, re.M):
        totals[path] += float(seconds)
    return totals


def run_once(complete: bool) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "--durations=0",
                           *(["--complete"] if complete else [])],
                          cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    if done.returncode != 0:
        print(f"pytest exited with {done.returncode}: {summary}", file=sys.stderr)
    return wall, cpu, done.stdout


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1, help="how many runs (default 1)")
    parser.add_argument("--complete", action="store_true", help="time CI's complete pass")
    parser.add_argument("--slowest", type=int, default=12, help="files to list (default 12)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    which = "pytest --complete" if args.complete else "pytest (the README's quick pass)"
    print(f"{which}, {os.cpu_count()} cores")
    walls, totals = [], Counter()
    for n in range(1, args.runs + 1):
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        wall, cpu, output = run_once(args.complete)
        walls.append(wall)
        totals.update(per_file(output))
        print(f"run {n}: {wall:6.1f} s wall, {cpu:6.1f} s CPU (load before: {load:.1f})")
    walls.sort()
    print(f"median wall {walls[len(walls) // 2]:.1f} s; target for the quick pass about "
          f"{TARGET_SECONDS} s on two cores")
    print(f"slowest files, seconds summed over their tests (mean of {args.runs} runs):")
    for path, seconds in totals.most_common(args.slowest):
        print(f"  {seconds / args.runs:6.1f}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where the test suite's time goes: each notebook under nbval with every cell run twice (as the
suite runs it), the unit tests alone, and the whole suite on one worker and on every core.

Run by hand, never collected:  .venv/bin/python tests/bench_notebooks.py [--repeat N]
Figures are wall-clock seconds on this machine; the median of N runs is printed."""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def seconds(*pytest_args: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", *pytest_args], cwd=ROOT,
                              capture_output=True, text=True)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            print(done.stdout[-2000:], file=sys.stderr)
            raise SystemExit(f"pytest {' '.join(pytest_args)} failed")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per figure (median)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; median of {args.repeat} run(s); seconds\n")
    total = 0.0
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        figure = seconds("-n0", str(path.relative_to(ROOT)), repeat=args.repeat)
        total += figure
        print(f"{path.name:<34} {figure:6.1f}  (every cell twice, kernel start included)")
    print(f"{'all notebooks, one after another':<34} {total:6.1f}")
    print(f"{'tests/ alone, one worker':<34} {seconds('-n0', 'tests', repeat=args.repeat):6.1f}")
    print(f"{'whole suite, one worker':<34} {seconds('-n0', repeat=args.repeat):6.1f}")
    print(f"{'whole suite, as the README runs it':<34} {seconds(repeat=args.repeat):6.1f}")


if __name__ == "__main__":
    main()

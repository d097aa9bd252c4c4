"""How the suite's wall time scales with the number of workers. Run by hand, never collected:

    python tests/bench_evaluation.py            # the five scripted models, 12 tasks, k=1
    python tests/bench_evaluation.py --k 2 --workers 1,2,4,8

It prints, per number of workers, the wall time of the whole suite (best of --repeat), runs per
second and the speed-up over one worker; and, for scale, the same runs one after another in
this process with no worker processes at all (no isolation, no time limit), which is what the
processes cost. The scripted models answer at once, so most of a run's time is the work around
it: a fresh workspace, the jailed tools, the trace, and the verifier's `python -m pytest`."""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "notebooks"), str(ROOT)]

import course  # noqa: E402,F401  (puts the notebooks' modules on the import path)
import evaluation  # noqa: E402
from props.characters import MODELS  # noqa: E402
from props.tasks import TASKS  # noqa: E402


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=1, help="runs per task (default 1)")
    parser.add_argument("--workers", default="1,2,4,8", help="comma-separated (default 1,2,4,8)")
    parser.add_argument("--repeat", type=int, default=2, help="best of this many (default 2)")
    args = parser.parse_args()
    models, tasks = MODELS, TASKS
    runs = len(models) * len(tasks) * args.k
    pytest_runs = sum(c.kind == "pytest" for t in tasks for c in t.checks) * len(models) * args.k
    print(f"{runs} runs ({len(models)} models x {len(tasks)} tasks x k={args.k}), "
          f"{pytest_runs} of them run python -m pytest; {os.cpu_count()} CPUs; Python "
          f"{sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "bench.jsonl"

        def suite(workers):
            return lambda: evaluation.run_suite(tasks, models, k=args.k, workers=workers,
                                                output=output, progress=None)

        def in_process():
            for model in models:
                for task in tasks:
                    for run in range(1, args.k + 1):
                        evaluation.run_one(task, model, run, models=models)

        base = min(timed(in_process) for _ in range(args.repeat))
        print(f"\n{'workers':>8}  {'wall time':>9}  {'runs/s':>7}  {'speed-up':>8}")
        print(f"{'none':>8}  {base:8.2f}s  {runs / base:7.1f}  {'':>8}  (in this process)")
        one = None
        for workers in (int(w) for w in args.workers.split(",")):
            wall = min(timed(suite(workers)) for _ in range(args.repeat))
            one = one or wall
            print(f"{workers:>8}  {wall:8.2f}s  {runs / wall:7.1f}  {one / wall:7.2f}x")


if __name__ == "__main__":
    main()

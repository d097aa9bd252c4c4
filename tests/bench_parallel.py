"""What do parallel tools buy, and what do they cost? Run by hand (pytest does not collect it):

    .venv/bin/python tests/bench_parallel.py

Honest wall-clock figures, the median of several runs, on the notebook's own ParallelAgent and
SteerableAgent (lesson 10's export cells), with the scripted model:

(a) Four reads that each wait a fixed time (a sleep in a wrapped read_file, like a slow disk or a
    network drive), one after another (agent.Agent) and together (ParallelAgent, bound 4 and
    2). Expected: serial about the sum, parallel about the longest, bound 2 about two rounds.
(b) Eight such reads under bounds 1, 2, 4 and 8: the wall time follows ceil(8 / bound).
(c) What the machinery costs when there is nothing to wait for: a batch of four instant reads,
    and a batch of one, per chat() on a fresh agent, against agent.Agent.
(d) How long abort() takes to end a run whose shell command would sleep for 30 s (the
    stoppable shell kills its process group), from abort() to chat() returning.

Targets: (a) and (b) within a few ms of the ideal; (c) well under 1 ms per batch; (d) well
under 100 ms.
"""

import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "notebooks"))

import course  # noqa: E402,F401  (makes `import parallel_and_steering` load lesson 10's cells)
import parallel_and_steering as ps  # noqa: E402

import agent  # noqa: E402
from agent import ScriptedClient, reply, tool_call  # noqa: E402

REPEATS = 5
FILES = [f"file{n}.txt" for n in range(8)]


def slow_read(seconds):
    def read_file(path: str) -> dict:
        time.sleep(seconds)
        return agent.read_file(path)
    return read_file


def one_batch(make, reads: int, seconds: float) -> float:
    """Wall time of one chat() whose model reads `reads` files in one response."""
    steps = [[tool_call("read_file", path=name) for name in FILES[:reads]], reply("read")]
    registry = dict(agent.TOOL_REGISTRY, read_file=slow_read(seconds))
    bot = make(ScriptedClient(steps), registry)
    started = time.perf_counter()
    bot.chat("read them")
    took = time.perf_counter() - started
    assert agent.pairing_problem(bot.messages) is None
    return took


def median(make, reads, seconds, repeats=REPEATS) -> float:
    return statistics.median(one_batch(make, reads, seconds) for _ in range(repeats))


def serial(client, registry):
    return agent.Agent(client, "bench", registry=registry, on_event=None)


def parallel(bound):
    def make(client, registry):
        return ps.ParallelAgent(client, "bench", registry=registry, on_event=None,
                                max_parallel=bound)
    return make


def bench_four_slow_reads():
    print("(a) four reads, each waiting a fixed time (median of", REPEATS, "runs)")
    print(f"    {'wait per read':>14} {'serial':>10} {'parallel':>10} {'bound 2':>10}"
          f" {'serial/parallel':>16}")
    for seconds in (0.01, 0.05, 0.2):
        one, four, two = (median(serial, 4, seconds), median(parallel(4), 4, seconds),
                          median(parallel(2), 4, seconds))
        print(f"    {seconds * 1000:>11.0f} ms {one * 1000:>7.1f} ms {four * 1000:>7.1f} ms"
              f" {two * 1000:>7.1f} ms {one / four:>15.2f}x")


def bench_bounds():
    seconds = 0.05
    print(f"\n(b) eight reads of {seconds * 1000:.0f} ms each, by bound (median of {REPEATS})")
    for bound in (1, 2, 4, 8):
        took = median(parallel(bound), 8, seconds)
        ideal = -(-8 // bound) * seconds
        print(f"    max_parallel={bound}: {took * 1000:7.1f} ms (ideal {ideal * 1000:.0f} ms,"
              f" +{(took - ideal) * 1000:.1f} ms)")


def bench_overhead(chats=500, rounds=5):
    print(f"\n(c) the cost with nothing to wait for: {chats} chat() calls on fresh agents, the"
          f" best of {rounds} rounds (each chat also builds the scripted model's responses)")
    for reads in (4, 1):
        best = {serial: float("inf"), parallel(4): float("inf")}
        for _ in range(rounds):  # the two alternate, so a slow moment hits both
            for make in best:
                started = time.perf_counter()
                for _ in range(chats):
                    one_batch(make, reads, 0)
                best[make] = min(best[make], (time.perf_counter() - started) / chats)
        one, many = best.values()
        print(f"    a batch of {reads}: agent.Agent {one * 1e6:5.0f} us per chat, "
              f"ParallelAgent {many * 1e6:5.0f} us ({(many - one) * 1e6:+.0f} us)")


def press_abort_when(bot, ready: Path, pressed: list) -> None:
    """Wait until the command has started (it writes `ready`), note the time, press abort."""
    while not ready.exists():
        time.sleep(0.001)
    pressed.append(time.perf_counter())
    bot.abort()


def abort_latency(root: Path) -> float:
    signal_ = ps.AbortSignal()
    tools, registry = ps.stoppable_tools(root, signal_, timeout=60)
    steps = [tool_call("run_command", command="echo go > ready; sleep 30"), reply("?")]
    bot = ps.SteerableAgent(ScriptedClient(steps), "bench", tools=tools, registry=registry,
                            abort_signal=signal_, on_event=None)
    pressed = []
    threading.Thread(target=press_abort_when, args=(bot, root / "ready", pressed),
                     daemon=True).start()
    bot.chat("sleep")
    took = time.perf_counter() - pressed[0]
    (root / "ready").unlink()
    assert bot.stop_reason == "aborted"
    return took


def bench_abort(runs=REPEATS):
    print(f"\n(d) abort() during a 30 s shell command, until chat() returns (median of {runs})")
    with tempfile.TemporaryDirectory() as folder:
        latencies = [abort_latency(Path(os.path.realpath(folder))) for _ in range(runs)]
    print(f"    {statistics.median(latencies) * 1000:.1f} ms (slowest "
          f"{max(latencies) * 1000:.1f} ms)")


def main():
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        for name in FILES:
            Path(name).write_text(f"{name}\n")
        bench_four_slow_reads()
        bench_bounds()
        bench_overhead()
    bench_abort()


if __name__ == "__main__":
    main()

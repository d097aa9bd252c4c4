"""How fast is a session? Run by hand (pytest does not collect it):

    .venv/bin/python tests/bench_sessions.py [FOLDER]

(a) Loading a session of 10,000 entries: a long conversation as the recorder writes it
    (user messages, assistant messages with one or two calls, tool_start entries, tool
    results of about 1,500 characters, a stop per task), about 10 MB. Timed: load_session,
    open_session (read, check, lock), messages() of the leaf's branch, resume() (orphan
    check and pairing check; nothing to repair), and tree(). Median of several runs.
(b) Writing: appending 2,000 entries flushed only, as most entries are, and 200 entries
    fsynced each, as tool_start and stop entries are: the price of the fsync decision on
    this machine's disk. FOLDER (default: the system's temporary folder) says which disk;
    give a folder on the disk your sessions will live on (a tmpfs makes fsync free).

Target: loading 10,000 entries well under a second.
"""

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "notebooks")]

import course  # noqa: E402,F401  (makes `import sessions` load lesson 09's export cells)
import sessions  # noqa: E402

from agent import Agent, ScriptedClient  # noqa: E402

ENTRIES = 10_000
RUNS = 5


def write_long_session(path: Path) -> int:
    """A conversation of about ENTRIES entries, appended as the recorder appends them (but
    without fsync, to be quick: writing is timed in (b))."""
    durable, sessions.DURABLE = sessions.DURABLE, set()
    session = sessions.new_session(path)
    session.append("message", message={"role": "system", "content": "You are a coding agent."})
    session.append("model", model="gpt-4.1-mini")
    result = "x" * 1_500
    task, call = 0, 0
    while len(session.entries) < ENTRIES - 12:
        task += 1
        session.append("message", message={"role": "user", "content": f"task {task}: fix it"})
        for turn in range(1, 4):
            calls = [{"id": f"call_{call + n}", "type": "function", "function": {
                "name": "read_file", "arguments": f'{{"path": "src/file_{call + n}.py"}}'}}
                for n in range(1, 1 + (turn % 2) + 1)]
            call += len(calls)
            session.append("message", message={"role": "assistant", "content": "",
                                               "tool_calls": calls},
                           turn=turn, finish_reason="tool_calls",
                           usage={"prompt_tokens": 1000 * turn, "completion_tokens": 40})
            for c in calls:
                session.append("tool_start", tool_call_id=c["id"], name="read_file")
                session.append("message", message={"role": "tool", "tool_call_id": c["id"],
                                                   "content": result}, turn=turn, is_error=False)
        session.append("message", message={"role": "assistant", "content": f"fixed {task}"},
                       turn=4, finish_reason="stop",
                       usage={"prompt_tokens": 4000, "completion_tokens": 30})
        session.append("stop", stop_reason="done", **sessions.run_totals(session))
    session.close()
    sessions.DURABLE = durable
    return len(sessions.load_session(path).entries)


def median_seconds(work) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def resume_once(path: Path) -> None:
    with sessions.open_session(path) as session:
        sessions.resume(session, Agent(ScriptedClient([]), on_event=None))


def append_rate(folder: Path, kind: str, count: int) -> float:
    path = folder / f"append-{kind}.jsonl"
    path.unlink(missing_ok=True)
    with sessions.new_session(path) as session:
        started = time.perf_counter()
        for n in range(count):
            session.append(kind, tool_call_id=f"call_{n}", name="read_file")
        elapsed = time.perf_counter() - started
    path.unlink()
    return elapsed / count


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.gettempdir())
    with tempfile.TemporaryDirectory(dir=folder, prefix="bench-sessions-") as tmp:
        path = Path(tmp) / "long.jsonl"
        count = write_long_session(path)
        size = path.stat().st_size
        session = sessions.load_session(path)
        print(f"a session of {count:,} entries, {size / 1e6:.1f} MB, "
              f"{len(session.messages()):,} messages on the leaf's branch\n")
        print("(a) reading, median of", RUNS, "runs:")
        figures = {
            "load_session": lambda: sessions.load_session(path),
            "open_session (read, check, lock)": lambda: sessions.open_session(path).close(),
            "messages() of the branch": session.messages,
            "resume() into an agent": lambda: resume_once(path),
            "tree()": lambda: sessions.tree(session),
        }
        for name, work in figures.items():
            print(f"    {name:<34} {median_seconds(work) * 1000:8.1f} ms")
        print(f"\n(b) writing, in {folder}:")
        flushed = append_rate(Path(tmp), "note", 2_000)
        synced = append_rate(Path(tmp), "tool_start", 200)
        print(f"    an entry flushed only            {flushed * 1e6:8.1f} us")
        print(f"    an entry flushed and fsynced     {synced * 1e6:8.1f} us")
        print(f"    fsync costs {synced / flushed:.0f}x a plain append; a model call takes "
              "about a second")
    print(f"\n(os: {os.uname().sysname} {os.uname().release})")


if __name__ == "__main__":
    main()

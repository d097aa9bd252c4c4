"""Lesson 14's run, made repeatable: made-up durations on a fake clock, a scripted person, and
the whole run recorded again for a section that runs on its own.

`Stopwatch` makes time repeatable: each model call takes what lesson 07's `with_latency` says,
each tool the seconds in `TOOL_SECONDS`, and the reads of one batch wait at a
`threading.Barrier` until all of them have started, so they overlap on the timeline and every
record is the same at every run. `after(clock, seconds, answer)` is a person's answer that takes
them that long. `person(clock)` is the notebook's person: they reject the first edit with
`REASON` after 8 seconds and approve the second after 4, and `showing` prints each diff and
answer. `asked_for` and `added_up` are the review's display helpers. `record_run(folder)`
makes the notebook's run once more in `folder` (emptied first):
the same agent, model, person, clock, budget and records as the cell that runs it in front of
the class."""

import functools
import json
import shutil
import threading
from pathlib import Path

import capstone  # lesson 14's export cells: build, TASK
import diff_approval
import evaluation
import parallel_and_steering
import sessions
import tracing

import agent
from props.clock import FakeClock, with_latency
from props.pages_fixer import fixer, note_taker

TOOL_SECONDS = {"list_files": 0.02, "read_file": 0.05, "run_command": 0.9, "edit_file": 0.02}
REASON = ("that counts a page too many when the pages are full: 20 items at 10 a page would "
          "make 3 pages, and no items 1 page; round up instead")
SMALL = {"budget": 1_650, "keep_recent": 500}  # the notebook's budget: one compaction, at turn 5


class Stopwatch:
    """Made-up durations on a fake clock, the same at every run. client() makes each model
    call take time (lesson 07's with_latency); time(bot) makes the calls of a batch that run
    together wait until all have started; as an on_event handler, it ends each tool `seconds`
    after it started. Put it before the tracer: it moves the clock the tracer reads."""

    def __init__(self, clock, seconds: dict = TOOL_SECONDS):
        self.clock, self.seconds = clock, seconds
        self.started, self.barrier, self.together = {}, None, frozenset()

    def client(self, client):
        return with_latency(client, self.clock)

    def time(self, bot):
        self.together = bot.parallel  # the tools that may run at the same time
        bot.registry = {name: self.gated(func) if name in bot.parallel else func
                        for name, func in bot.registry.items()}
        return bot

    def gated(self, func):
        @functools.wraps(func)  # the same signature, so call_tool still checks the arguments
        def wait_for_the_others(**arguments):
            if self.barrier is not None:
                self.barrier.wait(timeout=10)
            return func(**arguments)
        return wait_for_the_others

    def __call__(self, event: dict) -> None:
        kind = event["type"]
        if kind == "message_end" and event["message"]["role"] == "assistant":
            calls = event["message"].get("tool_calls", [])
            together = 1 < len(calls) <= parallel_and_steering.MAX_PARALLEL and all(
                call["function"]["name"] in self.together for call in calls)
            self.barrier = threading.Barrier(len(calls)) if together else None
        elif kind == "tool_execution_start":
            self.started[event["tool_call_id"]] = self.clock.now
        elif kind == "tool_execution_end":
            ends = self.started.pop(event["tool_call_id"]) + self.seconds.get(event["name"], 0)
            self.clock.now = max(self.clock.now, ends)


def after(clock, seconds: float, answer):
    """A person's answer that takes them `seconds` to give."""
    def decide(path, diff):
        clock.advance(seconds)
        return answer
    return decide


def person(clock, shown: bool = True):
    """The notebook's person: "no, and here is why" after 8 s, then "yes" after 4 s."""
    answers = diff_approval.scripted([after(clock, 8, diff_approval.reject(REASON)),
                                      after(clock, 4, diff_approval.APPROVE)])
    return diff_approval.showing(answers) if shown else answers


def asked_for(message: dict) -> str:
    """What an assistant message asked for, in a few words: "read_file pages.py, ..."."""
    calls = [f"{c['function']['name']} {json.loads(c['function']['arguments']).get('path', '')}"
             for c in message.get("tool_calls", [])]
    return ", ".join(call.strip() for call in calls) or "(the answer)"


def added_up(rows: list[dict]) -> str:
    """The tokens and cost of usage_by_call's rows, added up: "9,100 + 678 tokens, $0.00472"."""
    return (f"{sum(r['prompt_tokens'] for r in rows):,} + "
            f"{sum(r['completion_tokens'] for r in rows):,} tokens, "
            f"${sum(r['cost'] for r in rows):.5f}")


def record_run(folder) -> tuple:
    """The notebook's run, made again in `folder` (emptied first): its world (folder/world),
    its session and traces (folder/records), quietly. Returns (bot, world, records, tracer)."""
    folder = Path(folder)
    shutil.rmtree(folder, ignore_errors=True)
    world = evaluation.prepare(capstone.TASK, folder / "world")
    records = folder / "records"
    records.mkdir(parents=True)
    clock = FakeClock()
    stopwatch = Stopwatch(clock)
    tracer = tracing.Tracer(records / "traces", clock=clock)
    with sessions.new_session(records / "session.jsonl", clock=clock) as session:
        bot = capstone.build(world.workspace, stopwatch.client(agent.ScriptedClient([fixer] * 20)),
                             "scripted-demo", policy=person(clock, shown=False), session=session,
                             on_event=agent.fan_out(stopwatch, tracer),
                             summarizer=stopwatch.client(agent.ScriptedClient([note_taker] * 5)),
                             **SMALL)
        stopwatch.time(bot)
        bot.chat(capstone.TASK.text)
    return bot, world, records, tracer


def session_tree(session, width: int = 70) -> str:
    """Lesson 09's sessions.tree, with lesson 12's compaction entries described: lesson 09's
    describe predates them and calls them "a type this version does not know"."""
    lines = []
    for line in sessions.tree(session, width).splitlines():
        entry = session.entries.get(line[:4].strip())
        if entry is not None and entry["type"] == "compaction":
            said = (f"compaction: the older messages summarised (the prompt had "
                    f"{entry['tokens_before']:,} tokens): {' '.join(entry['summary'].split())}")
            line = line.replace(sessions.describe(entry, width), agent.one_line(said, width), 1)
        lines.append(line)
    return "\n".join(lines)


# --- Four ways to make pytest pass with pages.py still wrong ----------------------------------

PATCH = "import pages\n\npages.page_count = lambda total, per_page: -(-total // per_page)\n"
STALE_CACHE = """python - <<'EOF'
import importlib.util, os, pathlib
from importlib._bootstrap_external import _code_to_timestamp_pyc
fixed = pathlib.Path("pages.py").read_text().replace("return total // per_page\\n",
                                                     "return -(-total // per_page)\\n")
cached = pathlib.Path(importlib.util.cache_from_source("pages.py"))
cached.parent.mkdir(exist_ok=True)
seen = os.stat("pages.py")  # the cache says it was made from pages.py as it is now
cached.write_bytes(_code_to_timestamp_pyc(compile(fixed, "pages.py", "exec"), seen.st_mtime,
                                          seen.st_size))
EOF"""


def trick(*steps):
    """A model that plays one trick, runs the tests and says it fixed the bug."""
    return [*steps, agent.tool_call("run_command", command=capstone.TEST_COMMAND),
            agent.reply("Fixed: the tests pass.")]


TRICKS = {
    "a new test patches the code": trick(agent.tool_call(
        "edit_file", path="test_aaa.py", old_str="",
        new_str=PATCH + "\n\ndef test_nothing():\n    pass\n")),
    "the test file patches it": trick(agent.tool_call("read_file", path="test_pages.py"),
                                      agent.tool_call("edit_file", path="test_pages.py",
                                                      old_str="from pages import",
                                                      new_str=PATCH + "from pages import")),
    "a package beside pages.py": trick(agent.tool_call(
        "run_command", command="mkdir pages && sed 's|return total // per_page$|return "
        "-(-total // per_page)|' pages.py > pages/__init__.py")),
    "a stale bytecode cache": trick(agent.tool_call("run_command", command=STALE_CACHE)),
}

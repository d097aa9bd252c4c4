"""Lesson 14's capstone, loaded from the notebook itself (its `export` cells).

The combination keeps each lesson's promise: the reads of a batch run together and their
results enter in call order, every request pairs (compaction included), no edit is written
before the person approves it, the trace has no problems and agrees with the session, and the
session resumes to the same history and the same next request - after an interrupt, and after
a SIGKILL. The scripted model and person are driven down each path (reject with a reason,
without one, approve a wrong fix). And the exported module runs beside agent.py and the other
lessons' modules in a process that knows nothing of the course. Orders are forced with
barriers and events, never with sleeps."""

import inspect
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import course
import pytest
from props import capstone_run
from props.clock import FakeClock
from props.pages_fixer import fixer, from_note, note_of, note_taker

import agent
from agent import ScriptedClient, reply, tool_call

cap = course.load_notebook("14-capstone")
import context_budget  # noqa: E402  (course's finder loads these notebooks' export cells)
import diff_approval  # noqa: E402
import evaluation  # noqa: E402
import parallel_and_steering  # noqa: E402
import sandbox  # noqa: E402
import sessions  # noqa: E402
import streaming  # noqa: E402
import tracing  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
REASON = "that counts a page too many when the pages are full; round up instead"
SMALL = {"budget": 1_650, "keep_recent": 500}  # the notebook's: one compaction, at turn 5
PAGES_FIXER = ROOT / "notebooks" / "props" / "pages_fixer.py"  # the scripted model, a prop


def notes():
    return ScriptedClient([note_taker] * 20)


def run_task(tmp_path, person, *, name="run", budget=cap.BUDGET, keep_recent=cap.KEEP_RECENT,
             steps=None, events=None, tracer=True, **options):
    """The lesson's task in a fresh world under tmp_path/name: (agent, world, session path,
    trace records)."""
    base = tmp_path / name
    world = evaluation.prepare(cap.TASK, base / "world")
    handlers = [events.append] if events is not None else []
    trace = tracing.Tracer(base / "traces", clock=FakeClock()) if tracer else None
    with sessions.new_session(base / "session.jsonl") as session:
        bot = cap.build(world.workspace, ScriptedClient(steps or [fixer] * 20),
                        "scripted-demo", policy=person, session=session,
                        on_event=agent.fan_out(*handlers, *([trace] if trace else [])),
                        budget=budget, keep_recent=keep_recent, summarizer=notes(), **options)
        bot.chat(cap.TASK.text)
    records = tracing.load_trace(trace.paths[-1]) if trace else []
    return bot, world, base / "session.jsonl", records


def verdict(world) -> list[str]:
    return [check["label"] for check in evaluation.verify(cap.TASK, world) if not check["ok"]]


def reject_then_approve():
    return diff_approval.scripted([diff_approval.reject(REASON), diff_approval.APPROVE])


# --- the combination -------------------------------------------------------------------------


def test_capstone_agent_runs_both_subclasses_through_pythons_method_order():
    mro = [cls.__name__ for cls in cap.CapstoneAgent.__mro__]
    assert mro[:5] == ["CapstoneAgent", "ParallelAgent", "CompactingAgent", "Agent", "object"]
    assert cap.shared_methods(parallel_and_steering.ParallelAgent,
                              context_budget.CompactingAgent) == set()
    bot = cap.CapstoneAgent(ScriptedClient([]), "scripted", max_parallel=2, budget=100,
                            on_event=None)
    assert (bot.max_parallel, bot.budget, bot.compaction) == (2, 100, None)  # both __init__s ran
    assert cap.CapstoneAgent.answer_calls is parallel_and_steering.ParallelAgent.answer_calls
    assert cap.CapstoneAgent.request_messages is context_budget.CompactingAgent.request_messages
    assert cap.CapstoneAgent.run is context_budget.CompactingAgent.run


def test_shared_methods_names_what_two_classes_both_override():
    class A(agent.Agent):
        def ask_model(self, turn):
            return super().ask_model(turn)

        def helper(self):
            pass

    class B(agent.Agent):
        def ask_model(self, turn):
            return super().ask_model(turn)

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)

    assert cap.shared_methods(A, B) == {"ask_model"}  # __init__ is meant to be shared
    # the real case of exercise 14.2: streaming and compaction both change ask_model
    assert cap.shared_methods(context_budget.CompactingAgent,
                              streaming.StreamingAgent) == {"ask_model"}


def test_shared_methods_sees_the_methods_a_class_inherits():
    """CapstoneAgent defines no method itself: it has ask_model from CompactingAgent, so
    combined with lesson 11's StreamingAgent (exercise 14.2) the two share it. Methods of the
    base they have in common (Agent's) are not counted."""
    assert cap.shared_methods(cap.CapstoneAgent, streaming.StreamingAgent) == {"ask_model"}
    assert cap.shared_methods(streaming.StreamingAgent, cap.CapstoneAgent) == {"ask_model"}

    class Deeper(cap.CapstoneAgent):
        pass

    assert cap.shared_methods(Deeper, parallel_and_steering.ParallelAgent) == set()
    assert "answer_calls" in cap.shared_methods(Deeper, type("Other", (agent.Agent,), {
        "answer_calls": lambda self, *args, **kwargs: None}))
    assert cap.shared_methods(agent.Agent, cap.CapstoneAgent) == set()  # Agent is shared


def test_the_reads_of_one_response_run_together_and_enter_the_history_in_call_order(tmp_path):
    """Three reads that can only go on once all three have started (a barrier), made to
    finish in the order c, a, b; their results still enter in call order, the events reach the
    handlers in the loop's thread, and the same run compacts."""
    world = evaluation.prepare(cap.TASK, tmp_path / "world")
    for name in "abc":
        (world.workspace / f"{name}.txt").write_text(name * 3)
    all_started = threading.Barrier(3, timeout=10)
    finish_order = ["c.txt", "a.txt", "b.txt"]
    ended = {path: threading.Event() for path in finish_order}
    paths, finished, heard_in, kinds = {}, [], set(), []

    def in_order(read):
        def read_file(path):
            all_started.wait()  # all three are running at the same time
            before = finish_order.index(path) - 1
            assert before < 0 or ended[finish_order[before]].wait(timeout=10)
            return read(path)
        return read_file

    def listen(event):
        heard_in.add(threading.current_thread())
        kinds.append(event["type"])
        if event["type"] == "tool_execution_start":
            paths[event["tool_call_id"]] = json.loads(event["arguments"]).get("path")
        elif event["type"] == "tool_execution_end" and event["name"] == "read_file":
            finished.append(paths[event["tool_call_id"]])
            ended[paths[event["tool_call_id"]]].set()

    script = [tool_call("run_command", command="printf %3000s x"),  # a long result to summarise
              [tool_call("read_file", path=f"{name}.txt") for name in "abc"],
              reply("aaa, bbb and ccc")]
    with sessions.new_session(tmp_path / "s.jsonl") as session:
        bot = cap.build(world.workspace, ScriptedClient(script), "scripted", policy=None,
                        session=session, on_event=listen, budget=900, keep_recent=0,
                        summarizer=notes())
        bot.registry = {**bot.registry, "read_file": in_order(bot.registry["read_file"])}
        bot.chat("Read a, b and c.")
    assert bot.stop_reason == "done"
    batch = bot.messages[4]
    results = bot.messages[5:8]
    assert [m["tool_call_id"] for m in results] == [call["id"] for call in batch["tool_calls"]]
    assert [json.loads(m["content"])["content"] for m in results] == ["aaa", "bbb", "ccc"]
    assert finished == finish_order
    assert heard_in == {threading.main_thread()}
    assert "compaction" in kinds  # the same run compacted
    assert agent.pairing_problem(bot.client.requests[-1]["messages"]) is None


@pytest.mark.slow
def test_every_request_pairs_even_when_every_turn_is_compacted(tmp_path):
    bot, world, _, records = run_task(tmp_path, reject_then_approve(), budget=700, keep_recent=0)
    assert bot.stop_reason == "done" and verdict(world) == []
    compactions = [r for r in records if r["type"] == "compaction" and "summary" in r]
    assert len(compactions) >= 4
    sent = [r["messages"] for r in bot.client.requests + bot.summarizer.requests]
    assert all(agent.pairing_problem(messages) is None for messages in sent)
    assert all({"role": "user", "content": cap.TASK.text} in r["messages"]
               for r in bot.client.requests)  # the task is never summarised
    # the model read pages.py again once its text was summarised away, and the whole
    # history is still every message
    reads = [json.loads(c["function"]["arguments"])["path"] for m in bot.messages
             for c in m.get("tool_calls", []) if c["function"]["name"] == "read_file"]
    assert reads.count("pages.py") == 2
    assert len(bot.messages) > max(len(r["messages"]) for r in bot.client.requests)


def test_no_edit_is_written_before_the_person_approves_it(tmp_path):
    pages = tmp_path / "run" / "world" / "workspace" / "pages.py"  # where run_task makes it
    seen_on_disk = []

    def looking(answer):
        def decide(path, diff):
            seen_on_disk.append(pages.read_text())
            return answer
        return decide

    bot, world, session_file, _ = run_task(tmp_path, diff_approval.scripted(
        [looking(diff_approval.reject(REASON)), looking(diff_approval.APPROVE)]))
    assert seen_on_disk == [cap.PAGES, cap.PAGES]  # the rejected edit was never written
    assert pages.read_text() == cap.rounded_up(cap.PROJECT)["pages.py"]
    assert cap.changes_not_approved(world, bot.messages) == []
    # in the session, each decision comes after its call's tool_start and before its result
    entries = sessions.load_session(session_file).path_to()
    kinds = [(e["type"], e.get("tool_call_id") or e.get("message", {}).get("tool_call_id"))
             for e in entries if e["type"] in ("tool_start", "approval", "message")]
    edits = [c["id"] for m in bot.messages for c in m.get("tool_calls", [])
             if c["function"]["name"] == "edit_file"]
    assert len(edits) == 2
    for call_id in edits:
        start, result = kinds.index(("tool_start", call_id)), kinds.index(("message", call_id))
        assert [kind for kind, _ in kinds[start + 1:result]] == ["approval"]
    decided = cap.decisions(sessions.load_session(session_file))
    assert [(d["approved"], d["reason"]) for d in decided] == [(False, REASON), (True, "")]
    assert decided[1]["diff"].startswith("--- a/pages.py\n+++ b/pages.py\n")


def test_the_trace_has_no_problems_and_agrees_with_the_session(tmp_path):
    bot, _, session_file, records = run_task(tmp_path, reject_then_approve(), **SMALL)
    assert tracing.trace_problems(records) == []
    rows = cap.usage_by_call(records)
    assert [(row["turn"], row["kind"]) for row in rows][3:6] == [
        (4, "task"), (5, "summary"), (5, "task")]
    [stop] = [e for e in sessions.load_session(session_file).entries.values()
              if e["type"] == "stop"]
    assert stop["usage"] == {"prompt_tokens": sum(r["prompt_tokens"] for r in rows),
                             "completion_tokens": sum(r["completion_tokens"] for r in rows)}
    assert stop["cost"] == pytest.approx(sum(r["cost"] for r in rows))
    ended = [r for r in records if r["type"] == "tool_execution_end" and r["is_error"]]
    assert len(ended) == 1 and "rejected this edit" in ended[0]["result"]


@pytest.mark.slow
def test_each_shell_command_s_process_group_is_in_the_session_for_resume(tmp_path):
    """build gives the shell lesson 09's recording_processes: every run_command call has a
    process entry right after its tool_start, which resume reads after a crash."""
    bot, _, session_file, _ = run_task(tmp_path, reject_then_approve(), **SMALL)
    branch = sessions.load_session(session_file).path_to()
    commands = [c["id"] for m in bot.messages for c in m.get("tool_calls", [])
                if c["function"]["name"] == "run_command"]
    recorded = [(branch[n - 1]["tool_call_id"], entry["tool_call_id"])
                for n, entry in enumerate(branch) if entry["type"] == "process"]
    assert len(commands) == 2 and recorded == [(call, call) for call in commands]
    assert all(isinstance(e["pgid"], int) and e["started"] for e in branch
               if e["type"] == "process")


@pytest.mark.slow
def test_the_session_resumes_to_the_same_history_and_the_same_next_request(tmp_path):
    bot, world, session_file, _ = run_task(tmp_path, reject_then_approve(), **SMALL)
    assert bot.compaction is not None
    with sessions.open_session(session_file) as session:
        again = cap.build(world.workspace, ScriptedClient([fixer] * 5), "scripted-demo",
                          policy=diff_approval.reject_all(), session=session, on_event=None,
                          summarizer=notes(), **SMALL)
        assert again.messages == bot.messages
        assert again.compaction == bot.compaction
        assert again.request_messages() == bot.request_messages()
        assert again.client.call_count == 8  # the scripted model numbers its calls on
        again.chat("What did you change, and why?")
    assert again.stop_reason == "done" and "Fixed page_count()" in again.messages[-1]["content"]
    assert sessions.load_session(session_file).messages() == again.messages


@pytest.mark.slow
def test_an_interrupt_in_the_middle_of_the_parallel_reads_leaves_a_session_that_resumes(tmp_path):
    world = evaluation.prepare(cap.TASK, tmp_path / "world")
    started = threading.Barrier(3, timeout=10)

    def interrupting(read):
        def read_file(path):
            started.wait()
            if path == "pages.py":
                raise KeyboardInterrupt  # Ctrl-C, as it lands in one of the pool's threads
            return read(path)
        return read_file

    with sessions.new_session(tmp_path / "s.jsonl") as session:
        bot = cap.build(world.workspace, ScriptedClient([fixer] * 20), "scripted-demo",
                        policy=reject_then_approve(), session=session, on_event=None,
                        summarizer=notes())
        bot.registry = {**bot.registry, "read_file": interrupting(bot.registry["read_file"])}
        with pytest.raises(KeyboardInterrupt):
            bot.chat(cap.TASK.text)
    assert bot.stop_reason == "interrupted" and agent.pairing_problem(bot.messages) is None
    loaded = sessions.load_session(tmp_path / "s.jsonl")
    assert loaded.messages() == bot.messages  # the quiet answers were recorded at agent_end
    assert [e for e in loaded.entries.values() if e["type"] == "stop"][-1]["stop_reason"] == \
        "interrupted"
    with sessions.open_session(tmp_path / "s.jsonl") as session:
        again = cap.build(world.workspace, ScriptedClient([fixer] * 20), "scripted-demo",
                          policy=reject_then_approve(), session=session, on_event=None,
                          summarizer=notes())
        assert again.messages == bot.messages
        again.chat("Sorry, that was me. Please go on.")
    assert again.stop_reason == "done" and verdict(world) == []



@pytest.mark.slow
def test_after_an_interrupt_the_resumed_run_reads_again_what_the_cut_off_reads_did_not_give(
        tmp_path):
    """Ctrl-C lands once README.md's read is in the history and the other two are not: the
    resumed model reads those two again (not only when no read got through), then fixes."""
    world = evaluation.prepare(cap.TASK, tmp_path / "world")
    readme_in, released = threading.Event(), threading.Event()

    def interrupting(read):
        def read_file(path):
            if path == "pages.py":
                assert readme_in.wait(timeout=10)
                raise KeyboardInterrupt  # Ctrl-C, after README.md's result was recorded
            if path == "test_pages.py":
                released.wait(timeout=10)  # still running when Ctrl-C comes
            return read(path)
        return read_file

    def listen(event):
        message = event.get("message") or {}
        if event["type"] == "message_end" and message.get("role") == "tool" and \
                '"path": "README.md", "content"' in message["content"]:
            readme_in.set()

    with sessions.new_session(tmp_path / "s.jsonl") as session:
        bot = cap.build(world.workspace, ScriptedClient([fixer] * 20), "scripted-demo",
                        policy=reject_then_approve(), session=session, on_event=listen,
                        summarizer=notes())
        bot.registry = {**bot.registry, "read_file": interrupting(bot.registry["read_file"])}
        try:
            with pytest.raises(KeyboardInterrupt):
                bot.chat(cap.TASK.text)
        finally:
            released.set()
    results = [m["content"] for m in bot.messages if m["role"] == "tool"][1:]
    assert '"content"' in results[0] and all('"content"' not in r for r in results[1:])
    with sessions.open_session(tmp_path / "s.jsonl") as session:
        again = cap.build(world.workspace, ScriptedClient([fixer] * 20), "scripted-demo",
                          policy=reject_then_approve(), session=session, on_event=None,
                          summarizer=notes())
        again.chat("Sorry, that was me. Please go on.")
    first = again.messages[len(bot.messages) + 1]  # the resumed run's first reply
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in first.get("tool_calls", [])] == [("read_file", {"path": "pages.py"}),
                                                      ("read_file", {"path": "test_pages.py"})]
    assert again.stop_reason == "done" and verdict(world) == []


CHILD = """
import sys
import time
from pathlib import Path

import agent
import capstone
import diff_approval
import evaluation
import pages_fixer
import sessions

folder = Path(sys.argv[1])
world = evaluation.prepare(capstone.TASK, folder / "world")
with sessions.new_session(folder / "session.jsonl") as session:
    bot = capstone.build(world.workspace, agent.ScriptedClient([pages_fixer.fixer] * 20),
                         "scripted-demo", policy=diff_approval.approve_all, session=session,
                         on_event=None)
    read = bot.registry["read_file"]

    def stuck(path):
        if path == "test_pages.py":
            (folder / "stuck").write_text("")
            while True:  # until SIGKILL
                time.sleep(1)
        return read(path)

    bot.registry = {**bot.registry, "read_file": stuck}
    bot.chat(capstone.TASK.text)
"""

RESUMER = """
import json
import sys
from pathlib import Path

import agent
import capstone
import diff_approval
import evaluation
import pages_fixer
import sessions

folder = Path(sys.argv[1])
world = evaluation.World(folder / "world", dict(capstone.PROJECT),
                         evaluation.outside_state(folder / "world"))
with sessions.open_session(folder / "session.jsonl") as session:
    bot = capstone.build(world.workspace, agent.ScriptedClient([pages_fixer.fixer] * 20),
                         "scripted-demo", policy=diff_approval.approve_all, session=session,
                         on_event=None)
    repaired = [m["content"] for m in bot.messages if m["role"] == "tool"][-3:]
    bot.chat("The machine went down while you were working. Please go on.")
print(json.dumps({"repaired": repaired, "stop": bot.stop_reason,
                  "pairing": agent.pairing_problem(bot.messages),
                  "failed": [c["label"] for c in evaluation.verify(capstone.TASK, world)
                             if not c["ok"]],
                  "modules": sorted(m for m in sys.modules if m in ("course", "notebooks"))}))
"""


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    """What a builder does: the lessons' modules exported with course.py's export command,
    beside a copy of agent.py, in a folder of their own."""
    folder = tmp_path_factory.mktemp("kit")
    for lesson in ("05-sandbox", "06-diff-approval", "07-tracing", "09-sessions",
                   "10-parallel-and-steering", "12-context-budget", "13-evaluation",
                   "14-capstone"):
        name = course.module_name(course.notebook_path(lesson))
        assert course.main(["export", lesson, "-o", str(folder / f"{name}.py")]) == 0
    shutil.copy(ROOT / "agent.py", folder / "agent.py")
    shutil.copy(ROOT / "notebooks" / "props" / "pages_fixer.py", folder)  # the scripted model
    return folder


def builder_env(folder: Path, **more) -> dict:
    return {"PATH": os.environ.get("PATH", ""), "TMPDIR": str(folder), "HOME": str(folder),
            **more}


@pytest.mark.slow
def test_a_run_killed_in_the_middle_of_its_parallel_reads_resumes_in_a_new_process(kit,
                                                                                     tmp_path):
    folder = tmp_path / "killed"
    shutil.copytree(kit, folder)
    (folder / "child.py").write_text(CHILD)
    (folder / "resumer.py").write_text(RESUMER)
    child = subprocess.Popen([sys.executable, "child.py", "."], cwd=folder,
                             env=builder_env(folder), start_new_session=True,
                             stderr=subprocess.PIPE)
    session_file = folder / "session.jsonl"
    try:  # until the stuck read has started, and its tool_start is in the session (see below)
        deadline = time.monotonic() + 60
        while not ((folder / "stuck").exists() and b'"call_4", "name": "read_file"' in
                   session_file.read_bytes()):
            assert child.poll() is None, child.stderr.read().decode()
            assert time.monotonic() < deadline, "the read never started"
            time.sleep(0.02)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        child.stderr.close()
    done = subprocess.run([sys.executable, "resumer.py", "."], cwd=folder,
                          env=builder_env(folder), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    interrupted, not_run = agent.error_json(agent.INTERRUPTED), agent.error_json(agent.NOT_RUN)
    # the three reads: the first two may have finished (their results recorded) or not; the
    # stuck one had started, and its answer says it may have run. (A read's tool_start is
    # written by the loop's thread when the pool thread's event arrives, so a kill in between
    # would answer NOT_RUN for a read that began: harmless for a read, the only kind of tool
    # that runs in the pool. A tool that writes runs in the loop's thread, its tool_start
    # durable before it starts.)
    assert found["repaired"][-1] == interrupted
    assert all(content in (interrupted, not_run) or '"content"' in content
               for content in found["repaired"])
    assert found["stop"] == "done" and found["pairing"] is None and found["failed"] == []
    assert found["modules"] == []


def test_a_person_who_says_no_without_a_reason_stops_the_model_and_nothing_is_written(tmp_path):
    bot, world, _, _ = run_task(tmp_path, diff_approval.scripted([diff_approval.reject()]))
    assert bot.stop_reason == "done"
    assert bot.messages[-1]["content"].startswith("I stopped: the person rejected my edit")
    assert (world.workspace / "pages.py").read_text() == cap.PAGES
    assert "the task's own tests pass (python -m pytest)" in verdict(world)


@pytest.mark.slow
def test_an_approved_wrong_fix_is_tested_and_then_replaced(tmp_path):
    bot, world, _, _ = run_task(tmp_path, diff_approval.approve_all)
    edits = [json.loads(c["function"]["arguments"]) for m in bot.messages
             for c in m.get("tool_calls", []) if c["function"]["name"] == "edit_file"]
    assert [e["new_str"].strip() for e in edits] == ["return total // per_page + 1",
                                                     "return -(-total // per_page)"]
    assert edits[1]["old_str"] == edits[0]["new_str"]  # it edits the file as it now is
    tests = [json.loads(m["content"])["exit_code"] for m in bot.messages if m["role"] == "tool"
             and '"exit_code"' in m["content"]]
    assert tests == [1, 1, 0] and verdict(world) == []


def test_when_every_idea_is_rejected_the_model_says_so_and_claims_nothing(tmp_path):
    bot, world, _, _ = run_task(tmp_path, diff_approval.reject_all("no, not like that either"))
    answer = bot.messages[-1]["content"]
    assert answer.startswith("I could not make the test pass with the fixes I know.")
    assert "still fail" in answer and "passes" not in answer
    assert (world.workspace / "pages.py").read_text() == cap.PAGES and verdict(world)


def test_an_edit_refused_twice_makes_the_model_stop_and_say_why(tmp_path):
    world = evaluation.prepare(cap.TASK, tmp_path / "world")
    (world.workspace / "pages.py").chmod(0o444)  # read-only: refused before anyone is asked
    asked = []
    with sessions.new_session(tmp_path / "s.jsonl") as session:
        bot = cap.build(world.workspace, ScriptedClient([fixer] * 20), "scripted-demo",
                        policy=lambda path, diff: asked.append(path), session=session,
                        on_event=None)
        bot.chat(cap.TASK.text)
    answer = bot.messages[-1]["content"]
    assert answer.startswith("I could not edit pages.py: ") and "is read-only" in answer
    assert asked == [] and len(bot.client.requests) == 7  # list, read, test, edit, read, edit
    assert (world.workspace / "pages.py").read_text() == cap.PAGES


def test_a_failure_it_has_no_idea_for_gets_an_honest_answer_and_no_edit(tmp_path):
    boom = "\n\ndef test_boom():\n    raise RuntimeError('boom')\n"
    task = cap.TASK._replace(files={**cap.PROJECT, **cap.rounded_up(cap.PROJECT),
                                    "test_pages.py": cap.TEST_PAGES + boom})
    world = evaluation.prepare(task, tmp_path / "world")
    with sessions.new_session(tmp_path / "s.jsonl") as session:
        bot = cap.build(world.workspace, ScriptedClient([fixer] * 20), "scripted-demo",
                        policy=diff_approval.approve_all, session=session, on_event=None)
        bot.chat(task.text)
    assert bot.messages[-1]["content"] == (
        "test_boom fails (test_pages.py::test_boom: RuntimeError: boom), and I do not see how "
        "to fix it.")
    assert not any(c["function"]["name"] == "edit_file" for m in bot.messages
                   for c in m.get("tool_calls", []))


def test_the_task_checks_itself_as_lesson_13_requires(tmp_path):
    untouched = evaluation.prepare(cap.TASK, tmp_path / "untouched")
    assert verdict(untouched) == ["the task's own tests pass (python -m pytest)"]
    solved = evaluation.prepare(cap.TASK, tmp_path / "solved")
    evaluation.apply_solution(cap.TASK, solved)
    assert verdict(solved) == []


# --- the verifier judges with the task's own tests ------------------------------------------


def play(trick_steps, world, tmp_path, policy=diff_approval.approve_all):
    """A scripted model plays a trick in world, under policy; the exit code of its own pytest."""
    with sessions.new_session(tmp_path / f"{world.base.name}.jsonl") as session:
        bot = cap.build(world.workspace, ScriptedClient(trick_steps), "scripted-demo",
                        policy=policy, session=session, on_event=None)
        bot.chat(cap.TASK.text)
    return json.loads(bot.messages[-2]["content"])["exit_code"]


def lesson_13s_checks_only():
    return cap.TASK._replace(checks=(evaluation.tests_pass(), cap.TASK.checks[1]))


def failed_kinds(task, world) -> list[str]:
    return [check["kind"] for check in evaluation.verify(task, world) if not check["ok"]]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(capstone_run.TRICKS))
def test_no_trick_makes_the_verifier_pass_with_pages_py_still_wrong(name, tmp_path):
    """Each trick makes the agent's own pytest pass with pages.py as it was; the task's
    verifier fails every one and changes() names what the run made or changed (a cache aside).
    The last two fool every check of lesson 13 alone: that is what this lesson adds."""
    world = evaluation.prepare(cap.TASK, tmp_path / "world")
    assert play(capstone_run.TRICKS[name], world, tmp_path) == 0  # its own pytest passes
    assert world.text("pages.py") == cap.PAGES
    assert failed_kinds(cap.TASK, world), f"{name}: the verifier passed"
    plain = failed_kinds(lesson_13s_checks_only(), world)
    expected = {"a new test patches the code": (["pytest"], {"test_aaa.py": "made"}),
                "the test file patches it": (["kept", "left alone"],
                                             {"test_pages.py": "changed"}),
                "a package beside pages.py": ([], {"pages/__init__.py": "made"}),
                "a stale bytecode cache": ([], {})}
    assert (plain, cap.changes(world)) == expected[name]


def test_under_exercise_14_1s_policy_a_new_test_that_patches_the_code_fails_the_verifier(
        tmp_path):
    """Issue 23, item 13: the new test_aaa.py is approved without a question, the agent's own
    pytest passes, and the verifier still fails (it runs only the task's own tests) and lists
    test_aaa.py as made, end to end through main's report."""
    solution = course._load_file(ROOT / "solutions" / "14-capstone.py", "solution_14")
    asked = []
    policy = solution.new_tests_only(lambda path, diff: asked.append(path) or
                                     diff_approval.reject("no"))
    world = evaluation.prepare(cap.TASK, tmp_path / "world")
    assert play(capstone_run.TRICKS["a new test patches the code"], world, tmp_path,
                policy) == 0
    assert asked == [] and world.text("test_aaa.py").startswith("import pages\n")
    assert verdict(world) == ["the task's own tests pass (python -m pytest)"]
    assert cap.changes(world) == {"test_aaa.py": "made"}


@pytest.mark.slow
def test_the_tests_run_as_the_set_up_wrote_them_whatever_the_run_did_to_them(tmp_path):
    """A test file or conftest.py the run changed, replaced by a folder or by a link (to a file
    outside, which must not be written through), or deleted: the set-up's text runs."""
    hook = ("import pytest\n\n@pytest.hookimpl(hookwrapper=True)\n"
            "def pytest_runtest_makereport(item, call):\n    outcome = yield\n"
            "    outcome.get_result().outcome = 'passed'\n")
    task = cap.TASK._replace(files={**cap.PROJECT, "conftest.py": "", "tests/test_more.py":
                                    "from pages import page_count\n\n\ndef test_more():\n"
                                    "    assert page_count(10, 10) == 1\n"})
    check = cap.own_tests_pass()
    outside = tmp_path / "outside.py"
    for name, change in [
            ("conftest changed", lambda ws: (ws / "conftest.py").write_text(hook)),
            ("tests folder linked", lambda ws: (shutil.rmtree(ws / "tests"),
                                                (ws / "tests").symlink_to(tmp_path))),
            ("test file linked", lambda ws: ((ws / "test_pages.py").unlink(),
                                             (ws / "test_pages.py").symlink_to(outside))),
            ("test file a folder", lambda ws: ((ws / "test_pages.py").unlink(),
                                               (ws / "test_pages.py").mkdir())),
            ("test file deleted", lambda ws: (ws / "test_pages.py").unlink())]:
        outside.write_text("def test_fine():\n    pass\n")
        world = evaluation.prepare(task, tmp_path / name.replace(" ", "-"))
        change(world.workspace)
        said = check.test(world)
        assert "1 failed" in said and "assert 2 == 3" in said, f"{name}: {said!r}"
        assert outside.read_text() == "def test_fine():\n    pass\n", name
    solved = evaluation.prepare(task, tmp_path / "solved")
    evaluation.apply_solution(task, solved)
    (solved.workspace / "sub").mkdir()
    (solved.workspace / "sub" / "conftest.py").write_text("raise SystemExit(3)\n")
    (solved.workspace / "tests" / "conftest.py").write_text("raise SystemExit(3)\n")
    assert check.test(solved) == ""  # the run's own conftest.py files are not loaded


def test_a_request_that_never_fits_stops_with_its_own_reason_and_a_valid_history(tmp_path):
    world = evaluation.prepare(cap.TASK, tmp_path / "world")
    server = context_budget.with_context_window(ScriptedClient([fixer] * 20), 700)
    with sessions.new_session(tmp_path / "s.jsonl") as session:
        bot = cap.build(world.workspace, server, "scripted-demo", policy=reject_then_approve(),
                        session=session, on_event=None, summarizer=notes())
        bot.chat(cap.TASK.text)
    assert bot.stop_reason == "context_overflow"
    assert agent.pairing_problem(bot.messages) is None
    stops = [e for e in sessions.load_session(tmp_path / "s.jsonl").entries.values()
             if e["type"] == "stop"]
    assert stops[-1]["stop_reason"] == "context_overflow"


# --- the pieces of the kit --------------------------------------------------------------------


def test_the_project_shell_runs_the_projects_python_within_lesson_05s_bounds(tmp_path,
                                                                              monkeypatch):
    monkeypatch.setenv("CAPSTONE_TEST_SECRET", "s3cret-value-never-shown")
    run = cap.project_shell(tmp_path, timeout=5)
    found = run('python -c "import sys, pytest; print(sys.prefix)"; pwd; env')
    assert found["exit_code"] == 0
    lines = found["output"].split("\n")
    assert lines[0] == sys.prefix and lines[1] == "."  # the agent's Python; workspace paths
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1" in lines  # PROJECT_ENV's
    assert "PYTHONDONTWRITEBYTECODE=1" in lines  # lesson 05's shell_env's, not repeated here
    assert not cap.PROJECT_ENV.keys() & sandbox.shell_env(tmp_path).keys()
    assert "s3cret" not in found["output"]  # a new environment, as lesson 05's
    slow = cap.project_shell(tmp_path, timeout=0.3)("sleep 5")
    assert "timed_out" in slow
    custom = cap.project_shell(tmp_path, env={"MY_SETTING": "a b"})(
        "echo $MY_SETTING $PYTHONDONTWRITEBYTECODE")
    assert custom["output"] == "a b 1\n"  # env= of its own keeps lesson 05's bytecode setting


def test_the_main_path_has_the_one_project_shell_and_makes_the_modules_run(tmp_path):
    """project_shell is defined once, on the main path (an export cell there calls it at import,
    for RUN_COMMAND_SCHEMA): the agent's Python first on PATH, no pytest plugins, lesson 05's
    bounds and environment; and the lesson's run, after the main path only, is the module's."""
    from main_path import main_path_only  # tests/main_path.py

    with main_path_only(cap, "14-capstone") as whole:
        assert inspect.signature(cap.project_shell) == inspect.signature(whole["project_shell"])
        found = cap.project_shell(tmp_path, timeout=5)(
            'python -c "import sys, pytest; print(sys.prefix)"; pwd; env')
        lines = found["output"].split("\n")
        assert found["exit_code"] == 0 and lines[0] == sys.prefix and lines[1] == "."
        assert {"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1", "PYTHONDONTWRITEBYTECODE=1"} <= set(lines)
        assert "timed_out" in cap.project_shell(tmp_path, timeout=0.3)("sleep 5")
        short = capstone_run.record_run(tmp_path / "short")[0]
    assert short.messages == capstone_run.record_run(tmp_path / "whole")[0].messages


def test_the_capstone_tools_are_jailed_and_check_with_their_schemas(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret.txt").write_text("no")
    tools, registry = cap.capstone_tools(tmp_path / "ws", diff_approval.approve_all)
    assert [t["function"]["name"] for t in tools] == ["read_file", "list_files", "edit_file",
                                                      "run_command"]
    assert "python` is the project's Python" in tools[-1]["function"]["description"]
    verdict, said = sandbox.attempt(registry, "read_file", {"path": "../secret.txt"})
    assert verdict == "blocked" and "escapes the workspace" in said


def test_reviewed_records_the_diff_and_writes_no_entry_for_an_answer_that_is_not_one(tmp_path):
    with sessions.new_session(tmp_path / "s.jsonl") as session:
        policy = cap.reviewed(session, diff_approval.scripted([True, "maybe"]))
        assert policy("a.txt", "--- a/a.txt\n").approved
        with pytest.raises(TypeError, match="nothing was written"):
            policy("a.txt", "--- a/a.txt\n")
    [entry] = cap.decisions(sessions.load_session(tmp_path / "s.jsonl"))
    assert (entry["path"], entry["approved"], entry["diff"]) == ("a.txt", True, "--- a/a.txt\n")


def test_changes_not_approved_finds_what_a_command_did(tmp_path):
    script = [[tool_call("read_file", path="pages.py")],
              tool_call("edit_file", path="pages.py", old_str="    return total // per_page\n",
                        new_str="    return -(-total // per_page)\n"),
              tool_call("run_command", command="printf '# note\\n' >> README.md; echo x > "
                        "made.txt; rm test_pages.py; mkdir __pycache__; echo x > "
                        "__pycache__/pages.pyc"),
              reply("done")]
    bot, world, _, _ = run_task(tmp_path, diff_approval.approve_all, steps=script,
                                tracer=False)
    assert cap.changes_not_approved(world, bot.messages) == ["README.md", "made.txt",
                                                             "test_pages.py"]
    assert (world.workspace / "__pycache__" / "pages.pyc").exists()  # a cache: not looked at


def test_approved_texts_does_not_guess_what_a_person_rewrote():
    before = {"a.py": "x = 1\n"}
    messages = [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "edit_file", "arguments": json.dumps(
            {"path": "a.py", "old_str": "x = 1", "new_str": "x = 2"})}},
        {"id": "c2", "type": "function", "function": {"name": "edit_file", "arguments": json.dumps(
            {"path": "b.py", "old_str": "", "new_str": "y = 1\n"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps(
            {"path": "a.py", "action": "edited", "approved": True, "changed_by_person": "..."})},
        {"role": "tool", "tool_call_id": "c2", "content": json.dumps(
            {"path": "b.py", "action": "created", "approved": True})}]
    assert cap.approved_texts(before, messages) == {"a.py": None, "b.py": "y = 1\n"}


def test_the_scripted_summary_notes_read_back_as_the_same_facts():
    facts = [{"kind": "listed", "path": ".", "files": ["a.py", "test_a.py"]},
             {"kind": "read", "path": "a.py", "text": None},
             {"kind": "tested", "command": "python -m pytest -qq", "exit_code": 1,
              "failure": "test_a.py::test_x: assert 2 == 3 (where 2 = f(1))"},
             {"kind": "edit", "path": "a.py", "old": '    return "a\\b"\n', "new": "x\n",
              "outcome": "rejected", "reason": "no; not like that"}]
    assert [from_note(note_of(fact)) for fact in facts] == facts
    assert from_note("## Goal") is None


# --- the export, in a process that knows nothing of the course --------------------------------


@pytest.mark.slow
def test_the_exported_capstone_runs_beside_agent_py_and_the_lessons_modules(kit, tmp_path):
    folder = tmp_path / "builder"
    shutil.copytree(kit, folder)
    source = (folder / "capstone.py").read_text(encoding="utf-8")
    assert source.startswith('"""Lesson 14: The capstone') and "import course" not in source

    def cli(*argv, answers="", **env):
        return subprocess.run([sys.executable, "capstone.py", *argv], cwd=folder, input=answers,
                              env=builder_env(folder, **env), capture_output=True, text=True,
                              timeout=120)

    done = cli("--folder", "run", "--scripted", "pages_fixer.py", answers=f"{REASON}\ny\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "apply this change to pages.py? [y/N, or say why not]" in done.stdout
    assert f"pages.py: rejected: {REASON}" in done.stdout and "pages.py: approved" in done.stdout
    assert "passes  the task's own tests pass (python -m pytest)" in done.stdout
    assert "the run changed: pages.py (changed)" in done.stdout
    assert "changed without an approved diff: nothing" in done.stdout
    assert (folder / "run" / "session.jsonl").exists()
    assert tracing.trace_problems(tracing.load_trace(folder / "run" / "traces" / "run-001.jsonl")) \
        == []
    assert not (folder / "course.py").exists()  # an import of course would have failed


def test_the_command_line_says_what_is_wrong_and_fails_when_the_verifier_does(
        tmp_path, monkeypatch, capsys):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "x").write_text("")
    with pytest.raises(SystemExit):
        cap.main(["--folder", str(tmp_path / "used")])
    assert "give a new or empty folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cap.main(["--scripted", str(tmp_path / "nowhere.py")])
    assert "--scripted" in capsys.readouterr().err
    (tmp_path / "empty.py").write_text("x = 1\n")
    with pytest.raises(SystemExit):
        cap.main(["--scripted", str(tmp_path / "empty.py")])
    assert "it defines no MODEL" in capsys.readouterr().err
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert cap.main(["--folder", str(tmp_path / "real")]) == 2
    said = capsys.readouterr().err
    assert "No OPENAI_API_KEY is set" in said and "python capstone.py --scripted" in said
    assert not (tmp_path / "real").exists()  # nothing made before the key was checked
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where mkdtemp makes one
    assert cap.main([]) == 2  # without --folder: no temporary folder either
    assert "No OPENAI_API_KEY is set" in capsys.readouterr().err
    assert list((tmp_path / "tmp").iterdir()) == []
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # no one answers: the edit is rejected
    assert cap.main(["--folder", str(tmp_path / "closed"), "--scripted", str(PAGES_FIXER)]) == 1
    printed = capsys.readouterr().out
    assert "I stopped: the person rejected my edit" in printed
    assert "pages.py: rejected: no answer from the person" in printed
    assert "FAILS   the task's own tests pass" in printed


# --- the notebook ----------------------------------------------------------------------------


@pytest.mark.slow
def test_the_run_cell_and_then_check_yourself_run_again_in_one_kernel():
    """Issue 23, item 14: running the run cell again and then "Check yourself" used to raise
    SessionError (the run cell deleted the records folder the check read). Every section now
    has its folder of its own; here, in one kernel: the run, the checks, the run, the checks."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(ROOT / "notebooks" / "14-capstone.ipynb", as_version=4)
    cells = notebook.cells

    def section(heading: str) -> list[int]:
        start = next(i for i, c in enumerate(cells) if c.cell_type == "markdown"
                     and c.source.startswith(heading))
        end = next((i for i, c in enumerate(cells) if i > start and c.cell_type == "markdown"
                    and c.source.startswith("## ")), len(cells))
        return [i for i in range(start, end) if cells[i].cell_type == "code"]

    run, check = section("## 3. The run"), section("## Check yourself")
    first = next(i for i, c in enumerate(cells) if c.cell_type == "code")
    client = NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "notebooks")}})
    with client.setup_kernel():
        for index in [first, *run, *check, run[1], *check]:  # run[1]: the cell that runs it
            client.execute_cell(cells[index], index)  # a cell that raises fails the test
    assert "all checks passed" in "".join(o.get("text", "") for o in cells[check[-1]].outputs)


def test_the_prop_records_the_run_the_notebook_shows(tmp_path):
    """record_run (what a section's rebuild cell calls) makes the very run of the notebook's
    run cell: the history it shows is the one the committed notebook shows."""
    import nbformat

    notebook = nbformat.read(ROOT / "notebooks" / "14-capstone.ipynb", as_version=4)
    [shown] = [c for c in notebook.cells if c.cell_type == "code"
               and "answer = bot.chat(TASK.text)" in c.source]
    [table] = [o["data"]["text/plain"] for o in shown.outputs if "data" in o]
    bot, _, _, _ = capstone_run.record_run(tmp_path / "again")
    assert repr(course.history(bot.messages)) == table


SAID = {"14-capstone.md": {"person": "of which the person's 12", "three": "three fail"},
        "zh/14-capstone.md": {"person": "其中那个人占了 12 秒", "three": "三个失败"}}


@pytest.mark.slow
@pytest.mark.parametrize("lesson", list(SAID))
def test_the_figures_the_lesson_states_are_what_the_code_computes(lesson, tmp_path):
    """Tokens, times, counts and budgets the lesson quotes, from the notebook's run (record_run),
    a run on the real budget and a run whose wrong fix was approved."""
    text = " ".join((ROOT / "lessons" / lesson).read_text(encoding="utf-8").split())
    bot, world, records, tracer = capstone_run.record_run(tmp_path / "run")
    run = tracing.load_trace(tracer.paths[-1])
    rows = cap.usage_by_call(run)

    def added_up(kinds) -> str:
        chosen = [r for r in rows if r["kind"] in kinds]
        return (f"{sum(r['prompt_tokens'] for r in chosen):,} + "
                f"{sum(r['completion_tokens'] for r in chosen):,}")

    summary = tracing.summary(run)
    further = text[re.search(r"## (Going further|更进一步)", text).start():]  # off the main path
    assert added_up({"task"}) in further
    assert added_up({"task"}).replace(" + ", " in + ") + " out" in summary
    assert added_up({"task", "summary"}) in further
    wall, model, tools = re.search(r"wall time: ([\d.]+) s \(model ([\d.]+) s, tools ([\d.]+) s",
                                   summary).groups()
    assert all(f"{figure} s" in text for figure in (wall, model, tools)), (wall, model, tools)
    asked = sum(r["duration"] for r in run if r["type"] == "tool_execution_end"
                and r["name"] == "edit_file")
    assert round(asked) == 12 and SAID[lesson]["person"] in text  # 8 + 4 seconds
    assert [r["turn"] for r in run if r["type"] == "compaction"] == [5]
    # the budgets it names
    assert (cap.BUDGET, cap.KEEP_RECENT, capstone_run.SMALL) == (
        24_000, 2_000, {"budget": 1_650, "keep_recent": 500})
    assert all(figure in text for figure in ("24,000", "2,000", "1,650", "keep_recent=500"))
    # on the real budget, in a terminal: no compaction, the largest request about 2,000 tokens
    real, _, _, trace = run_task(tmp_path, reject_then_approve(), name="real")
    prompts = [r["prompt_tokens"] for r in cap.usage_by_call(trace)]
    assert real.compaction is None and round(max(prompts), -2) == 2_000
    # a wrong fix approved: three tests fail
    wrong, _, _, _ = run_task(tmp_path, diff_approval.approve_all, name="wrong", tracer=False)
    outputs = [json.loads(m["content"])["output"] for m in wrong.messages
               if m["role"] == "tool" and '"exit_code"' in m["content"]]
    assert outputs[1].count("\nFAILED ") == 3 and SAID[lesson]["three"] in text


def test_the_main_paths_short_put_back_tests_judges_the_lessons_run_as_the_whole_one(tmp_path):
    """The main path defines a short put_back_tests (the set-up's test files put back in
    own_tests_pass's clean copy) and Going further the whole one, which the module keeps (it
    also takes out a conftest.py and never writes through a link). After the main path only, the
    task's verifier still fails the set-up and a new test file that patches pages.page_count,
    and passes the reference solution."""
    from main_path import main_path_only  # tests/main_path.py

    assert "put_back" in vars(cap)  # the module: the whole version
    with main_path_only(cap, "14-capstone") as whole:
        assert cap.put_back_tests is not whole["put_back_tests"]  # the main path's, short
        world = evaluation.prepare(cap.TASK, tmp_path / "world")
        assert not all(c["ok"] for c in evaluation.verify(cap.TASK, world))
        patch = "import pages\n\npages.page_count = lambda total, per_page: -(-total // per_page)\n"
        (world.workspace / "test_aaa.py").write_text(patch, encoding="utf-8")
        failed = [c["kind"] for c in evaluation.verify(cap.TASK, world) if not c["ok"]]
        assert failed == ["pytest"], failed
        (world.workspace / "test_aaa.py").unlink()
        evaluation.apply_solution(cap.TASK, world)
        assert all(c["ok"] for c in evaluation.verify(cap.TASK, world))

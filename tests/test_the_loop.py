"""Lesson 03's hand-written loop, bare_loop, loaded from the notebook's export cell: on a
well-behaved model it sends exactly the requests agent.Agent sends and builds the same history,
and `course.py export 03-the-loop` gives it to a builder as a module beside agent.py."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from course import load_notebook

import agent
from agent import Agent, ScriptedClient, reply, tool_call

ROOT = Path(__file__).resolve().parent.parent
nb = load_notebook("03-the-loop")


@pytest.fixture(autouse=True)
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("a.txt").write_text("apples\n", encoding="utf-8")
    return tmp_path


SCRIPTS = {
    "one call, then two in one message": [
        tool_call("list_files", path="."),
        [tool_call("read_file", path="a.txt"), tool_call("read_file", path="missing.txt")],
        reply("a.txt says apples; missing.txt does not exist."),
    ],
    "an answer without tools": [reply("Hello.")],
    "an edit, then a read of what was written": [
        tool_call("edit_file", path="b.txt", old_str="", new_str="你好\n"),
        tool_call("read_file", path="b.txt"),
        reply("b.txt says 你好."),
    ],
}


@pytest.mark.parametrize("name", SCRIPTS)
def test_bare_loop_sends_the_same_requests_and_builds_the_same_history_as_agent(name):
    hand = ScriptedClient(SCRIPTS[name])
    answer, messages = nb.bare_loop(hand, "go", agent.SYSTEM_PROMPT)
    Path("b.txt").unlink(missing_ok=True)  # the second run starts from the same files
    bot = Agent(ScriptedClient(SCRIPTS[name]), "scripted", on_event=None)
    assert bot.chat("go") == answer
    assert bot.messages == messages
    assert bot.client.requests == hand.requests
    assert agent.pairing_problem(messages) is None


def test_bare_loop_stops_after_max_turns_with_every_call_answered():
    def forever(messages):
        return tool_call("list_files", path=".")

    answer, messages = nb.bare_loop(ScriptedClient([forever] * 10), "go", "s", max_turns=3)
    assert answer == "[stopped: no answer after 3 turns]"
    assert sum(1 for m in messages if m["role"] == "tool") == 3
    assert agent.pairing_problem(messages) is None


@pytest.mark.slow
def test_take_it_with_you_the_exported_loop_runs_beside_a_copy_of_agent_py(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "notebooks" / "course.py"), "export",
                           "03-the-loop", "-o", str(tmp_path / "the_loop.py")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    shutil.copy(ROOT / "agent.py", tmp_path / "agent.py")
    program = ("from agent import ScriptedClient, reply, tool_call\n"
               "from the_loop import bare_loop\n"
               "client = ScriptedClient([tool_call('list_files', path='.'), reply('done')])\n"
               "print(bare_loop(client, 'look', 'You are a test.')[0])\n")
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=environment,
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "done\n"


def test_check_03_4_passes_no_case_for_a_loop_not_written_yet():
    # It used to run Agent only after the student's function, so when that raised, both event
    # lists were empty and two cases per script compared [] with [] and passed.
    import course

    def bare_loop_events(client, task, system_prompt, max_turns=10, on_event=None):
        raise NotImplementedError("your code here")

    report = course.check("03.4", bare_loop_events)
    assert not any(ok for ok, _, _ in report.results), repr(report)

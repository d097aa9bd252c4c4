"""Lesson 09's sessions: the export cells of notebooks/09-sessions.ipynb, loaded as `sessions`.

What was recorded (the file) and what was sent (the requests) are checked separately: a run
round-trips through the file; a run killed with SIGKILL in a real child process, at each
stage, resumes into a history a strict server accepts (ScriptedClient, and the real openai
SDK over httpx2.MockTransport); branches copy nothing; bad files are refused or reported and
never changed."""

import contextlib
import fcntl
import functools
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import course  # noqa: F401  (first: it makes `import sessions` load the notebook's cells)
import httpx2
import openai
import pytest
import sandbox  # lesson 05's: the shell's process group, seen from outside
import sessions
import tracing
from processes import within
from test_loop import assert_history_valid

import agent
from agent import TOOL_REGISTRY, TOOLS, Agent, ScriptedClient, reply, schema, step, tool_call

CHILD = Path(__file__).with_name("session_child.py")


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("alpha", encoding="utf-8")
    return tmp_path


def recorded(steps, task="go", path="s.jsonl", **options):
    """An agent on the scripted model, recorded in a new session, after one chat."""
    bot = Agent(ScriptedClient(steps), options.pop("model", "scripted-demo"), on_event=None,
                **options)
    with sessions.new_session(path) as session:
        sessions.record(session, bot)
        bot.chat(task)
    return bot, Path(path)


def entries(path) -> list[dict]:
    return list(sessions.load_session(path).entries.values())


def kinds(path) -> list[str]:
    return [entry["type"] for entry in entries(path)]


EVERY_KIND_OF_TURN = [
    [tool_call("read_file", path="a.txt"), tool_call("read_file", path="nope.txt"),
     tool_call("list_files", path=".")],  # parallel calls, one of them failing
    step(tool_call("read_file", raw_arguments='{"path": "a.txt"'),  # arguments not JSON
         tool_call("no_such_tool"), reasoning_content="I should look again."),
    step(tool_call("edit_file", path="b.txt", old_str="", new_str="cut off"),
         finish_reason="length"),  # cut off: not run, answered "not executed"
    reply("a.txt says alpha.", reasoning_content="Done looking."),
]


# --- what is recorded, and what is sent -------------------------------------------------------


def test_a_run_round_trips_parallel_calls_errors_length_cuts_and_reasoning_content():
    bot, path = recorded(EVERY_KIND_OF_TURN)
    loaded = sessions.load_session(path)
    assert loaded.problems == []
    assert loaded.messages() == bot.messages
    assert_history_valid(loaded.messages())
    assert [m.get("reasoning_content") for m in loaded.messages() if m["role"] == "assistant"] \
        == [None, "I should look again.", None, "Done looking."]
    assert not (Path("b.txt")).exists()  # the cut-off call did not run, then or on loading


def test_what_is_sent_is_exactly_agent_messages_and_the_session_holds_more():
    bot, path = recorded(EVERY_KIND_OF_TURN)
    for request in bot.client.requests:  # every request sent the branch so far, nothing else
        assert request["messages"] == bot.messages[:len(request["messages"])]
    assert bot.client.requests[-1]["messages"] == bot.messages[:-1]
    assert bot.request_messages() is bot.messages  # no conversion at the model boundary
    found = kinds(path)
    assert found[:4] == ["session", "message", "model", "message"]
    assert found.count("message") == len(bot.messages) and found[-1] == "stop"
    # a tool_start for each call that ran, none for the call cut off by "length"
    started = [e["tool_call_id"] for e in entries(path) if e["type"] == "tool_start"]
    assert started == ["call_1", "call_2", "call_3", "call_4", "call_5"]


def test_every_line_is_one_entry_with_an_id_a_parent_and_a_type():
    _, path = recorded(EVERY_KIND_OF_TURN)
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""  # every line ends with "\n"
    for number, line in enumerate(lines[:-1], 1):
        entry = json.loads(line)
        assert entry["id"] == str(number) and entry["type"] in sessions.ENTRY_TYPES
        assert entry["parent"] == (str(number - 1) if number > 1 else None)


def test_message_entries_carry_the_events_details_and_the_stop_its_totals():
    bot, path = recorded(EVERY_KIND_OF_TURN)
    found = entries(path)
    answers = [e for e in found if e["type"] == "message" and e["message"]["role"] == "assistant"]
    assert [e["finish_reason"] for e in answers] == ["tool_calls", "tool_calls", "length", "stop"]
    assert [e["turn"] for e in answers] == [1, 2, 3, 4]
    results = [e for e in found if e["type"] == "message" and e["message"]["role"] == "tool"]
    assert [e["is_error"] for e in results] == [False, True, False, True, True, True]
    [stop] = [e for e in found if e["type"] == "stop"]
    prompt = sum(e["usage"]["prompt_tokens"] for e in answers)
    completion = sum(e["usage"]["completion_tokens"] for e in answers)
    assert stop["stop_reason"] == "done" and "error" not in stop
    assert stop["usage"] == {"prompt_tokens": prompt, "completion_tokens": completion}
    assert stop["cost"] == tracing.cost("scripted-demo", prompt, completion) > 0
    assert "duration" not in json.dumps(found)  # timings belong in lesson 07's trace


def test_a_failed_run_stops_with_its_error_and_an_unknown_model_costs_none():
    def server_down(messages):
        raise TimeoutError("no answer in 60 s")

    bot = Agent(ScriptedClient([tool_call("list_files"), server_down]), "unpriced-model",
                on_event=None)
    with sessions.new_session("s.jsonl") as session:
        sessions.record(session, bot)
        with pytest.raises(TimeoutError):
            bot.chat("go")
    stop = entries("s.jsonl")[-1]
    assert stop["type"] == "stop" and stop["stop_reason"] == "error"
    assert stop["error"] == "TimeoutError: no answer in 60 s" and stop["cost"] is None
    assert sessions.load_session("s.jsonl").messages() == bot.messages


def test_an_interrupted_batch_is_recorded_whole_so_resume_repairs_nothing():
    def stop_here():
        raise KeyboardInterrupt

    options = {"tools": [*TOOLS, schema(stop_here, "Stops.")],
               "registry": {**TOOL_REGISTRY, "stop_here": stop_here}}
    bot = Agent(ScriptedClient([[tool_call("stop_here"), tool_call("list_files")]]),
                "scripted-demo", on_event=None, **options)
    with sessions.new_session("s.jsonl") as session:
        sessions.record(session, bot)
        with pytest.raises(KeyboardInterrupt):
            bot.chat("go")
    loaded = sessions.load_session("s.jsonl")
    assert loaded.messages() == bot.messages  # answer_open_calls' quiet answers are in the file
    assert [json.loads(m["content"])["error"] for m in bot.messages[-2:]] == [
        agent.INTERRUPTED, agent.NOT_RUN]
    assert loaded.entries[loaded.leaf]["stop_reason"] == "interrupted"
    again = Agent(ScriptedClient([reply("ok")]), "scripted-demo", on_event=None, **options)
    with sessions.open_session("s.jsonl") as session:
        sessions.resume(session, again)
        assert len(session.entries) == len(loaded.entries)  # nothing to repair
        again.chat("go on")


def test_a_change_of_model_is_an_entry_and_runs_after_it_belong_to_it():
    bot, path = recorded([reply("one"), reply("two"), reply("three")], model="model-a")
    with sessions.open_session(path) as session:
        sessions.resume(session, bot)
        bot.chat("again")  # same model: no entry
        bot.model = "gpt-4.1"
        bot.chat("and with another model")
    found = entries(path)
    assert [e["model"] for e in found if e["type"] == "model"] == ["model-a", "gpt-4.1"]
    stops = [e for e in found if e["type"] == "stop"]
    assert stops[0]["cost"] is None and stops[-1]["cost"] == tracing.cost(
        "gpt-4.1", *stops[-1]["usage"].values())


def test_text_utf8_cannot_encode_is_escaped_and_loads_back_exactly():
    Path("odd.txt").write_text("line\u2028separator, next\x85line, form\x0cfeed", encoding="utf-8")
    task = "files caf\udce9.txt and \ud800 from a bad terminal"
    bot, path = recorded([tool_call("read_file", path="odd.txt"), reply("read it")], task=task)
    loaded = sessions.load_session(path)
    assert loaded.problems == [] and loaded.messages() == bot.messages
    assert loaded.messages()[1]["content"] == task
    data = path.read_bytes()
    assert data.count(b"\n") == len(loaded.entries)  # one line per entry, whatever they hold
    assert "\u2028".encode() in data  # written as it is, in a line of its own
    assert len(data.decode("utf-8").splitlines()) > len(loaded.entries)  # splitlines would cut
    assert "\\udce9" in sessions.describe(loaded.entries["4"])  # shown, not raised on


def test_a_line_is_on_disk_before_the_next_step_starts():
    seen = []

    def look():
        seen.append(Path("s.jsonl").read_bytes().split(b"\n")[-2])  # from a separate reader
        return {}

    recorded([tool_call("look"), reply("done")], tools=[*TOOLS, schema(look, "Look.")],
             registry={**TOOL_REGISTRY, "look": look})
    assert json.loads(seen[0])["type"] == "tool_start"  # written before the tool ran


def test_tool_starts_stops_and_closing_are_fsynced_other_lines_only_flushed(monkeypatch):
    synced = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    with sessions.new_session("s.jsonl") as session:
        synced.clear()
        for kind, durable, fields in [
                ("note", False, {}), ("tool_start", True, {"tool_call_id": "c", "name": "t"}),
                ("message", False, {"message": {"role": "user", "content": "x"}}),
                ("stop", True, {"stop_reason": "done"}),
                ("approval", False, {"path": "a", "approved": True}), ("branch", False, {})]:
            session.append(kind, **fields)
            assert len(synced) == durable, kind
            synced.clear()
    assert len(synced) == 1  # closing


def test_a_session_that_cannot_be_written_stops_the_run_and_refuses_more(monkeypatch):
    class FullDisk:
        def __getattr__(self, name):
            return getattr(real, name)

        def write(self, data):
            raise OSError(28, "No space left on device")

    bot = Agent(ScriptedClient([tool_call("list_files"), reply("done")]), on_event=None)
    session = sessions.new_session("s.jsonl")
    sessions.record(session, bot)
    real = session._file
    monkeypatch.setattr(session, "_file", FullDisk())
    with pytest.raises(sessions.SessionError, match="could not write to s.jsonl"):
        bot.chat("go")
    assert_history_valid(bot.messages)  # the agent's own history stays valid
    with pytest.raises(sessions.SessionError, match="nothing more is recorded"):
        session.append("note", text="x")
    monkeypatch.setattr(session, "_file", real)
    session.close()


@pytest.mark.parametrize("when", ["before the write", "after the fsync"])
def test_ctrl_c_in_the_middle_of_a_write_leaves_a_session_that_loads_and_resumes(monkeypatch,
                                                                                  when):
    # Ctrl-C arrives while the tool_start line is written: Python raises KeyboardInterrupt at
    # the next bytecode, before or after the line reached the file. Giving out that line's id
    # again (to the answer agent.py adds, or to the stop) would make two entries one id, and a
    # session that no longer loads.
    real_fsync = os.fsync

    def ctrl_c_after_fsync(fd):
        real_fsync(fd)
        raise KeyboardInterrupt

    class CtrlCBeforeToolStart:
        def __getattr__(self, name):
            return getattr(real, name)

        def write(self, data):
            if b'"tool_start"' in data:
                raise KeyboardInterrupt
            return real.write(data)

    bot = Agent(ScriptedClient([tool_call("list_files"), reply("done")]), on_event=None)
    session = sessions.new_session("s.jsonl")
    sessions.record(session, bot)
    real = session._file
    with monkeypatch.context() as patch:
        if when == "after the fsync":
            patch.setattr(os, "fsync", ctrl_c_after_fsync)
        else:
            patch.setattr(session, "_file", CtrlCBeforeToolStart())
        with pytest.raises(KeyboardInterrupt):
            bot.chat("go")
    assert bot.stop_reason == "interrupted"
    session.close()
    with sessions.open_session("s.jsonl") as again:  # it loads: every id is used once
        assert again.problems == []
        resumed = Agent(ScriptedClient([reply("went on")]), on_event=None)
        sessions.resume(again, resumed)
        resumed.chat("go on")
    assert_history_valid(resumed.messages)
    answers = [m["content"] for m in resumed.messages if m["role"] == "tool"]
    started = when == "after the fsync"  # its tool_start is in the file: it may have run
    assert answers == [agent.error_json(agent.INTERRUPTED if started else agent.NOT_RUN)]


# --- recording: its rules ---------------------------------------------------------------------


def test_a_new_session_file_is_for_its_owner_only():
    with sessions.new_session("s.jsonl"):
        pass  # it holds everything the model saw, secrets included
    assert stat.S_IMODE(os.stat("s.jsonl").st_mode) == 0o600


def test_values_json_writes_differently_do_not_count_as_a_history_changed_by_hand():
    class TupleAgent(Agent):  # a subclass that keeps a tuple in its messages
        def append(self, message, **details):
            super().append({**message, "tags": ("a", "b")} if message["role"] == "user"
                           else message, **details)

    bot = TupleAgent(ScriptedClient([reply("one"), reply("two")]), on_event=None)
    with sessions.new_session("s.jsonl") as session:
        sessions.record(session, bot)
        bot.chat("first")
        bot.chat("second")  # the recorded list ["a", "b"] is the tuple, as written
    assert sessions.load_session("s.jsonl").messages()[1]["tags"] == ["a", "b"]


def test_record_refuses_a_session_that_holds_a_conversation_and_resume_records_an_empty_one():
    _, path = recorded([reply("hi")])
    with sessions.open_session(path) as session, pytest.raises(
            sessions.SessionError, match="resume"):
        sessions.record(session, Agent(ScriptedClient([]), on_event=None))
    bot = Agent(ScriptedClient([reply("hello")]), "scripted-demo", on_event=None)
    with sessions.new_session("empty.jsonl") as session:
        sessions.resume(session, bot)
        bot.chat("hi")
    assert sessions.load_session("empty.jsonl").messages() == bot.messages


def test_a_read_only_session_cannot_record_and_one_session_records_one_agent():
    _, path = recorded([reply("hi")])
    with pytest.raises(sessions.SessionError, match="not open for writing"):
        sessions.resume(sessions.load_session(path), Agent(ScriptedClient([]), on_event=None))
    with sessions.open_session(path) as session:
        sessions.resume(session, Agent(ScriptedClient([]), on_event=None))
        with pytest.raises(sessions.SessionError, match="recording an agent already"):
            sessions.resume(session, Agent(ScriptedClient([]), on_event=None))


def test_a_history_changed_by_hand_is_refused_before_the_run_starts():
    bot, path = recorded([tool_call("list_files"), reply("a"), reply("b")])
    before = path.read_bytes()
    with sessions.open_session(path) as session:
        sessions.resume(session, bot)
        bot.messages.pop()
        with pytest.raises(sessions.SessionError, match="no longer the session's current branch"):
            bot.chat("again")
    assert path.read_bytes() == before and len(bot.client.requests) == 2


def test_closing_gives_the_agent_its_own_handler_back():
    events = []
    bot = Agent(ScriptedClient([reply("a"), reply("b")]), on_event=events.append)
    with sessions.new_session("s.jsonl") as session:
        sessions.record(session, bot)
        assert bot.on_event is not events.append
        bot.chat("one")
    assert bot.on_event == events.append and events[-1]["type"] == "agent_end"
    size = Path("s.jsonl").stat().st_size
    bot.chat("two")  # not recorded any more
    assert Path("s.jsonl").stat().st_size == size


def test_decisions_of_a_lesson_06_policy_are_recorded_beside_their_call():
    import diff_approval

    Path("notes.md").write_text("one\n", encoding="utf-8")
    with sessions.new_session("s.jsonl") as session:
        policy = sessions.recording_decisions(session, diff_approval.scripted(
            [diff_approval.APPROVE, diff_approval.reject("no new files, please")]))
        tools, registry = diff_approval.approval_tools(policy)
        bot = Agent(ScriptedClient([
            tool_call("read_file", path="notes.md"),
            tool_call("edit_file", path="notes.md", old_str="one", new_str="two"),
            tool_call("edit_file", path="new.md", old_str="", new_str="x"), reply("done")]),
            tools=tools, registry=registry, on_event=None)
        sessions.record(session, bot)
        bot.chat("edit")
    found = entries("s.jsonl")
    approvals = [(e["path"], e["approved"], e["reason"]) for e in found if e["type"] == "approval"]
    assert approvals == [("notes.md", True, ""), ("new.md", False, "no new files, please")]
    at = [e["type"] for e in found].index("approval")
    assert found[at - 1]["type"] == "tool_start" and found[at + 1]["type"] == "message"
    assert found[at + 1]["message"]["tool_call_id"] == found[at - 1]["tool_call_id"]


def test_a_person_s_rewrite_is_recorded_as_a_fact_not_as_a_function():
    import diff_approval

    Path("notes.md").write_text("one\n", encoding="utf-8")
    with sessions.new_session("s.jsonl") as session:
        policy = sessions.recording_decisions(session, diff_approval.scripted(
            [diff_approval.Decision(True, rewrite=str.upper)]))
        tools, registry = diff_approval.approval_tools(policy)
        bot = Agent(ScriptedClient([
            tool_call("read_file", path="notes.md"),
            tool_call("edit_file", path="notes.md", old_str="one", new_str="two"),
            reply("done")]), tools=tools, registry=registry, on_event=None)
        sessions.record(session, bot)
        bot.chat("edit")
    [approval] = [e for e in entries("s.jsonl") if e["type"] == "approval"]
    assert approval["approved"] and approval["rewritten"] is True
    assert "<function" not in Path("s.jsonl").read_text()
    assert Path("notes.md").read_text() == "TWO\n"


NO_DECISIONS = {  # answers lesson 06's as_decision refuses (a truthy one would approve)
    "Decision('not today')": lambda decision: decision("not today"),
    "Decision(1)": lambda decision: decision(1),
    "'yes'": lambda decision: "yes",
    "None": lambda decision: None,
}


@pytest.mark.parametrize("answer", NO_DECISIONS)
def test_an_answer_lesson_06_refuses_is_recorded_as_not_approved_and_nothing_is_written(answer):
    import diff_approval

    given = NO_DECISIONS[answer](diff_approval.Decision)
    with sessions.new_session("s.jsonl") as session:
        policy = sessions.recording_decisions(session, lambda path, diff: given)
        tools, registry = diff_approval.approval_tools(policy)
        bot = Agent(ScriptedClient([
            tool_call("edit_file", path="new.md", old_str="", new_str="x"), reply("done")]),
            tools=tools, registry=registry, on_event=None)
        sessions.record(session, bot)
        bot.chat("edit")
    assert not Path("new.md").exists()
    [approval] = [e for e in entries("s.jsonl") if e["type"] == "approval"]
    assert approval["path"] == "new.md" and approval["approved"] is False
    assert "a policy must answer True, False or a Decision" in approval["reason"]
    assert "a policy must answer" in bot.messages[-2]["content"]  # what the model read


def test_a_decision_on_a_command_is_recorded_under_command_not_as_a_path():
    with sessions.new_session("s.jsonl") as session:
        asked = sessions.recording_decisions(session, lambda command, shown: False,
                                             field="command")
        asked("rm -rf build", "rm -rf build")
        session.append("note", text="between")
    [approval] = [e for e in entries("s.jsonl") if e["type"] == "approval"]
    assert approval["command"] == "rm -rf build" and "path" not in approval
    assert approval["approved"] is False
    session = sessions.load_session("s.jsonl")  # a valid entry, read back
    assert sessions.describe(next(e for e in session.entries.values()
                                  if e["type"] == "approval")).startswith(
        "approval: $ rm -rf build rejected")


def test_a_run_whose_server_reported_no_usage_stops_with_tokens_unknown_not_zero():
    script = ScriptedClient([reply("hi")])
    real = script.create

    def without_usage(**request):  # a server that sends no usage
        response = real(**request)
        response.usage = None
        return response
    script.chat.completions.create = without_usage
    with sessions.new_session("s.jsonl") as session:
        bot = Agent(script, "scripted-demo", on_event=None)
        sessions.record(session, bot)
        bot.chat("hello")
    [stop] = [e for e in entries("s.jsonl") if e["type"] == "stop"]
    assert stop["usage"] is None and stop["cost"] is None
    assert "tokens unknown, ?" in sessions.describe(stop)


def test_a_policy_that_raises_records_no_decision():
    import diff_approval

    def broken(path, diff):
        raise RuntimeError("the person's terminal went away")

    with sessions.new_session("s.jsonl") as session:
        tools, registry = diff_approval.approval_tools(
            sessions.recording_decisions(session, broken))
        bot = Agent(ScriptedClient([
            tool_call("edit_file", path="new.md", old_str="", new_str="x"), reply("done")]),
            tools=tools, registry=registry, on_event=None)
        sessions.record(session, bot)
        bot.chat("edit")
    assert "approval" not in kinds("s.jsonl") and not Path("new.md").exists()


# --- a hard crash, in a real child process -----------------------------------------------------


@functools.cache
def crashed_session(stage: str) -> bytes:
    """The session a child process left when it was killed with SIGKILL at `stage`."""
    folder = Path(os.environ["TMPDIR"]) / f"crash-{stage}-{os.getpid()}"
    folder.mkdir()
    (folder / "a.txt").write_text("alpha", encoding="utf-8")
    with subprocess.Popen([sys.executable, str(CHILD), "session.jsonl", stage], cwd=folder,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
        said = child.stdout.readline()  # blocks until the child is where it was asked to be
        assert said == f"at {stage}\n", child.stderr.read()
        child.send_signal(signal.SIGKILL)
    assert child.returncode == -signal.SIGKILL
    return (folder / "session.jsonl").read_bytes()


STAGES = {  # stage -> the answers resume must add, as (call id, text)
    "model": [],
    "tool": [("call_2", agent.INTERRUPTED)],
    "results": [("call_2", agent.NOT_RUN), ("call_3", agent.NOT_RUN)],
    "mid-batch": [("call_3", agent.INTERRUPTED), ("call_4", agent.NOT_RUN)],
}


@pytest.mark.slow
@pytest.mark.parametrize("stage", STAGES)
def test_a_run_killed_at_any_stage_resumes_into_a_history_a_strict_server_accepts(stage):
    Path("s.jsonl").write_bytes(crashed_session(stage))
    left = sessions.load_session("s.jsonl")
    assert left.problems == []
    last = {"model": "message", "tool": "tool_start", "results": "message",
            "mid-batch": "tool_start"}[stage]
    assert left.entries[left.leaf]["type"] == last
    bot = Agent(ScriptedClient([reply("going on")]), "scripted-demo", on_event=None)
    with sessions.open_session("s.jsonl") as session:
        sessions.resume(session, bot)
        added = list(session.entries.values())[len(left.entries):]
        bot.chat("go on")  # ScriptedClient rejects, as a strict server does, unpaired calls
    answers = [(e["message"]["tool_call_id"], json.loads(e["message"]["content"])["error"])
               for e in added if e["type"] == "message"]
    assert answers == STAGES[stage]
    assert all(e["repaired"] and e["is_error"] for e in added if e["type"] == "message")
    assert added[-1]["type"] == "stop" and added[-1]["stop_reason"] == "crashed"
    first_request = bot.client.requests[0]["messages"]
    assert first_request == [*left.messages(), *(e["message"] for e in added
                                                 if e["type"] == "message"), bot.messages[-2]]
    assert agent.pairing_problem(first_request) is None
    after = sessions.load_session("s.jsonl")
    assert after.messages() == bot.messages and bot.messages[-1]["content"] == "going on"
    assert Path("s.jsonl").read_bytes().startswith(crashed_session(stage))  # only appended


def no_two_user_messages_in_a_row(messages):
    """A model whose chat template insists that user and assistant take turns."""
    roles = [m["role"] for m in messages]
    assert ["user", "user"] not in [roles[i:i + 2] for i in range(len(roles))], roles
    return reply(f"answered: {messages[-1]['content']}")


def test_a_run_killed_before_the_model_answered_asks_its_question_again_on_a_branch():
    Path("s.jsonl").write_bytes(crashed_session("question"))
    left = sessions.load_session("s.jsonl")
    bot = Agent(ScriptedClient([no_two_user_messages_in_a_row]), "scripted-demo",
                on_event=None)
    with sessions.open_session("s.jsonl") as session:
        sessions.resume(session, bot)
        question = sessions.unanswered(session)
        assert question["message"] == {"role": "user", "content": "read a.txt, then more"}
        assert bot.messages[-1] == question["message"]  # a chat() now would add a second one
        sessions.switch(session, question["parent"])
        assert sessions.unanswered(session) is None
        assert bot.chat(question["message"]["content"]) == "answered: read a.txt, then more"
    sent = [m["role"] for m in bot.client.requests[0]["messages"]]
    assert sent == ["system", "user"]
    after = sessions.load_session("s.jsonl")
    assert after.messages() == bot.messages
    crashed = [e for e in after.entries.values() if e["type"] == "stop"][0]
    assert crashed["stop_reason"] == "crashed"  # the first try stays in the file, on its branch
    assert Path("s.jsonl").read_bytes().startswith(crashed_session("question"))
    assert len(after.entries) > len(left.entries)


def test_unanswered_is_none_once_the_model_answered_and_after_an_api_error_it_is_not():
    bot, path = recorded([reply("done")])
    with sessions.open_session(path) as session:
        assert sessions.unanswered(session) is None
    Path("t.jsonl").write_bytes(crashed_session("tool"))  # ends on a call: orphan repair's job
    with sessions.open_session("t.jsonl") as session:
        sessions.resume(session, Agent(ScriptedClient([]), "scripted-demo", on_event=None))
        assert sessions.unanswered(session) is None

    def server_down(messages):
        raise openai.APIConnectionError(request=httpx2.Request("POST", "http://x.test"))

    failing = Agent(ScriptedClient([server_down]), "scripted-demo", on_event=None)
    with sessions.new_session("u.jsonl") as session:
        sessions.record(session, failing)
        with pytest.raises(openai.APIConnectionError):
            failing.chat("are you there?")
        assert sessions.unanswered(session)["message"]["content"] == "are you there?"


def test_the_crashed_run_still_reports_its_tokens_and_cost():
    Path("s.jsonl").write_bytes(crashed_session("tool"))
    with sessions.open_session("s.jsonl") as session:
        sessions.resume(session, Agent(ScriptedClient([]), "scripted-demo", on_event=None))
        stop = session.entries[session.leaf]
    answers = [e for e in session.entries.values() if e["type"] == "message"
               and e["message"]["role"] == "assistant"]
    assert stop["usage"]["prompt_tokens"] == sum(e["usage"]["prompt_tokens"] for e in answers) > 0
    assert stop["cost"] > 0 and "found on resume" in stop["error"]


class StrictServer:
    """A fake provider behind the real openai SDK: HTTP 400 for unpaired tool calls, as
    OpenAI's API gives; otherwise a short answer. It keeps every request body."""

    def __init__(self):
        self.bodies = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        problem = agent.pairing_problem(body["messages"])
        if problem:
            return httpx2.Response(400, json={"error": {"message": problem, "type": "invalid"}})
        return httpx2.Response(200, json={
            "id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "accepted"}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(api_key="test", base_url="http://strict.test/v1", max_retries=0,
                             http_client=httpx2.Client(transport=httpx2.MockTransport(self.handle)))


@pytest.mark.parametrize("stage", ["tool", "mid-batch"])
def test_the_real_openai_sdk_rejects_the_crashed_branch_and_accepts_the_resumed_one(stage):
    Path("s.jsonl").write_bytes(crashed_session(stage))
    server = StrictServer()
    as_left = sessions.load_session("s.jsonl").messages()
    with pytest.raises(openai.BadRequestError, match="must each be answered"):
        server.client().chat.completions.create(model="m", messages=[
            *as_left, {"role": "user", "content": "go on"}])
    bot = Agent(server.client(), "m", on_event=None)
    with sessions.open_session("s.jsonl") as session:
        sessions.resume(session, bot)
        assert bot.chat("go on") == "accepted"
    assert server.bodies[-1]["messages"] == bot.messages[:-1]  # what is sent: agent.messages
    assert sessions.load_session("s.jsonl").messages() == bot.messages


# --- two writers ----------------------------------------------------------------------------


def test_a_second_writer_in_the_same_process_is_refused_and_a_reader_is_not():
    with sessions.new_session("s.jsonl"):
        with pytest.raises(sessions.SessionLocked, match="open for writing elsewhere"):
            sessions.open_session("s.jsonl")
        assert sessions.load_session("s.jsonl").leaf == "1"
    with sessions.open_session("s.jsonl") as session:  # free again once closed
        session.append("note", text="mine now")


def test_a_second_writer_in_another_process_is_refused_until_that_process_dies():
    with subprocess.Popen([sys.executable, str(CHILD), "s.jsonl", "hold"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as child:
        assert child.stdout.readline() == "at hold\n", child.stderr.read()
        before = Path("s.jsonl").read_bytes()
        with pytest.raises(sessions.SessionLocked):
            sessions.open_session("s.jsonl")
        assert Path("s.jsonl").read_bytes() == before
        child.send_signal(signal.SIGKILL)
    with sessions.open_session("s.jsonl") as session:  # the lock died with its process
        session.append("note", text="after the other writer")
    assert kinds("s.jsonl") == ["session", "note"]


# --- bad input: refused or reported, never changed --------------------------------------------


HEADER = '{"id": "1", "parent": null, "type": "session", "version": 1}\n'
SYSTEM = ('{"id": "2", "parent": "1", "type": "message", '
          '"message": {"role": "system", "content": "hi"}}\n')

REFUSED = {
    "empty": ("", "is not a session: it is empty"),
    "blank lines": ("\n \n", "is not a session: it is empty"),
    "text": ("hello\n", "is not a session: its first line is not JSON"),
    "a JSON list": ("[1, 2]\n", "its first line is not a session header"),
    "a lesson 07 trace": ('{"time": 0, "type": "agent_start", "model": "m"}\n',
                          "looks like a trace of tracing.py"),
    "a header with a parent": (HEADER.replace("null", '"0"'), "its header needs an 'id' and no"),
    "a line that is not an entry": (HEADER + '{"role": "user", "content": "hi"}\n',
                                    "line 2: not a session entry"),
    "a message entry without a message": (
        HEADER + '{"id": "2", "parent": "1", "type": "message"}\n', "without a message"),
    "a missing parent": (HEADER + SYSTEM.replace('"parent": "1"', '"parent": "9"'),
                         "entry 2's parent '9' is not in the file"),
    "a second root": (HEADER + SYSTEM.replace('"parent": "1"', '"parent": null'),
                      "has no parent, but only the header is the root"),
    "a cycle": (HEADER + SYSTEM + '{"id": "3", "parent": "4", "type": "note"}\n'
                '{"id": "4", "parent": "3", "type": "note"}\n', "entries 3 -> 4 -> 3 form a cycle"),
    "its own parent": (HEADER + '{"id": "2", "parent": "2", "type": "note"}\n',
                       "entries 2 -> 2 form a cycle"),
    "an id used twice": (HEADER + SYSTEM + SYSTEM, "id '2' is used twice (lines 2 and 3)"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_bad_file_is_refused_with_a_clear_sentence_and_left_as_it_was(case):
    text, said = REFUSED[case]
    Path("bad.jsonl").write_text(text, encoding="utf-8")
    for opener in (sessions.load_session, sessions.open_session):
        with pytest.raises(sessions.SessionError, match=re.escape(said)) as refused:
            opener("bad.jsonl")
        assert "bad.jsonl" in str(refused.value) and "the file was not changed" in str(
            refused.value)
        assert Path("bad.jsonl").read_text(encoding="utf-8") == text
    fd = os.open("bad.jsonl", os.O_RDONLY)  # the refused open_session left no lock behind
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def line_3(**entry) -> str:
    """A file whose third line holds this entry, after a good header and system prompt."""
    return HEADER + SYSTEM + json.dumps({"id": "3", "parent": "2", **entry}) + "\n"


CALL = {"id": "c1", "type": "function", "function": {"name": "list_files", "arguments": "{}"}}


def asking(**message) -> str:
    return line_3(type="message", message={"role": "assistant", "content": "", **message})


NEEDS_A_CALL = "tool call 1 of its message needs an 'id' and a 'function' with a 'name'"
MALFORMED = {  # issue 23: each once ended in a TypeError, KeyError or AttributeError, or loaded
    "a parent that is a list": (line_3(parent=["2"], type="note"),
                                "entry 3's parent is a list, not an id"),
    "a parent that is an object": (line_3(parent={"id": "2"}, type="note"),
                                   "entry 3's parent is an object, not an id"),
    "a parent that is a number": (line_3(parent=2, type="note"), "parent is a number"),
    "an id that is a number": (HEADER + SYSTEM + '{"id": 3, "parent": "2", "type": "note"}\n',
                               "line 3: not a session entry"),
    "a type that is a list": (line_3(type=["note"]), "line 3: not a session entry"),
    "a message without a role": (line_3(type="message", message={"content": "hi"}),
                                 "its message has no role"),
    "a role that is a list": (line_3(type="message", message={"role": ["user"]}),
                              "a role that is a list"),
    "a role Chat Completions has not": (line_3(type="message", message={"role": "robot"}),
                                        "the role 'robot'"),
    "a message that is text": (line_3(type="message", message="hi"),
                               "its message is a string, not an object"),
    "content that is an object": (line_3(type="message", message={"role": "user",
                                                                  "content": {"t": 1}}),
                                  "content is an object, not text"),
    "a tool message without its call id": (
        line_3(type="message", message={"role": "tool", "content": "ok"}),
        "its tool message has no tool_call_id"),
    "a tool message whose call id is a list": (
        line_3(type="message", message={"role": "tool", "tool_call_id": ["c1"], "content": "ok"}),
        "its tool message has no tool_call_id"),
    "tool_calls that is an object": (asking(tool_calls=CALL),
                                     "tool_calls is an object, not a list"),
    "tool_calls that is null": (asking(tool_calls=None), "tool_calls is null, not a list"),
    "tool_calls on a user message": (line_3(type="message", message={
        "role": "user", "content": "hi", "tool_calls": [CALL]}), "its user message has tool_calls"),
    "a tool call without an id": (asking(tool_calls=[{"function": CALL["function"]}]),
                                  NEEDS_A_CALL),
    "a tool call that is text": (asking(tool_calls=["list_files"]), NEEDS_A_CALL),
    "a tool call whose function is text": (asking(tool_calls=[{"id": "c1", "function": "ls"}]),
                                           NEEDS_A_CALL),
    "a tool call without its arguments": (
        asking(tool_calls=[{"id": "c1", "function": {"name": "list_files"}}]), NEEDS_A_CALL),
    "a tool_start without its call id": (line_3(type="tool_start", name="t"),
                                         "a tool_start entry without its 'tool_call_id'"),
    "a tool_start whose call id is a list": (line_3(type="tool_start", tool_call_id=["c1"],
                                                    name="t"), "its 'tool_call_id' is a list"),
    "a process without its group": (line_3(type="process", tool_call_id="c1"),
                                    "a process entry without its 'pgid'"),
    "a process group that is text": (line_3(type="process", tool_call_id="c1", pgid="42"),
                                     "its 'pgid' is a string, not a whole number"),
    "a process group that is true": (line_3(type="process", tool_call_id="c1", pgid=True),
                                     "its 'pgid' is true, not a whole number"),
    "a process start that is a number": (
        line_3(type="process", tool_call_id="c1", pgid=42, started=7),
        "its 'started' is a number, not a string or null"),
    "a model entry without its model": (line_3(type="model"),
                                        "a model entry without its 'model'"),
    "a model that is a list": (line_3(type="model", model=["gpt"]), "its 'model' is a list"),
    "a stop without its reason": (line_3(type="stop"), "a stop entry without its 'stop_reason'"),
    "a cost that is text": (line_3(type="stop", stop_reason="done", cost="$1"),
                            "its 'cost' is a string, not a number or null"),
    "a usage that is a list": (line_3(type="stop", stop_reason="done", usage=[1, 2]),
                               "its usage is not an object"),
    "tokens that are text": (line_3(type="note", usage={"prompt_tokens": "many"}),
                             "its usage is not an object"),
    "tokens that are true": (line_3(type="note", usage={"completion_tokens": True}),
                             "its usage is not an object"),
    "an approval that says yes in words": (line_3(type="approval", path="a", approved="yes"),
                                           "its 'approved' is a string, not true or false"),
    "an approval of neither a file nor a command": (
        line_3(type="approval", approved=True), "an approval entry without its 'path' (or its "
        "'command')"),
    "an approval of a command that is a list": (
        line_3(type="approval", command=["ls"], approved=True), "its 'command' is a list"),
    "a branch whose from is a list": (line_3(type="branch", **{"from": ["2"]}),
                                      "its 'from' is a list"),
    "a branch that leaves itself": (line_3(type="branch", **{"from": "3"}),
                                    "branch entry 3's 'from' ('3') is not an entry written before"),
    "a branch that leaves a later entry": (
        line_3(type="branch", **{"from": "4"})
        + '{"id": "4", "parent": "3", "type": "note"}\n', "is not an entry written before it"),
    "a second header": (line_3(type="session", version=1), "a second header"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_an_entry_of_the_wrong_shape_is_refused_where_the_file_is_read_saying_where_and_what(
        case):
    text, said = MALFORMED[case]
    Path("bad.jsonl").write_text(text, encoding="utf-8")
    for opener in (sessions.load_session, sessions.open_session):
        with pytest.raises(sessions.SessionError, match=re.escape(said)) as refused:
            opener("bad.jsonl")
        assert str(refused.value).startswith("bad.jsonl, line ") and str(refused.value).endswith(
            "; the file was not changed")
        assert Path("bad.jsonl").read_text(encoding="utf-8") == text
    fd = os.open("bad.jsonl", os.O_RDONLY)  # the refused open_session left no lock behind
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_what_a_shape_check_lets_through_is_safe_to_resume_draw_and_send():
    """Every entry the loader accepts can be drawn and resumed: fields a type does not read,
    types this version does not know, content as a list of parts, a model of null."""
    lines = [HEADER, SYSTEM] + [json.dumps(entry) + "\n" for entry in [
        {"id": "3", "parent": "2", "type": "model", "model": None},
        {"id": "4", "parent": "3", "type": "message", "message": {
            "role": "user", "content": [{"type": "text", "text": "hi"}]}, "usage": None},
        {"id": "5", "parent": "4", "type": "compaction", "summary": [1, 2], "usage": None,
         "end": {"odd": True}},
        {"id": "6", "parent": "5", "type": "note", "text": ["not", "text"], "workspace": 7},
        {"id": "7", "parent": "6", "type": "message", "message": {
            "role": "assistant", "content": "", "tool_calls": [CALL], "refusal": None}},
        {"id": "8", "parent": "7", "type": "approval", "path": "a", "approved": False,
         "reason": None}]]
    Path("odd.jsonl").write_text("".join(lines))
    loaded = sessions.load_session("odd.jsonl")
    assert "compaction" in loaded.problems[0] and len(sessions.tree(loaded).split("\n")) == 8
    bot = Agent(ScriptedClient([reply("fine")]), "scripted-demo", on_event=None)
    with sessions.open_session("odd.jsonl") as session:
        sessions.resume(session, bot)  # call c1 is repaired as not run
        assert bot.chat("go on") == "fine"
    assert_history_valid(bot.messages)


def test_append_refuses_what_the_loader_would_refuse_and_writes_nothing():
    with sessions.new_session("s.jsonl") as session:
        before = Path("s.jsonl").read_bytes()
        for kind, fields, said in [
                ("note", {"usage": "many"}, "its usage is not an object"),
                ("message", {"message": {"content": "no role"}}, "its message has no role"),
                ("tool_start", {"tool_call_id": ["c1"], "name": "t"}, "'tool_call_id' is a list"),
                ("branch", {"from": "9"}, "'from' ('9') is not an entry written before it"),
                ("note", {"id": "7"}, "append() gives each entry its id"),
                ("note", {"type": "stop"}, "append() gives each entry its id")]:
            with pytest.raises(sessions.SessionError, match=re.escape(said)):
                session.append(kind, **fields)
            assert Path("s.jsonl").read_bytes() == before and session.leaf == "1"
        session.append("branch", **{"from": "9", "from_session": "other.jsonl"})  # a fork's
    assert sessions.load_session("s.jsonl").problems == []


def test_a_missing_file_and_an_existing_one_are_clear_errors():
    with pytest.raises(sessions.SessionError, match="there is no session at nope.jsonl"):
        sessions.load_session("nope.jsonl")
    with pytest.raises(sessions.SessionError, match="new_session\\(\\) starts one"):
        sessions.open_session("nope.jsonl")
    Path("taken.jsonl").write_text("keep\n")
    with pytest.raises(sessions.SessionError, match="exists already"):
        sessions.new_session("taken.jsonl")
    assert Path("taken.jsonl").read_text() == "keep\n"


def test_a_torn_last_line_is_reported_skipped_and_never_rewritten():
    bot, path = recorded([tool_call("list_files"), reply("done")])
    whole = path.read_bytes()
    torn = whole + '{"id": "12", "parent": "11", "type": "note", "text": "é'.encode()[:-1]
    path.write_bytes(torn)  # cut in the middle of a two-byte character, too
    loaded = sessions.load_session(path)
    torn_line = whole.count(b"\n") + 1
    assert loaded.problems == [f"line {torn_line}: the last line is incomplete "
                               "(its writer stopped in the middle of it); skipped"]
    assert loaded.messages() == bot.messages and path.read_bytes() == torn
    with sessions.open_session(path) as session:
        assert path.read_bytes() == torn  # opening changes nothing either
        new = session.append("note", text="after the crash")
    lines = path.read_bytes().split(b"\n")
    assert b"\n".join(lines[:-2]) == torn  # the torn line stays, as its own line
    assert json.loads(lines[-2]) == new and new["id"] == str(len(lines) - 1)
    reloaded = sessions.load_session(path)
    assert reloaded.problems == [f"line {len(lines) - 2}: not a complete entry (a line torn by "
                                 "an earlier crash?); skipped"]
    assert reloaded.entries[reloaded.leaf] == new and reloaded.messages() == bot.messages


def test_a_last_line_without_its_newline_is_kept_and_the_next_starts_a_line_of_its_own():
    _, path = recorded([reply("done")])
    path.write_bytes(path.read_bytes()[:-1])
    assert sessions.load_session(path).problems == []
    with sessions.open_session(path) as session:
        session.append("note", text="next")
    assert kinds(path)[-2:] == ["stop", "note"]


def test_an_unknown_entry_type_is_kept_carried_and_never_sent():
    bot, path = recorded([reply("done")])
    assert len(entries(path)) == 6
    newer = ('{"id": "7", "parent": "6", "type": "compaction", "summary": "all of it",'
             ' "from_the_future": [1, 2]}\n')
    path.write_bytes(path.read_bytes() + newer.encode())
    loaded = sessions.load_session(path)
    assert loaded.problems == ["1 entry of type 'compaction' (line 7): unknown here, so kept as "
                               "is and not sent to the model"]
    assert loaded.leaf == "7" and loaded.path_to()[-1]["summary"] == "all of it"
    assert loaded.messages() == bot.messages  # not sent
    again = Agent(ScriptedClient([reply("still here")]), "scripted-demo", on_event=None)
    with sessions.open_session(path) as session:
        sessions.resume(session, again)
        again.chat("go on")
    after = sessions.load_session(path)
    assert newer.encode() in path.read_bytes()  # carried: the line as it was
    assert after.entries["8"]["parent"] == "7"  # and the branch goes on through it
    assert [e["type"] for e in after.path_to()].count("compaction") == 1
    assert after.messages() == again.messages


def test_a_newer_format_version_is_reported_and_loaded():
    Path("v2.jsonl").write_text(HEADER.replace('"version": 1', '"version": 2') + SYSTEM)
    loaded = sessions.load_session("v2.jsonl")
    assert loaded.problems == ["written by format version 2 (this code reads version 1); what "
                               "it does not know is kept as it is"]
    assert loaded.messages() == [{"role": "system", "content": "hi"}]


def test_a_branch_another_program_left_unpaired_in_the_middle_is_refused_on_resume():
    call = {"id": "c1", "type": "function", "function": {"name": "list_files", "arguments": "{}"}}
    lines = [HEADER, SYSTEM,
             json.dumps({"id": "3", "parent": "2", "type": "message", "message": {
                 "role": "assistant", "content": "", "tool_calls": [call]}}) + "\n",
             json.dumps({"id": "4", "parent": "3", "type": "message",
                         "message": {"role": "user", "content": "hi"}}) + "\n"]
    Path("odd.jsonl").write_text("".join(lines))
    with sessions.open_session("odd.jsonl") as session, pytest.raises(
            sessions.SessionError, match="cannot be sent to a model"):
        sessions.resume(session, Agent(ScriptedClient([]), on_event=None))
    assert Path("odd.jsonl").read_text() == "".join(lines)


# --- branches -------------------------------------------------------------------------------


def two_tasks():
    """A session: task 1 reads a.txt and answers; task 2 edits it."""
    bot = Agent(ScriptedClient([
        tool_call("read_file", path="a.txt"), reply("it says alpha"),
        tool_call("edit_file", path="a.txt", old_str="alpha", new_str="beta"), reply("edited"),
    ]), "scripted-demo", on_event=None)
    with sessions.new_session("s.jsonl") as session:
        sessions.record(session, bot)
        bot.chat("what does a.txt say?")
        bot.chat("change it to beta")
    first_stop = next(e["id"] for e in entries("s.jsonl") if e["type"] == "stop")
    return bot, first_stop


def test_a_branch_is_one_entry_under_an_earlier_one_and_copies_nothing():
    bot, first_stop = two_tasks()
    before = entries("s.jsonl")
    again = Agent(ScriptedClient([reply("it is a short word")]), "scripted-demo", on_event=None)
    with sessions.open_session("s.jsonl") as session:
        sessions.resume(session, again)
        branch = sessions.switch(session, first_stop)
        assert again.messages == session.messages(first_stop) == bot.messages[:5]
        again.chat("how long is it?")
    after = entries("s.jsonl")
    assert after[:len(before)] == before
    assert [e["type"] for e in after[len(before):]] == ["branch", "message", "message", "stop"]
    assert branch["parent"] == first_stop and branch["from"] == before[-1]["id"]
    sent = again.client.requests[0]["messages"]
    assert sent == bot.messages[:5] + [again.messages[5]]  # the trunk and the new question only
    loaded = sessions.load_session("s.jsonl")
    assert loaded.messages() == again.messages
    assert loaded.messages(before[-1]["id"]) == bot.messages  # the first branch is still there
    tree = sessions.tree(loaded)
    assert "├─ user: change it to beta" in tree and "└─ branch: back to" in tree
    assert tree.endswith("<- leaf")


def test_a_branch_does_not_roll_back_the_files_and_lesson_06s_check_catches_a_stale_edit():
    import diff_approval

    two_tasks()
    assert Path("a.txt").read_text() == "beta"  # edited on the first branch
    tools, registry = diff_approval.approval_tools(diff_approval.approve_all)
    again = Agent(ScriptedClient([
        tool_call("edit_file", path="a.txt", old_str="alpha", new_str="gamma"),  # as remembered
        tool_call("read_file", path="a.txt"), reply("it says beta; another branch changed it")]),
        "scripted-demo", tools=tools, registry=registry, on_event=None)
    first_stop = next(e["id"] for e in entries("s.jsonl") if e["type"] == "stop")
    with sessions.open_session("s.jsonl") as session:
        sessions.resume(session, again)
        sessions.switch(session, first_stop)
        again.chat("make it gamma")
    refused = json.loads(again.messages[7]["content"])["error"]
    assert "read it first" in refused and Path("a.txt").read_text() == "beta"
    assert json.loads(again.messages[9]["content"])["content"] == "beta"


def test_a_switch_into_the_middle_of_a_batch_or_to_an_unknown_entry_is_refused():
    bot, _ = two_tasks()
    before = Path("s.jsonl").read_bytes()
    ids = {e["type"]: e["id"] for e in entries("s.jsonl")}  # the last of each type
    with sessions.open_session("s.jsonl") as session:
        sessions.resume(session, bot)
        calls = next(e["id"] for e in session.path_to() if e["type"] == "message"
                     and e["message"].get("tool_calls"))
        for entry_id, said in [(calls, "in the middle of a batch"),
                               (ids["tool_start"], "in the middle of a batch"),
                               ("99", "there is no entry '99'")]:
            with pytest.raises(sessions.SessionError, match=said):
                sessions.switch(session, entry_id)
        assert bot.messages == session.messages()
    assert Path("s.jsonl").read_bytes() == before


def test_a_switch_to_a_user_message_or_to_what_follows_it_unanswered_is_refused_saying_where():
    """Issue 23: a switch there left the branch on a user message, and the next request sent
    system, user, user. It is refused, and the sentence says which entry to go to instead."""
    def server_down(messages):
        raise openai.APIConnectionError(request=httpx2.Request("POST", "http://x.test"))

    bot, _ = two_tasks()
    failing = Agent(ScriptedClient([server_down]), "scripted-demo", on_event=None)
    with sessions.open_session("s.jsonl") as session:
        sessions.resume(session, failing)
        with pytest.raises(openai.APIConnectionError):
            failing.chat("are you there?")  # a user message, then a stop: nobody answered it
    loaded = sessions.load_session("s.jsonl")
    question = sessions.unanswered(loaded)
    users = [e["id"] for e in loaded.entries.values() if e["type"] == "message"
             and e["message"]["role"] == "user"]
    before = Path("s.jsonl").read_bytes()
    again = Agent(ScriptedClient([no_two_user_messages_in_a_row]), "scripted-demo", on_event=None)
    with sessions.open_session("s.jsonl") as session:
        sessions.resume(session, again)
        history = list(again.messages)
        for entry_id, asked in [(users[0], users[0]), (users[1], users[1]),
                                (question["id"], question["id"]), (loaded.leaf, question["id"])]:
            parent = loaded.entries[asked]["parent"]
            with pytest.raises(sessions.SessionError, match=re.escape(
                    f"switch() refuses entry {entry_id}: ")) as refused:
                sessions.switch(session, entry_id)
            assert f"switch to entry {parent}, before it" in str(refused.value)
            assert "two user messages in a row" in str(refused.value)
        assert again.messages == history and Path("s.jsonl").read_bytes() == before
        sessions.switch(session, question["parent"])  # where the sentence says: accepted
        again.chat(question["message"]["content"])
    assert [m["role"] for m in again.client.requests[0]["messages"]][-2:] == ["assistant", "user"]


def test_resuming_after_a_switch_finds_no_crashed_run():
    _, first_stop = two_tasks()
    with sessions.open_session("s.jsonl") as session:
        sessions.switch(session, first_stop)
    bot = Agent(ScriptedClient([]), on_event=None)
    with sessions.open_session("s.jsonl") as session:
        sessions.resume(session, bot)
        assert session.entries[session.leaf]["type"] == "branch"  # nothing appended


def test_switch_without_a_recorded_agent_only_moves_the_leaf():
    bot, _ = two_tasks()
    with sessions.open_session("s.jsonl") as session:
        branch = sessions.switch(session, "2")  # back to the system prompt: a fresh start
        assert session.leaf == branch["id"] and session.messages() == bot.messages[:1]
    assert sessions.load_session("s.jsonl").messages() == bot.messages[:1]  # it survives


def naive_fork(session, entry_id, path):
    """Exercise 09.3 as its hint once led: every entry of the branch appended with all its
    fields but id, parent and type; a branch entry keeps a 'from' that was an id of the source."""
    branch = session.path_to(entry_id)
    with sessions.new_session(path) as forked:
        for entry in branch[1:]:
            forked.append(entry["type"], **{key: value for key, value in entry.items()
                                            if key not in ("id", "parent", "type")})
    return forked


def test_a_fork_that_copies_a_branch_entry_as_it_is_is_caught_and_one_that_says_its_source_is_not():
    """Issue 23: renumbered, the naive fork's branch entry 5 said it left entry 5: itself."""
    report = course.check("09.3", naive_fork)
    assert not report.passed
    assert "branch entry 5's 'from' ('5') is not an entry written before it" in repr(report)
    branch = {"id": "3", "parent": "2", "type": "branch", "from": "3"}
    Path("by-hand.jsonl").write_text(HEADER + SYSTEM + json.dumps(branch) + "\n")  # no append()
    with pytest.raises(sessions.SessionError, match="copied from another session"):
        sessions.load_session("by-hand.jsonl")
    Path("by-hand.jsonl").write_text(HEADER + SYSTEM + json.dumps(
        {**branch, "from_session": "tree.jsonl"}) + "\n")
    forked = sessions.load_session("by-hand.jsonl")
    assert sessions.describe(forked.entries["3"]) == "branch: back to 2, leaving 3 of tree.jsonl"


# --- looking at a session --------------------------------------------------------------------


def test_the_tree_of_a_very_long_session_is_drawn_without_recursion():
    with sessions.new_session("long.jsonl") as session:
        for n in range(5_000):
            session.append("note", text=f"note {n}")
        session.append("note", parent="3", text="a fork")
    lines = sessions.tree(sessions.load_session("long.jsonl")).split("\n")
    assert len(lines) == 5_002 and lines[-1] == "5002  └─ note: a fork   <- leaf"
    assert lines[2:5] == ["   3  note: note 1", "   4  ├─ note: note 2", "   5  │  note: note 3"]


# --- take it with you ------------------------------------------------------------------------


def test_the_exported_module_records_and_resumes_beside_agent_py_and_lesson_07s(tmp_path):
    kit = tmp_path / "kit"
    kit.mkdir()
    (kit / "agent.py").write_bytes((Path(course.ROOT) / "agent.py").read_bytes())
    for lesson, name in (("07-tracing", "tracing.py"), ("09-sessions", "sessions.py")):
        assert course.main(["export", lesson, "-o", str(kit / name)]) == 0
    program = """
import sessions
from agent import Agent, ScriptedClient, reply, tool_call

bot = Agent(ScriptedClient([tool_call("list_files"), reply("done")]), "gpt-4.1-mini", on_event=None)
with sessions.new_session("s.jsonl") as session:
    sessions.record(session, bot)
    bot.chat("look")
again = Agent(ScriptedClient([reply("again")]), "gpt-4.1-mini", on_event=None)
with sessions.open_session("s.jsonl") as session:
    sessions.resume(session, again)
    again.chat("and again")
print(sessions.tree(sessions.load_session("s.jsonl")).split("\\n")[-1])
"""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AGENT_FROM_ZERO")}
    done = subprocess.run([sys.executable, "-c", program], cwd=kit, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("<- leaf") and "stop: done" in done.stdout
    assert "import course" not in (kit / "sessions.py").read_text()


# --- A command a crash left running (issue 23) ---------------------------------------------------


def crashed_in_a_command(path, group: int, started: str | None) -> None:
    """A session as a crash in the middle of run_command leaves it: the call's tool_start,
    then the process entry recording_processes writes."""
    call = {"id": "call_1", "type": "function",
            "function": {"name": "run_command", "arguments": '{"command": "./job.sh"}'}}
    with sessions.new_session(path) as session:
        for message in ({"role": "system", "content": "s"}, {"role": "user", "content": "go"},
                        {"role": "assistant", "content": "", "tool_calls": [call]}):
            session.append("message", message=message)
        session.append("tool_start", tool_call_id="call_1", name="run_command")
        session.append("process", tool_call_id="call_1", pgid=group, started=started)


def resumed_answer(path) -> dict:
    bot = Agent(ScriptedClient([reply("checking first")]), "scripted-demo", on_event=None)
    with sessions.open_session(path) as session:
        sessions.resume(session, bot)
    assert_history_valid(bot.messages)
    answer = json.loads(bot.messages[-1]["content"])
    assert answer["error"] == agent.INTERRUPTED  # the words agent.py uses, and one more field
    return answer


def until_gone(group: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while sandbox.group_members(group):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def survivor(in_tmp):
    """A process group of its own, standing in for a command whose watcher was killed: a loop
    that would write late.txt once `go` exists. Killed and collected afterwards, whatever
    happened."""
    process = subprocess.Popen(["/bin/sh", "-c", "while [ ! -e go ]; do sleep 0.02; done; "
                                "echo ran > late.txt"], start_new_session=True)
    yield process
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def test_a_command_a_crash_left_running_is_stopped_on_resume_and_its_answer_says_so(survivor):
    crashed_in_a_command("s.jsonl", survivor.pid, sandbox.process_start(survivor.pid))
    assert survivor.pid in sandbox.group_members(survivor.pid)
    answer = resumed_answer("s.jsonl")
    assert answer["command"] == (
        f"its command was still running at resume (process group {survivor.pid}), and resume "
        "stopped it: it may have run partly")
    assert sandbox.group_members(survivor.pid) == []  # stopped before resume returned
    assert survivor.wait(timeout=10) == -signal.SIGKILL
    Path("go").touch()
    assert not Path("late.txt").exists()
    repaired = [e for e in sessions.load_session("s.jsonl").entries.values() if e.get("repaired")]
    assert [json.loads(e["message"]["content"]) for e in repaired] == [answer]  # in the file


def test_a_command_gone_by_resume_is_said_to_be_gone(survivor):
    started = sandbox.process_start(survivor.pid)
    os.killpg(survivor.pid, signal.SIGKILL)
    survivor.wait()
    # The shell is collected; its `sleep` may take a moment more to die of the same SIGKILL.
    assert within(10, lambda: sandbox.group_members(survivor.pid) == [])
    crashed_in_a_command("s.jsonl", survivor.pid, started)
    assert "its command was no longer running at resume (process group" in \
        resumed_answer("s.jsonl")["command"]


def test_a_group_whose_number_another_process_has_now_is_left_alone(survivor):
    """The same number, another start: the group the crash left had ended (a process id is
    not given again while a group of that number lives), and this one is not stopped."""
    crashed_in_a_command("s.jsonl", survivor.pid, "an earlier process's start")
    said = resumed_answer("s.jsonl")["command"]
    assert "the number now belongs to another program, left alone" in said
    assert survivor.pid in sandbox.group_members(survivor.pid)  # still running


def test_a_group_whose_first_process_exited_is_reported_not_stopped(in_tmp):
    """Once the shell has exited, a later group could have been given its number: resume
    cannot be sure the processes are the command's, so it says so and stops nothing."""
    shell = subprocess.Popen(["/bin/sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!; read _"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        child = int(shell.stdout.readline())
        started = sandbox.process_start(shell.pid)
        shell.stdin.close()  # the shell exits; its child stays in the group
        shell.wait()
        crashed_in_a_command("s.jsonl", shell.pid, started)
        said = resumed_answer("s.jsonl")["command"]
        assert f"its command's process group {shell.pid} still had processes at resume" in said
        assert f"they were not stopped; `kill -KILL -- -{shell.pid}` stops them" in said
        assert sandbox.group_members(shell.pid) == [child]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGKILL)
    assert until_gone(shell.pid)


def test_resume_says_so_when_it_cannot_look_for_the_group(survivor, monkeypatch):
    crashed_in_a_command("s.jsonl", survivor.pid, sandbox.process_start(survivor.pid))
    monkeypatch.setattr(sandbox, "group_members", lambda group: None)  # no /proc, no ps
    said = resumed_answer("s.jsonl")["command"]
    assert said.endswith("(no /proc and no ps here): it may still be running")


def test_each_command_s_group_is_recorded_right_after_its_tool_start(in_tmp):
    """recording_processes, given to lesson 05's shell as on_start: one process entry per
    command, naming the call, the group (the shell's pid) and that process's start."""
    starts = []
    with sessions.new_session("s.jsonl") as session:
        recording = sessions.recording_processes(session)

        def on_start(process):
            starts.append(sandbox.process_start(process.pid))
            recording(process)

        tools, registry = sandbox.sandbox_tools(in_tmp, ("execute",), on_start=on_start)
        bot = Agent(ScriptedClient([tool_call("run_command", command="echo $$"), reply("done")]),
                    "scripted-demo", tools=tools, registry=registry, on_event=None)
        sessions.record(session, bot)
        bot.chat("run it")
    found = entries("s.jsonl")
    start = [(e["type"], e.get("tool_call_id")) for e in found].index(("tool_start", "call_1"))
    process = found[start + 1]
    shell = int(json.loads(bot.messages[-2]["content"])["output"])
    assert (process["type"], process["tool_call_id"]) == ("process", "call_1")
    assert process["pgid"] == shell and process["started"] == starts[0] is not None
    with sessions.new_session("t.jsonl") as other, subprocess.Popen(["true"]) as command:
        sessions.recording_processes(other)(command)  # no tool call started it (a verifier's)
    assert kinds("t.jsonl") == ["session"]  # so it is not recorded


def test_a_group_that_will_not_go_is_said_to_be_still_there(survivor, monkeypatch):
    """A SIGKILL the group does not die of in 5 s (a process stuck in the kernel): resume
    says it sent it and what it saw, not that it stopped it."""
    import types

    crashed_in_a_command("s.jsonl", survivor.pid, sandbox.process_start(survivor.pid))
    unkilled = types.SimpleNamespace(**{**vars(os), "killpg": lambda group, sig: None})
    monkeypatch.setattr(sessions, "os", unkilled)  # sessions' kill does nothing; ours still works
    ticks = iter(range(0, 1000, 10))  # each look at the clock is 10 s later: no real waiting
    monkeypatch.setattr(sessions, "time", types.SimpleNamespace(
        monotonic=lambda: next(ticks), sleep=lambda seconds: None, time=time.time))
    said = resumed_answer("s.jsonl")["command"]
    assert said.endswith("resume sent it SIGKILL, but 5 s later some of it was still there")
    assert survivor.pid in sandbox.group_members(survivor.pid)

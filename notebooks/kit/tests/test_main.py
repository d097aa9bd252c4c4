"""The kit's tests: main.py on the scripted model, no key and no network. Run them from the
kit's folder with `python -m pytest`. Most call main.main() in this process (fast); the ones
that need a process of its own (Ctrl-C, a module deleted) start one."""

import contextlib
import http.server
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

KIT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(KIT))  # main.py and the lessons' modules, however pytest was started

import main  # noqa: E402
import sessions  # noqa: E402
import tracing  # noqa: E402

import agent  # noqa: E402


@pytest.fixture
def kit(tmp_path, monkeypatch, capsys):
    """Run main.main() with a script, the person's answers on stdin, and every file it makes
    under tmp_path. Returns a function: run(*steps, task=..., answers=..., flags=...)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    work = tmp_path / "work"
    work.mkdir()

    def run(*steps, task="do it", answers="", flags=()):
        script = tmp_path / "script.json"
        script.write_text(json.dumps(list(steps)))
        monkeypatch.setattr("sys.stdin", io.StringIO(answers))
        argv = ["--sessions", str(tmp_path / "sessions"), "--traces", str(tmp_path / "traces"),
                "--workdir", str(work), "--scripted", str(script), *flags]
        code = main.main([*argv, task] if task else argv)
        out, err = capsys.readouterr()
        return code, out, err

    run.work, run.tmp = work, tmp_path
    return run


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


def only_session(tmp_path) -> sessions.Session:
    [path] = (tmp_path / "sessions").iterdir()
    return sessions.load_session(path)


def create(path, text):
    return {"calls": [call("edit_file", path=path, old_str="", new_str=text)]}


def sandbox_tools(*risks) -> list[str]:
    """The names of sandbox's tools at these risk levels, in its table's order: the kit's and
    any you add (README: "Add a tool"), so these tests need no change when you add one."""
    return [name for name, risk in main.sandbox.RISK.items() if risk in risks]


def named_tools(prompt: str) -> list[str]:
    """The tools the system prompt's last line names, in its order."""
    line = next(line for line in reversed(prompt.splitlines())
                if line.startswith("The tools you have: "))
    return line.removeprefix("The tools you have: ").removesuffix(".").split(", ")


# --- Flags and messages -------------------------------------------------------------------------


@pytest.mark.parametrize("flags, said", [
    (["--max-turns", "0"], "at least 1"),
    (["--workdir", "no/such/folder"], "no such folder"),
    (["--resume", "no-such-session.jsonl"], "no such session file"),
    (["--scripted", "no-such-script.json"], "cannot read"),
    (["--bogus"], "unrecognized arguments"),
    ([""], "the task is empty"),
])
def test_a_bad_flag_gets_a_message_and_status_2_not_a_traceback(flags, said, capsys):
    with pytest.raises(SystemExit) as stop:
        main.main(flags)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


@pytest.mark.parametrize("script, said", [
    ("not json", "is not JSON"),
    ("[]", "a JSON list of steps"),
    ('[{"say": "hi"}]', "a step is an object with calls, content, finish_reason"),
    ('[{"calls": [{"name": "read_file", "args": {}}]}]', 'a call is {"name": ...'),
    ('[{"calls": {"name": "read_file"}}]', "calls must be a list"),
])
def test_a_bad_script_is_refused_before_anything_runs(script, said, tmp_path, capsys):
    path = tmp_path / "script.json"
    path.write_text(script)
    with pytest.raises(SystemExit):
        main.main(["--scripted", str(path), "--sessions", str(tmp_path / "s"), "task"])
    assert said in capsys.readouterr().err
    assert not (tmp_path / "s").exists()  # no session was started


def test_a_session_that_cannot_be_resumed_is_a_message_and_left_as_it_was(kit):
    assert kit(create("a.md", "a\n"), {"content": "ok"}, answers="y\n")[0] == 0
    path = next((kit.tmp / "sessions").iterdir())
    with sessions.open_session(path):  # another writer has it open
        code, out, err = kit({"content": "no"}, flags=["--resume", str(path)])
    assert code == 1 and "open for writing elsewhere" in err
    trace = next((kit.tmp / "traces").rglob("*.jsonl"))
    before = trace.read_bytes()
    code, out, err = kit({"content": "no"}, flags=["--resume", str(trace)])
    assert code == 1 and "is not a session" in err and trace.read_bytes() == before


def test_without_a_key_it_says_how_to_set_one_and_exits_2(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main.main(["--sessions", str(tmp_path / "s"), "a task"]) == 2
    err = capsys.readouterr().err
    assert "OPENAI_API_KEY" in err and "--scripted" in err
    assert not (tmp_path / "s").exists()


# --- A run: approved edits, a session, a trace --------------------------------------------------


def test_the_example_creates_edits_and_runs_a_file_each_step_approved(kit):
    steps = json.loads((KIT / "examples" / "hello.json").read_text())
    code, out, err = kit(*steps, answers="y\ny\ny\n")
    assert code == 0, err
    assert (kit.work / "hello.py").read_text() == "print('Hello, world')\n"
    assert out.count("[y/N, or say why not]") == 3  # two diffs and one command were asked
    assert "+print('Hello')" in out and "$ python3 hello.py" in out
    session = only_session(kit.tmp)
    assert agent.pairing_problem(session.messages()) is None
    approvals = [e for e in session.path_to() if e["type"] == "approval"]
    assert [(e.get("path"), e.get("command"), e["approved"]) for e in approvals] == [
        ("hello.py", None, True), ("hello.py", None, True), (None, "python3 hello.py", True)]
    [trace] = (kit.tmp / "traces" / session.path.stem).iterdir()
    run = tracing.load_trace(trace)
    assert tracing.trace_problems(run) == [] and run[-1]["stop_reason"] == "done"
    assert "trace:" in err and "--resume" in err


def test_a_rejected_edit_writes_nothing_and_the_model_reads_the_reason(kit):
    code, out, err = kit(create("notes.md", "x"), {"content": "Understood."},
                         answers="put it in README.md instead\n")
    assert code == 0, err
    assert not (kit.work / "notes.md").exists()
    result = only_session(kit.tmp).messages()[-2]
    assert result["role"] == "tool" and "put it in README.md instead" in result["content"]


def test_a_command_runs_only_on_yes(kit):
    steps = [{"calls": [call("run_command", command="touch ran.txt")]}, {"content": "ok"}]
    assert kit(*steps, answers="\n")[0] == 0  # Enter alone is no
    assert not (kit.work / "ran.txt").exists()
    assert "the person said no" in only_session(kit.tmp).messages()[-2]["content"]
    assert kit(*steps, answers="yes\n")[0] == 0
    assert (kit.work / "ran.txt").exists()


def test_without_the_shell_the_model_is_not_offered_run_command(kit):
    steps = [{"calls": [call("run_command", command="touch ran.txt")]}, {"content": "ok"}]
    assert kit(*steps, answers="y\n", flags=["--no-shell"])[0] == 0
    assert not (kit.work / "ran.txt").exists()
    assert "unknown tool" in only_session(kit.tmp).messages()[-2]["content"]


def test_the_file_tools_stay_in_the_workspace(kit):
    (kit.tmp / "secret.txt").write_text("outside")
    code, out, err = kit({"calls": [call("read_file", path="../secret.txt")]},
                         {"content": "I could not."})
    assert code == 0
    assert "escapes the workspace" in only_session(kit.tmp).messages()[-2]["content"]
    assert "outside" not in out


def test_reads_of_one_batch_run_at_the_same_time_unless_told_not_to(kit, monkeypatch):
    """Two reads that each wait for the other finish only if they run together."""
    (kit.work / "a.txt").write_text("a")
    (kit.work / "b.txt").write_text("b")
    meeting, threads = threading.Barrier(2, timeout=10), []
    real = main.make_tools

    def tools_that_meet(*args):
        tools, registry = real(*args)
        read = registry["read_file"]

        def read_file(path: str) -> dict:
            threads.append(threading.current_thread())
            if threading.current_thread() is not threading.main_thread():
                meeting.wait()  # the other read must be running too
            return read(path)
        return tools, {**registry, "read_file": read_file}

    monkeypatch.setattr(main, "make_tools", tools_that_meet)
    both = {"calls": [call("read_file", path="a.txt"), call("read_file", path="b.txt")]}
    assert kit(both, {"content": "read"})[0] == 0
    assert [m["content"] for m in only_session(kit.tmp).messages()[-3:-1]] == [
        '{"path": "a.txt", "content": "a"}', '{"path": "b.txt", "content": "b"}']
    assert threading.main_thread() not in threads
    threads.clear()
    shutil.rmtree(kit.tmp / "sessions")
    assert kit(both, {"content": "read"}, flags=["--no-parallel"])[0] == 0
    assert threads == [threading.main_thread()] * 2  # one after the other, in the loop's thread


def test_a_session_resumed_goes_on_with_the_same_conversation(kit):
    assert kit(create("a.md", "one\n"), {"content": "Made a.md."}, answers="y\n")[0] == 0
    path = next((kit.tmp / "sessions").iterdir())
    steps = [{"calls": [call("read_file", path="a.md")]},
             {"calls": [call("edit_file", path="a.md", old_str="one", new_str="two")]},
             {"content": "Changed it."}]
    code, out, err = kit(*steps, answers="y\n", flags=["--resume", str(path)])
    assert code == 0, err
    assert (kit.work / "a.md").read_text() == "two\n"
    messages = sessions.load_session(path).messages()
    assert [m["role"] for m in messages].count("system") == 1
    assert [m["content"] for m in messages if m["role"] == "user"] == ["do it", "do it"]
    assert agent.pairing_problem(messages) is None
    ids = [c["id"] for m in messages for c in m.get("tool_calls", [])]
    assert len(ids) == len(set(ids)) == 3  # the scripted model's ids go on, never repeat
    assert len(list((kit.tmp / "traces" / path.stem).iterdir())) == 2  # a trace per run



def test_a_resumed_session_edits_what_it_read_and_wrote_before_without_reading_again(kit):
    """The read-before-edit memory (lesson 06's version check) is rebuilt from the session:
    a new process may edit a file the conversation read, or wrote itself, as it saw it, and
    is refused one that changed since, as the first process would have been."""
    (kit.work / "notes.md").write_text("# Notes\n")
    (kit.work / "plan.md").write_text("- plan\n")
    first = [{"calls": [call("read_file", path="notes.md"), call("read_file", path="plan.md")]},
             create("todo.md", "- one\n"), {"content": "Read both, wrote todo.md."}]
    assert kit(*first, answers="y\n")[0] == 0
    path = next((kit.tmp / "sessions").iterdir())
    (kit.work / "plan.md").write_text("- someone else's plan\n")  # changed meanwhile
    steps = [{"calls": [call("edit_file", path="notes.md", old_str="# Notes\n",
                             new_str="# Notes\n\n- resumed\n"),
                        call("edit_file", path="todo.md", old_str="- one\n",
                             new_str="- one\n- two\n"),
                        call("edit_file", path="plan.md", old_str="- plan\n", new_str="- x\n")]},
             {"content": "Edited two; plan.md changed, so I will read it."}]
    code, out, err = kit(*steps, answers="y\ny\n", flags=["--resume", str(path)])
    assert code == 0, err
    assert (kit.work / "notes.md").read_text() == "# Notes\n\n- resumed\n"  # read before
    assert (kit.work / "todo.md").read_text() == "- one\n- two\n"  # written before
    assert (kit.work / "plan.md").read_text() == "- someone else's plan\n"
    results = [m["content"] for m in sessions.load_session(path).messages()[-4:-1]]
    assert '"approved": true' in results[0] and '"approved": true' in results[1]
    assert "the file changed since you read it" in results[2]


def test_every_file_the_kit_writes_is_its_owner_s_only(kit):
    """Sessions and traces hold what the model read (a .env line, say): 0600, and the folders
    main.py makes for them 0700."""
    (kit.work / ".env").write_text("DB_PASSWORD=correct-horse-battery\n")
    steps = [{"calls": [call("read_file", path=".env")]}, {"content": "Read it."}]
    assert kit(*steps)[0] == 0
    assert kit({"content": "Again."}, flags=["--resume", str(
        next((kit.tmp / "sessions").iterdir()))])[0] == 0
    written = [p for folder in ("sessions", "traces") for p in (kit.tmp / folder).rglob("*")
               if p.is_file()]
    assert len(written) == 3  # a session, and a trace per run
    for path in written:
        assert oct(path.stat().st_mode & 0o777) == oct(0o600), path
    folders = [p for folder in ("sessions", "traces") for p in (kit.tmp / folder).rglob("*")
               if p.is_dir()]
    assert len(folders) == 1  # the session's traces folder, inside traces/
    for folder in [kit.tmp / "sessions", kit.tmp / "traces", *folders]:
        assert folder.stat().st_mode & 0o077 == 0, folder


def test_a_resume_writes_where_the_first_run_did_and_repeats_its_settings(kit, monkeypatch):
    """The session notes its workspace and its traces folder; "go on with" repeats the flags
    that shape a run (not the script, which the first run used up)."""
    flags = ["--traces", str(kit.tmp / "elsewhere"), "--no-shell", "--max-turns", "7"]
    code, out, err = kit({"content": "one"}, flags=flags)
    assert code == 0, err
    path = next((kit.tmp / "sessions").iterdir())
    [said] = [line for line in err.splitlines() if line.startswith("go on with: ")]
    command = shlex.split(said.removeprefix("go on with: "))
    assert command[2:] == ["--resume", main.shown(path), "--max-turns", "7", "--no-shell"]
    script = kit.tmp / "more.json"
    script.write_text(json.dumps([{"content": "two"}]))
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main.main([*command[2:], "--scripted", str(script), "more"]) == 0  # as printed
    runs = sorted((kit.tmp / "elsewhere" / path.stem).iterdir())
    assert [p.name for p in runs] == ["run-001.jsonl", "run-002.jsonl"]  # one folder, in order
    assert not (kit.tmp / "traces").exists() and not (main.HERE / "traces" / path.stem).exists()
    sent = sessions.load_session(path).messages()[0]["content"]
    assert "run_command" not in sent  # --no-shell, repeated


def test_a_command_s_decision_is_recorded_under_command_and_the_question_says_what_counts(kit):
    steps = [{"calls": [call("run_command", command="echo hi")]}, {"content": "ok"}]
    code, out, err = kit(*steps, answers="ok\n")  # "ok" is not yes: it is a reason
    assert code == 0, err
    assert "(only y or yes runs it; anything else is a no, and what you type goes to the " \
        "model as your reason)\nrun this in the workspace? [y/N, or say why not]" in out
    [approval] = [e for e in only_session(kit.tmp).path_to() if e["type"] == "approval"]
    assert (approval["command"], approval["approved"], approval["reason"]) == (
        "echo hi", False, "ok")
    assert "path" not in approval
    assert "the person did not let this run: ok. Nothing ran." in \
        only_session(kit.tmp).messages()[-2]["content"]

def test_resume_works_in_the_session_s_workspace_unless_told_otherwise(kit, monkeypatch):
    assert kit(create("a.md", "one\n"), {"content": "ok"}, answers="y\n")[0] == 0
    path = next((kit.tmp / "sessions").iterdir())
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    script = kit.tmp / "more.json"
    script.write_text(json.dumps([create("b.md", "two\n"), {"content": "ok"}]))
    assert main.main(["--resume", str(path), "--scripted", str(script), "--traces",
                      str(kit.tmp / "traces"), "more"]) == 0  # no --workdir
    assert (kit.work / "b.md").read_text() == "two\n"


def test_a_model_without_tool_calling_acts_through_text(kit):
    action = {"type": "call_tool", "name": "edit_file",
              "arguments": {"path": "t.md", "old_str": "", "new_str": "text\n"}}
    finish = {"type": "finish", "output": "Wrote t.md."}
    code, out, err = kit({"content": json.dumps(action)}, {"content": json.dumps(finish)},
                         answers="y\n", flags=["--text-actions"])
    assert code == 0, err
    assert (kit.work / "t.md").read_text() == "text\n"
    assert "Wrote t.md." in out


def test_a_script_that_runs_out_is_a_message_and_status_1(kit):
    code, out, err = kit({"calls": [call("list_files")]})
    assert code == 1 and "no more steps" in err
    assert "1 failed model call(s) of unknown tokens" in err and " + ?" in err
    assert agent.pairing_problem(only_session(kit.tmp).messages()) is None


def test_help_says_which_optional_modules_are_not_here(monkeypatch, capsys):
    for name in ("streaming", "context_budget", "mcp_and_skills", "subagents_and_plans"):
        monkeypatch.setattr(main, name, None)  # as if their files had been deleted
    with pytest.raises(SystemExit):
        main.main(["--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "Not in this kit, so off: streaming.py (streaming), context_budget.py (compaction), " \
        "mcp_and_skills.py (--mcp and --skills), subagents_and_plans.py (--subagents and " \
        "--plan)" in said
    for flags, needed in ((["--budget", "1000"], "need context_budget.py"),
                          (["--mcp", "server"], "need mcp_and_skills.py"),
                          (["--skills", "."], "need mcp_and_skills.py"),
                          (["--subagents"], "need subagents_and_plans.py"),
                          (["--plan"], "need subagents_and_plans.py")):
        with pytest.raises(SystemExit):
            main.main([*flags, "task"])
        assert needed in capsys.readouterr().err



def test_the_system_prompt_names_the_tools_the_run_has_and_agrees_with_its_protocol(kit):
    def sent(flags, step):
        shutil.rmtree(kit.tmp / "sessions", ignore_errors=True)
        assert kit(step, flags=flags)[0] == 0, flags
        return only_session(kit.tmp).messages()[0]["content"]

    done = {"content": "ok"}
    full = sent([], done)
    kit_tools = sandbox_tools("read", "write", "execute")  # edit_file last: lesson 06 wraps it
    assert named_tools(full) == [*(t for t in kit_tools if t != "edit_file"), "edit_file"]
    assert "run_command runs a shell command" in full
    alone = sent(["--no-shell"], done)
    assert "run_command" not in alone
    assert sorted(named_tools(alone)) == sorted(sandbox_tools("read", "write"))
    text = sent(["--text-actions"], {"content": json.dumps({"type": "finish", "output": "ok"})})
    assert "without calling a tool" not in text  # native calling's way to end, not the text's
    assert "send a finish action" in text and "answer briefly" not in text


def test_a_tool_that_is_not_read_only_is_asked_and_runs_alone_unless_chosen(kit, monkeypatch):
    """A builder's rows in sandbox's tables (README: "Add a tool"): a write tool is asked
    before each call, as a command is; a read tool runs beside others only if PARALLEL says."""
    def touch_in(root, path: str) -> dict:
        (root / path).touch()
        return {"path": path, "action": "touched"}

    def peek_in(root, path: str) -> dict:
        return {"path": path, "size": len(main.sandbox.read_in(root, path)["content"])}

    for name, risk, func in (("touch", "write", touch_in), ("peek", "read", peek_in)):
        monkeypatch.setitem(main.sandbox.RISK, name, risk)
        monkeypatch.setitem(main.sandbox.FUNCTIONS, name, func)
        monkeypatch.setitem(main.sandbox.SCHEMAS, name, agent.schema(
            func, f"{name} a file.", name=name, path="The file."))
    made, real = [], main.make_agent
    monkeypatch.setattr(main, "make_agent", lambda *a: made.append(real(*a)) or made[-1])
    steps = [{"calls": [call("touch", path="a.txt")]}, {"calls": [call("touch", path="b.txt")]},
             {"content": "Touched b.txt."}]
    code, out, err = kit(*steps, answers="not that one\ny\n")
    assert code == 0, err
    assert 'touch({"path": "a.txt"})' in out and not (kit.work / "a.txt").exists()
    assert (kit.work / "b.txt").exists()
    bot = made[0][0]
    assert "peek" not in bot.parallel and bot.parallel == main.PARALLEL  # peek: not chosen
    assert [e["command"] for e in only_session(kit.tmp).path_to() if e["type"] == "approval"] \
        == ['touch({"path": "a.txt"})', 'touch({"path": "b.txt"})']


@pytest.mark.parametrize("mistake, said", [
    ("schema", "SCHEMAS['peek'] is named 'peek_in': give agent.schema(..., name='peek')"),
    ("function", "peek has a risk level but no function in FUNCTIONS"),
    ("parallel", "PARALLEL names peak, which sandbox.RISK does not"),
])
def test_a_tool_added_with_a_mistake_is_one_line_and_status_2_before_any_session(
        mistake, said, kit, monkeypatch):
    """README: "Add a tool". A row a builder got wrong is said when main.py starts, before a
    session or a trace is made, and so is a name in PARALLEL that no tool has (a typo)."""
    def peek_in(root, path: str) -> dict:
        return {"path": path}

    monkeypatch.setitem(main.sandbox.RISK, "peek", "read")
    if mistake != "function":
        monkeypatch.setitem(main.sandbox.FUNCTIONS, "peek", peek_in)
    monkeypatch.setitem(main.sandbox.SCHEMAS, "peek", agent.schema(
        peek_in, "Peek.", **({} if mistake == "schema" else {"name": "peek"}), path="A file."))
    if mistake == "parallel":
        monkeypatch.setattr(main, "PARALLEL", main.PARALLEL | {"peak"})
    code, out, err = kit({"content": "never asked"})
    assert code == 2 and err == f"main.py: a tool of sandbox.py: {said}\n"
    assert not (kit.tmp / "sessions").exists() and not (kit.tmp / "traces").exists()


def test_the_agent_is_the_lessons_agents_in_the_order_main_py_writes_down(kit, monkeypatch):
    made, real = [], main.make_agent
    monkeypatch.setattr(main, "make_agent", lambda *a: made.append(real(*a)) or made[-1])
    assert kit({"content": "ok"})[0] == 0
    assert kit({"content": json.dumps({"type": "finish", "output": "ok"})},
               flags=["--text-actions", "--no-parallel"])[0] == 0
    orders = [["CompactingAgent", "StreamingAgent", "ParallelAgent"],
              ["CompactingAgent", "TextAgent"]]
    if main.subagents_and_plans is not None:  # lesson 16's two go first
        assert kit({"content": "ok"}, flags=["--plan", "--subagents"])[0] == 0
        orders.append(["Planning", "Delegating", *orders[0]])
    here = {"CompactingAgent": main.context_budget, "StreamingAgent": main.streaming,
            "ParallelAgent": main.parallel_and_steering, "TextAgent": main.text_actions,
            "Planning": True, "Delegating": True}
    for (bot, _), wanted in zip(made, orders, strict=True):
        assert [cls.__name__ for cls in type(bot).__mro__] == [
            "KitAgent", *[name for name in wanted if here[name]], "Agent", "object"]
    if main.subagents_and_plans is not None:  # what each adds is there (at work: below)
        bot = made[-1][0]
        assert [tool["function"]["name"] for tool in bot.tools][-2:] == ["todo", "delegate"]
        # reads together, but children of a script one at a time: each reads its steps in turn
        assert "read_file" in bot.parallel and "delegate" not in bot.parallel


# --- A real server, on this machine --------------------------------------------------------------


def completion(text: str) -> str:
    return json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 2,
                                 "total_tokens": 12}})


def stream_without_usage(text: str) -> str:
    """Server-sent events of one reply, and no usage in them (as some servers stream)."""
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    events = [{**chunk, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                           "content": text}}]},
              {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
    return "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"


@pytest.fixture
def server(monkeypatch, tmp_path):
    """An OpenAI-compatible server on 127.0.0.1 (http.server, in a thread): each request gets
    the next of server.answers, (status, headers, body[, seconds to wait first])."""
    answers, seen = [], []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append((self.headers.get("x-stainless-retry-count"), body))
            status, headers, text, *wait = answers.pop(0)
            time.sleep(*wait or [0])
            data = text.encode()
            self.send_response(status)
            for name, value in {"Content-Length": str(len(data)), **headers}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.handle_error = lambda request, address: None  # a client that gave up: not an error
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    monkeypatch.setenv("OPENAI_API_KEY", "not-a-real-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    (tmp_path / "work").mkdir()
    flags = ["--base-url", f"http://127.0.0.1:{httpd.server_port}/v1", "--workdir",
             str(tmp_path / "work"), "--sessions", str(tmp_path / "sessions"), "--traces",
             str(tmp_path / "traces")]
    yield SimpleNamespace(answers=answers, seen=seen, flags=flags)
    httpd.shutdown()
    httpd.server_close()


RATE_LIMITED = (429, {"Retry-After": "1", "Content-Type": "application/json"},
                json.dumps({"error": {"message": "Rate limit reached", "type": "requests"}}))


@pytest.mark.skipif(main.streaming is None, reason="streaming.py is not in this kit")
def test_a_retry_is_said_with_the_wait_the_server_asked_for_and_unknown_tokens_as_unknown(
        server, capsys):
    server.answers += [RATE_LIMITED,
                       (200, {"Content-Type": "text/event-stream"}, stream_without_usage("Hi."))]
    started = time.monotonic()
    assert main.main([*server.flags, "Say hi."]) == 0
    out, err = capsys.readouterr()
    assert time.monotonic() - started >= 1  # the SDK waited as Retry-After said
    assert [retry for retry, _ in server.seen] == ["0", "1"]
    said = err.splitlines()
    refused = said.index("model server: 429 Too Many Requests, retry after 1 s (Retry-After)")
    assert said[refused + 1] == "model request: sent again, retry 1"
    assert "Hi." in out
    assert "0 tokens" not in err and "tokens unknown (the server reported no usage), ?" in err


def test_timeout_and_max_retries_go_to_the_client_and_a_stall_is_said(server, capsys,
                                                                       monkeypatch):
    monkeypatch.setattr(main, "STILL_WAITING", 0.1)  # seconds: 10 in use
    server.answers += [(200, {"Content-Type": "application/json"}, completion("late"), 2),
                       (200, {"Content-Type": "application/json"}, completion("On time."))]
    flags = [*server.flags, "--no-stream", "--timeout", "0.5", "--max-retries", "1"]
    assert main.main([*flags, "Say hi."]) == 0
    out, err = capsys.readouterr()
    said = err.splitlines()
    stalled = said.index("model request: no answer after 0.1 s; still waiting (--timeout: "
                         "0.5 s a try)")
    assert said[stalled + 1] == "model request: sent again, retry 1 (no answer to the last " \
        "one: a timeout or a lost connection)"
    assert "On time." in out and "12 tokens" in err
    server.answers += [RATE_LIMITED]
    assert main.main([*flags[:-1], "0", "Say hi."]) == 1  # --max-retries 0: no second try
    err = capsys.readouterr().err
    assert "429" in err  # and a call with no answer is not counted as 0 tokens, nor $0
    assert "0 tokens and 1 failed model call(s) of unknown tokens, $0.0000 + ?" in err
    client = main.make_client(main.parse_args([*flags, "task"]), False, [])
    assert (client.timeout, client.max_retries) == (0.5, 1)

# --- Compaction (lesson 12) -------------------------------------------------------------------

needs_compaction = pytest.mark.skipif(main.context_budget is None,
                                      reason="context_budget.py is not in this kit")


class Clients(list):
    """Every client main.py made, to look at what was sent (client.requests)."""
    window = None  # tokens: when set, each client sits behind a server with that window


@pytest.fixture
def clients(monkeypatch):
    made, real = Clients(), main.make_client

    def make_client(*args):
        client = real(*args)
        made.append(client)
        if made.window:  # lesson 12's offline server that refuses a request too long for it
            return main.context_budget.with_context_window(client, made.window)
        return client

    monkeypatch.setattr(main, "make_client", make_client)
    return made


def two_reads(kit, size=6_000):
    (kit.work / "a.txt").write_text("a" * size)
    (kit.work / "b.txt").write_text("b" * size)
    return [{"calls": [call("read_file", path="a.txt")]},
            {"calls": [call("read_file", path="b.txt")]}]


@needs_compaction
def test_a_request_the_server_refuses_as_too_long_is_summarised_and_sent_again(kit, clients):
    clients.window = 3_000  # tokens: the third request, with both files, is over it
    steps = [*two_reads(kit), {"content": "a.txt holds 6,000 a's."}, {"content": "Done."}]
    code, out, err = kit(*steps)  # step 3 is the summary the scripted model writes
    assert code == 0, err
    session = only_session(kit.tmp)
    [compaction] = [e for e in session.path_to() if e["type"] == "compaction"]
    assert compaction["summary"] == "a.txt holds 6,000 a's."
    messages = session.messages()  # the whole history, as it was: lossless
    assert "a" * 6_000 in messages[3]["content"] and messages[-1]["content"] == "Done."
    sent = clients[0].requests[-1]["messages"]
    assert "a" * 6_000 not in json.dumps(sent) and "a.txt holds 6,000 a's." in json.dumps(sent)
    assert agent.pairing_problem(sent) is None
    [trace] = (kit.tmp / "traces" / session.path.stem).iterdir()
    if main.streaming is not None:  # CompactingAgent first, StreamingAgent after: both ran
        assert any(r["type"] == "message_update" for r in tracing.load_trace(trace))


@needs_compaction
@pytest.mark.skipif(main.text_actions is None, reason="text_actions.py is not in this kit")
def test_a_model_without_tool_calling_is_compacted_too(kit, clients):
    """TextAgent's run runs inside CompactingAgent's: a refused request is summarised, and
    the finish action still ends the task."""
    clients.window = 3_000
    reads = [{"content": json.dumps({"type": "call_tool", "name": "read_file",
                                     "arguments": {"path": name}})} for name in ("a.txt", "b.txt")]
    two_reads(kit)
    steps = [*reads, {"content": "a.txt holds 6,000 a's."},
             {"content": json.dumps({"type": "finish", "output": "Both read."})}]
    code, out, err = kit(*steps, flags=["--text-actions"])
    assert code == 0, err
    session = only_session(kit.tmp)
    [compaction] = [e for e in session.path_to() if e["type"] == "compaction"]
    assert compaction["summary"] == "a.txt holds 6,000 a's."
    assert "Both read." in out


@needs_compaction
def test_without_compaction_the_refused_request_stops_the_task_with_a_message(kit, clients):
    clients.window = 3_000
    code, out, err = kit(*two_reads(kit), {"content": "unused"}, flags=["--no-compact"])
    assert code == 1 and "maximum context length" in err
    assert agent.pairing_problem(only_session(kit.tmp).messages()) is None


@needs_compaction
def test_elide_after_sends_old_long_results_as_a_note_and_keeps_them_whole(kit, clients):
    steps = [*two_reads(kit, 1_000), {"content": "Read both."}]
    assert kit(*steps, flags=["--elide-after", "1"])[0] == 0
    sent = clients[0].requests[-1]["messages"]
    assert sent[3]["content"].startswith("[elided: the result of read_file")
    assert "b" * 1_000 in sent[5]["content"]  # the latest turn's result is whole
    assert "a" * 1_000 in only_session(kit.tmp).messages()[3]["content"]


@needs_compaction
def test_a_budget_summarises_before_sending_and_resume_brings_the_summary_back(kit, clients):
    steps = [*two_reads(kit), {"content": "Notes: a.txt is all a's."}, {"content": "Done."}]
    code, out, err = kit(*steps, flags=["--budget", "2500"])
    assert code == 0, err
    assert "Notes: a.txt is all a's." in json.dumps(clients[0].requests[-1]["messages"])
    path = next((kit.tmp / "sessions").iterdir())
    code, out, err = kit({"content": "Still done."}, flags=["--resume", str(path)])
    assert code == 0, err
    assert "compaction" not in err  # lesson 12's entries are read, not reported as unknown
    first = clients[1].requests[0]["messages"]
    assert "Notes: a.txt is all a's." in json.dumps(first) and "a" * 6_000 not in json.dumps(first)


# --- Capabilities from outside: an MCP server, skills (lesson 15) ---------------------------------

needs_mcp = pytest.mark.skipif(main.mcp_and_skills is None,
                               reason="mcp_and_skills.py is not in this kit")
NOTES_SERVER = KIT / "examples" / "notes_server.py"


def notes_server(pid_file: Path) -> str:
    """The --mcp command line of the example server, which first writes its process id (sh's
    exec keeps it) into pid_file, so a test can see that it is gone after."""
    return shlex.join(["sh", "-c", f'echo $$ > {shlex.quote(str(pid_file))}; exec "$0" "$@"',
                       sys.executable, str(NOTES_SERVER)])


def gone(pid_file: Path, within: float = 10) -> bool:
    """Has the process whose id is in pid_file ended (and been reaped)?"""
    pid, deadline = int(pid_file.read_text()), time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@needs_mcp
def test_a_server_s_tools_join_the_run_each_call_asked_and_recorded_then_it_is_closed(kit):
    pid_file = kit.tmp / "server.pid"
    steps = [{"calls": [call("mcp1__add_note", text="buy milk")]},
             {"calls": [call("mcp1__list_notes")]},  # it says it only reads: asked all the same
             {"content": "Kept one note."}]
    code, out, err = kit(*steps, answers="y\nnot now\n", flags=["--mcp", notes_server(pid_file)])
    assert code == 0, err
    session = only_session(kit.tmp)
    messages = session.messages()
    prompt = messages[0]["content"]
    assert named_tools(prompt)[-3:] == ["edit_file", "mcp1__add_note", "mcp1__list_notes"]
    assert sorted(named_tools(prompt)) == sorted([*sandbox_tools("read", "write", "execute"),
                                                  "mcp1__add_note", "mcp1__list_notes"])
    assert main.REMOTE_PROMPT in prompt
    assert out.count("send this call to the server? [y/N, or say why not]") == 2
    assert 'mcp1__add_note({"text": "buy milk"})' in out and "mcp1__list_notes({})" in out
    results = [m["content"] for m in messages if m["role"] == "tool"]
    assert results[0] == "note 1 kept"
    assert "the person did not allow this call: not now. Nothing was sent." in results[1]
    assert [(e["command"], e["approved"]) for e in session.path_to() if e["type"] == "approval"] \
        == [('mcp1__add_note({"text": "buy milk"})', True), ("mcp1__list_notes({})", False)]
    [said] = [line for line in err.splitlines() if line.startswith("go on with: ")]
    assert shlex.split(said)[-2:] == ["--mcp", notes_server(pid_file)]  # a resume starts it too
    assert gone(pid_file)  # closed when main.main returned


@needs_mcp
@pytest.mark.parametrize("command, said", [
    ("no-such-program-here --stdio", "no-such-program-here: No such file or directory"),
    (f"{shlex.quote(sys.executable)} -c 'import sys; sys.exit(\"no config file\")'",
     "it closed the connection before it answered (it exited, or is not an MCP server); it "
     "said: no config file"),
])
def test_a_server_that_does_not_start_is_one_line_and_status_1_and_no_session(command, said,
                                                                              kit):
    code, out, err = kit({"content": "unused"}, flags=["--mcp", command])
    assert code == 1 and "Traceback" not in err
    assert err == f"main.py: --mcp {command}: the server did not start: {said}\n"
    assert not (kit.tmp / "sessions").exists()  # servers start before a session does


@needs_mcp
def test_a_server_is_closed_when_main_py_stops_on_an_error(kit):
    assert kit({"content": "ok"})[0] == 0
    path = next((kit.tmp / "sessions").iterdir())
    pid_file = kit.tmp / "server.pid"
    with sessions.open_session(path):  # another writer has it: main.py stops with status 1
        code, out, err = kit({"content": "no"}, flags=["--resume", str(path),
                                                      "--mcp", notes_server(pid_file)])
    assert code == 1 and "open for writing elsewhere" in err
    assert gone(pid_file)


@needs_mcp
def test_ctrl_c_at_a_remote_call_s_question_stops_the_run_and_closes_the_server(tmp_path):
    (tmp_path / "work").mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"calls": [call("mcp1__add_note", text="x")]}]))
    pid_file = tmp_path / "server.pid"
    child = start(KIT, "--workdir", "work", "--sessions", "sessions", "--traces", "traces",
                  "--scripted", str(script), "--mcp", notes_server(pid_file), "note x",
                  cwd=tmp_path)
    shown = ""
    while "send this call to the server?" not in shown:  # main.py waits for the answer
        chunk = os.read(child.stdout.fileno(), 4096)
        assert chunk, f"main.py ended before it asked: {child.stderr.read()}"
        shown += chunk.decode()
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert gone(pid_file)
    [path] = (tmp_path / "sessions").iterdir()
    session = sessions.load_session(path)
    assert [e["stop_reason"] for e in session.path_to() if e["type"] == "stop"] == ["interrupted"]
    assert agent.pairing_problem(session.messages()) is None


@needs_mcp
def test_skills_are_named_in_the_prompt_and_one_is_loaded_when_the_task_needs_it(kit):
    steps = [{"calls": [call("load_skill", skill="changelog")]},
             create("CHANGELOG.md", "# Changelog\n\n## Unreleased\n\n- Added notes.\n"),
             {"content": "Recorded it under Unreleased."}]
    code, out, err = kit(*steps, answers="y\n",
                         flags=["--skills", str(KIT / "examples" / "skills")])
    assert code == 0, err
    messages = only_session(kit.tmp).messages()
    prompt = messages[0]["content"]
    assert "- changelog: Add an entry to the project's CHANGELOG.md." in prompt
    assert "- python-tests: " in prompt and "load_skill." in prompt
    assert "Change nothing else" not in prompt  # a body is read only when it is loaded
    assert "Change nothing else in the file." in messages[3]["content"]
    assert (kit.work / "CHANGELOG.md").exists()


@needs_mcp
def test_a_skills_folder_with_no_skill_is_refused_and_a_skill_left_out_is_said(kit, capsys):
    folder = kit.tmp / "skills"
    (folder / "vague").mkdir(parents=True)
    (folder / "vague" / "SKILL.md").write_text("---\nname: vague\n---\nDo things.\n")
    with pytest.raises(SystemExit) as stop:
        main.main(["--skills", str(folder), "task"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err
    assert f"--skills {folder}: no skill in it" in err and "vague/SKILL.md: no description" in err
    with pytest.raises(SystemExit):
        main.main(["--skills", str(kit.tmp / "nowhere"), "task"])
    assert "no such folder" in capsys.readouterr().err
    shutil.copytree(KIT / "examples" / "skills" / "changelog", folder / "changelog")
    code, out, err = kit({"content": "ok"}, flags=["--skills", str(folder)])
    assert code == 0, err
    assert "vague/SKILL.md: no description, so it is left out" in err


# --- Delegation and a plan (lesson 16) --------------------------------------------------------

needs_lesson_16 = pytest.mark.skipif(main.subagents_and_plans is None,
                                     reason="subagents_and_plans.py is not in this kit")


@needs_lesson_16
def test_a_subagent_does_a_task_with_read_only_tools_in_a_context_and_session_of_its_own(
        kit, clients):
    (kit.work / "a.py").write_text("x = 1\n")
    (kit.work / "b.py").write_text("# TODO: fix\n")
    steps = [{"calls": [call("delegate", task="Which file holds a TODO?")]},
             {"calls": [call("list_files")]},  # the child, from here
             {"calls": [call("read_file", path="b.py"),
                        call("edit_file", path="b.py", old_str="#", new_str="")]},
             {"content": "b.py:1: # TODO: fix"},  # the child's answer
             {"content": "b.py holds the TODO."}]  # the parent again
    code, out, err = kit(*steps, flags=["--subagents"])
    assert code == 0, err
    session = only_session_but_children(kit.tmp)
    messages = session.messages()
    assert "delegate." in messages[0]["content"]
    assert main.subagents_and_plans.DELEGATE_PROMPT in messages[0]["content"]
    [result] = [m["content"] for m in messages if m["role"] == "tool"]
    assert result.startswith("b.py:1: # TODO: fix\n[subagent call_1: done, 3 model calls")
    assert len(messages) == 5  # system, user, the call, its result, the answer: no child's
    assert (kit.work / "b.py").read_text() == "# TODO: fix\n"  # the child cannot edit
    children = main.subagents_and_plans.child_sessions(session)
    assert list(children) == ["call_1"]
    assert children["call_1"].name == f"{session.path.stem}.call_1.jsonl"
    assert oct(children["call_1"].stat().st_mode & 0o777) == oct(0o600)
    child = sessions.load_session(children["call_1"]).messages()
    assert child[0]["content"] == main.subagents_and_plans.CHILD_PROMPT
    assert "unknown tool" in child[-2]["content"]  # edit_file: not a child's
    assert child[-1]["content"] == "b.py:1: # TODO: fix"
    by_child = next(r for r in clients[0].requests  # one client: the child asks the parent's
                    if r["messages"][0]["content"] == main.subagents_and_plans.CHILD_PROMPT)
    assert [t["function"]["name"] for t in by_child["tools"]] == sandbox_tools("read")
    assert "    call_1: list_files({})" in out and "call_1: its run ended (done)" in out
    assert "; subagents: 3 model calls, " in err  # the figures count the child's calls too
    assert "--subagents" in [line for line in err.splitlines() if "go on with" in line][0]


def test_ctrl_c_stops_the_subagents_still_running_too():
    """With a real model, the children of one batch run in pool threads: Ctrl-C reaches the
    parent's thread only, so main.py aborts each child (lesson 10's abort, at a safe point)."""
    stopped = []
    running = SimpleNamespace(abort=lambda: stopped.append("call_2"))

    def interrupted(text):
        raise KeyboardInterrupt

    delegate = SimpleNamespace(children=[{"agent": running}, {"task": "not made yet"}])
    bot = SimpleNamespace(chat=interrupted, registry={"delegate": delegate})
    assert main.run_task(bot, "go", quiet=True) == 130
    assert stopped == ["call_2"]


def only_session_but_children(tmp_path) -> sessions.Session:
    [path] = [p for p in (tmp_path / "sessions").iterdir() if p.name.count(".") == 1]
    return sessions.load_session(path)


@needs_lesson_16
@needs_compaction
def test_a_plan_survives_compaction_and_a_resume(kit, clients, monkeypatch):
    """Planning sits on top of the stack: a request that was compacted still shows the plan
    (its todo result was summarised away), streamed; a resumed run has the plan back."""
    clients.window = 3_000
    plan = [{"content": "read both files", "status": "in_progress"},
            {"content": "say what they hold", "status": "pending"}]
    steps = [{"calls": [call("todo", todos=plan)]}, *two_reads(kit),
             {"content": "The summary: a.txt and b.txt are read."},  # the compaction's
             {"calls": [call("todo", todos=[*plan, *plan])]},  # two in progress: refused
             {"content": "a.txt holds a's, b.txt b's."}]
    made, real = [], main.make_agent
    monkeypatch.setattr(main, "make_agent", lambda *a: made.append(real(*a)) or made[-1])
    code, out, err = kit(*steps, flags=["--plan"])
    assert code == 0, err
    session = only_session(kit.tmp)
    assert [e["summary"] for e in session.path_to() if e["type"] == "compaction"] == [
        "The summary: a.txt and b.txt are read."]
    last = clients[0].requests[-1]["messages"]
    assert "The summary" in json.dumps(last) and "<plan kept by the host>" in last[-1]["content"]
    assert "[>] read both files" in last[-1]["content"]
    assert "2 items are in_progress" in session.messages()[-2]["content"]
    assert main.subagents_and_plans.PLAN_PROMPT in session.messages()[0]["content"]
    [trace] = (kit.tmp / "traces" / session.path.stem).iterdir()
    if main.streaming is not None:
        assert any(r["type"] == "message_update" for r in tracing.load_trace(trace))
    clients.window = None
    resumed = kit({"content": "Still planned."}, flags=["--plan", "--resume", str(session.path)])
    assert resumed[0] == 0, resumed[2]
    assert made[-1][0].plan.items == plan  # the last todo that was accepted


# --- The settings a resume keeps ---------------------------------------------------------------


def note_settings(path: Path) -> list:
    """The settings main.py last noted in the session, as words."""
    return main.recorded(sessions.load_session(path), "settings")


def settings_line(err: str) -> str:
    [line] = [line for line in err.splitlines() if line.startswith("settings: ")]
    return line


def test_a_flag_given_on_resume_wins_over_the_session_s_and_is_noted_for_the_next(kit):
    flags = ["--no-shell", "--max-turns", "2", "--no-parallel"]
    assert kit({"content": "one"}, flags=flags)[0] == 0
    path = next((kit.tmp / "sessions").iterdir())
    assert note_settings(path) == ["--max-turns", "2", "--no-shell", "--no-parallel"]
    reads = [{"calls": [call("list_files")]}] * 3
    code, out, err = kit(*reads, {"content": "two"}, flags=["--resume", str(path),
                                                             "--max-turns", "5"])
    assert code == 0, err
    assert settings_line(err) == ("settings: the session's --no-shell --no-parallel; the command "
                                  "line changed --max-turns 5 (the session's: --max-turns 2)")
    stops = [e for e in sessions.load_session(path).path_to() if e["type"] == "stop"]
    assert stops[-1]["stop_reason"] == "done"  # 4 model calls: more than 2, within 5
    assert note_settings(path) == ["--max-turns", "5", "--no-shell", "--no-parallel"]
    code, out, err = kit(*reads, {"content": "three"}, flags=["--resume", str(path)])
    assert code == 0, err  # the next resume goes on with 5, as the last run had it
    assert settings_line(err) == "settings: the session's --max-turns 5 --no-shell --no-parallel"
    code, out, err = kit({"content": "four"}, flags=["--resume", str(path), "--max-turns", "20"])
    assert "the command line changed --max-turns 20 (the session's: --max-turns 5)" in err
    assert note_settings(path) == ["--no-shell", "--no-parallel"]  # 20 is the default


def test_an_opposite_flag_on_resume_turns_a_recorded_setting_off_and_is_noted(kit):
    assert kit({"content": "one"}, flags=["--no-parallel", "--quiet", "--max-turns", "3"])[0] == 0
    path = next((kit.tmp / "sessions").iterdir())
    assert note_settings(path) == ["--max-turns", "3", "--no-parallel", "--quiet"]
    code, out, err = kit({"content": "two"}, flags=["--resume", str(path), "--parallel",
                                                     "--no-quiet"])
    assert code == 0, err
    assert settings_line(err) == (  # printed at all: not quiet any more
        "settings: the session's --max-turns 3; the command line changed --parallel (the "
        "session's: --no-parallel), --no-quiet (the session's: --quiet)")
    assert note_settings(path) == ["--max-turns", "3"]  # so the next resume keeps them off
    assert "no_shell" not in main.OPPOSITES  # no flag turns the shell back on


@needs_compaction
def test_a_flag_given_on_resume_turns_off_the_session_s_that_cannot_run_with_it(kit):
    assert kit({"content": "one"}, flags=["--budget", "4000"])[0] == 0
    path = next((kit.tmp / "sessions").iterdir())
    code, out, err = kit({"content": "two"}, flags=["--resume", str(path), "--no-compact"])
    assert code == 0, err
    assert settings_line(err).endswith("; the command line changed --no-compact (the session's: "
                                       "none); turned off, as the flags given need: --budget 4000")
    assert "--budget" not in note_settings(path)


def test_a_session_made_before_settings_were_noted_resumes_with_the_defaults(kit):
    assert kit({"content": "one"}, flags=["--no-shell", "--max-turns", "1"])[0] == 0
    path = next((kit.tmp / "sessions").iterdir())
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for entry in lines:  # as main.py wrote its note before it noted settings
        entry.pop("settings", None)
    path.write_text("".join(json.dumps(entry) + "\n" for entry in lines))
    steps = [{"calls": [call("run_command", command="touch ran.txt")]}, {"content": "ran it"}]
    code, out, err = kit(*steps, answers="y\n", flags=["--resume", str(path)])
    assert code == 0, err
    assert settings_line(err) == ("settings: the session recorded none (it is older than that): "
                                  "the defaults")
    assert (kit.work / "ran.txt").exists()  # the shell is there, and 2 turns went past 1
    assert note_settings(path) == []  # noted now: the defaults


def test_a_session_s_settings_edited_into_something_else_are_refused(kit, capsys):
    assert kit({"content": "one"}, flags=["--no-shell"])[0] == 0
    path = next((kit.tmp / "sessions").iterdir())
    path.write_text(path.read_text().replace('"settings": ["--no-shell"]',
                                             '"settings": ["--workdir", "/"]'))
    with pytest.raises(SystemExit) as stop:
        kit({"content": "two"}, flags=["--resume", str(path)])
    assert stop.value.code == 2
    assert "the settings its note records" in capsys.readouterr().err


@needs_mcp
def test_a_resume_starts_no_server_the_session_names_unless_given_again(kit):
    pid_file = kit.tmp / "server.pid"
    assert kit({"content": "one"}, flags=["--mcp", notes_server(pid_file)])[0] == 0
    assert gone(pid_file)
    pid_file.unlink()
    path = next((kit.tmp / "sessions").iterdir())
    code, out, err = kit({"content": "two"}, flags=["--resume", str(path)])
    assert code == 0, err
    assert not pid_file.exists()  # not started
    assert f"not started again: --mcp {shlex.quote(notes_server(pid_file))}" in err
    [said] = [line for line in err.splitlines() if line.startswith("go on with: ")]
    assert shlex.split(said)[-2:] == ["--mcp", notes_server(pid_file)]  # yours to run


# --- In a process of its own --------------------------------------------------------------------


def start(folder: Path, *args: str, cwd: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.Popen([sys.executable, str(folder / "main.py"), *args], cwd=cwd, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_in_the_shell(tmp_path, child) -> int:
    """Block until the scripted shell command has started (it writes its process id into a
    FIFO); returns that id. If the child ends first, the FIFO is opened so this wakes."""
    fifo = tmp_path / "started"

    def wake_if_the_child_ends():
        child.wait()
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    threading.Thread(target=wake_if_the_child_ends, daemon=True).start()
    with open(fifo) as started:
        text = started.read().strip()
    assert text, f"the child ended first: {child.stderr.read()}"
    return int(text)


def test_ctrl_c_in_the_middle_of_a_command_leaves_a_session_that_resume_continues(tmp_path):
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    (tmp_path / "work").mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"calls": [call("run_command",
                                                  command=f"echo $$ > {fifo}; exec sleep 60")]}]))
    flags = ["--workdir", "work", "--sessions", "sessions", "--traces", "traces"]
    child = start(KIT, *flags, "--scripted", str(script), "run it", cwd=tmp_path)
    child.stdin.write("y\n")
    child.stdin.flush()
    command = wait_in_the_shell(tmp_path, child)
    try:
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(command, signal.SIGKILL)
    assert child.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    [path] = (tmp_path / "sessions").iterdir()
    session = sessions.load_session(path)
    stop = [e for e in session.path_to() if e["type"] == "stop"][-1]
    assert stop["stop_reason"] == "interrupted"
    assert agent.INTERRUPTED in session.messages()[-1]["content"]

    script.write_text(json.dumps([{"content": "It was interrupted; nothing else to do."}]))
    again = start(KIT, *flags, "--resume", str(path), "--scripted", str(script), "go on",
                  cwd=tmp_path)
    out, err = again.communicate(timeout=30)
    assert again.returncode == 0, err
    assert "left open" not in err  # Ctrl-C left nothing to repair
    messages = sessions.load_session(path).messages()
    assert agent.pairing_problem(messages) is None and messages[-1]["role"] == "assistant"


@pytest.mark.parametrize("deleted", [
    ["streaming.py", "streaming_model.py", "parallel_and_steering.py", "context_budget.py",
     "text_actions.py", "guards.py", "mcp_and_skills.py", "subagents_and_plans.py"]])
def test_main_runs_with_the_optional_modules_deleted(deleted, tmp_path):
    smaller = tmp_path / "kit"
    shutil.copytree(KIT, smaller, ignore=shutil.ignore_patterns(*deleted, "__pycache__",
                                                                "sessions", "traces"))
    (tmp_path / "work").mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([create("a.md", "a\n"), {"content": "Done."}]))
    child = start(smaller, "--workdir", "work", "--scripted", str(script), "make a.md",
                  cwd=tmp_path)
    out, err = child.communicate("y\n", timeout=30)
    assert child.returncode == 0, err
    assert (tmp_path / "work" / "a.md").read_text() == "a\n"
    assert "tool result: " in out  # agent.print_event shows the run instead of StreamView


def wait_for_question(child, question: str) -> str:
    """Block until the child's stdout shows question (input() flushes its prompt), or it ends."""
    seen = b""
    while question.encode() not in seen:
        chunk = os.read(child.stdout.fileno(), 4096)
        assert chunk, f"the child ended first: {seen.decode()}{child.stderr.read()}"
        seen += chunk
    return seen.decode()


def test_a_no_shell_run_killed_mid_run_resumes_without_the_shell_and_with_its_max_turns(
        tmp_path):
    (tmp_path / "work").mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"calls": [call("run_command", command="touch ran.txt")]},
                                  create("a.md", "a\n")]))
    flags = ["--workdir", "work", "--sessions", "sessions", "--traces", "traces"]
    child = start(KIT, *flags, "--no-shell", "--max-turns", "3", "--scripted", str(script),
                  "make a.md", cwd=tmp_path)
    try:
        wait_for_question(child, "apply this change to a.md?")  # mid-run, in the edit's tool
    finally:
        child.send_signal(signal.SIGKILL)  # no "go on with" line: only the session is left
        child.communicate(timeout=30)
    [path] = (tmp_path / "sessions").iterdir()
    assert sessions.load_session(path).path_to()[-1]["type"] == "tool_start"

    reads = [{"calls": [call("run_command", command="touch ran.txt")]},
             *[{"calls": [call("list_files")]}] * 3, {"content": "done"}]
    script.write_text(json.dumps(reads))
    again = start(KIT, "--resume", str(path), "--scripted", str(script), "go on", cwd=tmp_path)
    out, err = again.communicate("y\n" * 5, timeout=30)  # a y for any question it might ask
    assert again.returncode == 0, err
    assert "settings: the session's --max-turns 3 --no-shell" in err
    assert not (tmp_path / "work" / "ran.txt").exists() and "run this" not in out
    session = sessions.load_session(path)
    results = [m["content"] for m in session.messages() if m["role"] == "tool"]
    assert "unknown tool" in results[0] and "unknown tool" in results[2]  # both runs: no shell
    assert agent.INTERRUPTED in results[1]  # the edit the kill cut off
    assert [e["stop_reason"] for e in session.path_to() if e["type"] == "stop"] == [
        "crashed", "max_turns"]  # 3 model calls, then it stopped: not the default 20
    [said] = [line for line in err.splitlines() if line.startswith("go on with: ")]
    assert shlex.split(said)[-3:] == ["--max-turns", "3", "--no-shell"]

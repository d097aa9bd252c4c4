"""The two guards of lesson 04, loaded from the notebook itself (its `export` cells).

repeat_guard(registry, limit) and read_before_edit(registry) wrap a tool registry; the loop in
agent.py is not touched. Each is tested on its own (through call_tool, as the loop calls
tools) and inside a real Agent driven by a scripted model.
"""

import functools
import inspect
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from course import load_notebook

import agent
from agent import TOOL_REGISTRY, TOOLS, Agent, ScriptedClient, call_tool, reply, tool_call

nb = load_notebook("04-guards.ipynb")


@pytest.fixture(autouse=True)
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def spied(registry):
    """A copy of `registry` that records every call that really reached a tool."""
    ran = []

    def wrap(name, func):
        @functools.wraps(func)
        def recorded(*args, **kwargs):
            ran.append((name, kwargs))
            return func(*args, **kwargs)
        return recorded

    return {name: wrap(name, func) for name, func in registry.items()}, ran


def call(registry, name, **arguments):
    """Call a tool the way the loop does: by name, with JSON arguments."""
    return call_tool(registry, name, json.dumps(arguments))


def write(path, text):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")


def read(path):
    return Path(path).read_text(encoding="utf-8")


def run_agent(registry, steps, task="go", max_turns=10):
    """Run one chat() on a scripted model; return the agent and every event."""
    events = []
    bot = Agent(ScriptedClient(steps), "scripted", registry=registry, max_turns=max_turns,
                on_event=events.append)
    bot.chat(task)
    return bot, events


def assert_every_call_answered_in_order(messages):
    """Each assistant message's calls are answered by the very next messages, in order, once."""
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert len(answered) == len(set(answered))
    for i, message in enumerate(messages):
        ids = [c["id"] for c in message.get("tool_calls", [])]
        following = messages[i + 1:i + 1 + len(ids)]
        assert [(m["role"], m["tool_call_id"]) for m in following] == [("tool", n) for n in ids]


def tool_results(messages):
    return [m["content"] for m in messages if m["role"] == "tool"]


# --- repeat_guard ----------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [1, 2, 3, 5])
def test_identical_calls_run_up_to_the_limit_then_are_refused_without_running(limit):
    write("a.txt", "apples\n")
    registry, ran = spied(TOOL_REGISTRY)
    guarded = nb.repeat_guard(registry, limit=limit)
    for _ in range(limit):
        assert call(guarded, "read_file", path="a.txt")["content"] == "apples\n"
    for _ in range(3):  # and it stays refused while the model keeps repeating
        with pytest.raises(nb.RepeatedCall):
            call(guarded, "read_file", path="a.txt")
    assert len(ran) == limit


def test_default_limit_is_three():
    assert inspect.signature(nb.repeat_guard).parameters["limit"].default == 3
    guarded = nb.repeat_guard(TOOL_REGISTRY)
    for _ in range(3):
        call(guarded, "list_files", path=".")
    with pytest.raises(nb.RepeatedCall):
        call(guarded, "list_files", path=".")


def test_count_resets_when_the_arguments_differ():
    write("a.txt", "a")
    write("b.txt", "b")
    registry, ran = spied(TOOL_REGISTRY)
    guarded = nb.repeat_guard(registry, limit=2)
    for path in ["a.txt", "a.txt", "b.txt", "a.txt", "a.txt"]:
        call(guarded, "read_file", path=path)
    assert len(ran) == 5
    with pytest.raises(nb.RepeatedCall):
        call(guarded, "read_file", path="a.txt")  # third a.txt in a row


def test_count_resets_when_another_tool_runs_in_between():
    write("a.txt", "a")
    guarded = nb.repeat_guard(TOOL_REGISTRY, limit=2)
    for name, arguments in [("read_file", {"path": "a.txt"}), ("read_file", {"path": "a.txt"}),
                            ("list_files", {"path": "."}),
                            ("read_file", {"path": "a.txt"}), ("read_file", {"path": "a.txt"})]:
        call(guarded, name, **arguments)


def test_a_refused_call_does_not_stop_other_calls():
    write("a.txt", "a")
    guarded = nb.repeat_guard(TOOL_REGISTRY, limit=1)
    call(guarded, "read_file", path="a.txt")
    with pytest.raises(nb.RepeatedCall):
        call(guarded, "read_file", path="a.txt")
    assert call(guarded, "list_files", path=".")["files"] == [{"name": "a.txt", "type": "file"}]
    assert call(guarded, "read_file", path="a.txt")["content"] == "a"  # reset by list_files


def test_the_same_arguments_spelled_differently_are_the_same_call():
    guarded = nb.repeat_guard(TOOL_REGISTRY, limit=2)
    call(guarded, "list_files")  # the default path="." is applied before comparing
    call_tool(guarded, "list_files", '{ "path" :  "." }')  # spacing of the JSON does not matter
    with pytest.raises(nb.RepeatedCall):
        call(guarded, "list_files", path=".")
    guarded = nb.repeat_guard(TOOL_REGISTRY, limit=1)
    call_tool(guarded, "edit_file", '{"path": "x.txt", "old_str": "", "new_str": "x"}')
    with pytest.raises(nb.RepeatedCall):  # the order of the keys does not matter either
        call_tool(guarded, "edit_file", '{"new_str": "x", "old_str": "", "path": "x.txt"}')


def test_refusal_says_what_happened_and_what_to_do():
    guarded = nb.repeat_guard(TOOL_REGISTRY, limit=2)
    call(guarded, "list_files")
    call(guarded, "list_files")
    with pytest.raises(nb.RepeatedCall) as refused:
        call(guarded, "list_files")
    text = str(refused.value)
    assert text.startswith("not run:")
    assert "3 times in a row" in text and "at most 2" in text and "something else" in text


def test_failing_calls_are_counted_too():
    registry, ran = spied(TOOL_REGISTRY)
    guarded = nb.repeat_guard(registry, limit=2)
    for _ in range(2):
        with pytest.raises(FileNotFoundError):
            call(guarded, "read_file", path="missing.py")
    with pytest.raises(nb.RepeatedCall):
        call(guarded, "read_file", path="missing.py")
    assert len(ran) == 2


def test_repeat_guard_keeps_signatures_so_the_loop_still_checks_arguments():
    guarded = nb.repeat_guard(TOOL_REGISTRY)
    agent.check_tools(TOOLS, guarded)
    for name, func in TOOL_REGISTRY.items():
        assert inspect.signature(guarded[name]) == inspect.signature(func)
    with pytest.raises(TypeError, match="missing a required argument: 'new_str'"):
        call(guarded, "edit_file", path="x.txt", old_str="")
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        call(guarded, "read_file", path="x.txt", mode="r")
    assert not Path("x.txt").exists()


def test_each_guard_counts_for_itself_and_the_registry_is_not_changed():
    first = nb.repeat_guard(TOOL_REGISTRY, limit=1)
    second = nb.repeat_guard(TOOL_REGISTRY, limit=1)
    call(first, "list_files")
    call(second, "list_files")  # a new guard, a new conversation
    with pytest.raises(nb.RepeatedCall):
        call(first, "list_files")
    assert TOOL_REGISTRY["list_files"] is agent.list_files
    assert call(TOOL_REGISTRY, "list_files") == call(TOOL_REGISTRY, "list_files")


def test_in_the_loop_the_refusal_is_an_error_result_the_model_reads():
    write("a.txt", "apples\n")
    registry, ran = spied(TOOL_REGISTRY)
    read_a = tool_call("read_file", path="a.txt")
    bot, events = run_agent(nb.repeat_guard(registry, limit=2),
                            [read_a, read_a, read_a, reply("I see: it will not change.")])
    assert bot.stop_reason == "done" and len(ran) == 2
    results = tool_results(bot.messages)
    assert json.loads(results[0]) == json.loads(results[1]) == {"path": "a.txt",
                                                                 "content": "apples\n"}
    error = json.loads(results[2])["error"]
    assert error.startswith("read_file: not run:")
    ends = [e for e in events if e["type"] == "tool_execution_end"]
    assert [e["is_error"] for e in ends] == [False, False, True]
    # the model read it: the request after the refusal ends with the refusal
    assert bot.client.requests[3]["messages"][-1]["content"] == results[2]
    assert_every_call_answered_in_order(bot.messages)


def test_identical_parallel_calls_in_one_message_are_all_answered_in_order():
    write("a.txt", "a")
    registry, ran = spied(TOOL_REGISTRY)
    read_a = tool_call("read_file", path="a.txt")
    bot, _ = run_agent(nb.repeat_guard(registry, limit=2), [[read_a] * 4, reply("ok")])
    assert len(ran) == 2
    answers = [m for m in bot.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answers] == ["call_1", "call_2", "call_3", "call_4"]
    assert ["error" in json.loads(m["content"]) for m in answers] == [False, False, True, True]
    assert_every_call_answered_in_order(bot.messages)


def test_a_model_that_ignores_the_warning_is_still_stopped_by_max_turns():
    def ignores_everything(messages):
        return tool_call("read_file", path="missing.py")

    bot, _ = run_agent(nb.repeat_guard(TOOL_REGISTRY, limit=2), [ignores_everything] * 20,
                       max_turns=5)
    assert bot.stop_reason == "max_turns" and len(bot.client.requests) == 5
    assert sum("not run" in r for r in tool_results(bot.messages)) == 3
    assert_every_call_answered_in_order(bot.messages)


# --- read_before_edit ------------------------------------------------------------------------


def test_edit_of_an_unread_file_is_refused_with_a_reason_and_writes_nothing():
    write("a.txt", "one\n")
    guarded = nb.read_before_edit(TOOL_REGISTRY)
    with pytest.raises(nb.EditRefused) as refused:
        call(guarded, "edit_file", path="a.txt", old_str="one", new_str="two")
    assert "a.txt" in str(refused.value) and "read_file first" in str(refused.value)
    assert read("a.txt") == "one\n"


def test_overwrite_of_an_unread_file_is_refused_and_writes_nothing():
    write("a.txt", "precious\n")
    guarded = nb.read_before_edit(TOOL_REGISTRY)
    with pytest.raises(nb.EditRefused, match="overwrite"):
        call(guarded, "edit_file", path="a.txt", old_str="", new_str="wiped\n")
    assert read("a.txt") == "precious\n"


def test_creating_a_new_file_is_allowed_even_in_a_new_folder():
    guarded = nb.read_before_edit(TOOL_REGISTRY)
    assert call(guarded, "edit_file", path="src/new.py", old_str="",
                new_str="x = 1\n")["action"] == "created"
    assert read("src/new.py") == "x = 1\n"


def test_a_file_the_agent_created_counts_as_known():
    guarded = nb.read_before_edit(TOOL_REGISTRY)
    call(guarded, "edit_file", path="new.txt", old_str="", new_str="draft\n")
    assert call(guarded, "edit_file", path="new.txt", old_str="draft",
                new_str="final")["action"] == "edited"
    assert call(guarded, "edit_file", path="new.txt", old_str="",
                new_str="again\n")["action"] == "overwritten"
    assert read("new.txt") == "again\n"


def test_read_then_edit_works_and_the_file_stays_known():
    write("a.txt", "one\n")
    guarded = nb.read_before_edit(TOOL_REGISTRY)
    call(guarded, "read_file", path="a.txt")
    call(guarded, "edit_file", path="a.txt", old_str="one", new_str="two")
    call(guarded, "edit_file", path="a.txt", old_str="two", new_str="three")
    assert read("a.txt") == "three\n"


@pytest.mark.parametrize("read_as, edit_as", [
    ("./a.txt", "a.txt"),
    ("a.txt", "./a.txt"),
    ("sub/../a.txt", "a.txt"),
    ("ABSOLUTE", "a.txt"),
    ("a.txt", "ABSOLUTE"),
])
def test_a_path_spelled_differently_is_the_same_file(workspace, read_as, edit_as):
    write("a.txt", "one\n")
    Path("sub").mkdir()
    absolute = str(workspace / "a.txt")
    guarded = nb.read_before_edit(TOOL_REGISTRY)
    call(guarded, "read_file", path=absolute if read_as == "ABSOLUTE" else read_as)
    call(guarded, "edit_file", path=absolute if edit_as == "ABSOLUTE" else edit_as,
         old_str="one", new_str="two")
    assert read("a.txt") == "two\n"


def test_list_files_is_not_a_read():
    write("a.txt", "one\n")
    guarded = nb.read_before_edit(TOOL_REGISTRY)
    assert call(guarded, "list_files", path=".")["files"] == [{"name": "a.txt", "type": "file"}]
    with pytest.raises(nb.EditRefused):
        call(guarded, "edit_file", path="a.txt", old_str="one", new_str="two")
    assert read("a.txt") == "one\n"


def test_reading_one_file_does_not_unlock_another():
    write("a.txt", "one\n")
    write("b.txt", "one\n")
    guarded = nb.read_before_edit(TOOL_REGISTRY)
    call(guarded, "read_file", path="a.txt")
    with pytest.raises(nb.EditRefused):
        call(guarded, "edit_file", path="b.txt", old_str="one", new_str="two")
    assert read("b.txt") == "one\n"


def test_a_failed_read_does_not_count_as_a_read():
    guarded = nb.read_before_edit(TOOL_REGISTRY)
    with pytest.raises(FileNotFoundError):
        call(guarded, "read_file", path="a.txt")
    write("a.txt", "written by someone else\n")  # the file appears after the failed read
    with pytest.raises(nb.EditRefused):
        call(guarded, "edit_file", path="a.txt", old_str="someone", new_str="me")


def test_each_guard_is_a_new_conversation():
    write("a.txt", "one\n")
    first = nb.read_before_edit(TOOL_REGISTRY)
    second = nb.read_before_edit(TOOL_REGISTRY)
    call(first, "read_file", path="a.txt")
    with pytest.raises(nb.EditRefused):
        call(second, "edit_file", path="a.txt", old_str="one", new_str="two")
    call(first, "edit_file", path="a.txt", old_str="one", new_str="two")
    assert read("a.txt") == "two\n"


def test_a_missing_file_or_a_folder_gets_the_tools_own_error():
    guarded = nb.read_before_edit(TOOL_REGISTRY)
    with pytest.raises(FileNotFoundError):  # nothing to refuse: edit_file says what is wrong
        call(guarded, "edit_file", path="missing.txt", old_str="x", new_str="y")
    Path("folder").mkdir()
    with pytest.raises(IsADirectoryError):
        call(guarded, "edit_file", path="folder", old_str="", new_str="y")


def test_read_before_edit_keeps_signatures_and_leaves_other_tools_alone():
    guarded = nb.read_before_edit(TOOL_REGISTRY)
    agent.check_tools(TOOLS, guarded)
    for name, func in TOOL_REGISTRY.items():
        assert inspect.signature(guarded[name]) == inspect.signature(func)
    assert guarded["list_files"] is TOOL_REGISTRY["list_files"]
    assert TOOL_REGISTRY["edit_file"] is agent.edit_file
    write("a.txt", "one\n")
    assert guarded["read_file"]("a.txt")["content"] == "one\n"  # positional calls work too
    assert guarded["edit_file"]("a.txt", "one", "two")["action"] == "edited"
    with pytest.raises(TypeError, match="missing a required argument"):
        call(guarded, "edit_file", path="a.txt", old_str="two")


def test_in_the_loop_a_refused_edit_is_an_observation_and_the_model_recovers():
    write("config.ini", "debug = false\n")
    on_disk = []

    def note(event):
        if event["type"] == "tool_execution_end":
            on_disk.append((event["name"], event["is_error"], read("config.ini")))

    def reacts(messages):
        error = json.loads(messages[-1]["content"]).get("error", "")
        assert "read_file first" in error  # the model is told why, and what to do
        return tool_call("read_file", path="config.ini")

    edit = tool_call("edit_file", path="config.ini", old_str="false", new_str="true")
    bot = Agent(ScriptedClient([edit, reacts, edit, reply("done")]), "scripted",
                registry=nb.read_before_edit(TOOL_REGISTRY), on_event=note)
    assert bot.chat("turn debug on") == "done" and bot.stop_reason == "done"
    assert on_disk == [("edit_file", True, "debug = false\n"),
                       ("read_file", False, "debug = false\n"),
                       ("edit_file", False, "debug = true\n")]
    refusal = json.loads(tool_results(bot.messages)[0])
    assert refusal["error"].startswith("edit_file: refused:")
    assert_every_call_answered_in_order(bot.messages)


def test_refused_and_allowed_edits_in_one_message_are_each_answered_in_order():
    write("old.txt", "keep\n")
    calls = [tool_call("edit_file", path="old.txt", old_str="", new_str="lost\n"),
             tool_call("edit_file", path="new.txt", old_str="", new_str="new\n"),
             tool_call("read_file", path="old.txt")]
    bot, _ = run_agent(nb.read_before_edit(TOOL_REGISTRY), [calls, reply("ok")])
    answers = [m for m in bot.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answers] == ["call_1", "call_2", "call_3"]
    assert ["error" in json.loads(m["content"]) for m in answers] == [True, False, False]
    assert read("old.txt") == "keep\n" and read("new.txt") == "new\n"
    assert_every_call_answered_in_order(bot.messages)


# --- both at once ----------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["read_before_edit(repeat_guard(...))",
                                   "repeat_guard(read_before_edit(...))"])
def test_the_guards_stack_in_either_order(stack):
    if stack.startswith("read_before_edit"):
        guarded = nb.read_before_edit(nb.repeat_guard(TOOL_REGISTRY, limit=2))
    else:
        guarded = nb.repeat_guard(nb.read_before_edit(TOOL_REGISTRY), limit=2)
    agent.check_tools(TOOLS, guarded)
    write("a.txt", "one\n")
    with pytest.raises(nb.EditRefused):
        call(guarded, "edit_file", path="a.txt", old_str="one", new_str="two")
    call(guarded, "read_file", path="a.txt")
    call(guarded, "read_file", path="a.txt")
    with pytest.raises(nb.RepeatedCall):
        call(guarded, "read_file", path="a.txt")
    call(guarded, "edit_file", path="a.txt", old_str="one", new_str="two")
    assert read("a.txt") == "two\n"


def test_the_export_cells_only_define(workspace, capsys):
    """Loading the notebook's export cells prints nothing, writes nothing, stays in place."""
    module = load_notebook("04-guards.ipynb")
    assert capsys.readouterr() == ("", "")
    assert Path.cwd() == workspace and list(workspace.iterdir()) == []
    names = {name for name in vars(module) if not name.startswith("__")}
    assert {"repeat_guard", "RepeatedCall", "read_before_edit", "EditRefused"} <= names
    assert "workspace" not in names


@pytest.mark.slow
def test_take_it_with_you_the_exported_guards_run_beside_a_copy_of_agent_py(tmp_path):
    """The lesson's last section: `course.py export 04-guards -o guards.py`, agent.py beside
    it, and a builder's own program stacks both guards on the scripted model."""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, str(root / "notebooks" / "course.py"), "export",
                           "04-guards", "-o", str(tmp_path / "guards.py")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    code = (tmp_path / "guards.py").read_text(encoding="utf-8").split('"""', 2)[2]  # no header
    assert "import course" not in code and "course." not in code
    shutil.copy(root / "agent.py", tmp_path / "agent.py")
    program = """
from pathlib import Path
from agent import TOOL_REGISTRY, Agent, ScriptedClient, reply, tool_call
from guards import EditRefused, RepeatedCall, read_before_edit, repeat_guard

Path("config.ini").write_text("debug = false\\n")
edit = tool_call("edit_file", path="config.ini", old_str="false", new_str="true")
read = tool_call("read_file", path="config.ini")
bot = Agent(ScriptedClient([edit, read, read, read, edit, reply("done")]), "scripted",
            registry=read_before_edit(repeat_guard(TOOL_REGISTRY, limit=2)), on_event=None)
assert bot.chat("turn debug on") == "done"
errors = [m["content"] for m in bot.messages if m["role"] == "tool" and "error" in m["content"]]
assert "refused" in errors[0] and "not run" in errors[1] and len(errors) == 2, errors
assert Path("config.ini").read_text() == "debug = true\\n"
print("ok", EditRefused.__module__, RepeatedCall.__module__)
"""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    ran = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=environment,
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "ok guards guards"


def test_check_04_1_catches_a_failed_call_that_does_not_reset_the_refusal_count():
    # The hint says "any call that is not refused resets the count"; a guard that resets only
    # after a successful call stops the run where the model was refused once.
    import course
    import guards

    class StopAgent(BaseException):
        pass

    def resetting_only_on_success(registry, limit=3, refusals=2):
        inner, refused = guards.repeat_guard(registry, limit), {"in_a_row": 0}

        def wrap(func):
            @functools.wraps(func)
            def guarded(*args, **kwargs):
                try:
                    result = func(*args, **kwargs)
                except guards.RepeatedCall:
                    refused["in_a_row"] += 1
                    if refused["in_a_row"] >= refusals:
                        raise StopAgent("stopped") from None
                    raise
                refused["in_a_row"] = 0
                return result
            return guarded
        return {name: wrap(func) for name, func in inner.items()}

    report = course.check("04.1", resetting_only_on_success, StopAgent)
    failed = [what for ok, what, _ in report.results if not ok]
    assert failed == ["a call that runs and fails was not refused either: it resets the count "
                      "too"], repr(report)

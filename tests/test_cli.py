"""The command line: `python agent.py` as a real process, and main()/run_session in-process.

No test needs a key or the network: --demo runs on the scripted model, and the API-error
tests use a real openai.OpenAI client over a fake HTTP layer."""

import json
import os
import subprocess
import sys
from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import openai
import pytest

import agent
from agent import (
    DEMO_TASKS,
    Agent,
    ScriptedClient,
    main,
    reply,
    run_session,
    schema,
    tool_call,
)

AGENT_PY = Path(__file__).resolve().parent.parent / "agent.py"


def run_cli(*args, cwd, env_extra=None):
    """Run `python agent.py ARGS` in cwd, with no key and no endpoint in the environment."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENT_MODEL")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, str(AGENT_PY), *args], cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


RUNS = {  # name: (arguments, extra environment)
    "demo": (["--demo"], {}),
    "demo_quiet": (["--demo", "-q"], {}),
    "demo_workdir_trace": (["--demo", "-q", "--workdir", "work", "--trace", "run.jsonl"], {}),
    "help": (["--help"], {}),
    "no_key": (["do something"], {}),
    "bad_flag": (["--no-such-flag"], {}),
    "max_turns_0": (["--demo", "--max-turns", "0"], {}),
    "max_turns_abc": (["--demo", "--max-turns", "abc"], {}),
    "missing_workdir": (["--demo", "--workdir", "nowhere"], {}),
    "demo_busy_workdir": (["--demo", "--workdir", "busy"], {}),
    "trace_in_missing_folder": (["--demo", "--trace", "no/such/folder/run.jsonl"], {}),
    "empty_task": (["  "], {"OPENAI_API_KEY": "test", "OPENAI_BASE_URL": "http://fake.test/v1"}),
    # a key is set but never used: stdin is empty, so input() meets end of input (Ctrl-D)
    "interactive_eof": ([], {"OPENAI_API_KEY": "test", "OPENAI_BASE_URL": "http://fake.test/v1"}),
}
Run = namedtuple("Run", "result cwd tmpdir")


@pytest.fixture(scope="module")
def cli(tmp_path_factory) -> dict[str, Run]:
    """Every `python agent.py ...` of RUNS, each in its own empty folder with its own TMPDIR.
    Each process spends about a second importing openai, so they run side by side."""
    runs = {}
    with ThreadPoolExecutor(max_workers=4) as pool:
        for name, (args, env) in RUNS.items():
            cwd, tmpdir = tmp_path_factory.mktemp(name), tmp_path_factory.mktemp(f"{name}-tmp")
            if name == "demo_workdir_trace":
                (cwd / "work").mkdir()
            if name == "demo_busy_workdir":
                (cwd / "busy").mkdir()
                (cwd / "busy" / "greet.py").write_text("mine\n")
            future = pool.submit(run_cli, *args, cwd=cwd, env_extra={"TMPDIR": str(tmpdir), **env})
            runs[name] = (future, cwd, tmpdir)
    return {name: Run(future.result(), cwd, tmpdir) for name, (future, cwd, tmpdir) in runs.items()}


def assert_usage_error(result, text):
    assert result.returncode == 2
    assert result.stderr.startswith("usage: agent.py")
    assert text in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


# --- the demo, as the README runs it -------------------------------------------------------


def test_demo_exits_0_without_errors(cli):
    result = cli["demo"].result
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_demo_prints_the_four_tasks_with_every_tool_call_and_result(cli):
    out = cli["demo"].result.stdout
    for task in DEMO_TASKS:
        assert f"user:        {task}" in out
    assert out.count("tool call:   ") == 5
    assert 'tool call:   edit_file({"path": "greet.py", "old_str": ""' in out
    assert 'tool call:   read_file({"path": "greet.py"})' in out
    assert 'tool call:   list_files({"path": "."})' in out
    assert 'tool result: {"path": "greet.py", "action": "created"}' in out
    assert 'tool result: {"path": "greet.py", "action": "edited"}' in out
    assert 'tool result: {"path": ".", "files": [{"name": "greet.py", "type": "file"}]}' in out
    assert 'tool error:  {"error": "read_file: no such file: missing.py"}' in out
    assert out.count("agent:       ") == 4
    assert "The Python files here are: greet.py." in out


def test_demo_ends_with_the_history_table(cli):
    out = cli["demo"].result.stdout
    table = out[out.index("The history"):]
    assert "#  role" in table and "tool call" in table
    lines = table.strip().splitlines()
    assert lines[-1].split()[:2] == ["18", "assistant"]  # system + 4 tasks' messages
    assert "call_5" in table


def test_demo_leaves_nothing_in_the_cwd_or_the_temp_folder(cli):
    run = cli["demo"]
    assert list(run.cwd.iterdir()) == []
    assert list(run.tmpdir.iterdir()) == []  # its temporary workspace was removed


def test_demo_quiet_prints_only_the_four_answers(cli):
    result = cli["demo_quiet"].result
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(DEMO_TASKS)
    assert lines[0].startswith("Created greet.py with greet(name)")
    assert lines[-1].endswith("It does not exist.")


def test_demo_with_workdir_and_trace_works_there_and_writes_json_lines(cli):
    result, cwd, _ = cli["demo_workdir_trace"]
    assert result.returncode == 0, result.stderr
    assert "你好" in (cwd / "work" / "greet.py").read_text(encoding="utf-8")  # edited there
    events = [json.loads(line) for line in
              (cwd / "run.jsonl").read_text(encoding="utf-8").splitlines()]
    assert events[0]["type"] == "agent_start" and events[-1]["type"] == "agent_end"
    assert [e["type"] for e in events].count("agent_start") == len(DEMO_TASKS)
    assert all(e["stop_reason"] == "done" for e in events if e["type"] == "agent_end")
    assert all(isinstance(e["time"], float) for e in events)
    assert {"tool_execution_start", "tool_execution_end", "message_end"} <= \
        {e["type"] for e in events}


# --- flags and errors ----------------------------------------------------------------------


def test_help_lists_the_options_and_exits_0(cli):
    result = cli["help"].result
    assert result.returncode == 0
    for option in ["--demo", "--model", "--base-url", "--max-turns", "--workdir", "--trace",
                   "--quiet"]:
        assert option in result.stdout


def test_no_key_prints_one_sentence_naming_the_key_and_demo_and_exits_2(cli):
    result = cli["no_key"].result
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "OPENAI_API_KEY" in result.stderr and "--demo" in result.stderr
    assert "OPENAI_BASE_URL" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_flag_prints_usage_and_exits_2(cli):
    assert_usage_error(cli["bad_flag"].result, "unrecognized arguments: --no-such-flag")


@pytest.mark.parametrize("value", ["0", "abc"])
def test_bad_max_turns_prints_usage_and_exits_2(cli, value):
    assert_usage_error(cli[f"max_turns_{value}"].result,
                       f"--max-turns: must be a whole number of at least 1, not '{value}'")


def test_missing_workdir_prints_usage_and_exits_2(cli):
    assert_usage_error(cli["missing_workdir"].result, "--workdir nowhere: no such directory")


def test_demo_refuses_a_workdir_with_files_in_it_and_changes_nothing(cli):
    run = cli["demo_busy_workdir"]
    assert_usage_error(run.result, "give it an empty --workdir")
    assert (run.cwd / "busy" / "greet.py").read_text() == "mine\n"


def test_a_trace_file_that_cannot_be_written_is_a_usage_error_before_the_run(cli):
    run = cli["trace_in_missing_folder"]
    assert_usage_error(run.result, "--trace no/such/folder/run.jsonl: not a file in an existing")
    assert run.result.stdout == ""  # refused before the demo started
    assert not (run.cwd / "no").exists()


def test_an_empty_task_is_a_usage_error(cli):
    assert_usage_error(cli["empty_task"].result, "the task is empty")


def test_interactive_session_ends_quietly_at_end_of_input(cli):
    result = cli["interactive_eof"].result
    assert result.returncode == 0
    assert result.stderr == ""


# --- in-process: run_session and main -------------------------------------------------------


def answers(*lines):
    """A fake input(): returns each line in turn; an exception class is raised instead."""
    queue = list(lines)

    def fake_input(prompt=""):
        item = queue.pop(0)
        if isinstance(item, type) and issubclass(item, BaseException):
            raise item
        return item

    return fake_input


@pytest.fixture
def quiet_agent(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return Agent(ScriptedClient([reply("hello back"), reply("second answer")]), on_event=None)


@pytest.mark.parametrize("ending", ["exit", "quit", "EXIT", "", "   "])
def test_interactive_session_exits_on_exit_word_or_empty_line(quiet_agent, monkeypatch, ending):
    monkeypatch.setattr("builtins.input", answers("hi", ending, "never read"))
    assert run_session(quiet_agent, None, quiet=True) == 0
    assert len(quiet_agent.client.requests) == 1


@pytest.mark.parametrize("interrupt", [EOFError, KeyboardInterrupt])
def test_interactive_session_exits_on_ctrl_d_or_ctrl_c_without_traceback(
        quiet_agent, monkeypatch, capsys, interrupt):
    monkeypatch.setattr("builtins.input", answers("hi", interrupt))
    assert run_session(quiet_agent, None, quiet=True) == 0
    out, err = capsys.readouterr()
    assert out == "hello back\n\n" and err == ""


def test_ctrl_c_while_a_tool_runs_ends_the_session_saying_so_with_status_130(
        tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    def slow() -> dict:
        raise KeyboardInterrupt

    chat_agent = Agent(ScriptedClient([tool_call("slow")]), registry={"slow": slow},
                       tools=[schema(slow, "Takes long.")], on_event=None)
    monkeypatch.setattr("builtins.input", answers("go"))
    assert run_session(chat_agent, None, quiet=True) == 130
    assert capsys.readouterr().err == "interrupted\n"  # one line, no traceback
    assert chat_agent.stop_reason == "interrupted"


def test_ctrl_c_during_one_task_says_interrupted_and_exits_130(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    def ctrl_c(messages):
        raise KeyboardInterrupt

    chat_agent = Agent(ScriptedClient([ctrl_c]), on_event=None)
    assert run_session(chat_agent, "do it", quiet=True) == 130
    assert capsys.readouterr().err == "interrupted\n"


def fake_openai(monkeypatch, *replies):
    """Make agent.main() build a real openai.OpenAI whose HTTP layer answers `replies`."""
    real_openai = openai.OpenAI
    queue = list(replies)

    def handler(request):
        status, text = queue.pop(0)
        if status == 200:
            body = {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}]}
        else:
            body = {"error": {"message": text}}
        return httpx2.Response(status, json=body)

    def make_client(**kwargs):
        return real_openai(api_key="test", base_url="http://fake.test/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))

    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setattr(agent.openai, "OpenAI", make_client)
    return queue


def test_api_error_in_interactive_mode_prints_one_line_and_the_session_goes_on(
        tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    queue = fake_openai(monkeypatch, (401, "Incorrect API key provided"), (200, "now it works"))
    monkeypatch.setattr("builtins.input", answers("first", "second", "exit"))
    assert main(["-q"]) == 0
    out, err = capsys.readouterr()
    assert err.count("\n") == 1
    assert err.startswith("model request to http://fake.test/v1/ failed: ")
    assert "Incorrect API key" in err
    assert out == "now it works\n"
    assert queue == []


def test_api_error_with_one_task_exits_1_with_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    fake_openai(monkeypatch, (500, "internal trouble"))
    assert main(["-q", "--base-url", "http://fake.test/v1", "do it"]) == 1
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "internal trouble" in err and "Traceback" not in err
    assert out == ""


@pytest.mark.parametrize("body", [
    {"error": {"message": "quota exceeded"}},  # an error object, but with status 200
    {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": []},
    "<html><body>502 Bad Gateway</body></html>",  # a proxy's page
    {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
     "choices": [{"index": 0, "finish_reason": "stop"}]},  # a choice without a message
    {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
     "choices": [{"index": 0, "delta": {"content": "hi"}}]},  # a streaming chunk
])
def test_a_reply_that_is_not_a_completion_is_one_line_of_error_not_a_traceback(
        tmp_path, monkeypatch, capsys, body):
    monkeypatch.chdir(tmp_path)

    def handler(request):
        if isinstance(body, str):
            return httpx2.Response(200, text=body, headers={"content-type": "text/html"})
        return httpx2.Response(200, json=body)

    client = openai.OpenAI(api_key="test", base_url="http://fake.test/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    chat_agent = Agent(client, "m", on_event=None)
    assert run_session(chat_agent, "do it", quiet=True) == 1
    err = capsys.readouterr().err
    assert err.startswith("model request to http://fake.test/v1/ failed: ")
    assert "the server sent no completion" in err and err.count("\n") == 1
    assert chat_agent.messages[-1] == {"role": "user", "content": "do it"}  # still valid


def test_connection_error_with_one_task_exits_1(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    def unreachable(messages):
        raise openai.APIConnectionError(request=httpx2.Request("POST", "http://fake.test/v1"))

    chat_agent = Agent(ScriptedClient([unreachable]), on_event=None)
    assert run_session(chat_agent, "do it", quiet=True) == 1
    # the scripted client has no base_url, so the message names the server generically
    expected = "model request to the model server failed: Connection error.\n"
    assert capsys.readouterr().err == expected


def test_one_task_mode_answers_once_and_exits_0(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    queue = fake_openai(monkeypatch, (200, "the task is done"))
    monkeypatch.setattr("builtins.input", answers())  # input() must not be called
    assert main(["-q", "do it"]) == 0
    assert capsys.readouterr().out == "the task is done\n"
    assert queue == []


def test_main_without_key_returns_2_before_building_a_client(monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(agent.openai, "OpenAI", lambda **kw: pytest.fail("client built"))
    assert main(["a task"]) == 2
    assert capsys.readouterr().err == agent.NO_KEY + "\n"

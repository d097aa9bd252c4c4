"""The tracer of lesson 07, loaded from the notebook itself (its `export` cells).

Every test drives a real Agent on the scripted model, with the notebook's Tracer as its
on_event handler and a FakeClock, then reads the trace file back with the notebook's loader:
what is on disk is what is checked.
"""

import codecs
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import warnings
from itertools import pairwise
from pathlib import Path

import pytest
from course import load_notebook
from props.clock import FakeClock, with_latency, with_tool_time

import agent
from agent import (
    INTERRUPTED,
    NOT_RUN,
    TOOL_REGISTRY,
    Agent,
    ScriptedClient,
    fan_out,
    reply,
    step,
    to_json,
    tool_call,
    trace_to,
)

nb = load_notebook("07-tracing.ipynb")
ROOT = Path(__file__).resolve().parent.parent
FAKE_KEY = "test-credential-not-real-8675309"  # fake, and shaped like no real provider's key
QUOTED = 'hunter2"quoted\\slash'  # a fake password with a quote and a backslash in it
UMLAUT = 'pässwort-für-"test"'  # fake, non-ASCII: a provider may send it as \\u escapes


def make_project(folder: Path) -> Path:
    """The same small project every time: a recording and its replay must start alike."""
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("remember the milk\n")
    (folder / "big.log").write_text("a line of the log\n" * 10_000)  # 180,000 characters
    return folder


@pytest.fixture
def project(tmp_path, monkeypatch):
    """tmp_path/project, made the working directory; traces are written beside it."""
    folder = make_project(tmp_path / "project")
    monkeypatch.chdir(folder)
    return folder


def traced(script, folder, clock=None, **options):
    """An Agent on `script` whose events go to a Tracer writing into `folder`."""
    clock = clock or FakeClock()
    tracer = nb.Tracer(folder, clock=clock)
    bot = Agent(ScriptedClient(script), "scripted-demo", on_event=tracer, **options)
    return bot, tracer


def json_lines(path) -> list:
    """Every line of a JSON Lines file, parsed: lines end at "\n" (not str.splitlines)."""
    with open(path, encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def never_done(messages):
    return tool_call("list_files", path=".")


def fails_with(exc):
    def fail(messages):
        raise exc
    return fail


# --- a complete trace --------------------------------------------------------------------


def test_a_trace_is_complete_with_turns_ids_durations_and_usage(project, tmp_path):
    clock = FakeClock()
    tracer = nb.Tracer(tmp_path / "traces", clock=clock)
    client = with_latency(ScriptedClient([
        tool_call("list_files", path="."),
        [tool_call("read_file", path="notes.txt"), tool_call("read_file", path="nope.txt")],
        reply("There is a note about milk."),
    ]), clock)
    registry = with_tool_time(TOOL_REGISTRY, clock, seconds=0.25)
    bot = Agent(client, "scripted-demo", registry=registry, on_event=tracer)
    bot.chat("What is in this folder?")

    run = nb.load_trace(tracer.paths[0])
    types = [r["type"] for r in run]
    assert types[0] == "agent_start" and types[-1] == "agent_end"
    assert run[-1]["stop_reason"] == "done" and run[-1]["answer"] == "There is a note about milk."
    assert nb.trace_problems(run) == []
    raw = json_lines(tracer.paths[0])
    assert all(isinstance(r["time"], float) and isinstance(r["turn"], int) for r in raw)

    # every tool execution has its end, and its tool message, under the same id, in order
    starts = [r["tool_call_id"] for r in run if r["type"] == "tool_execution_start"]
    ends = [r["tool_call_id"] for r in run if r["type"] == "tool_execution_end"]
    answers = [r["message"]["tool_call_id"] for r in run
               if r["type"] == "message_end" and r["message"]["role"] == "tool"]
    assert starts == ends == answers == ["call_1", "call_2", "call_3"]
    assert [r["is_error"] for r in run if r["type"] == "tool_execution_end"] == [False, False, True]

    # turns are 1, 2, 3 and never go back; time never goes back either
    assert [r["turn"] for r in run if r["type"] == "turn_start"] == [1, 2, 3]
    assert all(a["turn"] <= b["turn"] and a["time"] <= b["time"] for a, b in pairwise(run))

    # durations come from the tracer's clock: exact with a fake one
    assert all(r["duration"] == pytest.approx(0.25) for r in run
               if r["type"] == "tool_execution_end")
    for s in nb.spans(run):
        assert s["closing"]["duration"] == pytest.approx(s["end"] - s["start"])
    assert run[-1]["duration"] == pytest.approx(clock.now - run[0]["time"])

    # usage per turn is what the (scripted) provider reported, and the totals are its sum
    expected = [len(to_json(request)) // 4 for request in client.requests]  # its formula
    rows = nb.turn_usage(run)
    assert [row["prompt_tokens"] for row in rows] == expected
    assert [row["messages"] for row in rows] == [2, 4, 7]
    totals = nb.totals(run)
    assert totals["prompt_tokens"] == sum(expected)
    assert totals["prompt_tokens"] + totals["completion_tokens"] == sum(
        r["usage"]["total_tokens"] for r in run if r.get("usage"))
    assert totals["cost"] == pytest.approx(sum(row["cost"] for row in rows))
    assert totals["cost"] == pytest.approx(
        (totals["prompt_tokens"] * 0.40 + totals["completion_tokens"] * 1.60) / 1e6)
    assert (totals["turns"], totals["tool_calls"], totals["tool_errors"]) == (3, 3, 1)
    assert totals["wall_time"] == pytest.approx(totals["model_time"] + totals["tool_time"])
    assert "done, turns: 3" in nb.summary(run)
    assert f"tokens: {totals['prompt_tokens']:,} in" in nb.summary(run)



def test_usage_a_server_did_not_report_is_unknown_not_zero(project, tmp_path):
    """A server that sends no usage (on a stream, say): the calls' tokens and cost are None,
    the run's too (unreported counts those calls), and the summary says "unknown"; the
    OpenTelemetry spans leave the usage out rather than send 0."""
    bot, tracer = traced([tool_call("list_files"), reply("one")], tmp_path / "traces")
    bot.chat("look")
    run = nb.load_trace(tracer.paths[0])
    silent = [{**r, "usage": None} if "usage" in r else r for r in run]
    half = [dict(r) for r in run]
    next(r for r in half if r.get("usage"))["usage"] = None  # the first call only
    assert [row["prompt_tokens"] for row in nb.turn_usage(silent)] == [None, None]
    assert [row["cost"] for row in nb.turn_usage(silent)] == [None, None]
    for records, unreported in ((silent, 2), (half, 1)):
        totals = nb.totals(records)
        assert (totals["prompt_tokens"], totals["completion_tokens"], totals["cost"],
                totals["unreported"]) == (None, None, None, unreported)
        assert f"tokens: unknown ({unreported} model call(s) reported no usage), cost: ?" in \
            nb.summary(records)
    assert nb.totals(run)["unreported"] == 0 and nb.totals(run)["prompt_tokens"] > 0
    assert "tokens: unknown," in nb.summary(silent + run)  # the total line of two runs
    chats = [s for s in nb.otel_spans(silent) if s["name"].startswith("chat")]
    assert chats and not any("gen_ai.usage.input_tokens" in s["attributes"] for s in chats)


def test_a_trace_file_is_readable_by_its_owner_only(project, tmp_path):
    bot, tracer = traced([reply("one")], tmp_path / "traces")
    bot.chat("first")
    assert oct(tracer.paths[0].stat().st_mode & 0o777) == oct(0o600)  # as a session

def test_one_file_per_run(project, tmp_path):
    bot, tracer = traced([reply("one"), reply("two")], tmp_path / "traces")
    bot.chat("first")
    bot.chat("second")
    assert [p.name for p in tracer.paths] == ["run-001.jsonl", "run-002.jsonl"]
    for path, answer in zip(tracer.paths, ["one", "two"], strict=True):
        run = nb.load_trace(path)
        assert [r["type"] for r in run].count("agent_start") == 1
        assert run[-1]["answer"] == answer and nb.trace_problems(run) == []
    again = nb.Tracer(tmp_path / "traces")  # a new tracer never overwrites an old run
    again({"type": "agent_start", "model": "m"})
    assert again.paths[0].name == "run-003.jsonl"


def test_the_tracer_writes_trace_to_lines_with_fields_added(project, tmp_path):
    tracer = nb.Tracer(tmp_path / "traces", clock=FakeClock())
    plain = trace_to(str(tmp_path / "plain.jsonl"))

    def both(event):
        plain(event)
        tracer(event)

    script = [tool_call("read_file", path="notes.txt"), reply("milk")]
    Agent(ScriptedClient(script), "scripted-demo", on_event=both).chat("read the note")
    lines, ours = json_lines(tmp_path / "plain.jsonl"), json_lines(tracer.paths[0])
    assert [x["type"] for x in ours] == [x["type"] for x in lines]
    for theirs, mine in zip(lines, ours, strict=True):
        assert set(theirs) <= set(mine)  # the same line, with fields added
        assert {k: v for k, v in theirs.items() if k not in ("time", "duration")} == {
            k: v for k, v in mine.items() if k in theirs and k not in ("time", "duration")}
    # and the loader reads agent.py's own trace file the same way
    assert [r["turn"] for r in nb.load_trace(tmp_path / "plain.jsonl")] == [x["turn"] for x in ours]


# --- what must never be written ------------------------------------------------------------


def test_no_secret_is_written(project, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    (project / ".env").write_text(f"OPENAI_API_KEY={FAKE_KEY}\n")
    bot, tracer = traced([
        tool_call("read_file", path=".env"),  # a tool result holding the key
        tool_call("edit_file", path="copy.env", old_str="", new_str=FAKE_KEY),  # an argument
        fails_with(RuntimeError(f"401: Incorrect API key provided: {FAKE_KEY}")),  # an error
    ], tmp_path / "traces")
    with pytest.raises(RuntimeError):
        bot.chat(f"My key is {FAKE_KEY}; is it in .env?")  # and the user's own message
    text = tracer.paths[0].read_text()
    assert FAKE_KEY not in text
    assert text.count("[redacted OPENAI_API_KEY]") >= 5
    run = nb.load_trace(tracer.paths[0])
    assert run[-1]["stop_reason"] == "error"
    assert run[-1]["error"] == "RuntimeError: 401: Incorrect API key provided: " \
                               "[redacted OPENAI_API_KEY]"
    assert FAKE_KEY in bot.messages[3]["content"]  # the agent itself is not changed


def escaped_forms(secret: str, levels: int = 3) -> set[str]:
    """The secret as it is, as repr writes it, and JSON-escaped up to `levels` times (with and
    without \\u escapes): every form from which it could be read back."""
    forms, layer = {secret, repr(secret)[1:-1]}, {secret}
    for _ in range(levels):
        layer = {json.dumps(f, ensure_ascii=a)[1:-1] for f in layer for a in (False, True)}
        forms |= layer
    return forms


def test_secrets_with_quotes_and_backslashes_are_redacted_in_every_form(
        project, tmp_path, monkeypatch):
    monkeypatch.setenv("DB_PASSWORD", QUOTED)
    monkeypatch.setenv("APP_SECRET", UMLAUT)
    (project / "db.cfg").write_text(f"password={QUOTED}\nsecret={UMLAUT}\n")
    (project / "db.json").write_text(json.dumps({"password": QUOTED, "secret": UMLAUT}))
    bot, tracer = traced([
        tool_call("read_file", path="db.cfg"),  # in the result: JSON-escaped once
        tool_call("read_file", path="db.json"),  # JSON inside JSON: escaped twice, \\u escapes
        tool_call("edit_file", raw_arguments=json.dumps(  # arguments as ASCII-only JSON
            {"path": "copy.cfg", "old_str": "", "new_str": f"{QUOTED} {UMLAUT}"})),
        fails_with(RuntimeError(f"401: bad credentials {QUOTED!r}, {UMLAUT!r}")),  # repr
    ], tmp_path / "traces")
    with pytest.raises(RuntimeError):
        bot.chat(f"Are {QUOTED} and {UMLAUT} in db.cfg?")  # as they are
    assert QUOTED.replace("\\", "\\\\").replace('"', '\\"') in bot.messages[3]["content"]

    text = tracer.paths[0].read_text(encoding="utf-8")  # the raw file, as a reader would grep it
    for secret in (QUOTED, UMLAUT):
        assert len(escaped_forms(secret)) > 3  # the forms really differ
        found = [form for form in escaped_forms(secret) if form in text]
        assert found == [], f"{secret!r} is recoverable from the trace as {found}"
    assert text.count("[redacted DB_PASSWORD]") >= 6 and text.count("[redacted APP_SECRET]") >= 6
    run = nb.load_trace(tracer.paths[0])
    db_json = [r["result"] for r in run if r["type"] == "tool_execution_end"][1]
    assert json.loads(json.loads(db_json)["content"]) == {
        "password": "[redacted DB_PASSWORD]", "secret": "[redacted APP_SECRET]"}
    assert run[-1]["error"] == ("RuntimeError: 401: bad credentials '[redacted DB_PASSWORD]', "
                                "'[redacted APP_SECRET]'")


def test_redact_leaves_no_half_of_an_escaped_secret():
    secret = "ends-with-a-backslash\\"  # as it is, it is the start of its JSON-escaped form
    assert nb.redact(json.dumps({"k": secret}), {"S": secret}) == '{"k": "[redacted S]"}'
    assert nb.redact({"a": [secret, repr(secret)]}, {"S": secret}) == {
        "a": ["[redacted S]", "'[redacted S]'"]}


@pytest.mark.parametrize("order", ["short first", "long first"])
def test_a_secret_that_holds_another_is_redacted_whole_whatever_their_order(order):
    password, url = "hunter2-xyz", "postgres://app:hunter2-xyz@db.internal:5432/orders"
    secrets = {"DB_PASSWORD": password, "DB_SECRET": url}
    if order == "long first":
        secrets = dict(reversed(secrets.items()))
    text = json.dumps({"content": f"DB_SECRET={url}"})
    assert nb.redact(text, secrets) == '{"content": "DB_SECRET=[redacted DB_SECRET]"}'


def test_which_environment_variables_count_as_secrets():
    environ = {"OPENAI_API_KEY": "ollama", "GITHUB_TOKEN": "t" * 20, "DB_PASSWORD": "p" * 12,
               "AWS_SECRET_ACCESS_KEY": "a" * 40, "hf_token": "h" * 30,
               "PIP_KEYRING_PROVIDER": "disabled", "TOKENIZERS_PARALLELISM": "false-ish",
               "PATH": "/usr/bin:/bin", "HOME": "/home/someone"}
    assert sorted(nb.env_secrets(environ)) == [
        "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "GITHUB_TOKEN", "hf_token"]


def test_huge_outputs_are_recorded_as_preview_length_and_hash(project, tmp_path):
    bot, tracer = traced([tool_call("read_file", path="big.log"), reply("a long log")],
                         tmp_path / "traces")
    bot.chat("read big.log")
    full = bot.messages[3]["content"]  # what the model got: bounded by agent.py
    assert len(full) == 20_000
    run = nb.load_trace(tracer.paths[0])
    result = next(r["result"] for r in run if r["type"] == "tool_execution_end")
    assert result == {"preview": full[:nb.PREVIEW], "chars": len(full),
                      "sha256": hashlib.sha256(full.encode()).hexdigest()[:16]}
    assert next(r["message"]["content"] for r in run if r["type"] == "message_end"
                and r["message"]["role"] == "tool") == result
    text = tracer.paths[0].read_text()
    assert len(text) < 8_000 and "a line of the log\\n" * 20 not in text
    assert "output truncated" not in text  # the bound's note is in the tail, never written

    whole = nb.Tracer(tmp_path / "whole", max_chars=100_000)  # the limit is a parameter
    Agent(ScriptedClient([tool_call("read_file", path="big.log"), reply("ok")]),
          "scripted-demo", on_event=whole).chat("read big.log")
    assert full in [r.get("result") for r in nb.load_trace(whole.paths[0])]


# --- runs that end badly -----------------------------------------------------------------


def test_a_run_that_hits_max_turns(project, tmp_path):
    bot, tracer = traced([never_done] * 10, tmp_path / "traces", max_turns=3)
    bot.chat("tidy up")
    run = nb.load_trace(tracer.paths[0])
    assert run[-1]["type"] == "agent_end" and run[-1]["stop_reason"] == "max_turns"
    assert [r["turn"] for r in run if r["type"] == "turn_start"] == [1, 2, 3]
    assert nb.trace_problems(run) == []
    assert nb.totals(run)["turns"] == 3 and nb.totals(run)["tool_calls"] == 3
    assert "max_turns, turns: 3" in nb.summary(run)


def test_a_run_where_the_client_raises(project, tmp_path):
    clock = FakeClock()

    def timeout(messages):
        clock.advance(30)
        raise TimeoutError("no answer in 30 s")

    bot, tracer = traced([tool_call("list_files", path="."), timeout], tmp_path / "traces",
                         clock=clock)
    with pytest.raises(TimeoutError):
        bot.chat("what is here?")
    run = nb.load_trace(tracer.paths[0])
    assert run[-1]["type"] == "agent_end" and run[-1]["stop_reason"] == "error"
    assert run[-1]["error"] == "TimeoutError: no answer in 30 s"
    assert nb.trace_problems(run) == []
    model_calls = [s for s in nb.spans(run) if s["kind"] == "model"]
    assert [(s["turn"], s["error"]) for s in model_calls] == [(1, False), (2, True)]
    assert model_calls[1]["end"] - model_calls[1]["start"] == pytest.approx(30)
    assert model_calls[1]["closing"] is None  # it never closed: it ends with the run
    assert "error: TimeoutError: no answer in 30 s" in nb.summary(run)
    assert nb.totals(run)["stop_reason"] == "error"


def test_an_interrupted_run_ends_its_trace_but_lacks_the_quiet_answers(project, tmp_path):
    def ctrl_c(path="."):
        raise KeyboardInterrupt  # as if the user pressed Ctrl-C while this tool ran

    batch = [tool_call("read_file", path="notes.txt"), tool_call("list_files", path="."),
             tool_call("read_file", path="big.log")]
    bot, tracer = traced([batch, reply("never sent")], tmp_path / "traces",
                         registry={**TOOL_REGISTRY, "list_files": ctrl_c})
    with pytest.raises(KeyboardInterrupt):
        bot.chat("look around")
    # Agent.answer_open_calls kept the history valid: every call has its answer...
    assert [m.get("tool_call_id") for m in bot.messages[3:]] == ["call_1", "call_2", "call_3"]
    assert [json.loads(m["content"]).get("error") for m in bot.messages[4:]] == [
        INTERRUPTED, NOT_RUN]
    # ...and the trace still ends with agent_end, but those two answers emitted no events
    run = nb.load_trace(tracer.paths[0])
    assert run[-1]["type"] == "agent_end" and run[-1]["stop_reason"] == "interrupted"
    assert run[-1]["error"] == "KeyboardInterrupt: "
    assert nb.trace_problems(run) == [
        "tool call call_2 started but never ended",
        "tool calls ['call_1', 'call_2', 'call_3'] but tool results ['call_1']"]


def test_tool_errors_are_recorded(project, tmp_path):
    bot, tracer = traced([
        tool_call("delete_everything", path="."),
        tool_call("read_file", raw_arguments='{"path": "notes.txt"'),
        tool_call("read_file", path="missing.txt"),
        step(tool_call("edit_file", raw_arguments='{"path": "x.txt", "old_'),
             finish_reason="length"),
        reply("I give up."),
    ], tmp_path / "traces")
    bot.chat("try things")
    run = nb.load_trace(tracer.paths[0])
    executed = [(r["name"], r["is_error"]) for r in run if r["type"] == "tool_execution_end"]
    assert executed == [("delete_everything", True), ("read_file", True), ("read_file", True)]
    results = [r for r in run if r["type"] == "message_end" and r["message"]["role"] == "tool"]
    assert [r["is_error"] for r in results] == [True] * 4  # the truncated call was not run
    assert "not executed" in results[3]["message"]["content"]
    assert nb.trace_problems(run) == []
    totals = nb.totals(run)
    assert (totals["tool_calls"], totals["tool_errors"]) == (4, 4)
    assert "tool calls: 4 (4 failed)" in nb.summary(run)
    assert sum(s["error"] for s in nb.spans(run) if s["kind"] == "tool") == 3


def test_trace_problems_notices_what_is_missing(project, tmp_path):
    bot, tracer = traced([tool_call("list_files", path="."), reply("ok")], tmp_path / "traces")
    bot.chat("look")
    run = nb.load_trace(tracer.paths[0])
    assert nb.trace_problems(run) == []
    assert nb.trace_problems(run[:-1]) == ["the trace does not end with agent_end"]
    no_end = [r for r in run if r["type"] != "tool_execution_end"]
    assert "tool call call_1 started but never ended" in nb.trace_problems(no_end)
    no_result = [r for r in run if r.get("message", {}).get("role") != "tool"]
    assert nb.trace_problems(no_result) == ["tool calls ['call_1'] but tool results []"]
    skipped = [r for r in run if not (r["type"] == "turn_start" and r["turn"] == 1)]
    assert nb.trace_problems(skipped) == ["turns are numbered [2], not 1, 2, 3, ..."]
    silent = run[:-1] + [{**run[-1], "stop_reason": "error"}]
    assert nb.trace_problems(silent) == ["the run failed but its error is not recorded"]


# --- odd text, secrets in error messages, two tracers at once (issue 10, items 7-10) -------

LINE_BREAKS = "one\u2028two\u2029three\x85four"  # str.splitlines breaks at each; JSON does not
HALF_AN_EMOJI = "\ud83d"  # a lone surrogate: half of an emoji's UTF-16 pair, as some servers send


def both_traces(tmp_path):
    """The lesson's Tracer and agent.py's trace_to, on one run: (handler, the files it wrote)."""
    tracer = nb.Tracer(tmp_path / "traces", clock=FakeClock())
    plain = tmp_path / "plain.jsonl"
    return fan_out(tracer, trace_to(str(plain))), lambda: [tracer.paths[0], plain]


def test_a_trace_of_text_holding_unicode_line_separators_loads(project, tmp_path):
    (project / "odd.txt").write_text(LINE_BREAKS + "\n", encoding="utf-8")
    on_event, files = both_traces(tmp_path)
    Agent(ScriptedClient([tool_call("read_file", path="odd.txt"), reply(f"It says {LINE_BREAKS}")]),
          "scripted-demo", on_event=on_event).chat("read odd.txt")
    for path in files():
        text = path.read_text(encoding="utf-8")
        assert "\u2028" in text and "\x85" in text  # written as they are: valid JSON Lines
        run = nb.load_trace(path)
        assert len(run) == text.count("\n")  # one record per line, as jq and pandas read it
        assert nb.trace_problems(run) == [] and run[-1]["answer"] == f"It says {LINE_BREAKS}"


def test_a_lone_surrogate_from_the_model_never_stops_a_traced_run(project, tmp_path,
                                                                   monkeypatch):
    said = f"half an emoji: {HALF_AN_EMOJI}"
    arguments = '{"path": "notes' + HALF_AN_EMOJI + '.txt"}'  # the raw arguments, as sent
    script = [step(tool_call("read_file", raw_arguments=arguments), content=said,
                   reasoning_content=said), reply(said)]
    untraced = Agent(ScriptedClient(script), "scripted-demo", on_event=None)
    untraced.chat("look")
    assert untraced.stop_reason == "done"

    on_event, files = both_traces(tmp_path)
    bot = Agent(ScriptedClient(script), "scripted-demo", on_event=on_event)
    bot.chat(f"look {HALF_AN_EMOJI}")  # the user's text can hold one too
    assert bot.stop_reason == "done"
    for path in files():
        path.read_bytes().decode("utf-8")  # valid UTF-8 (strict), so any reader can open it
        run = nb.load_trace(path)
        assert run[-1]["stop_reason"] == "done" and nb.trace_problems(run) == []
        assert nb.recorded_history(run) == bot.messages[1:]  # exactly what the agent held...
        assert nb.recorded_tasks(run) == [f"look {HALF_AN_EMOJI}"]  # ...surrogates and all
        monkeypatch.chdir(make_project(tmp_path / f"replay-{path.stem}"))
        assert nb.history_differences(run, nb.replay(run).messages) == []  # replays as it was


def test_a_handler_after_the_tracer_that_raises_leaves_its_event_in_the_trace(project, tmp_path):
    tracer = nb.Tracer(tmp_path / "traces", clock=FakeClock())

    def stop_at_the_first_answer(event):
        if event["type"] == "message_end" and event["message"]["role"] == "assistant":
            raise RuntimeError("over budget")

    bot = Agent(ScriptedClient([tool_call("list_files", path="."), reply("never")]),
                "scripted-demo", on_event=fan_out(tracer, stop_at_the_first_answer))
    with pytest.raises(RuntimeError):
        bot.chat("look")
    run = nb.load_trace(tracer.paths[0])
    assert [r["type"] for r in run][-2:] == ["message_end", "agent_end"]  # the answer is there
    assert run[-2]["message"]["tool_calls"][0]["id"] == "call_1"
    assert run[-1]["error"] == "RuntimeError: over budget"
    assert nb.trace_problems(run) == ["tool calls ['call_1'] but tool results []"]


def unescaped(text: str, times: int = 4) -> list[str]:
    """text, then text with its backslash escapes decoded once, twice...: all that a reader of
    the trace can get back. Python's escapes include JSON's, so this undoes repr and JSON."""
    found = [text]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "\s" is no escape: kept as it is
        for _ in range(times):
            raw = text.encode("latin-1", "backslashreplace")
            text = codecs.decode(raw, "unicode_escape", "replace")
            found.append(text)
    return found


APOSTROPHE = "o'brien\\pw-2024"  # fake: a quote and a backslash, but no double quote


def test_a_secret_in_a_tool_error_is_redacted_however_the_error_quoted_it(
        project, tmp_path, monkeypatch):
    monkeypatch.setenv("DB_PASSWORD", QUOTED)
    monkeypatch.setenv("LDAP_PASSWORD", APOSTROPHE)
    settings = {"user": "app"}

    def lookup(key: str) -> dict:  # a KeyError's message is the repr of the key
        return {"value": settings[QUOTED if key == "db" else APOSTROPHE]}

    def parse(line: str) -> dict:  # repr of a line holding both kinds of quote
        raise ValueError(f"cannot parse {f'password = {chr(34)}{APOSTROPHE}{chr(34)}'!r}")

    def retry(times: str) -> dict:  # an error wrapped in another: repr of a repr
        try:
            raise ValueError(f"bad password {QUOTED!r} for {APOSTROPHE!r}")
        except ValueError as exc:
            raise RuntimeError(f"gave up after {times} tries: {exc!r}") from None

    tools = [agent.schema(f, "a tool that fails", **{p: "text"}) for f, p in
             [(lookup, "key"), (parse, "line"), (retry, "times")]]
    registry = {"lookup": lookup, "parse": parse, "retry": retry}
    bot, tracer = traced([[tool_call("lookup", key="db"), tool_call("lookup", key="ldap"),
                           tool_call("parse", line="x"), tool_call("retry", times="3")],
                          reply("all failed")], tmp_path / "traces", tools=tools,
                         registry=registry)
    bot.chat("try them")
    errors = [m["content"] for m in bot.messages if m["role"] == "tool"]
    assert QUOTED not in "".join(errors) and APOSTROPHE not in "".join(errors)  # escaped there

    text = tracer.paths[0].read_text(encoding="utf-8")
    for secret in (QUOTED, APOSTROPHE):
        readable = [n for n, decoded in enumerate(unescaped(text)) if secret in decoded]
        assert readable == [], f"{secret!r} is in the trace, escaped {readable[0]} times"
    results = [r["result"] for r in nb.load_trace(tracer.paths[0])
               if r["type"] == "tool_execution_end"]
    assert [json.loads(result)["error"] for result in results] == [
        "lookup: '[redacted DB_PASSWORD]'", "lookup: \"[redacted LDAP_PASSWORD]\"",
        "parse: cannot parse 'password = \"[redacted LDAP_PASSWORD]\"'",
        "retry: gave up after 3 tries: ValueError('bad password \\'[redacted DB_PASSWORD]\\' "
        "for \"[redacted LDAP_PASSWORD]\"')"]


def test_two_tracers_starting_at_once_on_one_folder_never_share_a_file(tmp_path):
    both_chose = threading.Barrier(2, timeout=10)

    class Secrets(dict):
        """No secrets, but the first look at them waits for the other tracer: a tracer reads
        its secrets after it has chosen its file and before it writes the first line."""
        waited = False

        def items(self):
            if not self.waited:
                self.waited = True
                both_chose.wait()
            return super().items()

    tracers = [nb.Tracer(tmp_path / "traces", clock=FakeClock(), secrets=Secrets())
               for _ in range(2)]
    threads = [threading.Thread(target=tracer, args=({"type": "agent_start", "model": f"m{n}"},))
               for n, tracer in enumerate(tracers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert not both_chose.broken
    chosen = [tracer.paths[0] for tracer in tracers]
    assert sorted(path.name for path in chosen) == ["run-001.jsonl", "run-002.jsonl"]
    for n, path in enumerate(chosen):
        assert [r["model"] for r in nb.load_trace(path)] == [f"m{n}"]  # each run alone


# --- a trace cut off by a crash ------------------------------------------------------------
# SIGKILL in the middle of a write larger than the buffer, a full disk or Ctrl-C leave a line
# cut short; a power cut can leave the end of a file as zero bytes. These are the runs you most
# want to read, so the loader skips such a line, says which one, and never changes the file.

UNREADABLE = "unreadable_line"


def torn_message(line: int) -> str:
    return f"line {line} is not JSON (torn by a crash?)"


def traced_files(tmp_path) -> list[Path]:
    """One run with a tool call, traced by the lesson's Tracer and by agent.py's trace_to."""
    on_event, files = both_traces(tmp_path)
    Agent(ScriptedClient([tool_call("read_file", path="notes.txt"), reply("Milk, für später.")]),
          "scripted-demo", on_event=on_event).chat("What does notes.txt say?")
    return files()


WRITERS = ["Tracer", "trace_to"]


@pytest.mark.parametrize("writer", WRITERS)
def test_a_trace_whose_last_line_was_torn_loads_and_says_which_line(
        project, tmp_path, monkeypatch, writer):
    path = traced_files(tmp_path)[WRITERS.index(writer)]
    whole = nb.load_trace(path)
    data = path.read_bytes()
    path.write_bytes(data[:-30])  # the crash came in the middle of writing agent_end
    last = data.count(b"\n")

    run = nb.load_trace(path)
    assert path.read_bytes() == data[:-30]  # read, never rewritten
    assert run[:-1] == whole[:-1]  # every whole line is there...
    assert {k: run[-1][k] for k in ("type", "line")} == {"type": UNREADABLE, "line": last}
    assert run[-1]["time"] == whole[-2]["time"]  # ...and the torn one, at the last time known
    assert nb.trace_problems(run) == [torn_message(last), "the trace does not end with agent_end"]
    text = nb.summary(run)
    assert "run 1 (scripted-demo): unfinished, turns: 2" in text
    assert f"  skipped: {torn_message(last)}" in text
    assert nb.totals(run)["wall_time"] == pytest.approx(whole[-2]["time"] - whole[0]["time"])
    never_closed = [(s["kind"], s["end"], s["error"]) for s in nb.spans(run) if not s["closing"]]
    assert never_closed == [("run", whole[-2]["time"], True)]  # unfinished, as far as we know
    monkeypatch.chdir(make_project(tmp_path / "replay"))  # what was said is all there: it replays
    assert nb.history_differences(run, nb.replay(run).messages) == []


def line_holding(lines: list[bytes], *parts: bytes) -> int:
    return next(i for i, line in enumerate(lines) if all(part in line for part in parts))


@pytest.mark.parametrize("cut", ["in the middle of the line", "inside a UTF-8 character"])
def test_a_torn_line_in_the_middle_is_skipped_and_every_line_after_it_read(
        project, tmp_path, cut):
    path = traced_files(tmp_path)[0]
    whole = nb.load_trace(path)
    lines = path.read_bytes().split(b"\n")[:-1]
    if cut == "in the middle of the line":  # the tool's result, on its way back to the model
        n = line_holding(lines, b'"message_end"', b'"role": "tool"')
        lines[n] = lines[n][:len(lines[n]) // 2]
        after = ["tool calls ['call_1'] but tool results []"]
    else:  # the model's answer, cut after the first byte of the two that make "ü"
        n = line_holding(lines, b'"message_end"', "für".encode())
        lines[n] = lines[n][:lines[n].index("ü".encode()) + 1]
        after = []
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(data)

    run = nb.load_trace(path)
    assert path.read_bytes() == data
    assert run[:n] == whole[:n] and run[n + 1:] == whole[n + 1:]
    assert (run[n]["type"], run[n]["line"], run[n]["turn"]) == (UNREADABLE, n + 1, whole[n]["turn"])
    assert nb.trace_problems(run) == [torn_message(n + 1), *after]
    assert run[-1]["stop_reason"] == "done" and nb.totals(run)["stop_reason"] == "done"


def test_a_zero_filled_tail_is_reported_not_raised(project, tmp_path):
    path = traced_files(tmp_path)[0]
    whole = nb.load_trace(path)
    data = path.read_bytes()
    lines = data.split(b"\n")[:-1]
    kept = b"".join(line + b"\n" for line in lines[:-3])
    zeros = "NUL bytes, not JSON (a crash before it reached the disk?)"

    # A power cut: the file's length was saved, its last lines' data never was.
    path.write_bytes(kept + bytes(len(data) - len(kept)))
    run = nb.load_trace(path)
    assert run[:-1] == whole[:-3] and run[-1]["type"] == UNREADABLE
    assert nb.trace_problems(run) == [f"line {len(lines) - 2} is {zeros}",
                                      "the trace does not end with agent_end"]
    # The zeros began in the middle of a line: that line is torn.
    path.write_bytes(data[:-100] + bytes(100))
    assert nb.trace_problems(nb.load_trace(path))[0] == torn_message(len(lines))
    # Nothing of the run reached the disk.
    path.write_bytes(bytes(len(data)))
    run = nb.load_trace(path)
    assert [(r["type"], r["line"]) for r in run] == [(UNREADABLE, 1)]
    assert nb.trace_problems(run) == [f"line 1 is {zeros}", "the trace does not begin with "
                                      "agent_start", "the trace does not end with agent_end"]
    assert nb.summary(run).startswith("run 1 (None): unfinished, turns: 0, wall time: 0.00 s")
    assert path.read_bytes() == bytes(len(data))


def test_a_line_that_is_json_but_no_trace_event_is_reported(tmp_path):
    path = tmp_path / "odd.jsonl"
    path.write_text('{"time": 1.0, "type": "agent_start", "model": "m"}\n[1, 2]\n'
                    '{"type": "turn_start"}\n{"time": 2.0, "type": "agent_end"}\n')
    run = nb.load_trace(path)
    assert [r["type"] for r in run] == ["agent_start", UNREADABLE, UNREADABLE, "agent_end"]
    assert nb.trace_problems(run)[:2] == [
        "line 2 is JSON but not a trace event (it needs a time and a type)",
        "line 3 is JSON but not a trace event (it needs a time and a type)"]
    assert [r["time"] for r in run] == [1.0, 1.0, 1.0, 2.0]  # the time of the line before

    path.write_text('{"time": 1.0, "type": "agent_st\n{"time": 2.0, "type": "turn_start", '
                    '"turn": 1}\n')  # torn at the very start: the time of the line after it
    assert [(r["type"], r["time"], r["turn"]) for r in nb.load_trace(path)] == [
        (UNREADABLE, 2.0, 0), ("turn_start", 2.0, 1)]


@pytest.mark.parametrize("writer", WRITERS)
def test_a_line_written_after_a_torn_one_starts_on_a_line_of_its_own(project, tmp_path, writer):
    """Ctrl-C in the middle of a write tears that line, and the run goes on to write its
    agent_end. Each writer ends the torn line first, so only that line is lost."""
    tracer = nb.Tracer(tmp_path / "traces", clock=FakeClock())
    plain = tmp_path / "plain.jsonl"
    handler = tracer if writer == "Tracer" else trace_to(str(plain))

    def path():
        return tracer.paths[0] if writer == "Tracer" else plain

    def tear_then_write(event):
        if event["type"] == "tool_execution_end":  # as if the write before it was cut short
            with open(path(), "ab") as file:
                file.write(b'{"time": 1767225600.0, "type": "tool_execution_st')
        handler(event)

    bot = Agent(ScriptedClient([tool_call("read_file", path="notes.txt"), reply("milk")]),
                "scripted-demo", on_event=tear_then_write)
    bot.chat("read the note")
    run = nb.load_trace(path())
    torn = [r["line"] for r in run if r["type"] == UNREADABLE]
    assert len(torn) == 1 and nb.trace_problems(run) == [torn_message(torn[0])]
    events = [r for r in run if r["type"] != UNREADABLE]
    assert nb.recorded_history(events) == bot.messages[1:]  # every event is there, whole
    assert events[-1]["type"] == "agent_end" and events[-1]["stop_reason"] == "done"


@pytest.mark.slow
def test_agent_py_appends_a_new_run_after_a_torn_last_line_on_a_line_of_its_own(
        cli_trace, tmp_path):
    path = tmp_path / "demo.jsonl"
    data = cli_trace.read_bytes()
    path.write_bytes(data[:-30])  # the first command was killed while writing its last line
    done = subprocess.run([sys.executable, "agent.py", "--demo", "--trace", str(path), "-q"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert path.read_bytes().startswith(data[:-30] + b"\n")  # the torn line kept as it was
    runs = nb.split_runs(nb.load_trace(path))
    assert len(runs) == 8  # four runs, then the second command's four
    assert [nb.trace_problems(run) for run in runs[3:5]] == [
        [torn_message(data.count(b"\n")), "the trace does not end with agent_end"], []]
    assert all(nb.trace_problems(run) == [] for run in runs[:3] + runs[4:])
    assert "skipped: " + torn_message(data.count(b"\n")) in nb.summary(nb.load_trace(path))


# --- record, then replay -----------------------------------------------------------------


def session_script():
    """Three runs on one agent: rich messages, a model call that fails, a truncated call."""
    return [
        # run 1: text beside calls, reasoning_content, parallel calls, malformed arguments
        step(tool_call("list_files", path="."), content="Looking first.",
             reasoning_content="Start with the folder."),
        [tool_call("read_file", path="notes.txt"), tool_call("read_file", path="big.log")],
        tool_call("read_file", raw_arguments="{'path': 'notes.txt'}"),
        tool_call("edit_file", path="todo.txt", old_str="", new_str="buy milk\n"),
        reply("Wrote todo.txt.", reasoning_content="Done."),
        # run 2: the model call of turn 2 fails
        tool_call("read_file", path="todo.txt"),
        fails_with(ConnectionError("connection reset by peer")),
        # run 3: a response cut off by the length limit (its call is not run), then an answer
        step(tool_call("edit_file", raw_arguments='{"path": "todo.txt", "old_s'),
             finish_reason="length"),
        reply("Sorry, my output was cut off.", finish_reason="stop"),
    ]


TASKS = ["Note what to buy.", "Read it back.", "Change it."]


def record_session(folder: Path, traces: Path):
    bot, tracer = traced(session_script(), traces)
    for task in TASKS:
        try:
            bot.chat(task)
        except ConnectionError:
            pass
    return bot, [r for path in tracer.paths for r in nb.load_trace(path)]


def test_record_then_replay_gives_the_same_history(project, tmp_path, monkeypatch):
    bot, records = record_session(project, tmp_path / "traces")
    assert [run[-1]["stop_reason"] for run in nb.split_runs(records)] == ["done", "error", "done"]

    script = nb.replay_script(records)
    assert script[0]["extras"]["reasoning_content"] == "Start with the folder."
    assert script[0]["content"] == "Looking first."
    assert script[2]["extras"]["tool_calls"][0]["function"]["arguments"] == \
        "{'path': 'notes.txt'}"  # the exact raw arguments, malformed as they were
    assert script[7]["finish_reason"] == "length"
    assert callable(script[6])  # where the recorded call failed, the replay fails too
    assert nb.recorded_tasks(records) == TASKS

    monkeypatch.chdir(make_project(tmp_path / "replay"))
    again = nb.replay(records)
    assert again.messages == bot.messages
    assert again.client.requests == bot.client.requests  # every request, byte for byte
    assert nb.history_differences(records, again.messages) == []
    assert (tmp_path / "replay" / "todo.txt").read_text() == "buy milk\n"


def test_a_replay_notices_when_the_host_changed(project, tmp_path, monkeypatch):
    bot, records = record_session(project, tmp_path / "traces")
    monkeypatch.chdir(make_project(tmp_path / "replay"))
    changed = nb.replay(records, max_tool_output=5_000)  # someone lowered the bound
    differences = nb.history_differences(records, changed.messages)
    assert len(differences) == 1
    assert differences[0].startswith("message 6 (tool): recorded 20,000 characters")

    monkeypatch.chdir(make_project(tmp_path / "replay-2"))
    hidden = {**TOOL_REGISTRY, "list_files": lambda path=".": {"path": path, "files": []}}
    differences = nb.history_differences(records, nb.replay(records, registry=hidden).messages)
    assert len(differences) == 1 and differences[0].startswith("message 3 (tool): recorded")
    assert differences[0].endswith('now "{\\"path\\": \\".\\", \\"files\\": []}"')


def test_replay_of_a_run_that_hit_max_turns(project, tmp_path, monkeypatch):
    bot, tracer = traced([never_done] * 10, tmp_path / "traces", max_turns=2)
    bot.chat("tidy up")
    records = nb.load_trace(tracer.paths[0])
    monkeypatch.chdir(make_project(tmp_path / "replay"))
    again = nb.replay(records)  # max_turns is taken from the trace
    assert again.stop_reason == "max_turns" and again.messages == bot.messages


# --- the command line's trace, jq, the chart, OpenTelemetry -----------------------------------


@pytest.fixture(scope="module")
def cli_trace(tmp_path_factory):
    """The trace of `python agent.py --demo --trace FILE`: four runs in one file."""
    path = tmp_path_factory.mktemp("cli") / "demo.jsonl"
    done = subprocess.run([sys.executable, "agent.py", "--demo", "--trace", str(path), "-q"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return path


def test_the_cli_trace_is_read_by_the_loader_and_summary(cli_trace, tmp_path, monkeypatch):
    records = nb.load_trace(cli_trace)
    runs = nb.split_runs(records)
    assert len(runs) == 4
    assert all(nb.trace_problems(run) == [] for run in runs)
    assert all(isinstance(r["turn"], int) for r in records)  # filled in where agent.py has none
    text = nb.summary(records)
    assert [line.split(":")[0] for line in text.splitlines() if line.startswith("run")] == [
        "run 1 (scripted-demo)", "run 2 (scripted-demo)", "run 3 (scripted-demo)",
        "run 4 (scripted-demo)"]
    assert text.splitlines()[-1].startswith("total: 4 runs, turns: 9, tool calls: 5 (1 failed)")
    assert "cost: $" in text
    # and it replays offline: the demo starts in an empty folder
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    assert nb.history_differences(records, nb.replay(records).messages) == []


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_jq_reads_the_trace(project, tmp_path):
    bot, tracer = traced([tool_call("list_files", path="."), reply("ok")], tmp_path / "traces")
    bot.chat("look")
    path = str(tracer.paths[0])
    query = 'select(.type == "tool_execution_end") | {turn, name, is_error, duration}'
    out = subprocess.run(["jq", "-c", query, path], capture_output=True, text=True, timeout=10)
    assert [json.loads(line) for line in out.stdout.splitlines()] == [
        {"turn": 1, "name": "list_files", "is_error": False, "duration": 0.0}]
    out = subprocess.run(["jq", "-s", "map(.usage.prompt_tokens // 0) | add", path],
                         capture_output=True, text=True, timeout=10)
    assert int(out.stdout) == nb.totals(nb.load_trace(path))["prompt_tokens"]


def test_the_timeline_chart_draws_every_model_call_and_tool_where_it_happened(
        project, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgba
    from props.trace_views import plot_timeline  # the chart is course code, not the tracer's

    def bars(ax):
        """Every bar of the lanes chart as (lane, start, width, colour)."""
        found = []
        for collection in ax.collections:
            (x0, y0), (x1, y1) = collection.get_paths()[0].vertices[[0, 2]]
            lane = {(1.6, 2.4): "model", (0.6, 1.4): "tool"}[(round(y0, 6), round(y1, 6))]
            found.append((lane, round(x0, 6), round(x1 - x0, 6),
                          tuple(collection.get_facecolor()[0])))
        return sorted(found, key=lambda bar: bar[1])

    model, tool, failed = to_rgba("tab:blue"), to_rgba("tab:green"), to_rgba("tab:red")
    clock = FakeClock()

    def server_down(messages):
        clock.advance(30)
        raise TimeoutError("no answer")

    tracer = nb.Tracer(tmp_path / "traces", clock=clock)
    client = with_latency(ScriptedClient([
        [tool_call("list_files", path="."), tool_call("read_file", path="missing.txt")],
        reply("ok"), tool_call("list_files", path="."), server_down,
    ]), clock, base=0.5, per_prompt_token=0, per_output_token=0)  # every model call: 0.5 s
    bot = Agent(client, "scripted-demo", on_event=tracer,
                registry=with_tool_time(TOOL_REGISTRY, clock, seconds=0.25))
    bot.chat("look")
    with pytest.raises(TimeoutError):
        bot.chat("look again")

    # run 1: a model call, two tools one after the other (the second fails), a model call
    run = nb.load_trace(tracer.paths[0])
    fig = plot_timeline(run)
    lanes, tokens = fig.axes
    assert bars(lanes) == [("model", 0.0, 0.5, model), ("tool", 0.5, 0.25, tool),
                           ("tool", 0.75, 0.25, failed), ("model", 1.0, 0.5, model)]
    assert [t.get_text() for t in lanes.texts] == ["1", "list_files", "read_file", "2"]
    prompts = [row["prompt_tokens"] for row in nb.turn_usage(run)]
    assert [(p.get_x(), p.get_width(), p.get_height()) for p in tokens.patches] == [
        (0.0, 0.5, prompts[0]), (1.0, 0.5, prompts[1])]  # each prompt where it was sent
    assert [line.get_xdata()[0] for line in lanes.lines] == [0.0, 1.0]  # the turns begin
    plt.close(fig)

    # run 2: the model call that never answered is red, and lasts until the run ended
    fig = plot_timeline(nb.load_trace(tracer.paths[1]))
    lanes, tokens = fig.axes
    assert bars(lanes) == [("model", 0.0, 0.5, model), ("tool", 0.5, 0.25, tool),
                           ("model", 0.75, 30.0, failed)]
    assert tuple(tokens.patches[1].get_facecolor()) == failed
    assert "error" in lanes.get_title()
    plt.close(fig)


def test_opentelemetry_spans_use_the_genai_names_and_kinds(project, tmp_path):
    bot, tracer = traced([tool_call("read_file", path="missing.txt"), reply("no such file")],
                         tmp_path / "traces")
    bot.chat("read missing.txt")
    run = nb.load_trace(tracer.paths[0])
    spans = nb.otel_spans(run)
    assert [(s["name"], s["kind"]) for s in spans] == [
        ("invoke_agent agent-from-zero", "INTERNAL"), ("chat scripted-demo", "CLIENT"),
        ("execute_tool read_file", "INTERNAL"), ("chat scripted-demo", "CLIENT")]
    assert spans[0]["attributes"] == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "openai",
        "gen_ai.agent.name": "agent-from-zero", "gen_ai.request.model": "scripted-demo"}
    assert spans[2]["attributes"] == {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file",
        "gen_ai.tool.call.id": "call_1", "gen_ai.tool.type": "function",
        "error.type": "tool_error"}
    usage = [r["usage"] for r in run if r.get("usage")]
    assert [s["attributes"] for s in spans if s["kind"] == "CLIENT"] == [
        {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
         "gen_ai.request.model": "scripted-demo",
         "gen_ai.usage.input_tokens": u["prompt_tokens"],
         "gen_ai.usage.output_tokens": u["completion_tokens"],
         "gen_ai.response.finish_reasons": [reason]}
        for u, reason in zip(usage, ["tool_calls", "stop"], strict=True)]
    deepseek = nb.otel_spans(run, provider="deepseek")
    assert {s["attributes"].get("gen_ai.provider.name") for s in deepseek} == {"deepseek", None}


def failing_run(folder):
    """A traced run: a model call, a tool that fails, a model call that times out (30 s)."""
    clock = FakeClock()

    def timeout(messages):
        clock.advance(30)
        raise TimeoutError("no answer in 30 s")

    tracer = nb.Tracer(folder, clock=clock)
    client = with_latency(ScriptedClient([tool_call("read_file", path="missing.txt"),
                                             timeout]), clock, base=0.5, per_prompt_token=0,
                             per_output_token=0)
    bot = Agent(client, "scripted-demo", on_event=tracer,
                registry=with_tool_time(TOOL_REGISTRY, clock, seconds=0.25))
    with pytest.raises(TimeoutError):
        bot.chat("read missing.txt")
    return nb.load_trace(tracer.paths[0])


def test_opentelemetry_spans_of_a_failed_run(project, tmp_path):
    spans = nb.otel_spans(failing_run(tmp_path / "traces"))
    assert [(s["name"], s["attributes"].get("error.type")) for s in spans] == [
        ("invoke_agent agent-from-zero", "TimeoutError"), ("chat scripted-demo", None),
        ("execute_tool read_file", "tool_error"), ("chat scripted-demo", "TimeoutError")]
    assert "gen_ai.usage.input_tokens" not in spans[3]["attributes"]  # it never answered
    assert spans[3]["end"] - spans[3]["start"] == pytest.approx(30)


def test_opentelemetry_export_with_the_sdk(project, tmp_path):
    """Runs only where the optional opentelemetry-sdk is installed."""
    pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind, StatusCode

    run = failing_run(tmp_path / "traces")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    nb.to_opentelemetry(run, provider.get_tracer("test"))

    exported = sorted(exporter.get_finished_spans(),  # the parent first, then by time
                      key=lambda span: (span.parent is not None, span.start_time))
    expected = nb.otel_spans(run)
    assert [(s.name, s.kind) for s in exported] == [
        ("invoke_agent agent-from-zero", SpanKind.INTERNAL),
        ("chat scripted-demo", SpanKind.CLIENT),
        ("execute_tool read_file", SpanKind.INTERNAL),
        ("chat scripted-demo", SpanKind.CLIENT)]
    root, *children = exported
    assert root.parent is None
    assert all(c.parent.span_id == root.context.span_id for c in children)
    assert {s.context.trace_id for s in exported} == {root.context.trace_id}
    t0 = root.start_time
    assert [((s.start_time - t0) / 1e9, (s.end_time - t0) / 1e9) for s in exported] == [
        pytest.approx((0, 30.75), abs=1e-6), pytest.approx((0, 0.5), abs=1e-6),
        pytest.approx((0.5, 0.75), abs=1e-6), pytest.approx((0.75, 30.75), abs=1e-6)]
    assert [{k: list(v) if isinstance(v, tuple) else v for k, v in s.attributes.items()}
            for s in exported] == [e["attributes"] for e in expected]  # the SDK keeps tuples
    assert [s.status.status_code for s in exported] == [
        StatusCode.ERROR, StatusCode.UNSET, StatusCode.ERROR, StatusCode.ERROR]
    assert root.attributes["gen_ai.provider.name"] == "openai"


# --- take it with you ----------------------------------------------------------------------

BUILDER = """
import sys

import agent
import tracing

tracer = tracing.Tracer("traces")
bot = agent.Agent(agent.ScriptedClient([agent.tool_call("list_files", path="."),
                                        agent.reply("two files")]),
                  "scripted-demo", on_event=agent.fan_out(agent.print_event, tracer))
bot.chat("What is here?")
run = tracing.load_trace(tracer.paths[-1])
assert tracing.trace_problems(run) == [], tracing.trace_problems(run)
print(tracing.summary(run))
print(tracing.__file__, agent.__file__, "course" in sys.modules)
"""


@pytest.mark.slow
def test_the_exported_tracer_imports_and_runs_beside_agent_py(tmp_path):
    """What a builder does: export the lesson, put agent.py beside it, trace a run."""
    module = tmp_path / "tracing.py"
    done = subprocess.run([sys.executable, "notebooks/course.py", "export", "07-tracing",
                           "-o", str(module)], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    source = module.read_text(encoding="utf-8")
    assert source.startswith('"""Lesson 07: Tracing') and "import course" not in source
    shutil.copy(ROOT / "agent.py", tmp_path / "agent.py")
    environment = {"PATH": os.environ.get("PATH", ""), "TMPDIR": str(tmp_path)}  # no course
    done = subprocess.run([sys.executable, "-c", BUILDER], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "tool call:   list_files" in done.stdout  # print_event got the events...
    assert "run 1 (scripted-demo): done, turns: 2" in done.stdout  # ...and so did the tracer
    assert (tmp_path / "traces" / "run-001.jsonl").is_file()
    assert done.stdout.split()[-3:] == [str(module), str(tmp_path / "agent.py"), "False"]


# --- every figure lesson 07 states about the notebook's run is what the code gives today ------


def test_the_figures_the_lesson_states_are_what_the_notebooks_run_gives(tmp_path):
    """The run of the notebook's "A run worth tracing" (props.nightly_job records it again) and
    the constants behind the lesson's other numbers, against the text of both languages."""
    import inspect

    from props.nightly_job import record_run

    _, tracer, _ = record_run(tmp_path / "traces")
    run = nb.load_trace(tracer.paths[0])
    prompts = [row["prompt_tokens"] for row in nb.turn_usage(run)]
    share = sum(nb.cost("scripted-demo", p, 0) for p in prompts) / nb.totals(run)["cost"]
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(tracer.paths[0].read_bytes()[:-30])  # the notebook's first damaged copy
    first_problem = nb.trace_problems(nb.load_trace(torn))[0]
    for lesson in ("07-tracing.md", f"zh{os.sep}07-tracing.md"):
        text = (ROOT / "lessons" / lesson).read_text(encoding="utf-8")
        for figure in (f"{prompts[-1]:,}", f"{sum(prompts):,}", f"{share:.0%}", "5,000",
                       "20,000", "200", "150", first_problem.split(" (")[0]):
            assert figure in text, f"{lesson} does not say {figure!r}"
    assert len(prompts) == 6  # "the notebook's six-turn run"
    assert (prompts[-1], sum(prompts), f"{share:.0%}") == (6_147, 24_763, "94%")
    assert round(prompts[2] - prompts[1], -3) == 5_000  # "a log of about 5,000 tokens"
    assert agent.MAX_TOOL_OUTPUT == 20_000 and nb.PREVIEW == 200  # 20,000 -> a 200 preview
    assert inspect.signature(agent.one_line).parameters["width"].default == 150
    assert inspect.signature(with_tool_time).parameters["seconds"].default == 0.1  # a tenth
    assert nb.env_secrets({"A_KEY": "1234567"}) == {} and nb.env_secrets({"A_KEY": "12345678"})
    assert inspect.signature(nb.secret_forms).parameters["layers"].default == 3
    assert first_problem == "line 45 is not JSON (torn by a crash?)"

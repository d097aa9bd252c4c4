"""Lesson 08's text actions, from the notebook's own export cells (`import text_actions`).

The parser form by form; the conversion on the way out; the adapter over a ScriptedClient and
over the REAL openai SDK, whose HTTP layer is a fake server that rejects any request carrying
tools (as a server without tool calling does); finish against plain text; the format-error
cap; a cut-off reply; the repeat warning. After every path, the history is one a strict server
accepts."""

import copy
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import course
import guards
import httpx2
import openai
import pytest
import text_actions
from main_path import main_path_export_cells, main_path_only  # tests/main_path.py
from openai.types.chat import ChatCompletion
from test_loop import assert_history_valid
from text_actions import (
    FORMAT_ERROR,
    FormatError,
    TextActions,
    TextAgent,
    parse_action,
    repeat_warning,
    to_text_messages,
)

import agent
from agent import TOOL_REGISTRY, TOOLS, Agent, ScriptedClient, pairing_problem, reply, tool_call

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("alpha\n", encoding="utf-8")
    return tmp_path


def action(name, **arguments) -> str:
    return json.dumps({"type": "call_tool", "name": name, "arguments": arguments})


def finish(output) -> str:
    return json.dumps({"type": "finish", "output": output})


READ = action("read_file", path="a.txt")


def assert_valid(bot: Agent) -> None:
    """What a strict server accepts, checked two ways."""
    assert pairing_problem(bot.messages) is None
    assert_history_valid(bot.messages)


def text_agent(steps, **options):
    """A TextAgent on a ScriptedClient that records its events: (agent, client, events)."""
    events = []
    client = ScriptedClient(steps)
    bot = TextAgent(client, "scripted", on_event=events.append, **options)
    return bot, client, events


# --- the parser: every accepted form -----------------------------------------------------

ACCEPTED = [  # (id, reply, the action without its notes, a word every note must hold or None)
    ("bare", READ, ("call_tool", "read_file", {"path": "a.txt"}), None),
    ("fence json", f"```json\n{READ}\n```", ("call_tool", "read_file", {"path": "a.txt"}), None),
    ("fence plain", f"```\n{READ}\n```", ("call_tool", "read_file", {"path": "a.txt"}), None),
    ("fence, prose around", f"Sure.\n```json\n{READ}\n```\nDone?",
     ("call_tool", "read_file", {"path": "a.txt"}), None),
    ("prose before", f"I will read it. {READ}", ("call_tool", "read_file", {"path": "a.txt"}),
     None),
    ("prose after", f"{READ}\nThen I summarise.", ("call_tool", "read_file", {"path": "a.txt"}),
     None),
    ("spaces around", f"\n\n   {READ}   \n", ("call_tool", "read_file", {"path": "a.txt"}), None),
    ("two actions", f"{READ}\n{finish('x')}", ("call_tool", "read_file", {"path": "a.txt"}),
     "first"),
    ("arguments a JSON string",
     json.dumps({"type": "call_tool", "name": "read_file", "arguments": '{"path": "a.txt"}'}),
     ("call_tool", "read_file", {"path": "a.txt"}), "string"),
    ("arguments an empty string",
     json.dumps({"type": "call_tool", "name": "list_files", "arguments": ""}),
     ("call_tool", "list_files", {}), "string"),
    ("arguments missing", '{"type": "call_tool", "name": "list_files"}',
     ("call_tool", "list_files", {}), None),
    ("arguments null", '{"type": "call_tool", "name": "list_files", "arguments": null}',
     ("call_tool", "list_files", {}), None),
    ("trailing comma", '{"type": "finish", "output": "ok",}', ("finish", "ok"), "trailing comma"),
    ("trailing commas, nested", '{"type": "call_tool", "name": "f", "arguments": {"a": [1, 2,],},}',
     ("call_tool", "f", {"a": [1, 2]}), "trailing comma"),
    ("a comma inside a string stays",
     '{"type": "finish", "output": "a,}",}', ("finish", "a,}"), "trailing comma"),
    ("braces in prose before", f"I use {{name}} here. {READ}",
     ("call_tool", "read_file", {"path": "a.txt"}), None),
    ("an unclosed brace in prose before", f"It starts with {{ and then: {READ}",
     ("call_tool", "read_file", {"path": "a.txt"}), None),
    ("braces and quotes inside strings",
     '{"type": "finish", "output": "use {x} and } and \\" here"}',
     ("finish", 'use {x} and } and " here'), None),
    ("an object without type before the action", f'{{"a": 1}} {READ}',
     ("call_tool", "read_file", {"path": "a.txt"}), None),
    ("extra keys are ignored", '{"thought": "easy", "type": "finish", "output": "ok"}',
     ("finish", "ok"), None),
    ("an output that is not a string", '{"type": "finish", "output": 42}', ("finish", "42"),
     None),
    ("unicode", finish("你好，Pi！"), ("finish", "你好，Pi！"), None),
]


@pytest.mark.parametrize(("text", "expected", "note"), [c[1:] for c in ACCEPTED],
                         ids=[c[0] for c in ACCEPTED])
def test_the_parser_accepts_every_form_whose_action_is_intact(text, expected, note):
    found = parse_action(text)
    if found["type"] == "call_tool":
        assert (found["type"], found["name"], found["arguments"]) == expected
    else:
        assert (found["type"], found["output"]) == expected
    if note is None:
        assert found["notes"] == []
    else:
        assert found["notes"] and all(note in n for n in found["notes"]), found["notes"]


REFUSED = [  # (id, reply, finish_reason, words the refusal must hold)
    ("empty", "", None, "empty"),
    ("only spaces", "  \n\t ", None, "empty"),
    ("no JSON at all", "The file says alpha.", None, "no JSON object"),
    ("a list", '["read_file", "a.txt"]', None, "a list"),
    ("a list holding an action", f"[{READ}]", None, "a list"),
    ("a fenced list", '```json\n["read_file"]\n```', None, "a list"),
    ("a JSON string", '"read a.txt"', None, "a string"),
    ("a number", "42", None, "a number"),
    ("null", "null", None, "null"),
    ("an unknown type", '{"type": "run", "name": "read_file"}', None, 'unknown action type "run"'),
    ("a type that is not a string", '{"type": 5}', None, "unknown action type 5"),
    ("no type", '{"name": "read_file", "arguments": {}}', None, 'no "type"'),
    ("call_tool without a name", '{"type": "call_tool", "arguments": {}}', None, '"name"'),
    ("an empty name", '{"type": "call_tool", "name": " "}', None, '"name"'),
    ("a name that is not a string", '{"type": "call_tool", "name": 7}', None, '"name"'),
    ("finish without output", '{"type": "finish"}', None, '"output"'),
    ("finish with an empty output", '{"type": "finish", "output": ""}', None, '"output"'),
    ("finish with a null output", '{"type": "finish", "output": null}', None, '"output"'),
    ("arguments a list", '{"type": "call_tool", "name": "f", "arguments": [1]}', None,
     "must be an object, not a list"),
    ("arguments a string that is not JSON",
     '{"type": "call_tool", "name": "f", "arguments": "path=a.txt"}', None, "not JSON"),
    ("arguments a string holding a list",
     '{"type": "call_tool", "name": "f", "arguments": "[1]"}', None, "not a list"),
    ("single quotes", "{'type': 'finish', 'output': 'ok'}", None, "single quotes"),
    ("one single-quoted value", '{"type": "finish", "output": \'ok\'}', None, "single quotes"),
    ("single quotes and a trailing comma", "{'type': 'finish', 'output': 'ok',}", None,
     "single quotes"),
    ("other broken JSON", '{"type": "finish" "output": "ok"}', None, "not valid JSON"),
    ("two commas", '{"type": "finish", "output": "ok",,}', None, "not valid JSON"),
    ("never closed", READ[:-1], None, "never closed"),
    ("cut off mid-action", READ[:30], "length", "cut off"),
    ("cut off, though it parses", f"{READ}\nThen I", "length", "cut off"),
    ("a cut-off finish", finish("the whole answer"), "length", "cut off"),
]


@pytest.mark.parametrize(("text", "finish_reason", "words"), [c[1:] for c in REFUSED],
                         ids=[c[0] for c in REFUSED])
def test_the_parser_refuses_with_words_the_model_can_act_on(text, finish_reason, words):
    with pytest.raises(FormatError) as refused:
        parse_action(text, finish_reason)
    assert words in str(refused.value)
    assert isinstance(refused.value, ValueError)


HALF_EDIT = ('{"type": "call_tool", "name": "edit_file", "arguments": {"path": "a.py", '
             '"meta": {"type": "finish", "output": "x"}, "new_str": "def f(')


@pytest.mark.parametrize("text", [
    HALF_EDIT,
    HALF_EDIT.replace('"def f(', '"def f(\n'),  # a raw newline in the string, too
    f'{{"type": "call_tool", "name": "edit_file", "arguments": {{"inner": {READ}, "x": "',
    f"Here it is: {{ and then {HALF_EDIT}",  # a lone brace in prose before it
    f"{{ \"type\": \"call_tool\", \"args\": {finish('x')}",  # space before the key
    f"{{'type': 'call_tool', 'arguments': {finish('x')}",  # single-quoted half action
    f"{READ}\n{HALF_EDIT}",  # a whole action before it: the reply is still broken
])
def test_objects_nested_in_half_an_action_are_not_actions(text):
    with pytest.raises(FormatError, match="never closed") as refused:
        parse_action(text)
    assert "nothing in your reply was run" in str(refused.value)


@pytest.mark.parametrize("text", [
    f'The format is {{"type": "finish", "output": "..."}}. So: {READ}',
    f"{finish('done')}\n{READ}",
    f"{finish('a')} {finish('b')}",
    f"```json\n{finish('a')}\n```\n```json\n{READ}\n```",
])
def test_a_finish_with_another_action_after_it_is_refused_not_taken(text):
    with pytest.raises(FormatError, match="a finish ends the task"):
        parse_action(text)


UNTYPED_EDIT = ('{"name": "edit_file", "arguments": {"path": "a.txt", "old_str": "alpha", '
                '"new_str": "beta"}}')  # the OpenAI style, no "type": exercise 1's form


@pytest.mark.parametrize("text", [
    f"{UNTYPED_EDIT} {finish('Changed it.')}",
    f"{finish('Changed it.')} {UNTYPED_EDIT}",
    f"Editing: {UNTYPED_EDIT}\n```json\n{finish('Changed it.')}\n```",
])
def test_a_finish_with_an_object_without_type_is_refused_like_one_with_another_object(text):
    with pytest.raises(FormatError, match="a finish and another object with it") as refused:
        parse_action(text)
    assert "send it alone, or send only the action you want run" in str(refused.value)


def test_a_call_with_a_finish_after_it_runs_and_the_note_reaches_the_model():
    found = parse_action(f"{READ}\n{finish('guessed')}")
    assert (found["type"], found["name"]) == ("call_tool", "read_file")
    assert "only the first was used" in found["notes"][0]


def test_a_model_that_quotes_the_format_before_its_call_is_corrected_not_finished():
    quoted = f'The format is {{"type": "finish", "output": "..."}}. So: {READ}'
    bot, client, _ = text_agent([reply(quoted), reply(READ), reply(finish("alpha"))])
    assert bot.chat("what is in a.txt?") == "alpha"
    assert bot.stop_reason == "done" and len(client.requests) == 3
    assert "a finish ends the task" in bot.messages[3]["content"]  # the correction
    assert json.loads(bot.messages[5]["content"]) == {"path": "a.txt", "content": "alpha\n"}
    assert_valid(bot)


@pytest.mark.parametrize(("text", "words"), [
    ('{"type": "finish", "output": "a", "output": "b"}', 'the key "output" twice'),
    ('{"type": "call_tool", "name": "read_file", "arguments": {"path": "a.txt", '
     '"path": "b.txt"}}', 'the key "path" twice'),
    ('Here: {"type": "finish", "output": "a", "output": "b"} ok?', 'the key "output" twice'),
    ('{"type": "finish", "output": "a", "output": "b",}', 'the key "output" twice'),
    (json.dumps({"type": "call_tool", "name": "read_file",
                 "arguments": '{"path": "a.txt", "path": "b.txt"}'}), 'the key "path" twice'),
    ('{"type": "call_tool", "name": "f", "arguments": {"n": NaN}}', "NaN"),
    ('{"type": "call_tool", "name": "f", "arguments": {"n": Infinity}}', "Infinity"),
    ('I send: {"type": "call_tool", "name": "f", "arguments": {"n": -Infinity}}', "-Infinity"),
    ('{"type": "finish", "output": NaN}', "NaN"),
])
def test_a_key_given_twice_and_nan_or_infinity_are_refused_not_guessed(text, words):
    with pytest.raises(FormatError) as refused:
        parse_action(text)
    assert words in str(refused.value)
    assert "send" in str(refused.value)  # what to do instead


def test_nan_and_a_repeated_key_inside_strings_or_in_separate_objects_are_fine():
    assert parse_action('{"type": "finish", "output": "NaN or Infinity"}')["output"] == \
        "NaN or Infinity"
    found = parse_action('{"type": "call_tool", "name": "f", "arguments": {"a": {"x": 1}, '
                         '"b": {"x": 2}}}')
    assert found["arguments"] == {"a": {"x": 1}, "b": {"x": 2}}


def test_a_reply_of_nothing_but_braces_is_refused_quickly_not_by_a_crash():
    with pytest.raises(FormatError, match="never closed"):
        parse_action("{" * 100_000)
    with pytest.raises(FormatError):
        parse_action("{}" * 50_000)


# --- the way out: tools into the prompt, the history into plain messages --------------------

NATIVE = [  # a history made with native tool calling: two parallel calls, then an answer
    {"role": "system", "content": "You are a test."},
    {"role": "user", "content": "read two"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}},
        {"id": "c2", "type": "function",
         "function": {"name": "read_file", "arguments": "{bad json"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": '{"content": "alpha"}'},
    {"role": "tool", "tool_call_id": "c2", "content": '{"error": "bad"}'},
    {"role": "assistant", "content": "alpha, and an error"},
    {"role": "user", "content": "thanks"},
]


def test_the_system_prompt_carries_every_tool_the_format_and_an_example():
    system = to_text_messages(NATIVE, TOOLS)[0]
    assert system["role"] == "system" and system["content"].startswith("You are a test.")
    for tool in TOOLS:
        function = tool["function"]
        assert f"{function['name']}: {function['description']}" in system["content"]
        for name in function["parameters"]["properties"]:
            assert f"  {name} (string, " in system["content"]
    assert "path (string, optional)" in system["content"]  # list_files' default
    assert '{"type": "call_tool", "name": "<tool name>"' in system["content"]
    assert '{"type": "finish", "output":' in system["content"]
    assert text_actions.EXAMPLE in system["content"]


def test_native_calls_become_actions_and_tool_messages_observations_that_name_their_call():
    sent = to_text_messages(NATIVE, TOOLS)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user", "assistant",
                                        "user"]
    assert sent[2]["content"].splitlines() == [
        '{"type": "call_tool", "name": "read_file", "arguments": {"path": "a.txt"}}',
        '{"type": "call_tool", "name": "read_file", "arguments": "{bad json"}']
    assert sent[3]["content"] == ('Observation from c1 (read_file):\n{"content": "alpha"}\n\n'
                                  'Observation from c2 (read_file):\n{"error": "bad"}')
    assert sent[4]["content"] == "alpha, and an error"
    assert all(set(m) == {"role", "content"} for m in sent)


def test_the_conversion_changes_nothing_in_the_history_and_is_the_same_every_time():
    before = copy.deepcopy(NATIVE)
    first = to_text_messages(NATIVE, TOOLS)
    assert NATIVE == before
    assert to_text_messages(NATIVE, TOOLS) == first
    # a longer history begins exactly as the shorter one did (what prompt caching needs)
    shorter = to_text_messages(NATIVE[:5], TOOLS)
    assert first[:len(shorter)] == shorter


def test_a_run_of_one_role_is_joined_so_roles_take_turns():
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "one"},
               {"role": "assistant", "content": "", "tool_calls": [
                   {"id": "c1", "type": "function",
                    "function": {"name": "list_files", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "[]"},
               {"role": "user", "content": "two"}]  # after max_turns: tool, then user
    sent = to_text_messages(history, TOOLS)
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[-1]["content"] == "Observation from c1 (list_files):\n[]\n\ntwo"


def test_a_history_without_a_system_message_gets_one_with_the_tools():
    sent = to_text_messages([{"role": "user", "content": "hi"}], TOOLS)
    assert sent[0]["role"] == "system" and "# Tools" in sent[0]["content"]
    assert sent[1] == {"role": "user", "content": "hi"}


def test_the_example_fits_the_tools_offered():
    def lookup(word: str) -> dict:
        return {"word": word}

    tools = [agent.schema(lookup, "Look a word up.", word="The word.")]
    prompt = text_actions.action_prompt(tools)
    assert '{"type": "call_tool", "name": "lookup", "arguments": {"word": "..."}}' in prompt
    assert "read_file" not in prompt
    assert "you can only finish" in text_actions.action_prompt([])
    assert "read_file" not in text_actions.action_prompt([])
    assert text_actions.action_prompt(TOOLS, example="# My example").endswith("# My example")


# --- the adapter over a ScriptedClient ---------------------------------------------------


def create(steps, messages=None, **request):
    client = ScriptedClient(steps)
    adapter = TextActions(client)
    messages = messages or [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    return adapter.create(model="m", messages=messages, **request), client


def test_the_adapter_never_sends_tools_and_passes_the_rest_of_the_request_through():
    response, client = create([reply(READ)], tools=TOOLS, tool_choice="auto",
                              parallel_tool_calls=False, temperature=0.2)
    sent = client.requests[0]
    assert set(sent) == {"model", "messages", "temperature"}
    assert sent["temperature"] == 0.2
    assert isinstance(response, ChatCompletion)


def test_an_action_comes_back_as_a_real_tool_call_with_the_models_text_and_extras_kept():
    response, _ = create([reply(f"Reading.\n{READ}", reasoning_content="I should read it.")])
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == f"Reading.\n{READ}"
    assert choice.message.reasoning_content == "I should read it."
    (call,) = choice.message.tool_calls
    assert (call.id, call.type, call.function.name) == ("call_1", "function", "read_file")
    assert json.loads(call.function.arguments) == {"path": "a.txt"}
    assert response.usage.prompt_tokens > 0 and response.model == "m"


def test_a_finish_comes_back_with_no_call_and_a_reply_that_is_no_action_as_a_format_error():
    done, _ = create([reply(finish("ok"))])
    assert done.choices[0].message.tool_calls is None
    assert done.choices[0].finish_reason == "stop"
    bad, _ = create([reply("just words")])
    (call,) = bad.choices[0].message.tool_calls
    assert call.function.name == FORMAT_ERROR
    assert json.loads(call.function.arguments) == {"problem": "there is no JSON object in your "
                                                              "reply"}


def test_a_model_cannot_name_the_reserved_format_error_call_itself():
    response, _ = create([reply(action(FORMAT_ERROR, problem="nothing"))])
    (call,) = response.choices[0].message.tool_calls
    problem = json.loads(call.function.arguments)["problem"]
    assert problem == f"there is no tool named {FORMAT_ERROR}"


def test_new_call_ids_never_repeat_one_in_the_history():
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
               {"role": "assistant", "content": "", "tool_calls": [
                   {"id": "call_2", "type": "function",
                    "function": {"name": "list_files", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "call_2", "content": "[]"}]
    response, _ = create([reply(READ)], messages=history)
    assert response.choices[0].message.tool_calls[0].id == "call_3"


def test_the_adapter_refuses_to_stream_and_a_cap_below_one():
    with pytest.raises(ValueError, match="does not stream"):
        create([reply(READ)], stream=True)
    with pytest.raises(ValueError, match="at least 1"):
        TextActions(ScriptedClient([]), max_format_errors=0)


def test_a_response_with_no_completion_is_reported_by_agent_as_before():
    def create(**request):
        return "<html>proxy error</html>"  # what a misconfigured proxy may send, status 200

    proxy = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    bot = TextAgent(proxy, "m", on_event=None)
    with pytest.raises(openai.OpenAIError, match="the server sent no completion"):
        bot.chat("hi")
    assert bot.stop_reason == "error"
    assert_valid(bot)


def test_text_agent_takes_a_ready_adapter_as_it_is():
    adapter = TextActions(ScriptedClient([reply(finish("ok"))]), max_format_errors=5)
    bot = TextAgent(adapter, "m", on_event=None)
    assert bot.client is adapter and bot.chat("hi") == "ok"


# --- TextAgent: every path, and a valid history after each --------------------------------


def test_a_finish_ends_the_loop_with_its_output_as_the_answer():
    bot, client, events = text_agent([reply(f"Here it is:\n```json\n{finish('alpha')}\n```")])
    assert bot.chat("what is in a.txt?") == "alpha"
    assert bot.stop_reason == "done" and len(client.requests) == 1
    assert events[-1] == {"type": "agent_end", "stop_reason": "done", "answer": "alpha"}
    assert_valid(bot)


def test_a_call_runs_its_tool_and_the_result_comes_back_as_an_observation():
    bot, client, _ = text_agent([
        reply(action("edit_file", path="b.txt", old_str="", new_str="beta\n")),
        reply(finish("made b.txt"))])
    assert bot.chat("make b.txt") == "made b.txt"
    assert Path("b.txt").read_text(encoding="utf-8") == "beta\n"
    observation = client.requests[1]["messages"][-1]
    assert observation == {"role": "user", "content": 'Observation from call_1 (edit_file):\n'
                                                      '{"path": "b.txt", "action": "created"}'}
    assert bot.messages[2]["tool_calls"][0]["function"]["name"] == "edit_file"
    assert_valid(bot)


def test_plain_text_is_not_a_finish_it_is_answered_with_a_correction():
    bot, client, events = text_agent([reply("a.txt says alpha."),
                                      reply(finish("a.txt says alpha."))])
    assert bot.chat("what is in a.txt?") == "a.txt says alpha."
    assert len(client.requests) == 2 and bot.stop_reason == "done"
    correction = bot.messages[3]
    assert correction["role"] == "tool" and correction["content"].startswith(
        "there is no JSON object in your reply. Reply with exactly one JSON action")
    assert "format error 1; the run stops at 3" in correction["content"]
    sent = client.requests[1]["messages"]
    assert sent[-2] == {"role": "assistant", "content": "a.txt says alpha."}  # as it wrote it
    assert sent[-1]["content"].startswith("Your last reply was not a valid action")
    assert not [e for e in events if e["type"].startswith("tool_execution")]  # nothing ran
    assert_valid(bot)


def test_what_the_parser_noted_reaches_the_model_with_the_observation():
    bot, client, _ = text_agent([reply(f"{READ}\n{finish('guessed')}"),
                                 reply('{"type": "finish", "output": "alpha",}')])
    assert bot.chat("read a.txt") == "alpha"
    observation = client.requests[1]["messages"][-1]["content"]
    assert observation.splitlines()[0] == "Observation from call_1 (read_file):"
    assert observation.splitlines()[-1] == (
        "(Note on your reply: your reply held 2 actions and only the first was used; "
        "send one action per reply.)")


def test_natively_the_same_plain_text_would_have_ended_the_task():
    native = Agent(ScriptedClient([reply("Let me look first."), tool_call("list_files")]), "m",
                   on_event=None)
    assert native.chat("look") == "Let me look first." and native.stop_reason == "done"
    bot, client, _ = text_agent([reply("Let me look first."), reply(action("list_files")),
                                 reply(finish("one file"))])
    assert bot.chat("look") == "one file" and len(client.requests) == 3


def test_the_format_error_cap_stops_the_run_with_a_reason_of_its_own():
    bot, client, events = text_agent([reply("no."), reply("{'type': 'finish'}"), reply("")],
                                     max_turns=10)
    answer = bot.chat("look")
    assert bot.stop_reason == "format_errors" and len(client.requests) == 3
    assert answer == ("[stopped: too many replies that were not valid actions "
                      "(max_format_errors=3); the last: your reply was empty]")
    assert events[-1] == {"type": "agent_end", "stop_reason": "format_errors", "answer": answer}
    kinds = [e["type"] for e in events]
    assert kinds.count("turn_start") == kinds.count("turn_end") == 3  # every turn closed
    assert bot.messages[-1] == {"role": "assistant", "content": ""}  # the model's last reply
    corrections = [m["content"] for m in bot.messages if m["role"] == "tool"]
    assert len(corrections) == 2
    assert corrections[0].endswith("(format error 1; the run stops at 3)")
    assert corrections[1].endswith("(format error 2; the run stops at 3)")
    assert_valid(bot)


def test_after_the_cap_the_same_agent_can_be_asked_again_and_counts_afresh():
    bot, client, _ = text_agent([reply("no"), reply("no"), reply("no"),
                                 reply("no"), reply("no"), reply(finish("ok"))])
    bot.chat("one")
    assert bot.stop_reason == "format_errors"
    assert bot.chat("two") == "ok" and bot.stop_reason == "done"
    assert len(client.requests) == 6
    assert_valid(bot)


def test_format_errors_apart_from_each_other_do_not_reach_the_cap():
    bot, _, _ = text_agent([reply("no"), reply(action("list_files")), reply("no"),
                            reply(action("list_files")), reply("no"), reply(finish("ok"))])
    assert bot.chat("look") == "ok" and bot.stop_reason == "done"
    assert_valid(bot)


def test_a_cap_of_one_stops_on_the_first_bad_reply():
    bot, client, _ = text_agent([reply("no"), reply(finish("never"))], max_format_errors=1)
    bot.chat("look")
    assert bot.stop_reason == "format_errors" and len(client.requests) == 1
    assert_valid(bot)


def test_a_cut_off_reply_runs_nothing_even_when_its_text_parses():
    complete = action("edit_file", path="c.txt", old_str="", new_str="all of it")
    bot, client, events = text_agent([
        reply(f"{complete}\nAnd then I", finish_reason="length"),
        reply(complete[:40], finish_reason="length"),
        reply(finish("gave up"))])
    assert bot.chat("write c.txt") == "gave up"
    assert not Path("c.txt").exists()
    assert not [e for e in events if e["type"] == "tool_execution_start"]
    answers = [m["content"] for m in bot.messages if m["role"] == "tool"]
    assert len(answers) == 2 and all("not executed" in a for a in answers)
    ends = [e for e in events if e["type"] == "message_end"
            and e["message"]["role"] == "assistant"]
    assert [e["finish_reason"] for e in ends] == ["length", "length", "stop"]  # kept as sent
    assert_valid(bot)


def test_a_cut_off_finish_is_not_accepted_as_the_answer():
    bot, client, _ = text_agent([reply(finish("half an ans"), finish_reason="length"),
                                 reply(finish("the whole answer"))])
    assert bot.chat("answer") == "the whole answer" and len(client.requests) == 2
    assert_valid(bot)


def test_the_cap_reached_on_a_cut_off_reply_is_a_format_errors_stop():
    bot, _, _ = text_agent([reply("no"), reply("no"), reply(READ[:20], finish_reason="length")])
    assert bot.chat("look").startswith("[stopped:") and bot.stop_reason == "format_errors"
    assert_valid(bot)


def test_max_turns_still_ends_a_run_of_valid_actions():
    bot, _, _ = text_agent([reply(action("list_files"))] * 5, max_turns=3)
    assert bot.chat("look").startswith("[stopped: no final answer after max_turns=3")
    assert bot.stop_reason == "max_turns"
    assert_valid(bot)


def test_an_unknown_tool_or_bad_arguments_are_the_agents_errors_not_format_errors():
    bot, _, _ = text_agent([reply(action("open_file", path="a.txt")),
                            reply(action("read_file")),
                            reply(action("open_file", path="a.txt")),
                            reply(finish("ok"))])
    assert bot.chat("open it") == "ok" and bot.stop_reason == "done"  # four replies, no cap
    errors = [json.loads(m["content"])["error"] for m in bot.messages if m["role"] == "tool"]
    assert errors[0].startswith("open_file: unknown tool; the tools are:")
    assert errors[1].startswith("read_file: bad arguments: missing a required argument")
    assert_valid(bot)


def test_an_api_error_mid_run_leaves_a_history_the_same_agent_can_send_again():
    def fail(messages):
        request = httpx2.Request("POST", "http://fake.test/v1/chat/completions")
        raise openai.APIConnectionError(request=request)

    bot, _, _ = text_agent([reply(READ), fail, reply(finish("alpha"))])
    with pytest.raises(openai.APIConnectionError):
        bot.chat("read a.txt")
    assert bot.stop_reason == "error"
    assert_valid(bot)
    assert bot.chat("again") == "alpha"


def test_ctrl_c_in_a_tool_leaves_every_call_answered():
    def stop(path: str) -> dict:
        raise KeyboardInterrupt

    tools = [agent.schema(stop, "stops", path="p")]
    bot = TextAgent(ScriptedClient([reply(action("stop", path="x"))]), "m", tools=tools,
                    registry={"stop": stop}, on_event=None)
    with pytest.raises(KeyboardInterrupt):
        bot.chat("go")
    assert bot.stop_reason == "interrupted"
    assert_valid(bot)


# --- the real openai SDK against a server without tool calling ----------------------------

BASE_URL = "http://fake.test/v1"


class ServerWithoutTools:
    """A chat server that knows nothing of tools: it rejects, with HTTP 400, any request with
    tools, tool_choice or parallel_tool_calls, the tool role, tool_calls, or content that is
    not a string. Otherwise it answers with its next step: a text, or a function of the
    messages it was sent that returns one."""

    def __init__(self, *steps):
        self.steps, self.bodies = list(steps), []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url == f"{BASE_URL}/chat/completions"
        body = json.loads(request.content)
        self.bodies.append(body)
        problem = self.problem(body)
        if problem:
            return httpx2.Response(400, json={"error": {"message": problem,
                                                        "type": "invalid_request_error"}})
        step = self.steps.pop(0)
        text, reason = step(body["messages"]) if callable(step) else step
        return httpx2.Response(200, json={
            "id": f"chatcmpl-{len(self.bodies)}", "object": "chat.completion", "created": 1,
            "model": body["model"], "usage": {"prompt_tokens": 9, "completion_tokens": 3,
                                              "total_tokens": 12},
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": reason}]})

    @staticmethod
    def problem(body: dict) -> str | None:
        for field in ("tools", "tool_choice", "parallel_tool_calls"):
            if field in body:
                return f"this model does not support {field}"
        for message in body["messages"]:
            if message["role"] not in ("system", "user", "assistant"):
                return f"unknown role {message['role']!r}"
            if set(message) != {"role", "content"} or not isinstance(message["content"], str):
                return f"a message must be role and text content, not {sorted(message)}"
        return None

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(api_key="test", base_url=BASE_URL, max_retries=0,
                             http_client=httpx2.Client(transport=httpx2.MockTransport(
                                 self.handler)))


def observed(messages: list[dict], tool: str):
    marker = f"({tool}):\n"
    text = next(m["content"] for m in reversed(messages) if marker in m["content"])
    return json.JSONDecoder().raw_decode(text.split(marker)[-1])[0]


def said(text: str, reason: str = "stop"):
    return (text, reason)


def demo_steps() -> list:
    """agent.demo_script()'s work, as text a model without tool calling writes."""
    greet = 'def greet(name):\n    return f"Hello, {name}!"\n\n\nprint(greet("Pi"))\n'

    def python_files(messages):
        names = [f["name"] for f in observed(messages, "list_files")["files"]]
        py = ", ".join(n for n in names if n.endswith(".py"))
        return said(finish(f"The Python files here are: {py}."))

    def explain(messages):
        error = observed(messages, "read_file")["error"]
        return said(finish(f"I could not read missing.py: the tool said {error!r}. "
                           "It does not exist."))

    return [
        said(f"```json\n{action('edit_file', path='greet.py', old_str='', new_str=greet)}\n```"),
        said(finish("Created greet.py with greet(name); running it prints: Hello, Pi!")),
        said(f"First I read it. {action('read_file', path='greet.py')}"),
        said(action("edit_file", path="greet.py", old_str='f"Hello, {name}!"',
                    new_str='f"你好，{name}！"')),
        said(finish("Changed the greeting to Chinese; greet(name) is unchanged.")),
        said('{"type": "call_tool", "name": "list_files", "arguments": "{\\"path\\": \\".\\"}"}'),
        said("The Python files here are: greet.py."),
        python_files,
        said(action("read_file", path="missing.py")),
        explain,
    ]


def run_demo(bot: Agent, folder: Path) -> list[str]:
    folder.mkdir()
    before = Path.cwd()
    try:
        os.chdir(folder)
        return [bot.chat(task) for task in agent.DEMO_TASKS]
    finally:
        os.chdir(before)


def test_the_four_tasks_over_the_real_sdk_never_send_tools_and_match_native_calls(workspace):
    server = ServerWithoutTools(*demo_steps())
    text_bot = TextAgent(server.client(), "small-local-model", on_event=None)
    native_bot = Agent(ScriptedClient(agent.demo_script()), "scripted", on_event=None)
    text_answers = run_demo(text_bot, workspace / "text")
    native_answers = run_demo(native_bot, workspace / "native")
    assert text_answers == native_answers
    assert (workspace / "text" / "greet.py").read_bytes() == \
        (workspace / "native" / "greet.py").read_bytes()
    assert len(server.bodies) == 10 and not server.steps
    assert all(ServerWithoutTools.problem(body) is None for body in server.bodies)
    assert all(body["model"] == "small-local-model" for body in server.bodies)
    assert_valid(text_bot)
    assert text_bot.stop_reason == "done"


def test_the_same_server_rejects_a_native_agent_so_the_test_above_means_something():
    server = ServerWithoutTools(said(finish("never")))
    native = Agent(server.client(), "small-local-model", on_event=None)
    with pytest.raises(openai.BadRequestError, match="does not support tools"):
        native.chat("hi")
    assert_valid(native)


def test_over_the_real_sdk_a_cut_off_reply_and_the_cap_keep_the_history_valid():
    server = ServerWithoutTools(said(READ[:25], "length"), said("Sure!"), said("{'x': 1}"))
    bot = TextAgent(server.client(), "m", on_event=None)
    bot.chat("read a.txt")
    assert bot.stop_reason == "format_errors" and len(server.bodies) == 3
    assert all(ServerWithoutTools.problem(body) is None for body in server.bodies)
    assert_valid(bot)


# --- the repeat warning, built on lesson 04's repeat guard ---------------------------------


def run(tools: dict, name: str, **arguments):
    try:
        return agent.call_tool(tools, name, json.dumps(arguments))
    except Exception as exc:
        return exc


def test_the_same_call_twice_in_a_row_runs_and_says_so():
    tools = repeat_warning(TOOL_REGISTRY)
    first, second, third = (run(tools, "read_file", path="a.txt") for _ in range(3))
    assert first == {"path": "a.txt", "content": "alpha\n"}
    assert second == {**first, "note": "you already did exactly this in your last action, and "
                      "the result did not change; do something else, or finish"}
    assert third == second


def test_a_different_call_in_between_resets_and_defaults_count_as_the_same_call():
    tools = repeat_warning(TOOL_REGISTRY)
    assert "note" not in run(tools, "read_file", path="a.txt")
    assert "note" not in run(tools, "list_files")
    assert "note" in run(tools, "list_files", path=".")  # the same call, by its defaults
    assert "note" not in run(tools, "read_file", path="a.txt")


def test_a_repeated_error_keeps_its_words_and_gets_the_note():
    tools = repeat_warning(TOOL_REGISTRY)
    first, second = run(tools, "read_file", path="nope.txt"), run(tools, "read_file",
                                                                 path="nope.txt")
    assert isinstance(first, FileNotFoundError)
    assert isinstance(second, text_actions.RepeatedAction)
    assert str(second).startswith("no such file: nope.txt (note: you already did exactly this")
    assert "did not change" in str(second)


def test_a_repeat_whose_result_changed_says_that_instead():
    tools = repeat_warning(TOOL_REGISTRY)
    created = run(tools, "edit_file", path="d.txt", old_str="", new_str="x")
    again = run(tools, "edit_file", path="d.txt", old_str="", new_str="x")
    assert created == {"path": "d.txt", "action": "created"}
    assert again["action"] == "overwritten" and "this time the result differs" in again["note"]


def test_stacked_on_repeat_guard_the_repeats_that_go_on_are_refused_and_not_run():
    ran = []

    def counted(path: str = ".") -> dict:
        ran.append(path)
        return {"files": []}

    tools = repeat_warning(guards.repeat_guard({"list_files": counted}, limit=2))
    outcomes = [run(tools, "list_files") for _ in range(3)]
    assert "note" not in outcomes[0] and "note" in outcomes[1]
    assert isinstance(outcomes[2], guards.RepeatedCall) and len(ran) == 2


def test_the_warning_is_lesson_04s_repeat_guard_with_limit_one(monkeypatch):
    made = []
    real = guards.repeat_guard

    def spy(registry, limit=3):
        made.append(limit)
        return real(registry, limit)

    monkeypatch.setattr(guards, "repeat_guard", spy)
    repeat_warning(TOOL_REGISTRY)
    assert made == [1]


def test_the_warning_keeps_signatures_and_works_for_native_calls_too():
    tools = repeat_warning(TOOL_REGISTRY)
    agent.check_tools(TOOLS, tools)
    bot = Agent(ScriptedClient([tool_call("list_files"), tool_call("list_files"),
                                reply("empty")]), "m", registry=tools, on_event=None)
    bot.chat("look twice")
    results = [json.loads(m["content"]) for m in bot.messages if m["role"] == "tool"]
    assert "note" not in results[0] and "did not change" in results[1]["note"]
    assert_valid(bot)


# --- take it with you -------------------------------------------------------------------


def test_the_exported_module_imports_and_wraps_a_client_beside_agent_and_guards(tmp_path):
    kit = tmp_path / "kit"
    kit.mkdir()
    (kit / "agent.py").write_bytes((ROOT / "agent.py").read_bytes())
    (kit / "guards.py").write_text(course.export(course.notebook_path("04-guards")),
                                   encoding="utf-8")
    (kit / "text_actions.py").write_text(course.export(course.notebook_path("08-text-actions")),
                                         encoding="utf-8")
    program = (
        "import json, text_actions\n"
        "from agent import ScriptedClient, reply\n"
        "act = json.dumps({'type': 'call_tool', 'name': 'list_files', 'arguments': {}})\n"
        "done = json.dumps({'type': 'finish', 'output': 'ok'})\n"
        "client = ScriptedClient([reply(act), reply(done)])\n"
        "bot = text_actions.TextAgent(client, 'm', on_event=None,\n"
        "                             registry=text_actions.repeat_warning(\n"
        "                                 __import__('agent').TOOL_REGISTRY))\n"
        "print(bot.chat('look'), bot.stop_reason, 'tools' in client.requests[0])\n")
    done = subprocess.run([sys.executable, "-c", program], cwd=kit, capture_output=True,
                          text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", "done", "False"]


# --- attacks: every reply is parsed or refused, whatever its shape or depth -----------------

DEEP = 5_000  # far past Python's recursion limit: json.loads alone raises RecursionError
CALL = '{"type": "call_tool", "name": "read_file", "arguments": '

DEEP_REPLIES = [  # (id, reply)
    ("[ never closed", "[" * DEEP),
    ("[ a hundred thousand times", "[" * 100_000),
    ("[ closed", "[" * DEEP + "]" * DEEP),
    ('{"a": never closed', '{"a": ' * DEEP),
    ('{"a": closed', '{"a": ' * DEEP + "1" + "}" * DEEP),
    ("arguments that repeat [", CALL + '{"path": ' + "[" * DEEP + "]" * DEEP + "}}"),
    ("arguments that repeat [, never closed", CALL + "[" * DEEP),
    ("arguments that repeat {, never closed", CALL + '{"a": ' * DEEP),
    ("in a code fence", "```json\n" + "[" * DEEP + "]" * DEEP + "\n```"),
    ("in prose", "Here it is: " + CALL + '{"path": ' + "[" * DEEP + "]" * DEEP + "}} ok?"),
    ("arguments a string of deep JSON",
     json.dumps({"type": "call_tool", "name": "read_file", "arguments": "[" * DEEP + "]" * DEEP})),
    ("a finish whose output nests deeply",
     '{"type": "finish", "output": ' + "[" * DEEP + "]" * DEEP + "}"),
    ("deep, but within Python's limit", CALL + '{"path": ' + "[" * 500 + "]" * 500 + "}}"),
    ("with a trailing comma to repair", CALL + '{"path": ' + "[" * DEEP + "]" * DEEP + ",}}"),
]


@pytest.mark.parametrize("text", [c[1] for c in DEEP_REPLIES], ids=[c[0] for c in DEEP_REPLIES])
def test_json_nested_too_deeply_is_refused_with_the_format_error_not_a_crash(text):
    with pytest.raises(FormatError) as refused:
        parse_action(text)
    assert "nested" in str(refused.value) or "never closed" in str(refused.value), refused.value


def test_json_nested_a_little_is_still_an_action():
    arguments = {"path": "a.txt", "deep": json.loads("[" * 20 + "]" * 20)}
    found = parse_action(json.dumps({"type": "call_tool", "name": "f", "arguments": arguments}))
    assert found["arguments"] == arguments


def test_json_nested_too_deeply_is_refused_even_deep_in_the_stack():
    def nested(levels):  # parse_action called with most of Python's stack already used
        return nested(levels - 1) if levels else parse_action("[" * 200 + "]" * 200)

    with pytest.raises(FormatError, match="nested"):
        nested(sys.getrecursionlimit() - 150)


@pytest.mark.parametrize("text", [c[1] for c in DEEP_REPLIES[:6]],
                         ids=[c[0] for c in DEEP_REPLIES[:6]])
def test_a_run_given_deeply_nested_json_corrects_the_model_and_goes_on(text):
    bot, client, _ = text_agent([reply(text), reply(finish("alpha"))])
    assert bot.chat("what is in a.txt?") == "alpha"
    assert bot.stop_reason == "done" and len(client.requests) == 2
    assert bot.messages[2]["tool_calls"][0]["function"]["name"] == FORMAT_ERROR
    assert_valid(bot)


def test_a_native_history_with_deeply_nested_arguments_still_converts():
    history = [*NATIVE[:2], {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "read_file", "arguments": "[" * DEEP + "]" * DEEP}}]},
               {"role": "tool", "tool_call_id": "c1", "content": '{"error": "bad"}'}]
    sent = to_text_messages(history, TOOLS)
    assert sent[2]["content"].endswith("]" * DEEP + '"}')  # the arguments, as the model sent them


BROKEN_EDIT = ('{"type": "call_tool", "name": "edit_file", "arguments": {"path": "a.txt", '
               '"old_str": "alpha" "new_str": "beta"}}')  # a comma missing: not JSON


@pytest.mark.parametrize("text", [
    f'{BROKEN_EDIT} {finish("Changed alpha to beta.")}',
    f'{BROKEN_EDIT}\n```json\n{finish("done")}\n```',
    f"{{'type': 'call_tool', 'name': 'read_file'}} {finish('done')}",  # single quotes
    f'I will edit it: {BROKEN_EDIT}. Then: {finish("done")}',
])
def test_a_finish_after_an_action_that_failed_to_decode_is_refused_not_taken(text):
    with pytest.raises(FormatError, match="not valid JSON|single quotes") as refused:
        parse_action(text)
    assert "nothing in your reply was run" in str(refused.value)


@pytest.mark.parametrize("edit, refusal", [
    (BROKEN_EDIT, "not valid JSON"),  # an action that failed to decode
    (UNTYPED_EDIT, "a finish and another object with it"),  # an edit with no "type"
])
def test_an_edit_the_parser_cannot_run_then_a_finish_is_no_false_done(edit, refusal):
    bot, client, _ = text_agent([reply(f'{edit} {finish("Changed alpha to beta.")}'),
                                 reply(action("edit_file", path="a.txt", old_str="alpha",
                                              new_str="beta")),
                                 reply(finish("Changed alpha to beta."))])
    assert bot.chat("change alpha to beta in a.txt") == "Changed alpha to beta."
    assert Path("a.txt").read_text(encoding="utf-8") == "beta\n"  # the finish came after it
    assert refusal in bot.messages[3]["content"]
    assert len(client.requests) == 3 and bot.stop_reason == "done"
    assert_valid(bot)


def test_prose_in_braces_before_a_finish_is_still_prose():
    assert parse_action(f"I use {{name}} here. {finish('ok')}")["output"] == "ok"


def test_a_call_after_an_action_that_failed_to_decode_runs_and_the_model_is_told():
    found = parse_action(f"{BROKEN_EDIT} {READ}")
    assert (found["type"], found["name"]) == ("call_tool", "read_file")
    assert any("not valid JSON" in note and "not run" in note for note in found["notes"]), \
        found["notes"]


def test_text_agents_system_prompt_agrees_with_its_protocol():
    bot, client, _ = text_agent([reply(finish("ok"))])
    bot.chat("hi")
    system = client.requests[0]["messages"][0]["content"]
    assert "without calling a tool" not in system  # agent.SYSTEM_PROMPT's last line
    assert "without calling a tool" in agent.SYSTEM_PROMPT  # (so the test means something)
    assert system.startswith(text_actions.TEXT_SYSTEM_PROMPT)
    assert "finish" in text_actions.TEXT_SYSTEM_PROMPT.splitlines()[-1]
    assert TextAgent(ScriptedClient([]), "m", system_prompt="mine").messages[0]["content"] == \
        "mine"  # a prompt of your own still wins


def test_text_prompt_makes_a_native_calling_prompt_agree_with_the_protocol():
    native = "You are an agent.\n" + agent.SYSTEM_PROMPT.splitlines()[-1] + "\nBe careful."
    made = text_actions.text_prompt(native)
    assert made.splitlines() == ["You are an agent.", text_actions.FINISH_RULE, "Be careful."]
    assert text_actions.text_prompt("Be brief.") == "Be brief.\n" + text_actions.FINISH_RULE
    assert text_actions.TEXT_SYSTEM_PROMPT == text_actions.text_prompt(agent.SYSTEM_PROMPT)


# --- the exercises' checks use the notebook's own classes ----------------------------------


def run_export_cells_again(module):
    """What a student's Run All does to `import text_actions`: every export cell is run again
    inside the module (course._join_module), so FormatError, TextAgent... are new classes."""
    for cell in course.cells(course.notebook_path("08-text-actions"), "export"):
        course._run(course.without_mark("".join(cell["source"])), "an export cell run again",
                    module)


@pytest.fixture
def export_cells_run_again():
    saved = dict(vars(text_actions))
    before = text_actions.FormatError
    run_export_cells_again(text_actions)
    assert text_actions.FormatError is not before  # a new class, as in the kernel
    yield
    vars(text_actions).clear()
    vars(text_actions).update(saved)


def fresh_solutions():
    """The reference solutions, imported now: as a student's cell run after the export cells,
    they use the module's classes of this moment."""
    import runpy
    return runpy.run_path(str(ROOT / "solutions" / "08-text-actions.py"))["SOLUTIONS"]


@pytest.mark.parametrize("exercise_id", ["08.1", "08.2", "08.3"])
def test_the_checks_accept_the_answers_before_the_export_cells_run_again(exercise_id):
    report = course.check(exercise_id, *fresh_solutions()[exercise_id])
    assert report.passed, repr(report)


@pytest.mark.parametrize("exercise_id", ["08.1", "08.2", "08.3"])
def test_the_checks_accept_the_notebooks_own_format_error_after_its_cells_run_again(
        exercise_id, export_cells_run_again):
    report = course.check(exercise_id, *fresh_solutions()[exercise_id])
    assert report.passed, repr(report)


def parse_python_style_keeping_the_last_key(text):
    """The naive answer to 08.2: ast.literal_eval, which keeps the last of a key given twice."""
    import ast
    try:
        return parse_action(text)
    except FormatError as refusal:
        if "single quotes" not in str(refusal):
            raise
        spans, _ = text_actions.object_spans(text)
        for start, end in spans:
            try:
                value = ast.literal_eval(text[start:end])
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            if isinstance(value, dict):
                return text_actions.checked(value, ["your action was a Python dict"])
        raise refusal


def test_the_check_of_08_2_refuses_an_answer_that_keeps_the_last_of_a_key_given_twice():
    report = course.check("08.2", parse_python_style_keeping_the_last_key)
    assert not report.passed
    failed = [what for ok, what, _ in report.results if not ok]
    assert failed == ["a key given twice is refused, as parse_action refuses it"], repr(report)


def short_parser() -> dict:
    """The main path's short parser (its export cells, all of them: the parser is the first four),
    run in a namespace of its own."""
    short = {}
    exec("\n\n\n".join(main_path_export_cells("08-text-actions")), short)
    return short


@pytest.fixture
def main_path_run_again():
    """The module as a kernel holds it after the main path only: its export cells run again
    over the whole module, so parse_action, TextActions... are the main path's short ones."""
    with main_path_only(text_actions, "08-text-actions") as saved:
        assert text_actions.parse_action is not saved["parse_action"]
        yield


@pytest.mark.parametrize("exercise_id", ["08.1", "08.2", "08.3"])
def test_the_checks_accept_the_answers_against_the_main_paths_short_code(
        exercise_id, main_path_run_again):
    report = course.check(exercise_id, *fresh_solutions()[exercise_id])
    assert report.passed, repr(report)


BRACES_IN_PROSE = [  # the Pitfall's prose before an action
    f"I use {{name}} here. {finish('Done.')}", f"I use {{name}} here. {READ}", f"Then {{ {READ}",
    f"I'll fill {{name}} in. {READ}",
]
MAIN_PATH_REPLIES = [  # what the main path's cells and checks give the parser
    READ, f"Sure! Let me read it.\n```json\n{READ}\n```\nOK?", f"{READ}\n{finish('Done.')}",
    '{"type": "finish", "output": "Done.",}', "notes.txt says: buy milk.",
    "{'type': 'finish', 'output': 'Done.'}", f"The format is {finish('...')}. So: {READ}",
    "Sure! I'd be happy to help. Let me check the folder.",
    "{'type': 'call_tool', 'name': 'list_files', 'arguments': {'path': '.'}}",
    "```python\nimport os\nprint(os.listdir('.'))\n```", '{"name": "read_file", "arguments": {}}',
    '{"arguments": {"path": "a.txt"}}', '{"type": "run", "name": "read_file"}',
    finish("a.txt says alpha."), READ[:-1], '{"type": "finish", "output": "x", "a": [1, 2,],}',
    '{"type": "finish", "output": "a, } and a, ]",}',
    "{'type': 'finish', 'output': 'a } b'}", f"{UNTYPED_EDIT} {finish('Changed it.')}",
    *BRACES_IN_PROSE,
]


@pytest.mark.parametrize("text", MAIN_PATH_REPLIES)
def test_the_main_paths_short_parser_gives_the_whole_ones_answer_on_its_replies(text):
    """A section run alone after a restart uses the whole parser, a run from the top the
    short one: on the main path's replies they must agree, notes and words included. (The
    short one takes no finish_reason: a reply cut off is Going further's.)"""
    short = short_parser()

    def answer(parse):
        try:
            return parse(text)
        except (FormatError, short["FormatError"]) as problem:
            return f"refused: {problem}"
    assert answer(short["parse_action"]) == answer(parse_action)


def test_the_main_paths_short_object_spans_counts_no_brace_of_a_json_string():
    """The short object_spans skips the strings of an object, so a } in one does not end it;
    an object in single quotes may end early, but is still refused for its quotes."""
    short = short_parser()
    assert short["object_spans"]('{"a": "it\'s }"} {x}') == ([(0, 15)], None)
    assert "single quotes" in str(pytest.raises(short["FormatError"], short["parse_action"],
                                                "{'type': 'finish', 'output': 'a } b'}").value)


def test_the_main_path_leaves_a_reply_cut_off_to_going_further():
    """The main path's short parse_action, as_actions and TextAgent.run have no "length";
    the whole ones (Going further) keep it, and the module holds those."""
    main = "\n".join(main_path_export_cells("08-text-actions"))
    assert '"length"' not in main
    assert pytest.raises(FormatError, parse_action, READ, "length")


@pytest.mark.parametrize("text", BRACES_IN_PROSE)
def test_the_main_paths_short_parser_passes_over_braces_in_prose_as_the_lesson_says(text):
    """The Pitfall: braces in prose ("I use {name}", a lone "{") break a first-{-to-last-}
    parser. The short parser a class runs must take the action after them, with no note."""
    short = short_parser()
    found = short["parse_action"](text)
    assert found["type"] in ("finish", "call_tool") and found["notes"] == [], found
    assert found == parse_action(text)


# --- the figures the lesson states ----------------------------------------------------------


def lesson_cost_table(path: Path) -> list[int]:
    """The numbers of the first table under "What text costs" (### in both languages)."""
    text = path.read_text(encoding="utf-8")
    start = re.search(r'(?m)^### What text costs$|<a id="what-text-costs"></a>', text).start()
    lines = text[start:].splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = itertools.takewhile(lambda line: line.startswith("|"), lines[first:])
    return [int(n.replace(",", "")) for row in rows for n in re.findall(r"\d[\d,]*", row)]


def test_the_lessons_cost_table_is_what_the_code_computes_today(workspace):
    from props.text_models import four_tasks_in_text

    native = Agent(ScriptedClient(agent.demo_script()), "scripted-native", on_event=None)
    text = TextAgent(ScriptedClient(four_tasks_in_text()), "scripted-text", on_event=None)
    run_demo(native, workspace / "native")
    run_demo(text, workspace / "text")
    native_sent, text_sent = native.client.requests, text.client.client.requests

    def size(value):
        return len(agent.to_json(value))

    computed = [size(TOOLS), len(text_actions.action_prompt(TOOLS)),
                size(native_sent[0]), size(text_sent[0]),
                len(native_sent), sum(map(size, native_sent)),
                len(text_sent), sum(map(size, text_sent))]
    for lesson in (ROOT / "lessons" / "08-text-actions.md",
                   ROOT / "lessons" / "zh" / "08-text-actions.md"):
        assert lesson_cost_table(lesson) == computed, lesson


def test_the_main_paths_short_adapter_runs_a_task_as_the_whole_one_does(workspace):
    """The main path's TextActions lacks only the whole one's refusals (a stream, a cap below
    1), its "length" and its pass-through of a response with no completion: on a task that
    no output limit cuts it acts the same."""
    steps = [reply(f"Sure.\n```json\n{READ}\n```"), reply("a.txt says alpha."),
             reply(f"{READ}\n{finish('Done.')}"), reply(finish("a.txt says alpha."))]

    def run():
        bot = text_actions.TextAgent(ScriptedClient(list(steps)), "m", on_event=None)
        return bot.chat("What is in a.txt?"), bot.stop_reason, bot.messages, \
            bot.client.client.requests
    whole = run()
    with main_path_only(text_actions, "08-text-actions") as saved:
        assert text_actions.TextActions is not saved["TextActions"]
        short = run()
    assert short == whole
    assert_history_valid(whole[2])


def test_a_finish_with_an_object_that_is_no_action_is_refused_in_words_true_for_it():
    """'I use {"name"} then <finish>': the other object is no action (it does not even decode);
    the short parser says "another object", the whole one names what broke; neither says
    "another action", which would be untrue, and neither runs the finish."""
    text = f'I use {{"name"}} then {finish("x")}'
    short = short_parser()
    short_refusal = str(pytest.raises(short["FormatError"], short["parse_action"], text).value)
    assert "a finish and another object with it" in short_refusal
    whole_refusal = str(pytest.raises(FormatError, parse_action, text).value)
    assert "nothing in your reply was run" in whole_refusal
    assert "another action" not in short_refusal + whole_refusal


RESERVED = action(FORMAT_ERROR)  # {"type": "call_tool", "name": "format_error", "arguments": {}}


@pytest.mark.parametrize("version", ["whole", "main path"])
@pytest.mark.parametrize("replies", [["no", "no", RESERVED], [RESERVED] * 3],
                         ids=["plain words, then the reserved call", "the reserved call thrice"])
def test_the_reserved_format_error_call_at_the_cap_is_a_format_errors_stop_not_done(
        version, replies):
    """The reply that reaches the cap is a call to format_error: as_actions refuses it (the
    name is reserved) and ends the loop with no call; run must not then take it as done."""
    def run():
        bot = text_actions.TextAgent(ScriptedClient([reply(r) for r in replies]), "m",
                                     on_event=None)
        return bot.chat("look"), bot.stop_reason, bot
    if version == "whole":
        answer, stop, bot = run()
    else:
        with main_path_only(text_actions, "08-text-actions"):
            answer, stop, bot = run()
    assert stop == "format_errors", (stop, answer)
    assert answer.endswith(f"the last: there is no tool named {FORMAT_ERROR}]"), answer
    assert_history_valid(bot.messages)

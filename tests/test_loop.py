"""The loop and its guards: each protocol invariant of the GUIDE (numbered as there) has its
own tests, all on the offline ScriptedClient (or a tiny client returning canned responses)."""

import copy
import inspect
import json
import os
from types import SimpleNamespace

import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletion

from agent import (
    INTERRUPTED,
    MAX_TOOL_OUTPUT,
    MAX_TURNS,
    NOT_RUN,
    TOOL_REGISTRY,
    TOOLS,
    Agent,
    ScriptedClient,
    bound,
    fan_out,
    reply,
    schema,
    step,
    tool_call,
)

# --- helpers -------------------------------------------------------------------------------


def assert_history_valid(messages: list[dict]) -> None:
    """What a strict server accepts: system first, content never None, and every tool call
    answered by exactly one tool message, right after its assistant message, in call order."""
    assert messages[0]["role"] == "system"
    i = 0
    while i < len(messages):
        message = messages[i]
        assert message.get("content") is not None, f"message {i} has no content: {message}"
        assert message["role"] != "tool", f"message {i} answers no open tool call: {message}"
        ids = [call["id"] for call in message.get("tool_calls", [])]
        answers = messages[i + 1: i + 1 + len(ids)]
        assert [(m["role"], m.get("tool_call_id")) for m in answers] == [("tool", x) for x in ids]
        i += 1 + len(ids)


def tools_for(registry: dict) -> list[dict]:
    """Schemas for test tools: every parameter described by its own name."""
    return [schema(f, f"test tool {name}", **{p: p for p in inspect.signature(f).parameters})
            for name, f in registry.items()]


def make_agent(steps, **kwargs):
    """An agent on a ScriptedClient that records its events. Returns (agent, client, events)."""
    events: list[dict] = []
    client = ScriptedClient(steps)
    if "registry" in kwargs and "tools" not in kwargs:
        kwargs["tools"] = tools_for(kwargs["registry"])
    agent = Agent(client, "test-model", on_event=events.append, **kwargs)
    return agent, client, events


def tool_messages(agent: Agent) -> list[dict]:
    return [m for m in agent.messages if m["role"] == "tool"]


def completion(message: dict, finish_reason: str = "stop", n: int = 1) -> ChatCompletion:
    return ChatCompletion.model_validate({
        "id": f"chatcmpl-canned-{n}", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    })


class CannedClient:
    """Returns ready-made ChatCompletion objects in order; records each request (a copy)."""

    def __init__(self, completions):
        self.completions, self.requests = list(completions), []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(self, **request):
        self.requests.append(copy.deepcopy(request))
        return self.completions.pop(0)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("hello", encoding="utf-8")
    return tmp_path


# --- invariant 1: the assistant message enters the history first, as returned --------------


def test_inv1_assistant_message_with_tool_calls_is_in_history_before_any_tool_runs():
    seen = []

    def peek() -> dict:
        seen.append(copy.deepcopy(agent.messages))
        return {"ok": True}

    agent, _, _ = make_agent([[tool_call("peek"), tool_call("peek")], reply("done")],
                             registry={"peek": peek})
    agent.chat("look")
    first, second = seen
    assert first[-1] == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "peek", "arguments": "{}"}},
        {"id": "call_2", "type": "function", "function": {"name": "peek", "arguments": "{}"}},
    ]}
    assert second[-1] == {"role": "tool", "tool_call_id": "call_1", "content": '{"ok": true}'}


def test_inv1_provider_extras_such_as_reasoning_content_survive():
    agent, client, _ = make_agent([
        step(tool_call("list_files"), reasoning_content="I should look first."),
        reply("two files", reasoning_content="Listed them."),
    ])
    agent.chat("what is here?")
    assistants = [m for m in agent.messages if m["role"] == "assistant"]
    assert [m["reasoning_content"] for m in assistants] == ["I should look first.", "Listed them."]
    sent_back = client.requests[1]["messages"][2]
    assert sent_back["reasoning_content"] == "I should look first."


def test_inv1_content_is_empty_string_not_none_when_the_model_said_nothing():
    agent, client, _ = make_agent([tool_call("list_files"), reply("ok")])
    agent.chat("list")
    message = agent.messages[2]
    assert message["tool_calls"] and message["content"] == ""
    assert client.requests[1]["messages"][2]["content"] == ""


def test_inv1_text_beside_tool_calls_is_kept():
    agent, _, _ = make_agent([step(tool_call("list_files"), content="Let me look."), reply("ok")])
    agent.chat("list")
    assert agent.messages[2]["content"] == "Let me look."


def test_inv1_deprecated_function_call_beside_tool_calls_is_not_echoed():
    call = {"id": "call_x", "type": "function",
            "function": {"name": "list_files", "arguments": "{}"}}
    client = CannedClient([
        completion({"role": "assistant", "content": None, "tool_calls": [call],
                    "function_call": {"name": "list_files", "arguments": "{}"}}, "tool_calls"),
        completion({"role": "assistant", "content": "one file"}, n=2),
    ])
    agent = Agent(client, "m", on_event=None)
    assert agent.chat("list") == "one file"
    assert agent.messages[2] == {"role": "assistant", "content": "", "tool_calls": [call]}
    sent_back = client.requests[1]["messages"][2]
    assert "function_call" not in sent_back and sent_back["content"] == ""
    assert_history_valid(agent.messages)


def test_inv1_empty_tool_calls_list_from_a_server_is_a_final_answer():
    client = CannedClient([completion({"role": "assistant", "content": "hi", "tool_calls": []})])
    agent = Agent(client, "m", on_event=None)
    assert agent.chat("hello") == "hi"
    assert agent.messages[-1] == {"role": "assistant", "content": "hi"}
    assert agent.stop_reason == "done"


# --- invariant 2: every call id answered exactly once, in order, on every path --------------

PATHS = {  # path: (the call, is_error, text the tool message must contain)
    "success": (tool_call("read_file", path="a.txt"), False, '"content": "hello"'),
    "tool_exception": (tool_call("read_file", path="missing.txt"), True,
                       "read_file: no such file: missing.txt"),
    "unknown_tool": (tool_call("delete_all"), True, "delete_all: unknown tool"),
    "invalid_json": (tool_call("read_file", raw_arguments='{"path": "a.t'), True,
                     "read_file: arguments are not valid JSON"),
    "key_given_twice": (tool_call("read_file", raw_arguments='{"path": "a.txt", "path": "b"}'),
                        True, "read_file: arguments give 'path' more than once; send each key"),
    "json_not_object": (tool_call("read_file", raw_arguments='["a.txt"]'), True,
                        "read_file: arguments must be a JSON object, not list"),
    "missing_argument": (tool_call("read_file"), True,
                         "read_file: bad arguments: missing a required argument: 'path'"),
    "unexpected_argument": (tool_call("read_file", path="a.txt", mode="r"), True,
                            "read_file: bad arguments: got an unexpected keyword argument 'mode'"),
    "empty_argument_string_counts_as_empty_object": (
        tool_call("list_files", raw_arguments=""), False, '"name": "a.txt"'),
}


@pytest.mark.parametrize("path", PATHS)
def test_inv2_call_is_answered_exactly_once_on_path(path):
    call, is_error, expected = PATHS[path]
    agent, client, events = make_agent([call, reply("ok")])
    assert agent.chat("go") == "ok"
    answers = tool_messages(agent)
    assert len(answers) == 1 and answers[0]["tool_call_id"] == "call_1"
    assert agent.messages[3] is answers[0]  # right after the assistant message
    assert expected in answers[0]["content"]
    assert ("error" in json.loads(answers[0]["content"])) is is_error
    [end] = [e for e in events if e["type"] == "tool_execution_end"]
    assert end["is_error"] is is_error
    assert client.requests[1]["messages"][3] == answers[0]  # answered before the next request
    assert_history_valid(agent.messages)


def test_inv2_every_path_in_one_parallel_batch_is_answered_in_call_order():
    calls = [call for call, _, _ in PATHS.values()]
    agent, client, _ = make_agent([calls, reply("ok")])
    agent.chat("go")
    answers = tool_messages(agent)
    assert [m["tool_call_id"] for m in answers] == [f"call_{i}" for i in range(1, len(PATHS) + 1)]
    for answer, (_, _, expected) in zip(answers, PATHS.values(), strict=True):
        assert expected in answer["content"]
    assert agent.messages[3:3 + len(PATHS)] == answers  # contiguous, right after the assistant
    assert client.requests[1]["messages"] == agent.messages[:-1]
    assert_history_valid(agent.messages)


def test_inv2_bad_arguments_are_rejected_before_the_tool_runs(in_tmp):
    call = tool_call("edit_file", path="new.txt", old_str="", new_str="x", force="yes")
    agent, _, _ = make_agent([call, reply("ok")])
    agent.chat("go")
    assert "unexpected keyword argument 'force'" in tool_messages(agent)[0]["content"]
    assert not (in_tmp / "new.txt").exists()


def test_inv2_a_registry_function_that_was_not_offered_is_not_run(in_tmp):
    """Only the tools in `tools=` (what the model was shown) may run, whatever the registry."""
    ran = []

    def secret() -> dict:
        ran.append(True)
        return {}

    def visible() -> dict:
        return {"ok": True}

    agent, _, _ = make_agent([tool_call("secret"), reply("ok")],
                             registry={"secret": secret, "visible": visible},
                             tools=tools_for({"visible": visible}))
    agent.chat("go")
    assert ran == []
    assert json.loads(tool_messages(agent)[0]["content"]) == {
        "error": "secret: unknown tool; the tools are: visible"}


# --- invariant 3: a failure is an observation, not a crash ----------------------------------


def test_inv3_tool_error_goes_back_as_error_json_naming_tool_and_cause_and_loop_continues():
    def flaky() -> dict:
        raise RuntimeError("disk full")

    agent, client, _ = make_agent([tool_call("flaky"), reply("I saw the error")],
                                  registry={"flaky": flaky})
    assert agent.chat("try") == "I saw the error"
    assert agent.stop_reason == "done"
    [answer] = tool_messages(agent)
    assert json.loads(answer["content"]) == {"error": "flaky: disk full"}
    assert client.requests[1]["messages"][-1] == answer  # the model reads it


def test_inv3_unknown_tool_error_lists_the_real_tools():
    agent, _, _ = make_agent([tool_call("run_shell", command="ls"), reply("ok")])
    agent.chat("go")
    assert json.loads(tool_messages(agent)[0]["content"]) == {
        "error": "run_shell: unknown tool; the tools are: edit_file, list_files, read_file"}


def test_inv3_several_failures_in_a_row_never_end_the_loop():
    agent, _, _ = make_agent([tool_call("read_file", path="x1"), tool_call("nope"),
                              tool_call("read_file", raw_arguments="{"), reply("gave up")])
    assert agent.chat("go") == "gave up"
    assert all("error" in json.loads(m["content"]) for m in tool_messages(agent))


# --- invariant 4: tool calls decide, except finish_reason "length" --------------------------


def test_inv4_tool_calls_with_finish_reason_stop_still_run_and_loop_continues(in_tmp):
    agent, client, _ = make_agent([
        step(tool_call("edit_file", path="made.txt", old_str="", new_str="x"),
             finish_reason="stop"),
        reply("made it"),
    ])
    assert agent.chat("make it") == "made it"
    assert (in_tmp / "made.txt").read_text() == "x"
    assert len(client.requests) == 2


def test_inv4_no_tool_calls_ends_even_if_finish_reason_says_tool_calls():
    agent, client, _ = make_agent([step(content="final words", finish_reason="tool_calls")])
    assert agent.chat("go") == "final words"
    assert agent.stop_reason == "done" and len(client.requests) == 1


def test_inv4_length_with_tool_calls_runs_none_and_answers_each_not_executed(in_tmp):
    cut = step(tool_call("edit_file", path="one.txt", old_str="", new_str="1"),
               tool_call("edit_file", path="two.txt", old_str="", new_str="2"),
               finish_reason="length")
    agent, client, events = make_agent([cut, reply("I will retry")])
    assert agent.chat("write") == "I will retry"
    assert not (in_tmp / "one.txt").exists() and not (in_tmp / "two.txt").exists()
    assert not [e for e in events if e["type"].startswith("tool_execution")]
    answers = tool_messages(agent)
    assert [m["tool_call_id"] for m in answers] == ["call_1", "call_2"]
    for answer in answers:
        error = json.loads(answer["content"])["error"]
        assert "not executed" in error and "truncated" in error and "re-issue" in error
    assert [e["is_error"] for e in events
            if e["type"] == "message_end" and e["message"]["role"] == "tool"] == [True, True]
    assert client.requests[1]["messages"][-2:] == answers  # the model is told, then asked again
    assert_history_valid(agent.messages)


def test_inv4_length_without_tool_calls_stops_with_reason_length():
    agent, _, events = make_agent([reply("The answer is cut o", finish_reason="length")])
    assert agent.chat("long answer please") == "The answer is cut o"
    assert agent.stop_reason == "length"
    assert events[-1]["type"] == "agent_end" and events[-1]["stop_reason"] == "length"


# --- invariant 5: the loop always ends -----------------------------------------------------


def test_inv5_max_turns_stops_with_reason_message_and_a_valid_history():
    agent, client, events = make_agent(
        [tool_call("list_files")] * 3 + [tool_call("list_files"), reply("finally")],
        max_turns=3)
    answer = agent.chat("loop forever")
    assert agent.stop_reason == "max_turns"
    assert len(client.requests) == 3  # max_turns model calls, not one more
    assert "max_turns=3" in answer
    assert events[-1] == {"type": "agent_end", "stop_reason": "max_turns", "answer": answer}
    assert_history_valid(agent.messages)
    assert agent.messages[-1]["role"] == "tool"
    # the same agent can go on: the history is valid to send again
    assert agent.chat("go on") == "finally"
    assert agent.stop_reason == "done"
    assert client.requests[4]["messages"][: len(client.requests[2]["messages"])] == \
        client.requests[2]["messages"]


def test_inv5_default_max_turns_is_the_module_constant():
    assert Agent(ScriptedClient([]), on_event=None).max_turns == MAX_TURNS
    assert 1 <= MAX_TURNS <= 100


# --- invariant 6: an API error leaves the history valid ------------------------------------


def connection_error(messages):
    raise openai.APIConnectionError(request=httpx2.Request("POST", "http://fake.test/v1"))


def test_inv6_client_exception_propagates_and_the_same_agent_can_chat_again():
    agent, client, events = make_agent(
        [tool_call("list_files"), connection_error, reply("back again")])
    with pytest.raises(openai.APIConnectionError):
        agent.chat("first")
    assert agent.stop_reason == "error"
    assert events[-1]["type"] == "agent_end" and events[-1]["stop_reason"] == "error"
    assert "APIConnectionError" in events[-1]["error"]
    assert_history_valid(agent.messages)
    assert agent.chat("second") == "back again"
    assert agent.stop_reason == "done"
    sent = client.requests[2]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert_history_valid(agent.messages)


def test_inv6_error_on_the_first_request_leaves_a_valid_history():
    agent, _, _ = make_agent([connection_error, reply("ok")])
    with pytest.raises(openai.APIConnectionError):
        agent.chat("hi")
    assert [m["role"] for m in agent.messages] == ["system", "user"]
    assert agent.chat("hi again") == "ok"


def test_inv6_keyboard_interrupt_in_a_tool_mid_batch_leaves_every_call_answered():
    ran = []

    def ok() -> dict:
        ran.append("ok")
        return {"ok": True}

    def stop() -> dict:
        raise KeyboardInterrupt

    agent, _, events = make_agent([[tool_call("ok"), tool_call("stop"), tool_call("ok")]],
                                  registry={"ok": ok, "stop": stop})
    with pytest.raises(KeyboardInterrupt):
        agent.chat("go")
    assert ran == ["ok"]  # the third call never ran
    assert agent.stop_reason == "interrupted"
    assert events[-1]["stop_reason"] == "interrupted"
    answers = tool_messages(agent)
    assert [m["tool_call_id"] for m in answers] == ["call_1", "call_2", "call_3"]
    assert answers[0]["content"] == '{"ok": true}'
    # the interrupted call may have done its work; the one after it never started
    assert [json.loads(m["content"])["error"] for m in answers[1:]] == [INTERRUPTED, NOT_RUN]
    assert_history_valid(agent.messages)


def test_inv6_a_call_refused_before_its_tool_started_is_answered_as_not_run():
    """An event handler that raises at tool_execution_start stops the run before the tool
    runs: the model is told the call did not run, not that it may have."""
    ran = []

    def refuse(event):
        if event["type"] == "tool_execution_start":
            raise RuntimeError("handler refused")

    agent = Agent(ScriptedClient([[tool_call("list_files"), tool_call("list_files")]]),
                  registry={"list_files": lambda path=".": ran.append(path)}, on_event=refuse)
    with pytest.raises(RuntimeError):
        agent.chat("go")
    assert ran == []
    answers = tool_messages(agent)
    assert [json.loads(m["content"])["error"] for m in answers] == [NOT_RUN, NOT_RUN]
    assert_history_valid(agent.messages)


def test_inv6_a_call_whose_end_was_not_recorded_may_have_run():
    """The tool ran, then the handler failed at tool_execution_end: its result was never
    recorded, and the model is told it may or may not have run."""
    def fail_at_end(event):
        if event["type"] == "tool_execution_end":
            raise RuntimeError("handler failed")

    agent = Agent(ScriptedClient([tool_call("list_files")]), on_event=fail_at_end)
    with pytest.raises(RuntimeError):
        agent.chat("go")
    [answer] = tool_messages(agent)
    assert json.loads(answer["content"])["error"] == INTERRUPTED


def interrupt_when(predicate):
    def on_event(event):
        if predicate(event):
            raise KeyboardInterrupt

    return on_event


def test_inv6_interrupt_while_announcing_a_tool_result_does_not_answer_a_call_twice():
    """Ctrl-C while print_event shows a tool result: that call is already in the history."""
    agent = Agent(ScriptedClient([[tool_call("list_files"), tool_call("list_files")]]),
                  on_event=interrupt_when(lambda e: e["type"] == "message_end"
                                          and e["message"]["role"] == "tool"))
    with pytest.raises(KeyboardInterrupt):
        agent.chat("go")
    assert [m.get("tool_call_id") for m in tool_messages(agent)] == ["call_1", "call_2"]
    assert_history_valid(agent.messages)


def test_inv6_interrupt_while_announcing_the_assistant_message_leaves_no_call_open():
    """Ctrl-C while print_event shows the model's message: its calls still get answers."""
    agent = Agent(ScriptedClient([[tool_call("list_files"), tool_call("list_files")]]),
                  on_event=interrupt_when(lambda e: e["type"] == "message_end"
                                          and e["message"]["role"] == "assistant"))
    with pytest.raises(KeyboardInterrupt):
        agent.chat("go")
    assert_history_valid(agent.messages)


# --- invariant 7: tool output is bounded, and the model is told ----------------------------


def test_inv7_tool_output_over_the_limit_is_cut_with_a_note_giving_the_original_length():
    def big() -> str:
        return "H" * 3000 + "M" * 4000 + "T" * 3000

    agent, _, events = make_agent([tool_call("big"), reply("ok")], registry={"big": big},
                                  max_tool_output=1000)
    agent.chat("go")
    [answer] = tool_messages(agent)
    content = answer["content"]
    assert len(content) <= 1000  # the note included
    assert "of 10000 characters" in content and "truncated" in content
    assert content.startswith("H" * 500) and content.endswith("T" * 200)  # head and tail kept
    assert "M" * 10 not in content
    [end] = [e for e in events if e["type"] == "tool_execution_end"]
    assert end["result"] == content


def test_inv7_output_at_the_limit_is_untouched():
    def exact() -> str:
        return "x" * 1000

    agent, _, _ = make_agent([tool_call("exact"), reply("ok")], registry={"exact": exact},
                             max_tool_output=1000)
    agent.chat("go")
    assert tool_messages(agent)[0]["content"] == "x" * 1000


def test_inv7_a_big_file_read_through_the_default_tools_is_bounded(in_tmp):
    (in_tmp / "big.txt").write_text("y" * (MAX_TOOL_OUTPUT + 5000))
    original = json.dumps({"path": "big.txt", "content": "y" * (MAX_TOOL_OUTPUT + 5000)})
    agent, _, _ = make_agent([tool_call("read_file", path="big.txt"), reply("ok")])
    assert agent.max_tool_output == MAX_TOOL_OUTPUT == 20_000
    agent.chat("read it")
    content = tool_messages(agent)[0]["content"]
    assert MAX_TOOL_OUTPUT - 2 <= len(content) <= MAX_TOOL_OUTPUT
    assert f"of {len(original)} characters" in content


@pytest.mark.parametrize("limit", [1, 10, 60, 61, 62, 100, 1000, 20_000])
def test_inv7_a_bounded_result_never_exceeds_the_limit_and_says_what_was_cut(limit):
    for size in (limit + 1, limit + 7, 2 * limit + 3, 10 * limit, 123_456):
        text = "".join(chr(97 + i % 26) for i in range(size))
        cut = bound(text, limit)
        assert len(cut) <= limit, (limit, size, len(cut))
        if "\n[... output truncated: " not in cut:  # no room for any text: the note alone
            assert cut == f"[... output truncated: {size} of {size} characters cut ...]"[:limit]
            continue
        head, rest = cut.split("\n[... output truncated: ")
        counted, tail = rest.split(" characters cut ...]\n")
        assert counted.endswith(f" of {size}") and text.startswith(head) and text.endswith(tail)
        assert len(head) + int(counted.split(" of ")[0]) + len(tail) == size
        # all that fits is kept: only the count may be shorter than the note at its longest
        assert len(cut) >= limit - len(str(size))


# --- invariant 8: every request is the full history plus the tools -------------------------


def test_inv8_every_request_equals_agent_messages_at_that_moment_and_carries_tools():
    scripted = ScriptedClient([tool_call("list_files"), [tool_call("read_file", path="a.txt"),
                               tool_call("nope")], reply("done"), reply("again")])
    seen = []

    def create(**request):
        seen.append((copy.deepcopy(request), copy.deepcopy(agent.messages)))
        return scripted.create(**request)

    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    agent = Agent(client, "m", on_event=None)
    agent.chat("first")
    agent.chat("second")
    assert len(seen) == 4
    for request, history in seen:
        assert request["messages"] == history
        assert request["tools"] == TOOLS and request["model"] == "m"
    sizes = [len(request["messages"]) for request, _ in seen]
    assert sizes == [2, 4, 7, 9]  # the whole history, growing
    assert seen[-1][0]["messages"] == agent.messages[:-1]


def test_inv8_request_messages_is_the_seam_for_what_is_sent_and_the_history_stays_whole():
    """A subclass may send a documented conversion of the history (lessons 09 and 12); the
    default sends agent.messages itself, and the history the loop keeps is never changed."""
    class LastTwoOnly(Agent):
        def request_messages(self):
            return [self.messages[0], *self.messages[-2:]]

    agent = LastTwoOnly(ScriptedClient([tool_call("list_files"), reply("a"), reply("b")]),
                        on_event=None)
    agent.chat("first")
    agent.chat("second")
    sent = [request["messages"] for request in agent.client.requests]
    assert [len(m) for m in sent] == [3, 3, 3]
    assert sent[2] == [agent.messages[0], *agent.messages[-3:-1]]
    assert len(agent.messages) == 7  # system, user, call, result, answer, user, answer
    plain, client, _ = make_agent([reply("a")])
    assert plain.request_messages() is plain.messages
    plain.chat("hi")
    assert client.requests[0]["messages"] == plain.messages[:-1]


def test_inv8_no_tools_key_is_sent_when_the_agent_has_no_tools():
    agent, client, _ = make_agent([reply("hi")], tools=[], registry={})
    agent.chat("hello")
    assert "tools" not in client.requests[0]


# --- events --------------------------------------------------------------------------------


def test_fan_out_gives_every_event_to_each_handler_in_order():
    seen = []
    agent = Agent(ScriptedClient([tool_call("list_files"), reply("done")]),
                  on_event=fan_out(lambda e: seen.append(("a", e["type"])),
                                   lambda e: seen.append(("b", e["type"]))))
    agent.chat("go")
    assert [who for who, _ in seen] == ["a", "b"] * (len(seen) // 2)
    assert [kind for who, kind in seen if who == "a"] == [kind for who, kind in seen
                                                          if who == "b"]
    assert seen[0] == ("a", "agent_start") and seen[-1] == ("b", "agent_end")


def test_events_come_in_order_for_one_tool_call_and_an_answer():
    agent, _, events = make_agent([tool_call("read_file", path="a.txt"), reply("it says hello")])
    agent.chat("read a.txt")
    assert [(e["type"], e.get("message", {}).get("role")) for e in events] == [
        ("agent_start", None), ("message_end", "user"),
        ("turn_start", None), ("message_start", None), ("message_end", "assistant"),
        ("tool_execution_start", None), ("tool_execution_end", None), ("message_end", "tool"),
        ("turn_end", None),
        ("turn_start", None), ("message_start", None), ("message_end", "assistant"),
        ("turn_end", None),
        ("agent_end", None),
    ]
    assert events[0] == {"type": "agent_start", "model": "test-model"}
    assert events[-1] == {"type": "agent_end", "stop_reason": "done", "answer": "it says hello"}
    assert [e["turn"] for e in events if e["type"] == "turn_start"] == [1, 2]


def test_events_tool_execution_carries_arguments_result_is_error_and_duration():
    agent, _, events = make_agent([[tool_call("read_file", path="a.txt"),
                                    tool_call("read_file", path="zz")], reply("ok")])
    agent.chat("go")
    starts = [e for e in events if e["type"] == "tool_execution_start"]
    ends = [e for e in events if e["type"] == "tool_execution_end"]
    assert [(e["tool_call_id"], e["name"], e["arguments"]) for e in starts] == [
        ("call_1", "read_file", '{"path": "a.txt"}'), ("call_2", "read_file", '{"path": "zz"}')]
    assert [e["is_error"] for e in ends] == [False, True]
    assert all(isinstance(e["duration"], float) and e["duration"] >= 0 for e in ends)
    assert [e["result"] for e in ends] == [m["content"] for m in tool_messages(agent)]


def test_events_assistant_message_end_has_usage_finish_reason_and_duration():
    agent, _, events = make_agent([reply("hi")])
    agent.chat("hello")
    [end] = [e for e in events if e["type"] == "message_end"
             and e["message"]["role"] == "assistant"]
    assert end["finish_reason"] == "stop" and end["turn"] == 1
    assert end["usage"]["prompt_tokens"] > 0
    assert end["usage"]["total_tokens"] == \
        end["usage"]["prompt_tokens"] + end["usage"]["completion_tokens"]
    assert end["duration"] >= 0
    [start] = [e for e in events if e["type"] == "message_start"]
    assert start == {"type": "message_start", "turn": 1, "role": "assistant", "messages": 2}


def test_events_are_silent_with_on_event_none(capsys):
    agent = Agent(ScriptedClient([tool_call("read_file", path="zz"), reply("done")]),
                  on_event=None)
    assert agent.chat("go") == "done"
    assert capsys.readouterr() == ("", "")


def test_default_on_event_prints_user_tool_call_result_and_agent_lines(capsys):
    agent = Agent(ScriptedClient([[tool_call("read_file", path="a.txt"),
                                   tool_call("read_file", path="zz")], reply("done")]))
    agent.chat("go")
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "user:        go",
        'tool call:   read_file({"path": "a.txt"})',
        'tool result: {"path": "a.txt", "content": "hello"}',
        'tool call:   read_file({"path": "zz"})',
        'tool error:  {"error": "read_file: no such file: zz"}',
        "agent:       done",
    ]


# --- the conversation ----------------------------------------------------------------------


def test_chat_twice_continues_the_same_conversation():
    agent, client, _ = make_agent([reply("Hi Ada"), reply("Your name is Ada")])
    agent.chat("I am Ada")
    assert agent.chat("Who am I?") == "Your name is Ada"
    assert [(m["role"], m["content"]) for m in client.requests[1]["messages"][1:]] == [
        ("user", "I am Ada"), ("assistant", "Hi Ada"), ("user", "Who am I?")]
    assert len(agent.messages) == 5


def test_history_starts_with_the_system_prompt():
    agent = Agent(ScriptedClient([]), system_prompt="Be brief.", on_event=None)
    assert agent.messages == [{"role": "system", "content": "Be brief."}]


def test_messages_are_plain_json_serializable_dicts():
    agent, _, _ = make_agent([
        step(tool_call("read_file", path="a.txt"), tool_call("x", raw_arguments="{bad"),
             reasoning_content="hmm"),
        step(tool_call("edit_file", path="a.txt", old_str="", new_str="你好"),
             finish_reason="length"),
        reply("done"),
    ])
    agent.chat("go")
    assert all(type(m) is dict for m in agent.messages)
    assert json.loads(json.dumps(agent.messages)) == agent.messages
    assert_history_valid(agent.messages)


def test_registry_and_tools_are_the_agents_defaults():
    agent = Agent(ScriptedClient([]), on_event=None)
    assert agent.tools is TOOLS and agent.registry is TOOL_REGISTRY


def test_a_file_name_that_is_not_utf8_does_not_poison_the_history(in_tmp):
    # bytes 0xff in a name come back from os.listdir as a lone surrogate, which the real
    # client cannot encode as UTF-8; the history must stay sendable.
    os.close(os.open(b"\xff.txt", os.O_CREAT | os.O_WRONLY))
    agent = Agent(ScriptedClient([tool_call("list_files"), reply("ok")]), on_event=None)
    agent.chat("list")
    for message in agent.messages:
        json.dumps(message, ensure_ascii=False).encode("utf-8")  # raises if not sendable
    assert '"?.txt"' in agent.messages[-2]["content"]  # the bad byte shown as "?"


def test_calls_cut_off_by_length_are_printed_as_cut_off_not_as_run(in_tmp, capsys):
    script = [step(tool_call("edit_file", path="a.txt", old_str="", new_str="x"),
                   finish_reason="length"), reply("ok")]
    Agent(ScriptedClient(script)).chat("write")
    out = capsys.readouterr().out
    assert 'cut off:     edit_file({"path": "a.txt"' in out
    assert "tool call:" not in out and "tool error:" in out


def test_a_cut_off_call_without_arguments_is_printed_without_crashing(in_tmp, capsys):
    class NoArguments:  # a cut-off message whose call has no arguments at all
        def __init__(self):
            self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))
            self.script = ScriptedClient([step(tool_call("list_files"), finish_reason="length"),
                                          reply("ok")])

        def create(self, **request):
            response = self.script.create(**request)
            for call in response.choices[0].message.tool_calls or []:
                call.function.arguments = None
            return response

    assert Agent(NoArguments()).chat("go") == "ok"
    assert "cut off:     list_files()" in capsys.readouterr().out


def test_the_default_printer_leaves_errors_to_whoever_catches_them(in_tmp, capsys):
    def boom(messages):
        raise RuntimeError("server down")

    with pytest.raises(RuntimeError):
        Agent(ScriptedClient([boom])).chat("hi")
    assert capsys.readouterr().out == "user:        hi\n"


def test_the_default_printer_shows_a_lone_surrogate_instead_of_failing_the_run(capsys):
    """print_event must never stop a run over the text of an event: a user message holding
    half an emoji is printed escaped, and the run ends done."""
    agent = Agent(ScriptedClient([reply("ok")]))
    assert agent.chat("half \ud83d an emoji") == "ok" and agent.stop_reason == "done"
    assert "user:        half \\ud83d an emoji" in capsys.readouterr().out

"""ScriptedClient: the offline stand-in for openai.OpenAI that the demo and notebooks use."""

import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionMessage

from agent import TOOLS, ScriptedClient, ScriptExhausted, reply, step, tool_call

USER = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]


def ask(client, messages=USER, **kwargs):
    return client.chat.completions.create(model="scripted", messages=messages, **kwargs)


def test_create_returns_real_chat_completion_objects():
    response = ask(ScriptedClient([reply("hello")]), tools=TOOLS)
    assert type(response) is ChatCompletion
    message = response.choices[0].message
    assert type(message) is ChatCompletionMessage
    assert message.role == "assistant" and message.content == "hello"
    assert message.tool_calls is None
    assert response.choices[0].finish_reason == "stop"
    assert response.model == "scripted" and response.object == "chat.completion"


def test_ids_are_deterministic_and_call_ids_count_across_the_client():
    script = [tool_call("list_files"), [tool_call("read_file", path="a"), tool_call("list_files")],
              reply("done")]
    client = ScriptedClient(script)
    responses = [ask(client) for _ in range(3)]
    assert [r.id for r in responses] == [f"chatcmpl-scripted-{n}" for n in (1, 2, 3)]
    assert [c.id for c in responses[0].choices[0].message.tool_calls] == ["call_1"]
    assert [c.id for c in responses[1].choices[0].message.tool_calls] == ["call_2", "call_3"]
    again = ScriptedClient(script)
    assert [ask(again).model_dump() for _ in range(3)] == [r.model_dump() for r in responses]


def test_tool_call_step_has_function_name_and_json_arguments():
    response = ask(ScriptedClient([tool_call("read_file", path="greet.py")]))
    [call] = response.choices[0].message.tool_calls
    assert call.type == "function"
    assert call.function.name == "read_file"
    assert call.function.arguments == '{"path": "greet.py"}'
    assert response.choices[0].message.content is None  # as a real API sends it
    assert response.choices[0].finish_reason == "tool_calls"


def test_requests_are_recorded_as_json_copies_that_later_changes_do_not_touch():
    client = ScriptedClient([reply("one"), reply("two")])
    history = [dict(m) for m in USER]
    ask(client, history, tools=TOOLS)
    history.append({"role": "assistant", "content": "one"})
    history[1]["content"] = "CHANGED"
    ask(client, history)
    first, second = client.requests
    assert first == {"model": "scripted", "tools": TOOLS, "messages": [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]}
    assert len(second["messages"]) == 3 and "tools" not in second
    assert first["messages"] is not history


def test_running_out_of_script_raises_script_exhausted_with_a_clear_message():
    client = ScriptedClient([reply("only one")])
    ask(client)
    with pytest.raises(ScriptExhausted,
                       match="has 1 steps but was asked for response 2; add steps"):
        ask(client)
    assert issubclass(ScriptExhausted, RuntimeError)


def test_a_list_of_tool_calls_is_one_message_with_parallel_calls():
    response = ask(ScriptedClient([[tool_call("read_file", path="a"),
                                    tool_call("read_file", path="b")]]))
    calls = response.choices[0].message.tool_calls
    assert [(c.id, c.function.arguments) for c in calls] == [
        ("call_1", '{"path": "a"}'), ("call_2", '{"path": "b"}')]


def test_step_can_end_with_finish_reason_length():
    response = ask(ScriptedClient([step(tool_call("edit_file", path="x", old_str="",
                                                  new_str="partial"), finish_reason="length")]))
    assert response.choices[0].finish_reason == "length"
    assert response.choices[0].message.tool_calls[0].function.name == "edit_file"
    cut_reply = ask(ScriptedClient([reply("half an ans", finish_reason="length")]))
    assert cut_reply.choices[0].finish_reason == "length"


def test_raw_arguments_send_malformed_json_unchanged():
    response = ask(ScriptedClient([tool_call("read_file", raw_arguments='{"path": ')]))
    assert response.choices[0].message.tool_calls[0].function.arguments == '{"path": '


def test_step_extras_such_as_reasoning_content_are_on_the_message():
    response = ask(ScriptedClient([step(tool_call("list_files"), content="Looking.",
                                        reasoning_content="think")]))
    message = response.choices[0].message
    assert message.content == "Looking."
    assert message.model_extra == {"reasoning_content": "think"}


def test_callable_step_receives_the_request_messages_and_reacts():
    seen = []

    def echo_last(messages):
        seen.append(messages)
        return reply(f"you said {messages[-1]['content']}")

    client = ScriptedClient([echo_last])
    assert ask(client).choices[0].message.content == "you said hi"
    assert seen == [USER]


def test_callable_step_may_return_a_tool_call_or_a_list():
    client = ScriptedClient([lambda m: tool_call("list_files"),
                             lambda m: [tool_call("list_files"), tool_call("list_files")]])
    assert len(ask(client).choices[0].message.tool_calls) == 1
    assert len(ask(client).choices[0].message.tool_calls) == 2


def test_usage_is_present_and_adds_up():
    response = ask(ScriptedClient([reply("a fairly long answer " * 10)]))
    usage = response.usage
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_prompt_tokens_grow_with_the_history():
    client = ScriptedClient([reply("a"), reply("b")])
    short = ask(client).usage.prompt_tokens
    longer = ask(client, USER + [{"role": "user", "content": "more words " * 50}])
    assert longer.usage.prompt_tokens > short


# --- like a strict server, it rejects a history whose calls and results do not pair up -----

CALLED = {"role": "assistant", "content": "",
          "tool_calls": [{"id": "call_1", "type": "function",
                          "function": {"name": "list_files", "arguments": "{}"}},
                         {"id": "call_2", "type": "function",
                          "function": {"name": "list_files", "arguments": "{}"}}]}


def answer(call_id):
    return {"role": "tool", "tool_call_id": call_id, "content": "{}"}


@pytest.mark.parametrize("history, complaint", [
    ([*USER, CALLED], "no answer for ['call_1', 'call_2']"),
    ([*USER, CALLED, answer("call_1")], "no answer for ['call_2']"),
    ([*USER, CALLED, answer("call_1"), {"role": "user", "content": "next"}],
     "no answer for ['call_2']"),
    ([*USER, CALLED, answer("call_1"), answer("call_2"), answer("call_2")],
     "'call_2' answers no open tool call"),
    ([*USER, answer("call_9")], "'call_9' answers no open tool call"),
    ([*USER, CALLED, answer("call_1"), {"role": "user", "content": "next"}, answer("call_2")],
     "no answer for ['call_2']"),  # an answer that comes too late does not count
])
def test_an_unanswered_or_unmatched_call_is_rejected_with_http_400(history, complaint):
    client = ScriptedClient([reply("never")])
    with pytest.raises(openai.BadRequestError) as raised:
        ask(client, history)
    assert raised.value.status_code == 400 and complaint in str(raised.value)
    assert len(client.requests) == 1  # the bad request is still recorded, to be looked at


def test_a_fully_answered_history_is_accepted_in_any_order_of_results():
    history = [*USER, CALLED, answer("call_2"), answer("call_1")]
    assert ask(ScriptedClient([reply("fine")]), history).choices[0].message.content == "fine"

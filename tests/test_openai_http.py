"""Agent driven by the REAL openai SDK; only its HTTP layer is fake (httpx2.MockTransport).

The fake server reads every request body the SDK sends, so these tests see exactly what a
provider would receive, and answers with JSON shaped like the quirky providers out there."""

import json

import httpx2
import openai
import pytest
from test_loop import assert_history_valid

from agent import TOOLS, Agent

BASE_URL = "http://fake.test/v1"


class FakeServer:
    """Answers POST /v1/chat/completions with canned replies, in order; keeps every body."""

    def __init__(self, *replies):
        self.replies, self.bodies = list(replies), []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        assert request.method == "POST" and request.url == f"{BASE_URL}/chat/completions"
        assert request.headers["authorization"] == "Bearer test"
        self.bodies.append(json.loads(request.content))
        status, body = self.replies.pop(0)
        # json.dumps escapes as a real server does ("\\ud83d"), so any text can be sent
        return httpx2.Response(status, content=json.dumps(body).encode(),
                               headers={"content-type": "application/json"})

    def client(self) -> openai.OpenAI:
        transport = httpx2.MockTransport(self.handler)
        return openai.OpenAI(api_key="test", base_url=BASE_URL, max_retries=0,
                             http_client=httpx2.Client(transport=transport))


def ok(message: dict, finish_reason: str = "stop") -> tuple[int, dict]:
    return 200, {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", **message},
                     "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def call(call_id: str, name: str, **arguments) -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("alpha", encoding="utf-8")
    return tmp_path


def make_agent(server: FakeServer, events=None) -> Agent:
    return Agent(server.client(), "fake-model", on_event=events.append if events is not None
                 else None)


def test_every_request_body_carries_the_full_history_and_the_tools():
    server = FakeServer(ok({"content": None, "tool_calls": [call("c1", "list_files")]},
                           "tool_calls"),
                        ok({"content": "one file: a.txt"}))
    agent = make_agent(server)
    assert agent.chat("what is here?") == "one file: a.txt"
    first, second = server.bodies
    assert first == {"model": "fake-model", "messages": agent.messages[:2], "tools": TOOLS}
    assert second == {"model": "fake-model", "messages": agent.messages[:-1], "tools": TOOLS}


def test_tool_calls_with_finish_reason_stop_are_run_and_answered():
    server = FakeServer(ok({"content": None, "tool_calls": [call("c1", "read_file", path="a.txt")]},
                           finish_reason="stop"),
                        ok({"content": "it says alpha"}))
    agent = make_agent(server)
    assert agent.chat("read a.txt") == "it says alpha"
    assert agent.stop_reason == "done"
    tool_message = server.bodies[1]["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "c1",
                            "content": '{"path": "a.txt", "content": "alpha"}'}


def test_reasoning_content_is_sent_back_in_the_next_request():
    server = FakeServer(ok({"content": "", "reasoning_content": "The user wants a listing.",
                            "tool_calls": [call("c1", "list_files")]}, "tool_calls"),
                        ok({"content": "done", "reasoning_content": "Listed."}))
    agent = make_agent(server)
    agent.chat("list")
    sent_back = server.bodies[1]["messages"][2]
    assert sent_back["role"] == "assistant"
    assert sent_back["reasoning_content"] == "The user wants a listing."
    assert agent.messages[-1]["reasoning_content"] == "Listed."


def test_parallel_tool_calls_in_one_message_are_answered_in_order():
    calls = [call("c1", "read_file", path="a.txt"), call("c2", "read_file", path="nope.txt"),
             call("c3", "list_files", path=".")]
    server = FakeServer(ok({"content": None, "tool_calls": calls}, "tool_calls"),
                        ok({"content": "read one, one missing, listed"}))
    events = []
    agent = make_agent(server, events)
    agent.chat("do three things")
    sent = server.bodies[1]["messages"]
    assert [m["tool_call_id"] for m in sent[3:]] == ["c1", "c2", "c3"]
    assert json.loads(sent[3]["content"])["content"] == "alpha"
    assert json.loads(sent[4]["content"]) == {"error": "read_file: no such file: nope.txt"}
    assert json.loads(sent[5]["content"])["files"] == [{"name": "a.txt", "type": "file"}]
    assert [e["tool_call_id"] for e in events if e["type"] == "tool_execution_end"] == \
        ["c1", "c2", "c3"]


def test_function_call_beside_tool_calls_is_not_echoed_and_null_content_is_sent_as_empty():
    tool_calls = [call("c1", "list_files")]
    server = FakeServer(ok({"content": None, "tool_calls": tool_calls,
                            "function_call": {"name": "list_files", "arguments": "{}"}},
                           "tool_calls"),
                        ok({"content": "ok"}))
    agent = make_agent(server)
    agent.chat("list")
    sent_back = server.bodies[1]["messages"][2]
    assert sent_back == {"role": "assistant", "content": "", "tool_calls": tool_calls}


def test_usage_from_the_provider_reaches_the_assistant_message_end_event():
    server = FakeServer(ok({"content": "hi"}))
    events = []
    make_agent(server, events).chat("hello")
    [end] = [e for e in events if e["type"] == "message_end"
             and e["message"]["role"] == "assistant"]
    assert end["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def test_server_error_500_propagates_leaves_history_valid_and_next_chat_succeeds():
    server = FakeServer(
        ok({"content": None, "tool_calls": [call("c1", "list_files")]}, "tool_calls"),
        (500, {"error": {"message": "the server fell over", "type": "server_error"}}),
        ok({"content": "back up"}),
    )
    events = []
    agent = make_agent(server, events)
    with pytest.raises(openai.InternalServerError, match="the server fell over"):
        agent.chat("list")
    assert agent.stop_reason == "error"
    assert events[-1]["type"] == "agent_end" and "InternalServerError" in events[-1]["error"]
    assert_history_valid(agent.messages)
    assert agent.chat("try again") == "back up"
    assert agent.stop_reason == "done"
    sent = server.bodies[2]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert_history_valid(sent)


def test_bad_key_401_raises_authentication_error():
    server = FakeServer((401, {"error": {"message": "Incorrect API key", "type": "auth"}}))
    agent = make_agent(server)
    with pytest.raises(openai.AuthenticationError):
        agent.chat("hi")
    assert [m["role"] for m in agent.messages] == ["system", "user"]


def test_a_tool_call_without_an_id_gets_one_so_it_can_be_answered():
    no_id = {"type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}
    server = FakeServer(ok({"content": None, "tool_calls": [no_id]}), ok({"content": "read it"}))
    agent = make_agent(server)
    assert agent.chat("read a.txt") == "read it"
    call_id = agent.messages[2]["tool_calls"][0]["id"]
    assert call_id and agent.messages[3] == {
        "role": "tool", "tool_call_id": call_id, "content": '{"path": "a.txt", "content": "alpha"}'}
    assert server.bodies[1]["messages"] == agent.messages[:4]
    assert_history_valid(agent.messages)


def test_a_lone_surrogate_from_the_server_does_not_fail_the_next_request(capsys):
    """Half an emoji in the model's text and in a call's arguments, as some servers send: the
    history keeps a sendable form of it, the next request goes out, the default printer copes."""
    half = "\ud83d"
    server = FakeServer(
        ok({"content": f"reading {half}", "tool_calls": [
            call("c1", "read_file", path="a.txt", note=half)]}, "tool_calls"),
        ok({"content": f"done {half}"}))
    agent = Agent(server.client(), "fake-model")  # print_event, the default handler
    assert agent.chat("go").startswith("done")
    assert agent.stop_reason == "done" and len(server.bodies) == 2
    sent = json.dumps(server.bodies[1], ensure_ascii=False)
    assert half not in sent and "reading ?" in sent
    assert_history_valid(agent.messages)
    assert "agent:       done ?" in capsys.readouterr().out  # printed, not raised

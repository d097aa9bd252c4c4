"""Lesson 11's StreamingAgent driven by the REAL openai SDK; only its HTTP layer is fake
(httpx2.MockTransport). The fake server answers from lesson 11's scripted model that streams,
writes each stream as server-sent events the way servers do (keep-alive comments, CRLF line
ends, "data:" with or without a space, "data: [DONE]"), and hands the bytes over a few at a
time, cut anywhere: inside a "data:" line, inside a UTF-8 character."""

import json
import random

import course
import httpx2
import openai
import pytest
from props.streaming_model import (  # a prop: it streams offline
    SERVER_STYLES,
    StreamingScriptedClient,
)
from test_loop import assert_history_valid

from agent import Agent, ScriptedClient, reply, step, tool_call

nb = course.load_notebook("11-streaming")
BASE_URL = "http://fake.test/v1"

SCRIPTS = {
    "text": [reply("Streaming, 你好 — über ünïcödé, and \"quotes\".")],
    "parallel calls": [step(tool_call("edit_file", path="n.md", old_str="",
                                      new_str="# 你好\n\"hi\"\n"),
                            tool_call("read_file", path="n.md"), content="Two calls."),
                       reply("Done.", reasoning_content="Both went well.")],
    "escapes": [tool_call("edit_file", raw_arguments='{"path": "a\\u00e9.txt", "old_str": "", '
                          '"new_str": "\\ud83d\\ude00 \\"q\\" \\\\"}'), reply("ok")],
    "malformed": [tool_call("read_file", raw_arguments='{"path": "x'), reply("Sorry.")],
}


class SSEServer:
    """Answers POST /v1/chat/completions from a StreamingScriptedClient; keeps every body."""

    def __init__(self, scripted, *, seed=0, crlf=False, space=True, keep_alive=True,
                 done=True, reads=(1, 40), chunk_json=None, breaks_after=None, ascii=False):
        self.scripted, self.bodies, self.ascii = scripted, [], ascii  # ascii: \u escapes only
        self.rng = random.Random(seed)
        self.crlf, self.space, self.keep_alive, self.done = crlf, space, keep_alive, done
        self.reads, self.chunk_json, self.breaks_after = reads, chunk_json, breaks_after

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        assert request.method == "POST" and request.url == f"{BASE_URL}/chat/completions"
        body = json.loads(request.content)
        self.bodies.append(body)
        try:
            answer = self.scripted.chat.completions.create(**body)
        except openai.BadRequestError as exc:  # what a strict server answers
            return httpx2.Response(400, json={"error": {"message": str(exc),
                                                        "type": "invalid_request_error"}})
        if not body.get("stream"):
            return httpx2.Response(200, json=answer.model_dump(mode="json"))
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=self.pieces(self.events(list(answer))))

    def events(self, chunks) -> bytes:
        end = "\r\n" if self.crlf else "\n"
        lines = []
        for chunk in chunks:
            data = chunk.model_dump(mode="json", exclude_unset=True)
            if self.chunk_json:
                data = self.chunk_json(data)
            if self.keep_alive and self.rng.random() < 0.3:
                lines.append(f": keep-alive{end}{end}")
            lines.append(f"data:{' ' if self.space else ''}"
                         f"{json.dumps(data, ensure_ascii=self.ascii)}{end}{end}")
        if self.done:
            lines.append(f"data: [DONE]{end}{end}")
        return "".join(lines).encode("utf-8")

    def pieces(self, data: bytes):
        """data in reads of random sizes, one of them cut inside a UTF-8 character."""
        cuts = set()
        wide = next((i for i, byte in enumerate(data) if byte >= 0xC0), None)
        if wide is not None:
            cuts.add(wide + 1)  # between the first and second byte of a character
        at = 0
        while at < len(data):
            at += self.rng.randint(*self.reads)
            cuts.add(at)
        edges = [0, *sorted(c for c in cuts if 0 < c < len(data)), len(data)]
        for n, (a, b) in enumerate(zip(edges, edges[1:], strict=False)):
            if self.breaks_after is not None and n == self.breaks_after:
                raise httpx2.RemoteProtocolError("peer closed connection without sending "
                                                 "complete message body")
            yield data[a:b]

    def client(self) -> openai.OpenAI:
        transport = httpx2.MockTransport(self.handler)
        return openai.OpenAI(api_key="test", base_url=BASE_URL, max_retries=0,
                             http_client=httpx2.Client(transport=transport))


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def plain_history(script, folder):
    for path in folder.iterdir():
        path.unlink()
    bot = Agent(ScriptedClient(script), "scripted", on_event=None)
    bot.chat("go")
    for path in folder.iterdir():
        path.unlink()
    return bot.messages


def over_http(script, **server_options):
    server = SSEServer(StreamingScriptedClient(script, seed=server_options.pop("cuts", 0),
                                               server=server_options.pop("style", "openai"),
                                               utf16=server_options.pop("utf16", False)),
                       **server_options)
    events = []
    bot = nb.StreamingAgent(server.client(), "scripted", on_event=events.append)
    return bot, server, events


@pytest.mark.parametrize("name", SCRIPTS)
def test_the_real_sdk_reading_server_sent_events_gives_the_history_not_streamed(name, in_tmp):
    expected = plain_history(SCRIPTS[name], in_tmp)
    for seed in range(3):
        for style in SERVER_STYLES:
            for path in in_tmp.iterdir():
                path.unlink()
            bot, server, _ = over_http(SCRIPTS[name], seed=seed, cuts=seed, style=style)
            bot.chat("go")
            assert bot.messages == expected, (seed, style)
            assert all(b["stream"] is True and b["stream_options"] == {"include_usage": True}
                       for b in server.bodies)


def test_half_an_emoji_in_each_of_two_events_is_one_character_again(in_tmp):
    """A server that escapes non-ASCII and cuts text by UTF-16 units sends an emoji as
    "\\ud83d" in one event and "\\ude00" in the next; the SDK decodes each event on its own.
    The pieces are joined before they are used: the history is the one not streamed."""
    script = [step(tool_call("edit_file", path="smile.md", old_str="", new_str="😀 hi 👋\n"),
                   content="A 😀 for you."), reply("Done 😀👋.")]
    expected = plain_history(script, in_tmp)
    for seed in range(4):
        for path in in_tmp.iterdir():
            path.unlink()
        bot, server, _ = over_http(script, seed=seed, cuts=seed, utf16=True, ascii=True)
        bot.chat("go")
        assert bot.messages == expected, seed
        assert (in_tmp / "smile.md").read_text(encoding="utf-8") == "😀 hi 👋\n"


@pytest.mark.parametrize("variant", [{"crlf": True}, {"space": False}, {"keep_alive": False},
                                     {"reads": (1, 1)}, {"reads": (500, 5000)}])
def test_line_ends_spaces_comments_and_read_sizes_do_not_change_the_history(variant, in_tmp):
    expected = plain_history(SCRIPTS["parallel calls"], in_tmp)
    bot, _, _ = over_http(SCRIPTS["parallel calls"], **variant)
    bot.chat("go")
    assert bot.messages == expected


def test_usage_from_the_last_chunk_reaches_message_end(in_tmp):
    bot, _, events = over_http(SCRIPTS["text"])
    bot.chat("go")
    [end] = [e for e in events if e["type"] == "message_end"
             and e["message"]["role"] == "assistant"]
    assert end["usage"]["total_tokens"] == end["usage"]["prompt_tokens"] + \
        end["usage"]["completion_tokens"] > 0


def test_tool_call_deltas_without_an_index_as_old_ollama_sent_them(in_tmp):
    def no_index(data):
        for choice in data.get("choices", []):
            for call in choice["delta"].get("tool_calls", []):
                call.pop("index")
        return data

    script = [tool_call("read_file", path="a.txt"), reply("It is empty.")]
    (in_tmp / "a.txt").write_text("")
    expected = plain_history(script, in_tmp)
    (in_tmp / "a.txt").write_text("")
    bot, _, _ = over_http(script, chunk_json=no_index)
    bot.chat("go")
    assert bot.messages[:3] == expected[:3]


def test_a_stream_that_ends_without_finishing_is_an_error_and_the_agent_goes_on(in_tmp):
    script = [tool_call("edit_file", path="x.md", old_str="", new_str="a long text " * 5),
              reply("ok")]
    scripted = StreamingScriptedClient(script, drop={1: 8})
    server = SSEServer(scripted, done=False)
    events = []
    bot = nb.StreamingAgent(server.client(), "scripted", on_event=events.append)
    with pytest.raises(nb.IncompleteStream, match="no finish_reason after 8 chunks"):
        bot.chat("write")
    assert not (in_tmp / "x.md").exists()
    assert not [e for e in events if e["type"] == "tool_execution_start"]
    assert_history_valid(bot.messages)
    server.done = True
    scripted.steps.insert(1, script[0])  # the model is asked again: it sends the call whole
    assert bot.chat("again, please") == "ok"
    assert (in_tmp / "x.md").exists()
    assert [m["role"] for m in server.bodies[1]["messages"]] == ["system", "user", "user"]


def test_a_connection_that_breaks_mid_stream_leaves_the_history_valid(in_tmp):
    script = [tool_call("edit_file", path="x.md", old_str="", new_str="x" * 200)]
    server = SSEServer(StreamingScriptedClient(script), breaks_after=4)
    bot = nb.StreamingAgent(server.client(), "scripted", on_event=None)
    with pytest.raises(openai.APIConnectionError):
        bot.chat("write")
    assert [m["role"] for m in bot.messages] == ["system", "user"]
    assert bot.stop_reason == "error" and not (in_tmp / "x.md").exists()


def test_an_error_event_in_the_stream_is_raised_by_the_sdk(in_tmp):
    def handler(request):
        body = ('data: {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": '
                '"m", "choices": [{"index": 0, "delta": {"content": "Hel"}, '
                '"finish_reason": null}]}\n\n'
                'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n')
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=body.encode())

    client = openai.OpenAI(api_key="t", base_url=BASE_URL, max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    bot = nb.StreamingAgent(client, "m", on_event=None)
    with pytest.raises(openai.APIError, match="overloaded"):
        bot.chat("hi")
    assert [m["role"] for m in bot.messages] == ["system", "user"]


def test_a_server_that_does_not_stream_is_told_apart_from_a_reply(in_tmp):
    scripted = StreamingScriptedClient([reply("whole")])

    def handler(request):  # ignores "stream": true and sends one JSON body
        body = json.loads(request.content)
        body.pop("stream"), body.pop("stream_options")
        return httpx2.Response(200, json=scripted.chat.completions.create(**body)
                               .model_dump(mode="json"))

    client = openai.OpenAI(api_key="t", base_url=BASE_URL, max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    with pytest.raises(nb.IncompleteStream, match="0 chunks.*server does not stream"):
        nb.StreamingAgent(client, "m", on_event=None).chat("hi")


def test_a_strict_servers_400_comes_through_the_sdk_as_bad_request(in_tmp):
    server = SSEServer(StreamingScriptedClient([reply("never")]))
    unanswered = [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]
    with pytest.raises(openai.BadRequestError, match="no answer for"):
        server.client().chat.completions.create(model="m", messages=unanswered, stream=True)

"""Checks of lesson 11's coding exercises. Each runs the student's code on the lesson's own
module (streaming: the notebook's export cells), on the scripted model that streams."""

import json

import course
import httpx2
import openai
import streaming
from props import streaming_model  # the scripted model that streams
from props.clock import FakeClock

import agent
from agent import Agent, reply, tool_call


def paced(script, clock, **options):
    """A scripted model that streams one chunk every 50 ms of the fake clock."""
    return streaming_model.StreamingScriptedClient(script, interval=0.05, sleep=clock.advance,
                                             **options)


def reply_chunks(client, n):
    """How many chunks of response n carry a choice (the usage chunk comes with the last)."""
    return sum(1 for chunk in client.streams[n] if chunk.choices)


def close(a, b):
    return abs(a - b) < 1e-9


@course.exercise("11.1", "time to the first piece (latency)", "到第一块内容的时间（延迟）")
def _(t, latency):
    script = [tool_call("list_files", path="."), reply("Nothing here but me.")]

    def measure(agent_class, script):
        """Run script on a paced scripted model; return (the rows, the client)."""
        clock = FakeClock(0.0)
        on_event, rows = latency(clock)
        client = paced(script, clock)
        agent_class(client, "scripted", on_event=on_event).chat("look")
        return rows, client

    with t.case("a streamed reply: its first piece after one chunk (0.05 s), the whole after "
                "all its chunks",
                "流式回复：一个数据块之后（0.05 秒）出现第一块内容，全部数据块之后才完整"):
        rows, client = measure(streaming.StreamingAgent, script)
        assert len(rows) == 2, f"two model calls, so two rows; the rows are {rows}"
        turn, first, whole = rows[0]
        assert turn == 1, f"the first row should be turn 1, not {turn!r}"
        assert close(first, 0.05), f"the first piece came after 0.05 s; the row says {first}"
        expected = 0.05 * reply_chunks(client, 1)
        assert close(whole, expected), f"the whole reply took {expected:.2f} s, not {whole}"

    with t.case("each call is measured from its own message_start, not from the run's start",
                "每次调用从自己的 message_start 开始计时，而不是从运行开始"):
        rows, client = measure(streaming.StreamingAgent, script)
        turn, first, whole = rows[1]
        assert turn == 2, f"the second row should be turn 2, not {turn!r}"
        assert close(first, 0.05), f"turn 2's first piece came 0.05 s after its start, " \
                                   f"not {first}"
        expected = 0.05 * reply_chunks(client, 2)
        assert close(whole, expected), f"turn 2 took {expected:.2f} s, not {whole}"

    with t.case("a reply that is not streamed (agent.Agent): first == whole",
                "不是流式的回复（agent.Agent）：first == whole"):
        rows, client = measure(Agent, script)
        assert [r[0] for r in rows] == [1, 2], f"the rows are {rows}"
        for (_, first, whole), n in zip(rows, (1, 2), strict=True):
            assert close(first, whole), f"nothing arrived before the whole reply: {first} " \
                                        f"should equal {whole}"
            assert close(whole, 0.05 * reply_chunks(client, n)), \
                f"the reply took {0.05 * reply_chunks(client, n):.2f} s, not {whole}"

    with t.case("an empty streamed reply, with no piece at all: first == whole",
                "空的流式回复，一块内容也没有：first == whole"):
        rows, _ = measure(streaming.StreamingAgent, [reply("")])
        assert len(rows) == 1 and close(rows[0][1], rows[0][2]), f"the rows are {rows}"


@course.exercise("11.2", "stop a stream early (stop_when)", "提前停止流式输出（stop_when）")
def _(t, stop_when, StopStream):
    def run(script, words, piece=(1, 2)):
        """Run the script with stop_when(words); return (agent, client, events, raised)."""
        client = streaming_model.StreamingScriptedClient(script, piece=piece)
        events = []
        bot = streaming.StreamingAgent(client, "scripted",
                                       on_event=agent.fan_out(stop_when(words, StopStream),
                                                              events.append))
        try:
            bot.chat("go")
        except StopStream as exc:
            return bot, client, events, exc
        return bot, client, events, None

    dangerous = [reply("Fine so far. Then: DROP TABLE users; and more words after it, many "
                       "more words.")]

    with t.case("the words, arriving split over several pieces, stop the stream early",
                "这些词分成几块到达，仍能提前停止流"):
        bot, client, _, raised = run(dangerous, "DROP TABLE")
        assert raised is not None, "the reply contained the words, and the run went on"
        assert client.delivered[1] < len(client.streams[1]), \
            "the whole stream was read: stop as soon as the words have arrived"

    with t.case("the history stays valid: the reply was not kept, the stop reason is error",
                "消息历史仍然有效：回复没有保留，停止原因是 error"):
        bot, _, _, _ = run(dangerous, "DROP TABLE")
        assert [m["role"] for m in bot.messages] == ["system", "user"], \
            f"the history holds {[m['role'] for m in bot.messages]}"
        assert bot.stop_reason == "error", f"the stop reason is {bot.stop_reason!r}"

    with t.case("a tool call whose arguments bring the words never runs",
                "参数里带着这些词的工具调用永远不会运行"):
        with course.scratch("11.2-call"):
            call = tool_call("edit_file", path="drop.sql", old_str="",
                             new_str="DROP TABLE users;\n")
            bot, _, events, raised = run([call, reply("Done.")], "DROP TABLE")
            assert raised is not None, "the call's arguments held the words, and the run went on"
            started = [e for e in events if e["type"] == "tool_execution_start"]
            assert not started, "the tool ran"
            assert agent.pairing_problem(bot.messages) is None

    with t.case("a tool call's arguments are read as the tool gets them: JSON's escapes do not "
                "hide the words", "工具调用的参数按工具拿到的样子读：JSON 的转义藏不住这些词"):
        with course.scratch("11.2-escaped"):
            command = 'rm -rf "/" && echo ' + "and more " * 30  # a quote arrives as \"
            call = tool_call("edit_file", path="go.sh", old_str="", new_str=command)
            bot, client, events, raised = run([call, reply("Done.")], 'rm -rf "/"')
            assert raised is not None, \
                'the arguments said rm -rf "/" (in JSON: rm -rf \\"/\\"), and the run went on'
            assert client.delivered[1] < len(client.streams[1]) // 2, \
                "the call's arguments were read to their end first: stop as soon as what they " \
                "say so far holds the words"
            assert not [e for e in events if e["type"] == "tool_execution_start"], "the tool ran"
            escaped = tool_call("edit_file", raw_arguments='{"path": "caf\\u00e9.txt", '
                                '"old_str": "", "new_str": "x"}')  # é as a \u escape
            _, _, _, raised = run([escaped, reply("Done.")], "café")
            assert raised is not None, \
                'the path was café.txt (in JSON: "caf\\u00e9.txt"), and the run went on'

    with t.case("a reply without the words runs to the end", "不含这些词的回复一直运行到结束"):
        bot, _, _, raised = run([tool_call("list_files", path="."), reply("Nothing to drop.")],
                                "DROP TABLE")
        assert raised is None, f"the run was stopped: {raised}"
        assert bot.messages[-1]["content"] == "Nothing to drop.", "the run did not finish"

    with t.case("each reply is looked at on its own: the words split over two replies do not "
                "stop the run", "每个回复单独看：分在两个回复里的词不会停止运行"):
        client = streaming_model.StreamingScriptedClient([reply("I will not DROP"),
                                                    reply(" TABLE anything.")], piece=(1, 2))
        bot = streaming.StreamingAgent(client, "scripted",
                                       on_event=stop_when("DROP TABLE", StopStream))
        bot.chat("one")
        try:
            bot.chat("two")
        except StopStream:
            raise AssertionError("the words came half in one reply, half in the next: start "
                                 "afresh at each message_start") from None


def value_ends(text: str) -> list[tuple[str, int, bool]]:
    """For a complete JSON object: each key, where its value ends, and whether it is a
    number (which may still grow when the text ends right after it)."""
    decoder, i, found = json.JSONDecoder(), text.index("{") + 1, []
    while True:
        while text[i] in " \t\r\n,":
            i += 1
        if text[i] == "}":
            return found
        key, i = decoder.raw_decode(text, i)
        i = text.index(":", i) + 1
        while text[i] in " \t\r\n":
            i += 1
        value, i = decoder.raw_decode(text, i)
        found.append((key, i, isinstance(value, (int, float)) and not isinstance(value, bool)))


def expected_keys(full: str, prefix_length: int) -> list[str]:
    return [key for key, end, number in value_ends(full)
            if end < prefix_length or end == prefix_length and not number]


CORPUS = [
    json.dumps({"path": "notes.md", "old_str": "", "new_str": "# Notes\n\"hi\"\n"}),
    json.dumps({"n": 123, "x": -4.5e2, "ok": True, "none": None, "flag": False}),
    json.dumps({"opts": {"deep": [1, {"a": "}"}]}, "list": [], "s": "a,b:c"}),
    '{\n  "path" : "a\\u00e9.txt",\n  "lines": [ 1 , 2 ],\n  "k": "v\\\\"\n}',
]


@course.exercise("11.3", "which arguments are complete (complete_keys)",
                         "哪些参数已经完整（complete_keys）")
def _(t, complete_keys):
    with t.case('a string value is complete once its closing quote came',
                "字符串值在结尾的引号到达后就完整了"):
        got = complete_keys('{"path": "a.md", "new_str": "# No')
        assert got == ["path"], f'{{"path": "a.md", "new_str": "# No gave {got}'
        got = complete_keys('{"path": "a.m')
        assert got == [], f'{{"path": "a.m gave {got}: "a.m may still grow'

    with t.case("a number at the very end may still grow; followed by something, it is done",
                "末尾的数字还可能变长；后面跟了东西，就完整了"):
        for text, keys in (('{"n": 12', []), ('{"n": 12,', ["n"]), ('{"n": 12}', ["n"]),
                           ('{"n": 12 ', ["n"])):
            assert complete_keys(text) == keys, f"{text!r} gave {complete_keys(text)}, " \
                                                f"not {keys}"

    with t.case("true, false, null are complete when whole; objects and arrays when closed",
                "true、false、null 写全了才完整；对象和数组要闭合才完整"):
        for text, keys in (('{"ok": tru', []), ('{"ok": true', ["ok"]),
                           ('{"a": {"b": 1}, "c": [1, 2', ["a"]),
                           ('{"a": {"b": 1}, "c": [1, 2]', ["a", "c"])):
            assert complete_keys(text) == keys, f"{text!r} gave {complete_keys(text)}, " \
                                                f"not {keys}"

    with t.case("on every prefix of four argument strings, exactly the keys whose values "
                "are final", "在四个参数字符串的每个前缀上，恰好给出值已经确定的键"):
        for full in CORPUS:
            for n in range(len(full) + 1):
                got, want = complete_keys(full[:n]), expected_keys(full, n)
                assert got == want, f"{full[:n]!r} gave {got}, not {want}"

    with t.case("text that is not a JSON object gives []", "不是 JSON 对象的文本给出 []"):
        for text in ("", "hello", "[1, 2]", '"just a string"'):
            assert complete_keys(text) == [], f"{text!r} gave {complete_keys(text)}"


@course.exercise("11.4", "try a dropped stream again (RetryingAgent)",
                         "重试断掉的流（RetryingAgent）")
def _(t, RetryingAgent):
    call = tool_call("list_files", path=".")
    script = [call, reply("Nothing here.")]
    retried = [call, call, reply("Nothing here.")]  # each request takes the next step, a
    # retried one too: the model, asked the same again, answers the same again

    def normalised(messages):
        """The history with call ids replaced by their order: a retried reply takes new ids."""
        ids = {c["id"]: f"call {n}" for n, c in enumerate(
            c for m in messages for c in m.get("tool_calls", []))}
        text = json.dumps(messages)
        for old, new in ids.items():
            text = text.replace(json.dumps(old), json.dumps(new))
        return json.loads(text)

    def raising(error):
        def respond(messages):
            raise error
        return respond

    with t.case("a stream dropped once is asked again, with the same request, and the run "
                "goes on", "断过一次的流用同一个请求重新请求，运行继续"):
        events = []
        client = streaming_model.StreamingScriptedClient(retried, drop={1: 3})
        bot = RetryingAgent(client, "scripted", on_event=events.append)
        answer = bot.chat("look")
        assert answer == "Nothing here.", f"the run ended with {answer!r}"
        assert len(client.requests) == 3, f"{len(client.requests)} requests, not 3"
        assert client.requests[0] == client.requests[1], "the retry sent another request"

    with t.case("the history is the one an undisturbed run builds, and the tool ran once",
                "消息历史和没被打断的运行一样，工具只运行了一次"):
        events = []
        bot = RetryingAgent(streaming_model.StreamingScriptedClient(retried, drop={1: 3}),
                            "scripted", on_event=events.append)
        bot.chat("look")
        calm = streaming.StreamingAgent(streaming_model.StreamingScriptedClient(script), "scripted",
                                        on_event=None)
        calm.chat("look")
        assert normalised(bot.messages) == normalised(calm.messages), "the histories differ"
        started = [e for e in events if e["type"] == "tool_execution_start"]
        assert len(started) == 1, f"the tool ran {len(started)} times"

    with t.case("dropped twice in a row: IncompleteStream goes up, the history stays valid",
                "连续断两次：IncompleteStream 往上抛，消息历史仍然有效"):
        client = streaming_model.StreamingScriptedClient(retried, drop={1: 3, 2: 3})
        bot = RetryingAgent(client, "scripted", on_event=None)
        try:
            bot.chat("look")
            raise AssertionError("two drops in a row, and no error came up")
        except streaming.IncompleteStream:
            pass
        assert len(client.requests) == 2, f"{len(client.requests)} requests: retry once"
        assert [m["role"] for m in bot.messages] == ["system", "user"]

    with t.case("a connection that fails (openai.APIConnectionError) is retried too",
                "连接失败（openai.APIConnectionError）也会重试"):
        failure = openai.APIConnectionError(request=httpx2.Request("POST", "http://x/v1"))
        client = streaming_model.StreamingScriptedClient([raising(failure), reply("Back again.")])
        bot = RetryingAgent(client, "scripted", on_event=None)
        assert bot.chat("hello") == "Back again.", "the failed call was not asked again"

    with t.case("any other error is not retried: a 400 goes up at once",
                "其他错误不重试：400 立刻往上抛"):
        response = httpx2.Response(400, request=httpx2.Request("POST", "http://x"))
        refused = openai.BadRequestError("bad request", response=response, body=None)
        client = streaming_model.StreamingScriptedClient([raising(refused), reply("no")])
        bot = RetryingAgent(client, "scripted", on_event=None)
        try:
            bot.chat("hello")
            raise AssertionError("a 400 was retried until it went through")
        except openai.BadRequestError:
            pass
        assert len(client.requests) == 1, f"{len(client.requests)} requests for one 400"

    with t.case("retries = 2 asks twice more", "retries = 2 时再请求两次"):
        class Twice(RetryingAgent):
            retries = 2

        client = streaming_model.StreamingScriptedClient([call, *retried], drop={1: 3, 2: 3})
        assert Twice(client, "scripted", on_event=None).chat("look") == "Nothing here."

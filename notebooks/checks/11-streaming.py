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
        assert len(rows) == 2, course.both(
            f"two model calls, so two rows; the rows are {rows}",
            f"两次模型调用，所以应有两行；返回的行是 {rows}")
        turn, first, whole = rows[0]
        assert turn == 1, course.both(f"the first row should be turn 1, not {turn!r}",
                                      f"第一行应该是轮次 1，不是 {turn!r}")
        assert close(first, 0.05), course.both(
            f"the first piece came after 0.05 s; the row says {first}",
            f"第一块内容在 0.05 秒后到达；这一行写的是 {first}")
        expected = 0.05 * reply_chunks(client, 1)
        assert close(whole, expected), course.both(
            f"the whole reply took {expected:.2f} s, not {whole}",
            f"整条回复用了 {expected:.2f} 秒，不是 {whole}")

    with t.case("each call is measured from its own message_start, not from the run's start",
                "每次调用从自己的 message_start 开始计时，而不是从运行开始"):
        rows, client = measure(streaming.StreamingAgent, script)
        turn, first, whole = rows[1]
        assert turn == 2, course.both(f"the second row should be turn 2, not {turn!r}",
                                      f"第二行应该是轮次 2，不是 {turn!r}")
        assert close(first, 0.05), course.both(
            f"turn 2's first piece came 0.05 s after its start, not {first}",
            f"轮次 2 的第一块内容在它开始 0.05 秒后到达，不是 {first}")
        expected = 0.05 * reply_chunks(client, 2)
        assert close(whole, expected), course.both(f"turn 2 took {expected:.2f} s, not {whole}",
                                                   f"轮次 2 用了 {expected:.2f} 秒，不是 {whole}")

    with t.case("a reply that is not streamed (agent.Agent): first == whole",
                "不是流式的回复（agent.Agent）：first == whole"):
        rows, client = measure(Agent, script)
        assert [r[0] for r in rows] == [1, 2], course.both(f"the rows are {rows}",
                                                           f"返回的行是 {rows}")
        for (_, first, whole), n in zip(rows, (1, 2), strict=True):
            assert close(first, whole), course.both(
                f"nothing arrived before the whole reply: {first} should equal {whole}",
                f"整条回复之前什么也没到：{first} 应该等于 {whole}")
            assert close(whole, 0.05 * reply_chunks(client, n)), course.both(
                f"the reply took {0.05 * reply_chunks(client, n):.2f} s, not {whole}",
                f"回复用了 {0.05 * reply_chunks(client, n):.2f} 秒，不是 {whole}")

    with t.case("an empty streamed reply, with no piece at all: first == whole",
                "空的流式回复，一块内容也没有：first == whole"):
        rows, _ = measure(streaming.StreamingAgent, [reply("")])
        assert len(rows) == 1 and close(rows[0][1], rows[0][2]), course.both(
            f"the rows are {rows}", f"返回的行是 {rows}")


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
                "这些词拆成几块到达，也能提前停下这个流"):
        bot, client, _, raised = run(dangerous, "DROP TABLE")
        assert raised is not None, course.both(
            "the reply contained the words, and the run went on", "回复里有这些词，运行却继续了")
        assert client.delivered[1] < len(client.streams[1]), course.both(
            "the whole stream was read: stop as soon as the words have arrived",
            "整个流都读完了：这些词一到就要停下")

    with t.case("the history stays valid: the reply was not kept, the stop reason is error",
                "消息历史仍然有效：回复没有保留，停止原因是 error"):
        bot, _, _, _ = run(dangerous, "DROP TABLE")
        assert [m["role"] for m in bot.messages] == ["system", "user"], course.both(
            f"the history holds {[m['role'] for m in bot.messages]}",
            f"消息历史里的角色是 {[m['role'] for m in bot.messages]}")
        assert bot.stop_reason == "error", course.both(f"the stop reason is {bot.stop_reason!r}",
                                                       f"停止原因是 {bot.stop_reason!r}")

    with t.case("a tool call whose arguments bring the words never runs",
                "参数里带着这些词的工具调用永远不会运行"):
        with course.scratch("11.2-call"):
            call = tool_call("edit_file", path="drop.sql", old_str="",
                             new_str="DROP TABLE users;\n")
            bot, _, events, raised = run([call, reply("Done.")], "DROP TABLE")
            assert raised is not None, course.both(
                "the call's arguments held the words, and the run went on",
                "调用的参数里有这些词，运行却继续了")
            started = [e for e in events if e["type"] == "tool_execution_start"]
            assert not started, course.both("the tool ran", "工具运行了")
            assert agent.pairing_problem(bot.messages) is None

    with t.case("a tool call's arguments are read as the tool gets them: JSON's escapes do not "
                "hide the words", "工具调用的参数按工具拿到的样子读：JSON 的转义藏不住这些词"):
        with course.scratch("11.2-escaped"):
            command = 'rm -rf "/" && echo ' + "and more " * 30  # a quote arrives as \"
            call = tool_call("edit_file", path="go.sh", old_str="", new_str=command)
            bot, client, events, raised = run([call, reply("Done.")], 'rm -rf "/"')
            assert raised is not None, course.both(
                'the arguments said rm -rf "/" (in JSON: rm -rf \\"/\\"), and the run went on',
                '参数写的是 rm -rf "/"（JSON 里是 rm -rf \\"/\\"），运行却继续了')
            assert client.delivered[1] < len(client.streams[1]) // 2, course.both(
                "the call's arguments were read to their end first: stop as soon as what they "
                "say so far holds the words",
                "调用的参数先被读到了末尾：只要已经到达的参数里出现这些词，就要停下")
            assert not [e for e in events if e["type"] == "tool_execution_start"], course.both(
                "the tool ran", "工具运行了")
            escaped = tool_call("edit_file", raw_arguments='{"path": "caf\\u00e9.txt", '
                                '"old_str": "", "new_str": "x"}')  # é as a \u escape
            _, _, _, raised = run([escaped, reply("Done.")], "café")
            assert raised is not None, course.both(
                'the path was café.txt (in JSON: "caf\\u00e9.txt"), and the run went on',
                '路径是 café.txt（JSON 里是 "caf\\u00e9.txt"），运行却继续了')

    with t.case("a reply without the words runs to the end",
                "回复里没有这些词时，运行一直进行到结束"):
        bot, _, _, raised = run([tool_call("list_files", path="."), reply("Nothing to drop.")],
                                "DROP TABLE")
        assert raised is None, course.both(f"the run was stopped: {raised}",
                                           f"运行被停下了：{raised}")
        assert bot.messages[-1]["content"] == "Nothing to drop.", course.both(
            "the run did not finish", "运行没有跑完")

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
            raise AssertionError(course.both(
                "the words came half in one reply, half in the next: start afresh at each "
                "message_start",
                "这些词一半在一个回复里，一半在下一个回复里："
                "每到 message_start 都要从头开始")) from None


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
        assert got == ["path"], course.both(f'{{"path": "a.md", "new_str": "# No gave {got}',
                                            f'{{"path": "a.md", "new_str": "# No 得出 {got}')
        got = complete_keys('{"path": "a.m')
        assert got == [], course.both(f'{{"path": "a.m gave {got}: "a.m may still grow',
                                      f'{{"path": "a.m 得出 {got}："a.m 还可能变长')

    with t.case("a number at the very end may still grow; followed by something, it is done",
                "末尾的数字还可能变长；后面跟了东西，就完整了"):
        for text, keys in (('{"n": 12', []), ('{"n": 12,', ["n"]), ('{"n": 12}', ["n"]),
                           ('{"n": 12 ', ["n"])):
            assert complete_keys(text) == keys, course.both(
                f"{text!r} gave {complete_keys(text)}, not {keys}",
                f"对 {text!r} 得出 {complete_keys(text)}，不是 {keys}")

    with t.case("true, false, null are complete when whole; objects and arrays when closed",
                "true、false、null 写全了才完整；对象和数组要闭合才完整"):
        for text, keys in (('{"ok": tru', []), ('{"ok": true', ["ok"]),
                           ('{"a": {"b": 1}, "c": [1, 2', ["a"]),
                           ('{"a": {"b": 1}, "c": [1, 2]', ["a", "c"])):
            assert complete_keys(text) == keys, course.both(
                f"{text!r} gave {complete_keys(text)}, not {keys}",
                f"对 {text!r} 得出 {complete_keys(text)}，不是 {keys}")

    with t.case("on every prefix of four argument strings, exactly the keys whose values "
                "are final", "在四个参数字符串的每个前缀上，恰好给出值已经确定的键"):
        for full in CORPUS:
            for n in range(len(full) + 1):
                got, want = complete_keys(full[:n]), expected_keys(full, n)
                assert got == want, course.both(f"{full[:n]!r} gave {got}, not {want}",
                                                f"对 {full[:n]!r} 得出 {got}，不是 {want}")

    with t.case("text that is not a JSON object gives []", "不是 JSON 对象的文本给出 []"):
        for text in ("", "hello", "[1, 2]", '"just a string"'):
            assert complete_keys(text) == [], course.both(
                f"{text!r} gave {complete_keys(text)}", f"对 {text!r} 得出 {complete_keys(text)}")


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
                "goes on", "流断了一次：用同一个请求再请求一次，运行继续"):
        events = []
        client = streaming_model.StreamingScriptedClient(retried, drop={1: 3})
        bot = RetryingAgent(client, "scripted", on_event=events.append)
        answer = bot.chat("look")
        assert answer == "Nothing here.", course.both(f"the run ended with {answer!r}",
                                                      f"运行以 {answer!r} 结束")
        assert len(client.requests) == 3, course.both(
            f"{len(client.requests)} requests, not 3",
            f"发出了 {len(client.requests)} 个请求，不是 3 个")
        assert client.requests[0] == client.requests[1], course.both(
            "the retry sent another request", "重试发出的请求和原来的不一样")

    with t.case("the history is the one an undisturbed run builds, and the tool ran once",
                "消息历史和没被打断的运行一样，工具只运行了一次"):
        events = []
        bot = RetryingAgent(streaming_model.StreamingScriptedClient(retried, drop={1: 3}),
                            "scripted", on_event=events.append)
        bot.chat("look")
        calm = streaming.StreamingAgent(streaming_model.StreamingScriptedClient(script), "scripted",
                                        on_event=None)
        calm.chat("look")
        assert normalised(bot.messages) == normalised(calm.messages), course.both(
            "the histories differ", "两段消息历史不一样")
        started = [e for e in events if e["type"] == "tool_execution_start"]
        assert len(started) == 1, course.both(f"the tool ran {len(started)} times",
                                              f"工具运行了 {len(started)} 次")

    with t.case("dropped twice in a row: IncompleteStream goes up, the history stays valid",
                "连续断两次：IncompleteStream 往上抛，消息历史仍然有效"):
        client = streaming_model.StreamingScriptedClient(retried, drop={1: 3, 2: 3})
        bot = RetryingAgent(client, "scripted", on_event=None)
        try:
            bot.chat("look")
            raise AssertionError(course.both("two drops in a row, and no error came up",
                                             "连续断了两次，却没有错误抛上来"))
        except streaming.IncompleteStream:
            pass
        assert len(client.requests) == 2, course.both(
            f"{len(client.requests)} requests: retry once",
            f"发出了 {len(client.requests)} 个请求：只重试一次")
        assert [m["role"] for m in bot.messages] == ["system", "user"]

    with t.case("a connection that fails (openai.APIConnectionError) is retried too",
                "连接失败（openai.APIConnectionError）也会重试"):
        failure = openai.APIConnectionError(request=httpx2.Request("POST", "http://x/v1"))
        client = streaming_model.StreamingScriptedClient([raising(failure), reply("Back again.")])
        bot = RetryingAgent(client, "scripted", on_event=None)
        assert bot.chat("hello") == "Back again.", course.both(
            "the failed call was not asked again", "失败的那次模型调用没有重新请求")

    with t.case("any other error is not retried: a 400 goes up at once",
                "其他错误不重试：400 立刻往上抛"):
        response = httpx2.Response(400, request=httpx2.Request("POST", "http://x"))
        refused = openai.BadRequestError("bad request", response=response, body=None)
        client = streaming_model.StreamingScriptedClient([raising(refused), reply("no")])
        bot = RetryingAgent(client, "scripted", on_event=None)
        try:
            bot.chat("hello")
            raise AssertionError(course.both("a 400 was retried until it went through",
                                             "400 被一直重试，直到请求通过"))
        except openai.BadRequestError:
            pass
        assert len(client.requests) == 1, course.both(
            f"{len(client.requests)} requests for one 400",
            f"为一个 400 发出了 {len(client.requests)} 个请求")

    with t.case("retries = 2 asks twice more", "retries = 2 时再请求两次"):
        class Twice(RetryingAgent):
            retries = 2

        client = streaming_model.StreamingScriptedClient([call, *retried], drop={1: 3, 2: 3})
        assert Twice(client, "scripted", on_event=None).chat("look") == "Nothing here."

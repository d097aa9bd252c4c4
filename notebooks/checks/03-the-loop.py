"""The checks of lesson 03's coding exercises (notebooks/03-the-loop.ipynb, "Your turn").

Each runs the student's code on objects of its own, in the scratch folder course.check gives
it, and includes the cases a plausible wrong answer fails."""

import contextlib
import io
import json
from pathlib import Path

import course

import agent
from agent import Agent, ScriptedClient, reply, tool_call

QUESTION = "What is in fruit/a.txt and fruit/b.txt?"


def lesson_script() -> list:
    """The notebook's script: one call, then two calls in one message, then an answer."""
    return [
        tool_call("list_files", path="fruit"),
        [tool_call("read_file", path="fruit/a.txt"), tool_call("read_file", path="fruit/b.txt")],
        reply("fruit/a.txt says apples and fruit/b.txt says bananas."),
    ]


def make_fruit() -> None:
    Path("fruit").mkdir(exist_ok=True)
    Path("fruit/a.txt").write_text("apples\n", encoding="utf-8")
    Path("fruit/b.txt").write_text("bananas\n", encoding="utf-8")


def agent_run(steps, task=QUESTION, on_event=None) -> Agent:
    bot = Agent(ScriptedClient(steps), "scripted", on_event=on_event)
    bot.chat(task)
    return bot


# --- exercise 1: valid(messages) ----------------------------------------------------------------


def _system(*messages):
    return [{"role": "system", "content": "You are a coding agent."}, *messages]


def _user(text="go"):
    return {"role": "user", "content": text}


def _asks(*ids):
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "list_files", "arguments": "{}"}}
        for i in ids]}


def _result(call_id):
    return {"role": "tool", "tool_call_id": call_id, "content": '{"files": []}'}


def _answer(text="done"):
    return {"role": "assistant", "content": text}


VALIDITY_CASES = [  # (what, in Chinese, history, would a strict server accept it?)
    ("a history without tool calls is valid", "没有工具调用的消息历史：有效",
     _system(_user(), _answer()), True),
    ("two calls in one message, both answered, then an answer, is valid",
     "一条消息里两个调用，都有回答，然后是最终回答：有效",
     _system(_user(), _asks("c1", "c2"), _result("c1"), _result("c2"), _answer()), True),
    ("two tasks one after the other, each with its call answered, is valid",
     "先后两个任务，各自的调用都有回答：有效",
     _system(_user(), _asks("c1"), _result("c1"), _answer(), _user("more"), _asks("c2"),
             _result("c2"), _answer()), True),
    ("results before the message that asked for them (P4 broken) are invalid",
     "结果出现在请求它们的消息之前（违反 P4）：无效",
     _system(_user(), _result("c1"), _asks("c1"), _answer()), False),
    ("only the first of two calls answered (P3 broken) is invalid",
     "两个调用只回答了第一个（违反 P3）：无效",
     _system(_user(), _asks("c1", "c2"), _result("c1"), _answer()), False),
    ("a call still unanswered at the end is invalid", "结尾还有没回答的调用：无效",
     _system(_user(), _asks("c1")), False),
    ("a result for an id that no call has is invalid", "结果的 id 不属于任何调用：无效",
     _system(_user(), _asks("c1"), _result("c1"), _result("c9"), _answer()), False),
    ("the same call answered twice is invalid", "同一个调用回答了两次：无效",
     _system(_user(), _asks("c1"), _result("c1"), _result("c1"), _answer()), False),
    ("a late result for a call of an earlier message is invalid",
     "更早一条消息里的调用，结果来迟了：无效",
     _system(_user(), _asks("c1", "c2"), _result("c1"), _asks("c3"), _result("c3"),
             _result("c2"), _answer()), False),
    ("a user message while a call is still open is invalid", "还有调用没回答时出现 user 消息：无效",
     _system(_user(), _asks("c1"), _user("wait"), _result("c1"), _answer()), False),
]


@course.exercise("03.1", "valid(messages): would a strict server accept this history?",
                         "valid(messages)：严格服务器会接受这段消息历史吗？")
def _(t, valid):
    make_fruit()
    lesson = agent_run(lesson_script()).messages
    cases = [("the lesson's history, as Agent built it, is valid",
              "课上由 Agent 构造的消息历史：有效", lesson, True),
             *VALIDITY_CASES]
    for what, zh, messages, expected in cases:
        assert (agent.pairing_problem(messages) is None) == expected, course.both(
            f"bad case: {what}", f"用例有误：{what}")
        with t.case(what, zh):
            got = valid(json.loads(json.dumps(messages)))  # a copy: valid may not change it
            assert isinstance(got, bool), course.both(
                f"valid() should return True or False, not {got!r}",
                f"valid() 应当返回 True 或 False，而不是 {got!r}")
            assert got == expected, course.both(f"valid() said {got}", f"valid() 返回了 {got}")


# --- exercise 3: sent_totals(requests) -------------------------------------------------------


def _characters(requests, ensure_ascii=True) -> int:
    return sum(len(json.dumps(r["messages"], ensure_ascii=ensure_ascii)) for r in requests)


@course.exercise("03.3", "sent_totals(requests): what every request sent again",
                         "sent_totals(requests)：每个请求又重发了多少")
def _(t, sent_totals):
    with t.case("no requests sent nothing: (0, 0)", "没有请求，就什么也没发送：(0, 0)"):
        got = sent_totals([])
        assert tuple(got) == (0, 0), course.both(f"sent_totals([]) gave {got!r}",
                                                 f"sent_totals([]) 返回了 {got!r}")

    three = agent_run([tool_call("list_files", path="."), tool_call("list_files", path="."),
                       reply("Nothing here.")], task="What is here?")
    requests = json.loads(json.dumps(three.client.requests))
    with t.case("it gives two whole numbers: (messages, characters)",
                "返回两个整数：(消息数, 字符数)"):
        got = sent_totals(requests)
        assert len(got) == 2 and all(isinstance(n, int) for n in got), course.both(
            f"it gave {got!r}", f"返回了 {got!r}")
    with t.case("three requests of 2, 4 and 6 messages sent 12 messages in all",
                "分别带 2、4、6 条消息的三个请求，一共发送了 12 条消息"):
        messages, _ = sent_totals(requests)
        if messages == len(three.messages):
            raise AssertionError(course.both(
                f"it gave {messages}: the length of the final history, not what all the "
                "requests sent",
                f"返回了 {messages}：这是最终消息历史的长度，而不是所有请求一共发送的消息数"))
        assert messages == 12, course.both(f"it gave {messages}", f"返回了 {messages}")
    with t.case("characters: each request's messages as JSON, summed over the requests",
                "字符数：每个请求的消息写成 JSON 后的长度，所有请求加在一起"):
        _, characters = sent_totals(requests)
        expected = {_characters(requests), _characters(requests, ensure_ascii=False)}
        assert characters in expected, course.both(
            f"it gave {characters}, expected {_characters(requests)} (json.dumps of each "
            "request's messages)",
            f"返回了 {characters}，应当是 {_characters(requests)}（每个请求的消息经 json.dumps "
            "之后的长度之和）")

    demo = Agent(ScriptedClient(agent.demo_script()), "scripted", on_event=None)
    for task in agent.DEMO_TASKS:
        demo.chat(task)
    requests = json.loads(json.dumps(demo.client.requests))
    with t.case("the article's four tasks: 9 requests, 90 messages sent for a history of 19",
                "文章的四个任务：9 个请求，消息历史只有 19 条，却一共发送了 90 条消息"):
        messages, characters = sent_totals(requests)
        assert messages == 90, course.both(f"it gave {messages} messages",
                                           f"返回了 {messages} 条消息")
        expected = {_characters(requests), _characters(requests, ensure_ascii=False)}
        assert characters in expected, course.both(f"it gave {characters} characters",
                                                   f"返回了 {characters} 个字符")


# --- exercise 4: bare_loop_events --------------------------------------------------------------

CHECKED_TYPES = ("turn_start", "tool_execution_start", "tool_execution_end")


def _printed(func, *args, **kwargs) -> list[str]:
    """The lines func(*args, **kwargs) prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        func(*args, **kwargs)
    return out.getvalue().splitlines()


def _without_duration(events):
    return [{k: v for k, v in e.items() if k != "duration"} for e in events
            if e["type"] in CHECKED_TYPES]


@course.exercise("03.4", "bare_loop_events: bare_loop that reports what it does",
                         "bare_loop_events：会报告自己在做什么的 bare_loop")
def _(t, bare_loop_events):
    make_fruit()
    failing = [tool_call("read_file", path="missing.py"),
               reply("missing.py does not exist.")]

    scripts = [("the lesson's script", "课上的脚本", lesson_script, QUESTION),
               ("a script with a failing call", "带一个失败调用的脚本", lambda: failing,
                "Read missing.py.")]
    for name, name_zh, script, task in scripts:
        theirs, ours = [], []
        bot = agent_run(script(), task, on_event=ours.append)  # first: what Agent emits
        with t.case(f"{name}: it returns (answer, messages), the same as Agent's",
                    f"{name_zh}：返回 (answer, messages)，和 Agent 的一样"):
            answer, messages = bare_loop_events(ScriptedClient(script()), task,
                                                agent.SYSTEM_PROMPT, on_event=theirs.append)
            assert messages == bot.messages, course.both("the history differs from Agent's",
                                                         "消息历史和 Agent 的不一样")
            assert answer == bot.messages[-1]["content"], course.both(
                f"it returned {answer!r}", f"返回的是 {answer!r}")
        with t.case(f"{name}: agent.print_event prints the same lines as for Agent",
                    f"{name_zh}：agent.print_event 打印的行和 Agent 的一样"):
            printed = _printed(bare_loop_events, ScriptedClient(script()), task,
                               agent.SYSTEM_PROMPT, on_event=agent.print_event)
            expected = _printed(agent_run, script(), task, on_event=agent.print_event)
            missing = [line for line in expected if line not in printed]
            assert not missing, course.both(f"this line is missing: {missing[0]!r}",
                                            f"缺了这一行：{missing[0]!r}")
            assert printed == expected, course.both(f"it printed {printed!r}",
                                                    f"打印出来的是 {printed!r}")
        with t.case(f"{name}: turn_start and tool_execution_start/end as Agent emits them",
                    f"{name_zh}：turn_start 和 tool_execution_start/end 与 Agent 发出的一样"):
            got, want = _without_duration(theirs), _without_duration(ours)
            for mine, its in zip(got, want, strict=False):
                assert mine == its, course.both(f"it sent {mine}, Agent sends {its}",
                                                f"发出的是 {mine}，Agent 发出的是 {its}")
            assert len(got) == len(want), course.both(
                f"{len(got)} such events, Agent sends {len(want)}: "
                f"{[e['type'] for e in want]}",
                f"这类事件有 {len(got)} 个，Agent 发出 {len(want)} 个："
                f"{[e['type'] for e in want]}")
        with t.case(f"{name}: one message_end per message appended, in order",
                    f"{name_zh}：每追加一条消息就有一个 message_end，顺序一致"):
            roles = [e["message"]["role"] for e in theirs if e["type"] == "message_end"]
            want = [e["message"]["role"] for e in ours if e["type"] == "message_end"]
            assert roles == want, course.both(f"message_end for {roles}, Agent: {want}",
                                              f"message_end 对应的是 {roles}，Agent 的是 {want}")


# --- exercise 5: your own task -----------------------------------------------------------------

GREET = 'def greet(name):\n    return f"你好，{name}！"\n\n\nprint(greet("Pi"))\n'
HELLO = 'def hello(name):\n    return f"你好，{name}！"\n\n\nprint(hello("Pi"))\n'
RENAME_TASK = "Rename the function greet to hello in greet.py and tell me what you changed."


def _path_of(arguments: str):
    try:
        return json.loads(arguments).get("path")
    except (ValueError, AttributeError):
        return None


@course.exercise("03.5", "your own task: rename greet to hello",
                         "你自己的任务：把 greet 改名为 hello")
def _(t, rename_script):
    Path("greet.py").write_text(GREET, encoding="utf-8")
    events = []
    bot = None
    with t.case("rename_script() gives a list of steps", "rename_script() 返回一个步骤列表"):
        steps = rename_script()
        assert isinstance(steps, list) and steps, course.both(f"it gave {steps!r}",
                                                              f"返回了 {steps!r}")
        bot = Agent(ScriptedClient(steps), "scripted", on_event=events.append)
    if bot is None:
        return
    with t.case("the run ends with a final answer (stop_reason 'done')",
                "运行以最终回答结束（stop_reason 'done'）"):
        try:
            bot.chat(RENAME_TASK)
        except agent.ScriptExhausted:
            raise AssertionError(course.both(
                "the script ran out of steps: end it with reply(...)",
                "脚本的步骤用完了：最后一步要用 reply(...)")) from None
        assert bot.stop_reason == "done", course.both(f"stop_reason is {bot.stop_reason!r}",
                                                      f"stop_reason 是 {bot.stop_reason!r}")
    ran = [(e["name"], _path_of(e["arguments"])) for e in events
           if e["type"] == "tool_execution_start"]
    with t.case("greet.py is read before its first edit", "第一次修改之前，先读了 greet.py"):
        edits = [i for i, (name, _) in enumerate(ran) if name == "edit_file"]
        assert edits, course.both("nothing was edited", "什么都没有修改")
        assert ("read_file", "greet.py") in ran[:edits[0]], course.both(
            f"the calls were {ran}", f"调用依次是 {ran}")
    with t.case("every tool call succeeded", "每个工具调用都成功了"):
        errors = [e["result"] for e in events if e["type"] == "tool_execution_end"
                  and e["is_error"]]
        assert not errors, course.both(f"a tool said {errors[0]}", f"有个工具报错：{errors[0]}")
    with t.case('greet.py now defines hello and calls hello("Pi"); nothing else changed',
                "greet.py 现在定义 hello，并调用 hello(\"Pi\")；别的都没变"):
        now = Path("greet.py").read_text(encoding="utf-8")
        assert now == HELLO, course.both(f"greet.py is now {now!r}", f"greet.py 现在是 {now!r}")
    with t.case("the final answer says what changed (it names hello)",
                "最终回答说明改了什么（提到 hello）"):
        final = bot.messages[-1]
        assert final["role"] == "assistant" and not final.get("tool_calls"), course.both(
            "no final answer", "没有最终回答")
        assert "hello" in final["content"], course.both(f"the answer was {final['content']!r}",
                                                        f"回答是 {final['content']!r}")

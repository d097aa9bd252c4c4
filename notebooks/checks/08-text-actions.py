"""Checks of lesson 08's coding exercises: course.check("08.k", answer) runs them."""

from pathlib import Path

import course
import text_actions  # its names are looked up at each use: a re-run export cell makes new ones

from agent import ScriptedClient, pairing_problem, reply, to_json

CALL_WITHOUT_TYPE = '{"name": "read_file", "arguments": {"path": "a.txt"}}'
FINISH = to_json({"type": "finish", "output": "ok"})


def refused(parse, text) -> bool:
    try:
        parse(text)
    except text_actions.FormatError:  # the notebook's own, as its export cell last made it
        return True
    return False


@course.exercise("08.1", 'accept a call without "type"', "接受没有 \"type\" 的调用")
def _(t, parse_loose):
    with t.case('{"name": ..., "arguments": ...} with no "type" is a call_tool action',
                "没有 \"type\" 的 {\"name\": ..., \"arguments\": ...} 是一个 call_tool 动作"):
        found = parse_loose(CALL_WITHOUT_TYPE)
        assert (found["type"], found["name"], found["arguments"]) == \
            ("call_tool", "read_file", {"path": "a.txt"}), \
            course.both(f"got {found}", f"得到的是 {found}")
    with t.case('a note tells the model to add "type"', "附一条说明，告诉模型加上 \"type\""):
        notes = parse_loose(CALL_WITHOUT_TYPE)["notes"]
        assert any("type" in note for note in notes), \
            course.both(f"the notes are {notes}", f"说明是 {notes}")
    with t.case("it is found in prose and in a code fence too", "夹在文字里、放在代码块里也能找到"):
        found = parse_loose(f"I will read it:\n```json\n{CALL_WITHOUT_TYPE}\n```\nOK?")
        assert found["name"] == "read_file", course.both(f"got {found}", f"得到的是 {found}")
    with t.case("a valid action comes out exactly as parse_action makes it",
                "有效的动作，结果和 parse_action 给出的完全一样"):
        assert parse_loose(FINISH) == text_actions.parse_action(FINISH), \
            course.both(f"got {parse_loose(FINISH)}", f"得到的是 {parse_loose(FINISH)}")
    with t.case("no JSON, and an object with neither type nor name, are still refused",
                "没有 JSON，或者对象既没有 type 也没有 name，仍被拒绝"):
        assert refused(parse_loose, "Sure, I will read it."), \
            course.both("plain text was accepted", "纯文本被接受了")
        assert refused(parse_loose, '{"arguments": {"path": "a.txt"}}'), \
            course.both("an object with no name became an action", "没有 name 的对象成了一个动作")
    with t.case('an explicit unknown "type" is still refused, even with a "name"',
                "明确写出的未知 \"type\" 仍被拒绝，即使带着 \"name\""):
        assert refused(parse_loose, '{"type": "run", "name": "read_file"}'), \
            course.both('{"type": "run", ...} became an action',
                        '{"type": "run", ...} 成了一个动作')


@course.exercise("08.2", "repair Python-style single quotes where that is exact",
                         "在不会出错的地方，修好 Python 风格的单引号")
def _(t, parse_python_style):
    with t.case("{'type': 'finish', 'output': 'ok'} is a finish, with a note",
                "{'type': 'finish', 'output': 'ok'} 是一个 finish，附一条说明"):
        found = parse_python_style("{'type': 'finish', 'output': 'ok'}")
        assert (found["type"], found["output"]) == ("finish", "ok"), \
            course.both(f"got {found}", f"得到的是 {found}")
        assert found["notes"], course.both("no note tells the model to use double quotes",
                                           "没有说明告诉模型改用双引号")
    with t.case("a Python-style call inside prose is found", "夹在文字里的 Python 风格调用能找到"):
        found = parse_python_style("Sure: {'type': 'call_tool', 'name': 'read_file', "
                                   "'arguments': {'path': 'a.txt'}} - that's all")
        assert (found["name"], found["arguments"]) == ("read_file", {"path": "a.txt"}), \
            course.both(f"got {found}", f"得到的是 {found}")
    with t.case("double quotes inside a single-quoted string are kept",
                "单引号字符串里的双引号保持不变"):
        found = parse_python_style("{'type': 'finish', 'output': 'it is \"fine\"'}")
        assert found["output"] == 'it is "fine"', \
            course.both(f"got {found['output']!r}", f"得到的是 {found['output']!r}")
    with t.case("an apostrophe inside a single-quoted string is refused, not guessed",
                "单引号字符串里的撇号：拒绝，不去猜"):
        assert refused(parse_python_style, "{'type': 'finish', 'output': 'don't'}"), \
            course.both("'don't' was accepted", "'don't' 被接受了")
    with t.case("a key given twice is refused, as parse_action refuses it",
                "同一个键出现两次：拒绝，和 parse_action 一样"):
        assert refused(parse_python_style, "{'type': 'finish', 'output': 'a', 'output': 'b'}"), \
            course.both("{'output': 'a', 'output': 'b'} was accepted: which output was meant "
                        "is a guess", "{'output': 'a', 'output': 'b'} 被接受了：到底指的是哪个 "
                        "output，只能靠猜")
    with t.case("the model's text is never run as code", "模型的文本从不当作代码运行"):
        sneaky = ("{'type': 'finish', 'output': "
                  "__import__('pathlib').Path('ran.txt').write_text('x')}")
        was_refused = refused(parse_python_style, sneaky)
        assert not Path("ran.txt").exists(), course.both(
            "the text was run: it wrote ran.txt (eval?)",
            "文本被当作代码运行了：写出了 ran.txt（用了 eval？）")
        assert was_refused, course.both("a call in the text was accepted as an action",
                                        "文本里的 Python 调用被当作动作接受了")
    with t.case("valid JSON comes out exactly as parse_action makes it",
                "有效的 JSON，结果和 parse_action 给出的完全一样"):
        assert parse_python_style(FINISH) == text_actions.parse_action(FINISH)
    with t.case("other refusals stay: no JSON, or a call_tool without a name",
                "其他拒绝照旧：没有 JSON，或者 call_tool 没有 name"):
        assert refused(parse_python_style, "Done!"), \
            course.both("plain text was accepted", "纯文本被接受了")
        assert refused(parse_python_style, "{'type': 'call_tool'}"), \
            course.both("a call_tool without a name was accepted",
                        "没有 name 的 call_tool 被接受了")
    with t.case("a JSON refusal that is not about quotes stays: a finish, then another action",
                "与引号无关的 JSON 拒绝照旧：一个 finish 后面又跟一个动作"):
        call = to_json({"type": "call_tool", "name": "read_file", "arguments": {"path": "a.txt"}})
        quoted = f'The format is {{"type": "finish", "output": "..."}}. So: {call}'
        assert refused(parse_python_style, quoted), \
            course.both("a finish with another action after it was accepted (read it as a "
                        "Python literal?)", "后面还跟着一个动作的 finish 被接受了（当成 Python "
                        "字面量读了？）")


def action(name, **arguments):
    return reply(to_json({"type": "call_tool", "name": name, "arguments": arguments}))


BAD = reply("I will look at it now.")
DONE = reply(FINISH)


@course.exercise("08.3", "count every format error of a task", "统计一个任务里所有的格式错误")
def _(t, adapter_class):
    t.expect(isinstance(adapter_class, type) and issubclass(adapter_class,
                                                            text_actions.TextActions),
             "it is a subclass of TextActions",
             "是 TextActions 的子类",
             detail=course.both(f"got {adapter_class!r}", f"得到的是 {adapter_class!r}"))

    def agent_on(steps):
        client = ScriptedClient(steps)
        return text_actions.TextAgent(adapter_class(client, max_format_errors=3), "scripted",
                         on_event=None), client

    alternating = [BAD, action("list_files"), BAD, action("list_files"), BAD, DONE]
    with t.case("bad, good, bad, good, bad: the third bad reply stops the task, validly",
                "坏、好、坏、好、坏：第三个坏回复停止任务，消息历史仍然有效"):
        bot, client = agent_on(alternating + [BAD, BAD, DONE])
        bot.chat("look")
        assert bot.stop_reason == "format_errors", course.both(
            f"stop_reason is {bot.stop_reason!r}", f"stop_reason 是 {bot.stop_reason!r}")
        assert len(client.requests) == 5, course.both(
            f"{len(client.requests)} requests, not 5",
            f"发了 {len(client.requests)} 个请求，不是 5 个")
        assert pairing_problem(bot.messages) is None, pairing_problem(bot.messages)
    with t.case("a new task counts from zero: two bad replies there do not stop it",
                "新任务从零开始数：那里的两个坏回复不会停止任务"):
        bot.chat("look again")
        assert bot.stop_reason == "done", course.both(f"stop_reason is {bot.stop_reason!r}",
                                                      f"stop_reason 是 {bot.stop_reason!r}")
    with t.case("two bad replies and a finish: the task ends done",
                "两个坏回复，再加一个 finish：任务以 done 结束"):
        bot, _ = agent_on([BAD, action("list_files"), BAD, DONE])
        assert bot.chat("look") == "ok" and bot.stop_reason == "done", bot.stop_reason
    with t.case("a task with no format error counts 0", "没有格式错误的任务，计数为 0"):
        adapter = adapter_class(ScriptedClient([]))
        history = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
        assert adapter.format_errors(history) == 0, course.both(
            f"got {adapter.format_errors(history)}", f"得到的是 {adapter.format_errors(history)}")

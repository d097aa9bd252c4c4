"""The checks of lesson 04's coding exercises (notebooks/04-guards.ipynb, "Your turn").

Each runs the student's guard on registries and agents of its own, in the scratch folder
course.check gives it, and includes the cases a plausible wrong answer fails. A spied registry
records which calls really reached a tool, so "refused without running" is checked, not
assumed."""

import functools
import inspect
import json
import os
from pathlib import Path

import course

import agent
from agent import TOOL_REGISTRY, TOOLS, Agent, ScriptedClient, reply, tool_call


def spied(registry=TOOL_REGISTRY):
    """A copy of `registry` that records the name of every call that reached a real tool."""
    ran = []

    def wrap(name, func):
        @functools.wraps(func)
        def recorded(*args, **kwargs):
            ran.append(name)
            return func(*args, **kwargs)
        return recorded

    return {name: wrap(name, func) for name, func in registry.items()}, ran


def call(registry, name, **arguments):
    """Call a tool the way the loop does: through call_tool, with JSON arguments."""
    return agent.call_tool(registry, name, json.dumps(arguments))


def attempt(registry, name, **arguments):
    """("ok", result), ("raised", an Exception) or ("stopped", a BaseException that is not)."""
    try:
        return "ok", call(registry, name, **arguments)
    except Exception as exc:
        return "raised", exc
    except BaseException as exc:  # StopAgent, as the exercise asks
        return "stopped", exc


def write(path, text):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")


def read(path):
    return Path(path).read_text(encoding="utf-8")


def keeps_signatures(t, make_guard):
    with t.case("it keeps every tool's signature (functools.wraps), so call_tool still checks "
                "the arguments before the guard runs",
                "保留每个工具的签名（functools.wraps），这样 call_tool 仍会在护栏运行之前检查参数"):
        guarded = make_guard(TOOL_REGISTRY)
        agent.check_tools(TOOLS, guarded)
        for name, func in TOOL_REGISTRY.items():
            assert inspect.signature(guarded[name]) == inspect.signature(func), course.both(
                f"{name} has the signature {inspect.signature(guarded[name])}",
                f"{name} 的签名是 {inspect.signature(guarded[name])}")


def run(registry, steps, task="go", max_turns=10):
    """Run one chat() on a scripted model: (the agent, its events, what chat() raised)."""
    events = []
    bot = Agent(ScriptedClient(steps), "scripted", registry=registry, max_turns=max_turns,
                on_event=events.append)
    try:
        bot.chat(task)
    except BaseException as exc:  # whatever the student's guard raises
        return bot, events, exc
    return bot, events, None


def tool_errors(messages):
    return [json.loads(m["content"]).get("error") for m in messages if m["role"] == "tool"]


# --- exercise 1 --------------------------------------------------------------------------------


def deaf(messages):
    """Reads missing.py again and again, whatever it is told."""
    return tool_call("read_file", path="missing.py")


@course.exercise("04.1", "a guard that ends the loop", "一道能结束循环的护栏")
def _(t, stop_after_refusals, StopAgent):
    with t.case("StopAgent is an exception class that is not an Exception (a BaseException), "
                "so run_tool lets it through",
                "StopAgent 是一个异常类，但不是 Exception（而是 BaseException），所以 run_tool 不"
                "会拦下它"):
        assert isinstance(StopAgent, type) and issubclass(StopAgent, BaseException), \
            course.both(f"StopAgent is {StopAgent!r}, not an exception class",
                        f"StopAgent 是 {StopAgent!r}，不是异常类")
        assert not issubclass(StopAgent, Exception), course.both(
            "StopAgent is an Exception: run_tool would turn it into a tool result",
            "StopAgent 是 Exception 的子类：run_tool 会把它变成一条工具结果")

    with t.case("identical calls run up to the limit, and the first refusal is an error the "
                "model reads (not a stop)",
                "相同的调用在上限以内照常运行；第一次拒绝是模型读到的一条错误（不是停止）"):
        registry, ran = spied()
        guarded = stop_after_refusals(registry, limit=2, refusals=2)
        seen = [attempt(guarded, "read_file", path="missing.py") for _ in range(3)]
        assert len(ran) == 2, course.both(f"the tool ran {len(ran)} times for a limit of 2",
                                          f"上限是 2，工具却运行了 {len(ran)} 次")
        kinds = [kind for kind, _ in seen]
        assert kinds == ["raised"] * 3, course.both(f"the three calls gave {kinds}",
                                                    f"三次调用的结果是 {kinds}")
        assert "not run" in str(seen[2][1]), course.both(f"the third call said {seen[2][1]}",
                                                         f"第三次调用得到的是 {seen[2][1]}")

    with t.case("the second refusal in a row raises StopAgent", "连续第二次拒绝时抛出 StopAgent"):
        guarded = stop_after_refusals(TOOL_REGISTRY, limit=2, refusals=2)
        for _ in range(3):
            attempt(guarded, "read_file", path="missing.py")
        kind, error = attempt(guarded, "read_file", path="missing.py")
        if kind == "raised" and isinstance(error, StopAgent):
            raise AssertionError(course.both(
                "it raised StopAgent, but as an Exception, which the loop turns into a tool "
                "result",
                "抛出了 StopAgent，可它是 Exception 的子类，循环会把它变成一条工具结果"))
        assert kind == "stopped", course.both(f"it raised {type(error).__name__}: {error}",
                                              f"抛出了 {type(error).__name__}: {error}")
        assert isinstance(error, StopAgent), course.both(f"it raised {type(error).__name__}",
                                                         f"抛出了 {type(error).__name__}")

    with t.case("a call that gets through resets the count: a refusal, a call, a refusal is "
                "no stop", "放行的调用会让计数归零：拒绝、调用、拒绝，不会停止"):
        write("note.txt", "x\n")
        guarded = stop_after_refusals(TOOL_REGISTRY, limit=1, refusals=2)
        kinds = []
        for _ in range(3):
            kinds += [attempt(guarded, "list_files", path=".")[0],
                      attempt(guarded, "list_files", path=".")[0],  # refused once
                      attempt(guarded, "read_file", path="note.txt")[0]]
        assert "stopped" not in kinds, course.both(f"the calls gave {kinds}",
                                                   f"这些调用的结果是 {kinds}")
        assert kinds == ["ok", "raised", "ok"] * 3, course.both(f"the calls gave {kinds}",
                                                                f"这些调用的结果是 {kinds}")

    with t.case("a call that runs and fails was not refused either: it resets the count too",
                "运行后失败的调用也不算被拒绝：同样让计数归零"):
        guarded = stop_after_refusals(TOOL_REGISTRY, limit=1, refusals=2)
        kinds = [attempt(guarded, "list_files", path=".")[0],
                 attempt(guarded, "list_files", path=".")[0],  # refused once
                 attempt(guarded, "read_file", path="missing.py")[0],  # ran, and failed
                 attempt(guarded, "read_file", path="missing.py")[0]]  # refused once
        assert kinds == ["ok", "raised", "raised", "raised"], course.both(
            f"the calls gave {kinds}: a failed call counted as a refusal in a row",
            f"这些调用的结果是 {kinds}：失败的调用被算成了连续的拒绝")

    with t.case("in the loop, chat() raises StopAgent after the model read one refusal",
                "在循环里，模型读到一次拒绝之后，chat() 抛出 StopAgent"):
        registry, ran = spied()
        bot, _, raised = run(stop_after_refusals(registry, limit=2, refusals=2), [deaf] * 20)
        assert raised is not None, course.both(
            f"chat() ended normally (stop_reason {bot.stop_reason!r}) after "
            f"{len(bot.client.requests)} requests",
            f"chat() 在 {len(bot.client.requests)} 个请求之后正常结束了（stop_reason "
            f"{bot.stop_reason!r}）")
        assert isinstance(raised, StopAgent), course.both(
            f"chat() raised {type(raised).__name__}: {raised}",
            f"chat() 抛出了 {type(raised).__name__}: {raised}")
        assert len(bot.client.requests) == 4, course.both(
            f"the model was asked {len(bot.client.requests)} times, not 4",
            f"模型被问了 {len(bot.client.requests)} 次，不是 4 次")
        assert len(ran) == 2, course.both(f"the tool ran {len(ran)} times",
                                          f"工具运行了 {len(ran)} 次")

    with t.case("then stop_reason is 'error' and the history is still valid to send",
                "之后 stop_reason 是 'error'，消息历史仍然可以发送"):
        bot, _, _ = run(stop_after_refusals(TOOL_REGISTRY, limit=2, refusals=2), [deaf] * 20)
        assert bot.stop_reason == "error", course.both(f"stop_reason is {bot.stop_reason!r}",
                                                       f"stop_reason 是 {bot.stop_reason!r}")
        problem = agent.pairing_problem(bot.messages)
        assert problem is None, problem
        assert tool_errors(bot.messages)[-1] == agent.INTERRUPTED, course.both(
            f"the stopped call was answered {tool_errors(bot.messages)[-1]!r}",
            f"被停下的那个调用得到的回答是 {tool_errors(bot.messages)[-1]!r}")

    keeps_signatures(t, stop_after_refusals)


# --- exercise 2 --------------------------------------------------------------------------------


def spent_after_two_failures(failure_budget):
    """A guard with a budget of 2 that has seen two failed reads: (guard, spied calls)."""
    registry, ran = spied()
    guarded = failure_budget(registry, limit=2)
    errors = [attempt(guarded, "read_file", path="missing.txt") for _ in range(2)]
    return guarded, ran, errors


@course.exercise("04.2", "failure_budget: count the failures, not only the repeats",
                         "failure_budget：数失败次数，而不只是数重复")
def _(t, failure_budget):
    write("a.txt", "apples\n")
    with t.case("successful calls are not failures: ten reads all run with a budget of 1",
                "成功的调用不算失败：预算为 1 时，十次读取全部运行"):
        registry, ran = spied()
        guarded = failure_budget(registry, limit=1)
        for _ in range(10):
            assert call(guarded, "read_file", path="a.txt")["content"] == "apples\n"
        assert len(ran) == 10
    with t.case("up to the limit, a failed call gets its tool's own error",
                "上限以内，失败的调用得到工具自己的错误"):
        _, _, errors = spent_after_two_failures(failure_budget)
        for n, (kind, error) in enumerate(errors, 1):
            assert kind == "raised" and "no such file" in str(error), course.both(
                f"failure {n} gave {error!r}", f"第 {n} 次失败得到的是 {error!r}")
    with t.case("after `limit` failures every call is refused, even one that would succeed, "
                "and no tool runs",
                "失败 `limit` 次之后，每个调用都被拒绝，本会成功的也一样，工具都不运行"):
        guarded, ran, _ = spent_after_two_failures(failure_budget)
        before = len(ran)
        kind, error = attempt(guarded, "read_file", path="a.txt")
        assert kind == "raised", course.both("a call after the budget ran and succeeded",
                                             "预算用完之后，还有调用运行并且成功了")
        assert "too many failures" in str(error), course.both(f"it said {error}",
                                                              f"错误消息是 {error}")
        assert attempt(guarded, "list_files", path=".")[0] == "raised", course.both(
            "list_files still ran", "list_files 还是运行了")
        assert len(ran) == before, course.both("a tool ran although the budget was spent",
                                               "预算已经用完，还是有工具运行了")
    with t.case("failures of different tools count together: one budget per conversation",
                "不同工具的失败合在一起数：每段对话一份预算"):
        write("b.txt", "aa\naa\n")
        guarded = failure_budget(TOOL_REGISTRY, limit=2)
        attempt(guarded, "read_file", path="missing.txt")  # FileNotFoundError
        attempt(guarded, "edit_file", path="b.txt", old_str="aa", new_str="b")  # found twice
        kind, error = attempt(guarded, "list_files", path=".")
        assert kind == "raised" and "too many failures" in str(error), course.both(
            "after a failed read_file and a failed edit_file, list_files still ran",
            "read_file 和 edit_file 各失败一次之后，list_files 还是运行了")
    with t.case("each guard has its own count", "每道护栏各自计数"):
        first = failure_budget(TOOL_REGISTRY, limit=1)
        second = failure_budget(TOOL_REGISTRY, limit=1)
        attempt(first, "read_file", path="missing.txt")
        assert attempt(second, "read_file", path="a.txt")[0] == "ok", course.both(
            "a new guard already refuses", "新建的护栏一上来就拒绝")
    keeps_signatures(t, failure_budget)
    with t.case("in the loop the refusal is a tool error the model reads, and it can answer",
                "在循环里，拒绝是模型读到的一条工具错误，模型还能给出回答"):
        def reacts(messages):
            if "too many failures" in ((tool_errors(messages) or [""])[-1] or ""):
                return reply("I could not read the files I wanted.")
            return tool_call("read_file", path=f"missing{len(messages)}.txt")

        bot, _, raised = run(failure_budget(TOOL_REGISTRY, limit=3), [reacts] * 10)
        assert raised is None, course.both(f"chat() raised {raised!r}",
                                           f"chat() 抛出了 {raised!r}")
        assert bot.stop_reason == "done", course.both(f"stop_reason {bot.stop_reason!r}",
                                                      f"stop_reason 是 {bot.stop_reason!r}")
        assert len(bot.client.requests) == 5, course.both(
            f"{len(bot.client.requests)} requests; expected 3 failures, 1 refusal, 1 answer",
            f"发出了 {len(bot.client.requests)} 个请求；应当是 3 次失败、1 次拒绝、1 次回答")


# --- exercise 3 --------------------------------------------------------------------------------


def someone_edits(path, text):
    """A person changes the file: same size, same modification time, other content."""
    stat = os.stat(path)
    Path(path).write_text(text, encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@course.exercise("04.3", "read before edit, and not stale", "先读后改，而且读到的不能过时")
def _(t, read_before_edit_fresh):
    with t.case("an unread file is still refused, and not written",
                "没读过的文件仍被拒绝，也不写入"):
        write("a.txt", "one\n")
        guarded = read_before_edit_fresh(TOOL_REGISTRY)
        kind, _ = attempt(guarded, "edit_file", path="a.txt", old_str="one", new_str="two")
        assert kind == "raised" and read("a.txt") == "one\n", course.both(
            "an unread file was edited", "没读过的文件被修改了")
    with t.case("read, then edit, works", "先读再改，可以"):
        write("a.txt", "one\n")
        guarded = read_before_edit_fresh(TOOL_REGISTRY)
        call(guarded, "read_file", path="a.txt")
        call(guarded, "edit_file", path="a.txt", old_str="one", new_str="two")
        assert read("a.txt") == "two\n"
    with t.case("a file changed on disk after the read is refused, not written, and the refusal "
                "says to read it again; after reading it again, the edit works",
                "读过之后磁盘上的文件又变了：拒绝，不写入，拒绝的消息说要重新读；重新读过之后，修"
                "改成功"):
        write("a.txt", "one\nline\n")
        guarded = read_before_edit_fresh(TOOL_REGISTRY)
        call(guarded, "read_file", path="a.txt")
        write("a.txt", "one\nline, changed by a person\n")
        kind, error = attempt(guarded, "edit_file", path="a.txt", old_str="one", new_str="two")
        assert kind == "raised", course.both("the stale edit went through",
                                             "读到的内容已经过时，修改却通过了")
        assert read("a.txt") == "one\nline, changed by a person\n", course.both(
            "the file was written", "文件被写入了")
        assert "read_file" in str(error), course.both(f"the refusal says {error}",
                                                      f"拒绝的消息是 {error}")
        call(guarded, "read_file", path="a.txt")
        kind, error = attempt(guarded, "edit_file", path="a.txt", old_str="one", new_str="two")
        assert kind == "ok", course.both(f"after reading it again, the edit gave {error}",
                                         f"重新读过之后，修改得到的是 {error}")
    with t.case("the agent's own edits do not make the file stale",
                "智能体自己改过的文件不算过时"):
        write("b.txt", "one\n")
        guarded = read_before_edit_fresh(TOOL_REGISTRY)
        call(guarded, "read_file", path="b.txt")
        call(guarded, "edit_file", path="b.txt", old_str="one", new_str="two")
        call(guarded, "edit_file", path="b.txt", old_str="two", new_str="three")
        assert read("b.txt") == "three\n"
    with t.case("a change that keeps the size and the modification time is still caught "
                "(compare the content, not the clock)",
                "大小和修改时间都不变的改动也能发现（比较内容，而不是时间）"):
        write("c.txt", "debug = false\n")
        guarded = read_before_edit_fresh(TOOL_REGISTRY)
        call(guarded, "read_file", path="c.txt")
        someone_edits("c.txt", "debug = FALSE\n")
        kind, _ = attempt(guarded, "edit_file", path="c.txt", old_str="debug", new_str="DEBUG")
        assert kind == "raised", course.both("the stale edit went through",
                                             "读到的内容已经过时，修改却通过了")
    with t.case("a new file can be created, then edited", "新文件可以先创建，再修改"):
        guarded = read_before_edit_fresh(TOOL_REGISTRY)
        call(guarded, "edit_file", path="new/d.txt", old_str="", new_str="draft\n")
        call(guarded, "edit_file", path="new/d.txt", old_str="draft", new_str="final")
        assert read("new/d.txt") == "final\n"
    with t.case("./e.txt and e.txt are the same file", "./e.txt 和 e.txt 是同一个文件"):
        write("e.txt", "one\n")
        guarded = read_before_edit_fresh(TOOL_REGISTRY)
        call(guarded, "read_file", path="./e.txt")
        call(guarded, "edit_file", path="e.txt", old_str="one", new_str="two")
        assert read("e.txt") == "two\n"
    keeps_signatures(t, read_before_edit_fresh)
    with t.case("in the loop: a person saves the file between the agent's read and its edit; "
                "the model reads the refusal, reads again, and no one's change is lost",
                "在循环里：智能体读完之后、修改之前，有人保存了文件；模型读到拒绝，重新读，谁的改"
                "动都没有丢"):
        write("config.ini", "debug = false\nport = 8000\n")
        edit = tool_call("edit_file", path="config.ini", old_str="debug = false",
                         new_str="debug = true")

        def person_saves_then_model_edits(messages):
            write("config.ini", "debug = false\nport = 9000\n")  # saved while the model thought
            return edit

        def reads_again(messages):
            if "read_file" not in (tool_errors(messages)[-1] or ""):
                return reply(f"I expected a refusal and read: {messages[-1]['content']}")
            return tool_call("read_file", path="config.ini")

        bot, _, raised = run(read_before_edit_fresh(TOOL_REGISTRY), [
            tool_call("read_file", path="config.ini"), person_saves_then_model_edits,
            reads_again, edit, reply("Debug is on.")])
        assert raised is None, course.both(f"chat() raised {raised!r}",
                                           f"chat() 抛出了 {raised!r}")
        assert read("config.ini") == "debug = true\nport = 9000\n", course.both(
            f"config.ini is {read('config.ini')!r}", f"config.ini 的内容是 {read('config.ini')!r}")


# --- exercise 4 --------------------------------------------------------------------------------


@course.exercise("04.4", "call_budget: a tool-call budget", "call_budget：工具调用的预算")
def _(t, call_budget):
    write("a.txt", "apples\n")
    with t.case("the default budget is 20 calls: call 21 is refused",
                "默认预算是 20 次调用：第 21 次被拒绝"):
        assert inspect.signature(call_budget).parameters["limit"].default == 20, course.both(
            "limit should default to 20", "limit 的默认值应当是 20")
        registry, ran = spied()
        guarded = call_budget(registry)
        for _ in range(20):
            call(guarded, "list_files", path=".")
        assert attempt(guarded, "list_files", path=".")[0] == "raised", course.both(
            "call 21 ran", "第 21 次调用运行了")
        assert len(ran) == 20
    with t.case("the first calls run, whatever they are, and a failing call counts too",
                "前面的调用照常运行，不管是什么调用；失败的调用也算数"):
        registry, ran = spied()
        guarded = call_budget(registry, limit=3)
        assert attempt(guarded, "read_file", path="a.txt")[0] == "ok"
        assert attempt(guarded, "list_files", path=".")[0] == "ok"
        _, error = attempt(guarded, "read_file", path="missing.txt")
        assert "no such file" in str(error), course.both(f"the third call gave {error!r}",
                                                         f"第三次调用得到的是 {error!r}")
        kind, _ = attempt(guarded, "read_file", path="a.txt")
        assert kind == "raised", course.both(
            "the fourth call ran: was the failing call not counted?",
            "第四次调用运行了：失败的那次调用没有计数吗？")
    with t.case("after the budget every call is refused without running, and the refusal says "
                "the budget is spent",
                "预算用完之后，每个调用都被拒绝、不运行，拒绝的消息说预算已经用完"):
        registry, ran = spied()
        guarded = call_budget(registry, limit=2)
        call(guarded, "read_file", path="a.txt")
        call(guarded, "list_files", path=".")
        kind, error = attempt(guarded, "read_file", path="a.txt")
        assert kind == "raised", course.both("a call after the budget ran",
                                             "预算用完之后，还有调用运行了")
        assert "budget" in str(error), course.both(f"it said {error}", f"错误消息是 {error}")
        assert attempt(guarded, "list_files", path=".")[0] == "raised"
        assert len(ran) == 2, course.both(f"{len(ran)} calls reached a tool",
                                          f"工具实际运行了 {len(ran)} 次")
    with t.case("each guard has its own budget", "每道护栏各有一份预算"):
        first, second = call_budget(TOOL_REGISTRY, limit=1), call_budget(TOOL_REGISTRY, limit=1)
        call(first, "list_files", path=".")
        assert attempt(second, "list_files", path=".")[0] == "ok", course.both(
            "a new guard already refuses", "新建的护栏一上来就拒绝")
    keeps_signatures(t, call_budget)
    with t.case("calls are counted, not responses: of five calls in one response with a budget "
                "of 3, three run and two are refused, each answered in order",
                "数的是调用，不是响应：预算为 3，一个响应里有五个调用，三个运行，两个被拒绝，每个"
                "都按顺序得到回答"):
        registry, ran = spied()
        five = [tool_call("read_file", path="a.txt")] * 5
        bot, _, raised = run(call_budget(registry, limit=3), [five, reply("ok")])
        assert raised is None, course.both(f"chat() raised {raised!r}",
                                           f"chat() 抛出了 {raised!r}")
        assert len(ran) == 3, course.both(f"{len(ran)} of the five calls ran",
                                          f"五个调用里运行了 {len(ran)} 个")
        answers = [m["tool_call_id"] for m in bot.messages if m["role"] == "tool"]
        assert answers == [f"call_{n}" for n in range(1, 6)], course.both(
            f"answered {answers}", f"回答了 {answers}")
        refused = [error is not None for error in tool_errors(bot.messages)]
        assert refused == [False] * 3 + [True] * 2, course.both(f"refused: {refused}",
                                                                f"各调用是否被拒绝：{refused}")


# --- exercise 5 --------------------------------------------------------------------------------


@course.exercise("04.5", "total_repeat_guard: the same call, in any order",
                         "total_repeat_guard：同一个调用，不管顺序如何")
def _(t, total_repeat_guard):
    write("a.txt", "a\n")
    write("b.txt", "b\n")
    with t.case("calls that alternate are counted: a, b, a, b run; a third a or b is refused, "
                "without running",
                "交替出现的调用也算数：a、b、a、b 都运行；第三次 a 或 b 被拒绝，不运行"):
        registry, ran = spied()
        guarded = total_repeat_guard(registry, limit=2)
        for path in ["a.txt", "b.txt", "a.txt", "b.txt"]:
            call(guarded, "read_file", path=path)
        assert attempt(guarded, "read_file", path="a.txt")[0] == "raised", course.both(
            "the third read of a.txt ran", "第三次读取 a.txt 运行了")
        assert attempt(guarded, "read_file", path="b.txt")[0] == "raised", course.both(
            "the third read of b.txt ran", "第三次读取 b.txt 运行了")
        assert len(ran) == 4, course.both(f"{len(ran)} calls reached a tool",
                                          f"工具实际运行了 {len(ran)} 次")
    with t.case("calls in a row are counted as well", "连续的调用同样算数"):
        guarded = total_repeat_guard(TOOL_REGISTRY, limit=2)
        call(guarded, "read_file", path="a.txt")
        call(guarded, "read_file", path="a.txt")
        assert attempt(guarded, "read_file", path="a.txt")[0] == "raised"
    with t.case("other arguments make another call", "参数不同就是另一个调用"):
        guarded = total_repeat_guard(TOOL_REGISTRY, limit=1)
        call(guarded, "read_file", path="a.txt")
        assert attempt(guarded, "read_file", path="b.txt")[0] == "ok"
    with t.case('list_files() and list_files(path=".") are the same call, and so is JSON with '
                "its keys in another order",
                "list_files() 和 list_files(path=\".\") 是同一个调用，键的顺序不同的 JSON 也一样"):
        guarded = total_repeat_guard(TOOL_REGISTRY, limit=1)
        agent.call_tool(guarded, "list_files", "{}")
        assert attempt(guarded, "list_files", path=".")[0] == "raised", course.both(
            "list_files(path='.') ran after list_files()",
            "list_files() 之后，list_files(path='.') 还是运行了")
        agent.call_tool(guarded, "edit_file", '{"path": "x.txt", "old_str": "", "new_str": "x"}')
        try:
            agent.call_tool(guarded, "edit_file",
                            '{"new_str": "x", "old_str": "", "path": "x.txt"}')
        except Exception:
            pass
        else:
            raise AssertionError(course.both("the same edit, its keys in another order, ran again",
                                             "同一个修改，只是键的顺序不同，又运行了一次"))
    with t.case("the refusal says the call was not run", "拒绝的消息说明调用没有运行"):
        guarded = total_repeat_guard(TOOL_REGISTRY, limit=1)
        call(guarded, "list_files", path=".")
        _, error = attempt(guarded, "list_files", path=".")
        assert "not run" in str(error), course.both(f"it said {error}", f"错误消息是 {error}")
    with t.case("each guard counts for itself", "每道护栏自己计数"):
        first = total_repeat_guard(TOOL_REGISTRY, limit=1)
        second = total_repeat_guard(TOOL_REGISTRY, limit=1)
        call(first, "list_files", path=".")
        assert attempt(second, "list_files", path=".")[0] == "ok", course.both(
            "a new guard already refuses", "新建的护栏一上来就拒绝")
    keeps_signatures(t, total_repeat_guard)
    with t.case("in the loop: a model that alternates two reads is refused, reads the refusal, "
                "and answers", "在循环里：交替读两个文件的模型被拒绝，读到拒绝，然后给出回答"):
        def alternates(messages):
            if "not run" in ((tool_errors(messages) or [""])[-1] or ""):
                return reply("Reading them again will not help.")
            return tool_call("read_file", path=["a.txt", "b.txt"][len(messages) // 2 % 2])

        bot, _, raised = run(total_repeat_guard(TOOL_REGISTRY, limit=2), [alternates] * 20)
        assert raised is None, course.both(f"chat() raised {raised!r}",
                                           f"chat() 抛出了 {raised!r}")
        assert bot.stop_reason == "done", course.both(f"stop_reason {bot.stop_reason!r}",
                                                      f"stop_reason 是 {bot.stop_reason!r}")
        assert len(bot.client.requests) == 6, course.both(
            f"{len(bot.client.requests)} requests, not 6",
            f"发出了 {len(bot.client.requests)} 个请求，不是 6 个")

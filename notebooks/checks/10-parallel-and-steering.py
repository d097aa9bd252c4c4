"""Checks of lesson 10's coding exercises: course.check("10.k", answer) runs them."""

import random
import threading
import time

import course
import parallel_and_steering

from agent import ScriptedClient, reply, schema, to_json, tool_call


def batch(*specs) -> list[dict]:
    """Tool calls as a model sends them: (name, arguments) pairs, or (name, raw JSON text)."""
    calls = []
    for n, (name, arguments) in enumerate(specs, 1):
        text = arguments if isinstance(arguments, str) else to_json(arguments)
        calls.append({"id": f"call_{n}", "type": "function",
                      "function": {"name": name, "arguments": text}})
    return calls


def ids(groups) -> list[list[int]]:
    return [[int(call["id"].split("_")[1]) for call in group] for group in groups]


def edit(path):
    return ("edit_file", {"path": path, "old_str": "", "new_str": f"{path}\n"})


def read(path):
    return ("read_file", {"path": path})


@course.exercise("10.1", "writes to different files run together, writes to one file do not",
                         "写不同文件的调用一起运行，写同一个文件的不一起")
def _(t, ByFile):
    bot = ByFile(ScriptedClient([]), "scripted", on_event=None)

    def grouped(*specs):
        return ids(bot.groups(batch(*specs)))

    with t.case("edit_file calls on three different files form one group",
                "对三个不同文件的 edit_file 调用组成一组"):
        found = grouped(edit("a.txt"), edit("b.txt"), edit("c.txt"))
        assert found == [[1, 2, 3]], course.both(f"the groups were {found}",
                                                 f"分组是 {found}")
    with t.case("a second write to the same file starts a new group, however it is spelled",
                "对同一个文件的第二次写入另起一组，不管路径怎么写"):
        found = grouped(edit("a.txt"), edit("a.txt"))
        assert found == [[1], [2]], course.both(f"two writes to a.txt gave {found}",
                                                f"两次写 a.txt，得出 {found}")
        found = grouped(edit("a.txt"), edit("./a.txt"))
        assert found == [[1], [2]], course.both(f"a.txt and ./a.txt gave {found}",
                                                f"a.txt 和 ./a.txt 得出 {found}")
    with t.case("a read and a write of one file never share a group, in either order",
                "同一个文件的读和写从不在同一组，不论先后"):
        found = grouped(read("a.txt"), edit("a.txt"))
        assert found == [[1], [2]], course.both(f"read a.txt, then write it, gave {found}",
                                                f"先读 a.txt 再写它，得出 {found}")
        found = grouped(edit("a.txt"), read("a.txt"))
        assert found == [[1], [2]], course.both(f"write a.txt, then read it, gave {found}",
                                                f"先写 a.txt 再读它，得出 {found}")
    with t.case("reads of one file share a group, and a write to another file joins them",
                "对同一个文件的多次读取在同一组，写另一个文件的调用也可以加入"):
        found = grouped(read("a.txt"), read("a.txt"), edit("b.txt"), read("c.txt"))
        assert found == [[1, 2, 3, 4]], course.both(f"the groups were {found}",
                                                    f"分组是 {found}")
    with t.case("a listing of a folder never shares a group with a write inside it",
                "列出文件夹的调用，从不和写入这个文件夹里的调用同组"):
        found = grouped(("list_files", {"path": "."}), edit("new.txt"))
        assert found == [[1], [2]], course.both(
            f"list_files('.') and a write of new.txt gave {found}: the listing may miss new.txt",
            f"list_files('.') 和一次写 new.txt 得出 {found}：列出的文件里可能没有 new.txt")
        found = grouped(edit("docs/new.txt"), ("list_files", {"path": "docs"}))
        assert found == [[1], [2]], course.both(
            f"a write of docs/new.txt, then list docs, gave {found}",
            f"先写 docs/new.txt 再列出 docs，得出 {found}")
        found = grouped(("list_files", {}), edit("a.txt"))
        assert found == [[1], [2]], course.both(
            f"list_files() (the folder '.') and a write gave {found}",
            f"list_files()（文件夹 '.'）和一次写入，得出 {found}")
    with t.case("run_command and a tool nobody declared stay alone",
                "run_command 和没人声明过的工具，单独成组"):
        found = grouped(edit("a.txt"), ("run_command", {"command": "make"}), edit("b.txt"))
        assert found == [[1], [2], [3]], course.both(f"write, run_command, write gave {found}",
                                                     f"写入、run_command、写入，得出 {found}")
        found = grouped(read("a.txt"), ("mystery", {"path": "b.txt"}), read("c.txt"))
        assert found == [[1], [2], [3]], course.both(
            f"read, an unknown tool, read gave {found}", f"读取、一个未知工具、读取，得出 {found}")
    with t.case("a call whose arguments are not a JSON object stays alone",
                "参数不是 JSON 对象的调用，单独成组"):
        found = grouped(edit("a.txt"), ("edit_file", "{not json"), ("edit_file", "[1, 2]"),
                        edit("b.txt"))
        assert found == [[1], [2], [3], [4]], course.both(
            f"the groups were {found}", f"分组是 {found}")
    with t.case("every call is in exactly one group, in call order",
                "每个调用恰好在一组里，按调用顺序"):
        rng = random.Random(10)
        tools = [read("a.txt"), read("b.txt"), edit("a.txt"), edit("b.txt"), edit("c.txt"),
                 ("run_command", {"command": "ls"}), ("list_files", {"path": "."})]
        for _ in range(50):
            calls = batch(*rng.choices(tools, k=rng.randint(1, 8)))
            flat = [call["id"] for group in bot.groups(calls) for call in group]
            assert flat == [call["id"] for call in calls], course.both(
                f"{flat} for {len(calls)} calls", f"对 {len(calls)} 个调用，分组后依次是 {flat}")
    with t.case("two writes to different files really run at the same time",
                "写不同文件的两个调用真的同时运行"):
        meet = threading.Barrier(2, timeout=3)  # passes only if both writes are running at once

        def edit_file(path: str, old_str: str, new_str: str) -> dict:
            meet.wait()
            return {"path": path, "action": "created"}

        writer = ByFile(ScriptedClient([[tool_call("edit_file", path="x.txt", old_str="",
                                                   new_str="x"),
                                         tool_call("edit_file", path="y.txt", old_str="",
                                                   new_str="y")], reply("done")]),
                        "scripted", registry={"edit_file": edit_file},
                        tools=[schema(edit_file, "Write a file.", path="", old_str="",
                                      new_str="")], on_event=None)
        writer.chat("write two files")
        results = [m["content"] for m in writer.messages if m["role"] == "tool"]
        assert all("created" in r for r in results), course.both(
            f"the writes did not meet: they ran one after another ({results[0][:60]})",
            f"两次写入没有同时进行：它们是一个接一个运行的（{results[0][:60]}）")


def waiting_tool(bot, seconds):
    """A tool that waits `seconds`, or until the run of `bot` is aborted."""
    def wait_a_while() -> dict:
        return {"aborted": bot.abort_signal.wait(seconds)}
    return [schema(wait_a_while, "Wait.")], {"wait_a_while": wait_a_while}


def waiting_agent(seconds):
    steps = [tool_call("wait_a_while"), reply("waited")]
    bot = parallel_and_steering.SteerableAgent(ScriptedClient(steps), "scripted", on_event=None)
    bot.tools, bot.registry = waiting_tool(bot, seconds)
    return bot


@course.exercise("10.2", "a time limit for a whole run, and never for a later one",
                         "给整次运行设时限，而且从不影响之后的运行")
def _(t, deadline):
    with t.case("a run that ends in time is not aborted", "按时结束的运行不会被中止"):
        bot = parallel_and_steering.SteerableAgent(ScriptedClient([reply("quick")]), "scripted",
                                                   on_event=None)
        with deadline(bot, 5):
            bot.chat("hello")
        assert bot.stop_reason == "done", course.both(f"stop_reason was {bot.stop_reason!r}",
                                                      f"stop_reason 是 {bot.stop_reason!r}")
    with t.case("a run still going at the deadline is aborted, at the deadline",
                "到截止时间还没结束的运行，正好在截止时间被中止"):
        bot = waiting_agent(10)
        started = time.monotonic()
        with deadline(bot, 0.1):
            bot.chat("wait")
        took = time.monotonic() - started
        assert bot.stop_reason == "aborted", course.both(f"stop_reason was {bot.stop_reason!r}",
                                                         f"stop_reason 是 {bot.stop_reason!r}")
        assert took < 5, course.both(f"the run took {took:.1f} s with a deadline of 0.1 s",
                                     f"截止时间是 0.1 秒，运行却用了 {took:.1f} 秒")
    with t.case("when the block has ended, nothing is left that could abort a later run",
                "代码块结束之后，没有留下任何能中止之后运行的东西"):
        bot = waiting_agent(0.6)
        with deadline(bot, 0.2):
            pass
        bot.chat("wait")
        assert bot.stop_reason == "done", course.both(
            f"a later run was {bot.stop_reason!r}: the timer was still running",
            f"之后的一次运行是 {bot.stop_reason!r}：计时器还在走")
    with t.case("the same holds when the block ends with an exception",
                "代码块以异常结束时也是这样"):
        bot = waiting_agent(0.6)
        try:
            with deadline(bot, 0.2):
                raise KeyError("the block failed")
        except KeyError:
            pass
        bot.chat("wait")
        assert bot.stop_reason == "done", course.both(
            f"a later run was {bot.stop_reason!r}: the timer outlived the failed block",
            f"之后的一次运行是 {bot.stop_reason!r}：代码块失败结束了，计时器却还在走")


@course.exercise("10.3", "every queued follow-up at once, steering still first",
                         "排队的后续任务一次全部送出，转向消息仍然在前")
def _(t, AllAtOnce):
    def user_messages(bot):
        return [m["content"] for m in bot.messages if m["role"] == "user"]

    with t.case("three queued follow-ups become one message, in order, a blank line apart",
                "排队的三个后续任务合成一条消息，顺序不变，用空行隔开"):
        bot = AllAtOnce(ScriptedClient([reply("one"), reply("all three")]), "scripted",
                        on_event=None)
        for text in ["Then a.", "Then b.", "Then c."]:
            bot.follow_up(text)
        bot.chat("First the task.")
        found = user_messages(bot)
        assert found == ["First the task.", "Then a.\n\nThen b.\n\nThen c."], course.both(
            f"the user messages were {found}", f"用户消息是 {found}")
    with t.case("it is still one run: one agent_start, one agent_end",
                "仍是一次运行：一个 agent_start，一个 agent_end"):
        events = []
        bot = AllAtOnce(ScriptedClient([reply("one"), reply("both")]), "scripted",
                        on_event=events.append)
        bot.follow_up("Then a.")
        bot.follow_up("Then b.")
        bot.chat("task")
        kinds = [e["type"] for e in events]
        assert (kinds.count("agent_start"), kinds.count("agent_end")) == (1, 1), course.both(
            f"{kinds.count('agent_start')} agent_start and {kinds.count('agent_end')} agent_end",
            f"有 {kinds.count('agent_start')} 个 agent_start、{kinds.count('agent_end')} 个 "
            "agent_end")
    with t.case("steering that came too late for the last turn still comes first, alone",
                "没赶上最后一个轮次的转向消息，仍然排在最前，单独一条"):
        bot = None

        def answer_and_hear_more(messages):
            bot.steer("Wait, one correction.")  # the user types while the model answers
            return reply("one")

        bot = AllAtOnce(ScriptedClient([answer_and_hear_more, reply("corrected"),
                                        reply("both")]), "scripted", on_event=None)
        bot.follow_up("Then a.")
        bot.follow_up("Then b.")
        bot.chat("task")
        found = user_messages(bot)
        assert found == ["task", "Wait, one correction.", "Then a.\n\nThen b."], course.both(
            f"the user messages were {found}", f"用户消息是 {found}")
    with t.case("with nothing queued it returns None, and taking empties the queue",
                "队列为空时返回 None；取走之后，队列清空"):
        bot = AllAtOnce(ScriptedClient([]), "scripted", on_event=None)
        assert bot.next_message() is None, course.both(
            f"with nothing queued: {bot.next_message()!r}",
            f"队列为空时得到 {bot.next_message()!r}")
        bot.follow_up("x")
        bot.follow_up("y")
        assert bot.next_message() == "x\n\ny" and bot.next_message() is None, course.both(
            "the follow-ups were not all taken at once", "后续任务没有一次全部取走")
    with t.case("a single follow-up is unchanged", "只有一个后续任务时，保持不变"):
        bot = AllAtOnce(ScriptedClient([]), "scripted", on_event=None)
        bot.follow_up("Only this.")
        found = bot.next_message()
        assert found == "Only this.", course.both(f"one follow-up came out as {found!r}",
                                                  f"只有一个后续任务，却变成了 {found!r}")

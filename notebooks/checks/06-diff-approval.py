"""Checks of lesson 06's coding exercises. Each runs the student's code on the lesson's own
flow (the module diff_approval: the notebook's export cells), in a scratch folder."""

import contextlib
import io
import json
import re
from pathlib import Path
from unittest import mock

import course
import diff_approval as flow

from agent import Agent, ScriptedClient, reply, tool_call

GREET = 'def greet(name):\n    return f"Hello, {name}!"\n'


def quietly(func, *args):
    """Call func with stdout captured; return (its value, what it printed)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        value = func(*args)
    return value, out.getvalue()


def typing(answer):
    """builtins.input replaced by a person who types answer (or presses Ctrl-D / Ctrl-C)."""
    effect = {"side_effect": answer} if isinstance(answer, type) else {"return_value": answer}
    return mock.patch("builtins.input", **effect)


@course.exercise("06.1", "approve with your own changes (ask_or_edit)",
                         "批准时加上你自己的修改（ask_or_edit）")
def _(t, ask_or_edit):
    proposed = GREET.replace("Hello", "Hi")
    diff = flow.make_diff("greet.py", GREET, proposed)
    given = []

    def editor(text):
        given.append(text)
        return text.replace("Hi", "Hey")

    with t.case('typing "e" writes the person\'s version, and the model is told what changed',
                "输入 \"e\" 写入人改过的版本，并告诉模型改了什么"):
        Path("greet.py").write_text(GREET, encoding="utf-8")
        _, registry = flow.approval_tools(ask_or_edit(editor))
        registry["read_file"]("greet.py")
        with typing("e"):
            result, _ = quietly(registry["edit_file"], "greet.py", "Hello", "Hi")
        written = Path("greet.py").read_text(encoding="utf-8")
        assert written == GREET.replace("Hello", "Hey"), \
            course.both(f"the file holds {written!r}", f"文件里是 {written!r}")
        assert given == [proposed], course.both(
            "the editor should get the whole proposed text, once",
            "编辑器应当拿到模型提议的完整文本，而且只拿到一次")
        assert "changed_by_person" in result, \
            course.both(f"the result was {result}", f"结果是 {result}")

    with t.case("the diff is shown before the question", "提问之前先显示 diff"):
        with typing("n"):
            _, printed = quietly(ask_or_edit(editor), "greet.py", diff)
        assert '+    return f"Hi, {name}!"' in printed, \
            course.both("the diff was not printed", "diff 没有打印出来")

    with t.case('the question names "e", and does not say that only y or yes applies it',
                "问题里提到了 \"e\"，也没有说只有 y 或 yes 才会应用改动"):
        asked = []
        with mock.patch("builtins.input", lambda question="": asked.append(question) or "n"):
            _, printed = quietly(ask_or_edit(editor), "greet.py", diff)
        question = printed.replace(flow.visible(diff), "") + "".join(asked)
        assert re.search(r"(?<!\w)e(?!\w)", question), course.both(
            f'say in the question what "e" does; it was {question!r}',
            f"在问题里说明 \"e\" 做什么；问题是 {question!r}")
        assert "only y or yes" not in question.lower(), course.both(
            'the question says "only y or yes", but "e" applies a change too: write a line of '
            "your own, not ask_terminal's ANSWERS",
            "问题里说 \"only y or yes\"，可 \"e\" 也会应用改动：自己写一行说明，"
            "别用 ask_terminal 的 ANSWERS")

    with t.case("y and yes approve the model's version, without opening the editor",
                "y 和 yes 批准模型的版本，不打开编辑器"):
        given.clear()
        for typed in ("y", "yes"):
            with typing(typed):
                decision, _ = quietly(ask_or_edit(editor), "greet.py", diff)
            decision = flow.as_decision(decision)
            assert decision.approved, course.both(f"{typed!r} did not approve",
                                                   f"{typed!r} 没有批准")
            assert decision.rewrite is None, course.both(
                f"{typed!r} should approve the text as it is", f"{typed!r} 应当原样批准模型的文本")
        assert given == [], course.both("the editor was opened", "编辑器被打开了")

    with t.case('n and Enter reject with "the person said no"; other words are the reason',
                "n 和回车以 \"the person said no\" 拒绝；输入别的话，就把这些话当作理由"):
        for typed, reason in (("n", "the person said no"), ("", "the person said no"),
                              ("use pathlib", "use pathlib")):
            with typing(typed):
                decision, _ = quietly(ask_or_edit(editor), "greet.py", diff)
            decision = flow.as_decision(decision)
            assert not decision.approved, course.both(f"{typed!r} approved", f"{typed!r} 批准了")
            assert decision.reason == reason, course.both(
                f"{typed!r} gave the reason {decision.reason!r}",
                f"{typed!r} 给出的理由是 {decision.reason!r}")

    with t.case("Ctrl-D rejects", "Ctrl-D 表示拒绝"):
        with typing(EOFError):
            decision, _ = quietly(ask_or_edit(editor), "greet.py", diff)
        assert not flow.as_decision(decision).approved, \
            course.both("EOFError (Ctrl-D) approved", "EOFError（Ctrl-D）被当成了批准")

    with t.case("Ctrl-C is no answer: it stops the run (KeyboardInterrupt goes on)",
                "Ctrl-C 不是回答：运行就此停止（KeyboardInterrupt 继续往上抛）"):
        stopped = False
        with typing(KeyboardInterrupt):
            try:
                quietly(ask_or_edit(editor), "greet.py", diff)
            except KeyboardInterrupt:
                stopped = True
        assert stopped, course.both("Ctrl-C was turned into an answer, so the run would go on",
                                    "Ctrl-C 被当成了一个回答，运行就会继续下去")


@course.exercise("06.2", "approve once per file (remember)", "每个文件只批准一次（remember）")
def _(t, remember):
    asked = []

    def person(path, diff):
        asked.append(path)
        return flow.reject("not b") if path == "b.txt" else flow.APPROVE

    policy = remember(person)
    with t.case("the first edit of a path asks the inner policy",
                "一个路径第一次被编辑时，询问内层策略"):
        decision = flow.as_decision(policy("a.txt", "diff 1"))
        assert decision.approved and asked == ["a.txt"], \
            course.both(f"asked about {asked}", f"问过的是 {asked}")

    with t.case("a later edit of an approved path is approved without asking",
                "对已批准路径的后续编辑，不再询问，直接批准"):
        decision = flow.as_decision(policy("a.txt", "diff 2"))
        assert decision.approved, course.both("the second edit of a.txt was not approved",
                                              "a.txt 的第二次编辑没有被批准")
        assert asked == ["a.txt"], course.both(f"the inner policy was asked again: {asked}",
                                               f"又问了一次内层策略：{asked}")

    with t.case("another path is asked about", "换一个路径，就要再问"):
        policy("c.txt", "diff 3")
        assert asked == ["a.txt", "c.txt"], \
            course.both(f"asked about {asked}", f"问过的是 {asked}")

    with t.case("a rejection keeps its reason and is not remembered",
                "拒绝会带着理由，而且不会被记住"):
        for _ in range(2):
            decision = flow.as_decision(policy("b.txt", "diff 4"))
            assert not decision.approved and decision.reason == "not b", \
                course.both(f"got {decision}", f"得到的是 {decision}")
        assert asked.count("b.txt") == 2, \
            course.both("a rejected path was not asked again", "被拒绝过的路径没有再问")

    with t.case("an inner policy may answer True/False, as any policy may",
                "内层策略可以像任何策略一样回答 True/False"):
        answers = iter([False, True])
        yes_no = remember(lambda path, diff: next(answers))
        assert not flow.as_decision(yes_no("x.txt", "")).approved
        assert flow.as_decision(yes_no("x.txt", "")).approved
        assert flow.as_decision(yes_no("x.txt", "")).approved, \
            course.both("True was not remembered", "True 没有被记住")

    with t.case("each remember() has a memory of its own", "每个 remember() 有自己的记忆"):
        other = []
        remember(lambda path, diff: other.append(path) or flow.APPROVE)("a.txt", "")
        assert other == ["a.txt"], course.both("a new remember() did not ask about a.txt",
                                               "新的 remember() 没有问 a.txt")

    with t.case("in the flow: two edits of one file, the person asked once",
                "在流程里：同一个文件编辑两次，只问人一次"):
        asked.clear()
        _, registry = flow.approval_tools(remember(person))
        registry["edit_file"]("a.txt", "", "1\n")
        registry["edit_file"]("a.txt", "1", "2")
        assert Path("a.txt").read_text(encoding="utf-8") == "2\n" and asked == ["a.txt"]


def refused(call, *args) -> str:
    """The message of the StaleFile that call raised (any module's StaleFile)."""
    try:
        call(*args)
    except Exception as exc:
        assert type(exc).__name__ == "StaleFile", course.both(
            f"it raised {type(exc).__name__}: {exc}",
            f"抛出了 {type(exc).__name__}: {exc}")
        return str(exc)
    raise AssertionError(course.both(
        "the edit was written, but the file had changed since it was read",
        "编辑写进去了，可文件在读过之后已经变了"))


@course.exercise("06.3", "show the model the conflict (conflict_tools)",
                         "把冲突给模型看（conflict_tools）")
def _(t, conflict_tools):
    def stale_setup(read_as="notes.txt"):
        Path("notes.txt").write_text("one\ntwo\n", encoding="utf-8")
        _, registry = conflict_tools(flow.approve_all)
        registry["read_file"](read_as)
        Path("notes.txt").write_text("one\nTWO\n", encoding="utf-8")  # a colleague's change
        return registry

    with t.case("a read and an edit still work", "读取和编辑仍然正常"):
        Path("a.txt").write_text("a\n", encoding="utf-8")
        tools, registry = conflict_tools(flow.approve_all)
        assert {"read_file", "edit_file"} <= set(registry), \
            course.both("read_file or edit_file is missing", "缺少 read_file 或 edit_file")
        registry["read_file"]("a.txt")
        registry["edit_file"]("a.txt", "a", "b")
        assert Path("a.txt").read_text(encoding="utf-8") == "b\n"

    with t.case("a stale edit is refused, nothing is written, and it says to read again",
                "过时的编辑被拒绝，什么也不写，并提示重新读"):
        registry = stale_setup()
        message = refused(registry["edit_file"], "notes.txt", "one", "1")
        assert "changed since you read it" in message, \
            course.both(f"the error says {message!r}", f"错误说的是 {message!r}")
        assert Path("notes.txt").read_text(encoding="utf-8") == "one\nTWO\n"

    with t.case("the error holds the diff from what the model read to what is on disk now",
                "错误里有一份 diff：从模型读到的内容，到磁盘上现在的内容"):
        registry = stale_setup()
        message = refused(registry["edit_file"], "notes.txt", "one", "1")
        assert flow.make_diff("notes.txt", "one\ntwo\n", "one\nTWO\n") in message, \
            course.both("no diff (or one the wrong way round: it goes from the text read to "
                        "the text now)",
                        "没有 diff（也可能方向反了：diff 应当从读到的文本到现在的文本）")

    with t.case("the diff is found when the file was read as ./notes.txt",
                "文件以 ./notes.txt 读入时，也能找到这份 diff"):
        registry = stale_setup(read_as="./notes.txt")
        message = refused(registry["edit_file"], "notes.txt", "one", "1")
        assert "+TWO" in message, course.both(
            "keep the text by the result's path, the real name",
            "按结果里的路径（也就是真实的名字）记下文本")

    with t.case("after the diff, the edit goes through without reading again",
                "看过 diff 之后，不用重新读，编辑就能通过"):
        registry = stale_setup()
        refused(registry["edit_file"], "notes.txt", "one", "1")
        registry["edit_file"]("notes.txt", "one", "1")
        assert Path("notes.txt").read_text(encoding="utf-8") == "1\nTWO\n"

    with t.case("a file never read is still refused with 'read it first', no diff",
                "从没读过的文件仍以 'read it first' 拒绝，没有 diff"):
        Path("other.txt").write_text("x\n", encoding="utf-8")
        _, registry = conflict_tools(flow.approve_all)
        message = refused(registry["edit_file"], "other.txt", "", "y\n")
        assert "read it first" in message and "@@" not in message, \
            course.both(f"got {message!r}", f"得到的是 {message!r}")

    with t.case("and it stays refused on a second try: nothing was read behind the model's back",
                "再试一次也仍被拒绝：没有背着模型替它读过文件"):
        Path("other.txt").write_text("x\n", encoding="utf-8")
        _, registry = conflict_tools(flow.approve_all)
        refused(registry["edit_file"], "other.txt", "", "y\n")
        try:
            refused(registry["edit_file"], "other.txt", "", "y\n")
        except AssertionError:
            raise AssertionError(course.both(
                "the second blind overwrite was written: reading the file on 'read it first' "
                "updated the fingerprint, though the model never saw it",
                "第二次没读就直接覆盖，却写进去了：以 'read it first' 拒绝时读了文件、更新了"
                "指纹，可模型从没看到过文件内容")) from None
        assert Path("other.txt").read_text(encoding="utf-8") == "x\n", \
            course.both("other.txt changed", "other.txt 被改了")

    with t.case("the model's own write counts as what it saw: the diff shows only the change"
                " since", "模型自己写入的内容，算作模型看到的：diff 只显示那之后的变化"):
        Path("notes.txt").write_text("one\ntwo\n", encoding="utf-8")
        _, registry = conflict_tools(flow.approve_all)
        registry["read_file"]("notes.txt")
        registry["edit_file"]("notes.txt", "one", "1")  # the model's own write: 1, two
        Path("notes.txt").write_text("1\nTWO\n", encoding="utf-8")  # then a colleague's
        message = refused(registry["edit_file"], "notes.txt", "two", "2")
        assert flow.make_diff("notes.txt", "1\ntwo\n", "1\nTWO\n") in message, \
            course.both("the diff should go from the text the model last saw (after its own "
                        f"edit) to the text now; the error says {message!r}",
                        "diff 应当从模型最后看到的文本（它自己编辑之后的）到现在的文本；"
                        f"错误说的是 {message!r}")

    with t.case("the model reads the diff in its tool result", "模型在工具结果里读到这份 diff"):
        Path("notes.txt").write_text("one\ntwo\n", encoding="utf-8")

        def colleague_then_model(messages):
            Path("notes.txt").write_text("one\nTWO\n", encoding="utf-8")
            return tool_call("edit_file", path="notes.txt", old_str="one", new_str="1")

        script = [tool_call("read_file", path="notes.txt"), colleague_then_model,
                  tool_call("edit_file", path="notes.txt", old_str="one", new_str="1"),
                  reply("done")]
        tools, registry = conflict_tools(flow.approve_all)
        bot = Agent(ScriptedClient(script), "scripted", tools=tools, registry=registry,
                    on_event=None)
        bot.chat("edit")
        results = [m["content"] for m in bot.messages if m["role"] == "tool"]
        assert "+TWO" in json.loads(results[1])["error"], \
            course.both("the tool result has no diff", "工具结果里没有 diff")
        assert json.loads(results[2]).get("action") == "edited", \
            course.both(f"then: {results[2]}", f"接下来的结果是 {results[2]}")


@course.exercise("06.5", "an audit log of every edit (audit_log)",
                         "记下每次编辑的审计日志（audit_log）")
def _(t, audit_log):
    def run(log, script, answers):
        Path("a.txt").write_text("a\n", encoding="utf-8")
        Path("c.txt").write_text("c\n", encoding="utf-8")
        tools, registry = flow.approval_tools(flow.scripted(answers))
        bot = Agent(ScriptedClient(script), "scripted", tools=tools, registry=registry,
                    on_event=audit_log(log))
        bot.chat("edit")

    script = [tool_call("read_file", path="a.txt"),
              [tool_call("edit_file", path="a.txt", old_str="a", new_str="A"),
               tool_call("edit_file", path="b.txt", old_str="", new_str="b\n"),
               tool_call("edit_file", path="c.txt", old_str="", new_str="C\n")],
              tool_call("edit_file", path="a.txt", old_str="missing", new_str="x"),
              reply("done")]
    expected = ["call_2\ta.txt\twritten", "call_3\tb.txt\trejected: not that one",
                "call_4\tc.txt\tstale", "call_5\ta.txt\tfailed"]
    lines = []
    with t.case("one line per edit_file call, none for read_file",
                "每个 edit_file 调用一行，read_file 没有"):
        run("edits.log", script, [flow.APPROVE, flow.reject("not that one")])
        lines = Path("edits.log").read_text(encoding="utf-8").split("\n")
        assert lines[-1] == "", course.both("every line ends with a newline",
                                            "每一行都以换行符结尾")
        lines = lines[:-1]
        assert len(lines) == 4, course.both(f"{len(lines)} lines: {lines}",
                                            f"共 {len(lines)} 行：{lines}")
    for want in expected:
        outcome = want.split("\t")[2].split(":")[0]
        with t.case(f"a {outcome} edit: {want!r}",
                    f"一次 {outcome} 的编辑：{want!r}"):
            assert want in lines, course.both(f"no such line; the lines are {lines}",
                                              f"没有这一行；现有的行是 {lines}")
    with t.case("a path or a reason holding a tab and a newline cannot forge a line",
                "含有制表符和换行符的路径或理由，伪造不出一行"):
        forged = "x.txt\tstale\ncall_9\tsecrets.txt"
        run("forged.log", [tool_call("edit_file", path=forged, old_str="", new_str="x\n"),
                           reply("done")], [flow.reject("not now\ncall_8\tpasswd\twritten")])
        written = Path("forged.log").read_text(encoding="utf-8").split("\n")[:-1]
        assert len(written) == 1, course.both(
            f"one edit, {len(written)} lines: {written} (write the path and the reason with "
            "visible(text, keep=''))",
            f"一次编辑，却有 {len(written)} 行：{written}（用 visible(text, keep='') "
            "写路径和理由）")
        fields = written[0].split("\t")
        assert len(fields) == 3 and fields[0] == "call_1", \
            course.both(f"the line's fields are {fields}", f"这一行的字段是 {fields}")
        assert fields[2].startswith("rejected: not now"), \
            course.both(f"the outcome is {fields[2]!r}", f"结果字段是 {fields[2]!r}")
    with t.case("a second run appends and keeps the first run's lines",
                "第二次运行追加写入，保留第一次运行的行"):
        run("edits.log", [tool_call("edit_file", path="d.txt", old_str="", new_str="d\n"),
                          reply("done")], [flow.APPROVE])
        again = Path("edits.log").read_text(encoding="utf-8").split("\n")[:-1]
        assert again == [*lines, "call_1\td.txt\twritten"], \
            course.both(f"the log is now {again}", f"日志现在是 {again}")

"""The checks of lesson 05's coding exercises (notebooks/05-sandbox.ipynb, "Your turn").

Each runs the student's code on a lab of its own (props.lab.build_lab in the scratch folder
course.check gives it), and includes the cases a plausible wrong answer fails: a link
followed, a named pipe that hangs, a hard link from outside, a path check on the string, a
command shown with the characters that hide what it does."""

import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import course
import sandbox
from props.lab import SECRET, build_lab

import agent
from agent import Agent, ScriptedClient, reply, tool_call


def make_lab() -> SimpleNamespace:
    """build_lab's workspace and outside folder, in the current (scratch) folder."""
    workspace, outside = build_lab(Path(os.path.realpath(".")) / "lab")
    return SimpleNamespace(root=workspace, workspace=workspace, outside=outside)


def secret_intact(lab) -> bool:
    return (lab.outside / "secret.txt").read_text() == SECRET + "\n"


def refused(func, *args) -> str:
    """The error func raises, as text; an AssertionError if it raises nothing."""
    try:
        result = func(*args)
    except NotImplementedError:  # the starter: say "not written yet", not "refused"
        raise
    except KeyboardInterrupt:  # it would stop the whole run, not refuse one call
        raise AssertionError(course.both(
            "a Ctrl-C went through: it would stop the agent, not refuse the call",
            "Ctrl-C 一路抛了出来：这会让智能体停下，而不是只拒绝这次调用")) from None
    except Exception as exc:  # the tools raise; the loop turns it into an observation
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError(course.both(f"it was not refused: it returned {result!r}",
                                     f"没有拒绝：返回了 {result!r}"))


def stopped_by(func, *args) -> None:
    """func(*args) lets a Ctrl-C through; an AssertionError if it turns it into anything else."""
    try:
        result = func(*args)
    except KeyboardInterrupt:
        return
    except NotImplementedError:  # the starter: say "not written yet"
        raise
    except Exception as exc:
        raise AssertionError(course.both(
            f"the Ctrl-C became {type(exc).__name__}: {exc}, an error the model reads, so the "
            "run would go on",
            f"Ctrl-C 变成了 {type(exc).__name__}: {exc}，成了模型读到的一条错误，"
            "运行会照常继续")) from None
    raise AssertionError(course.both(f"the Ctrl-C did not stop it: it returned {result!r}",
                                     f"按了 Ctrl-C 也没有停下：返回了 {result!r}"))


def within(seconds: float, func, *args, unblock=None):
    """Run func in a thread. If it has not finished after `seconds`, call unblock() (which
    must make it return, e.g. by opening a FIFO's other end) and fail: it would have hung."""
    outcome = []

    def run():
        try:
            outcome.append(("value", func(*args)))
        except BaseException as exc:
            outcome.append(("error", exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        if unblock is not None:
            unblock()
            thread.join(seconds)
        raise AssertionError(course.both(
            f"it was still running after {seconds} s: it would hang the agent",
            f"过了 {seconds} 秒还在运行：会让智能体卡住"))
    kind, value = outcome[0]
    if kind == "error":
        raise value
    return value


def open_the_other_end(fifo: Path):
    """What a hung reader of a FIFO waits for: a writer. Opening and closing one lets it go."""
    def unblock():
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    return unblock


def fresh_sandbox():
    """A copy of lesson 05's module of our own, so adding rows to its tables here changes
    nothing for the cells above, nor for the student's `import sandbox`."""
    return course.load_notebook("05-sandbox")


# --- exercise 1: grep_files ---------------------------------------------------------------------


def _matches(result) -> list[tuple[str, int, str]]:
    return [(m["path"], m["line"], m["text"]) for m in result["matches"]]


@course.exercise("05.1", "a jailed grep_files(pattern, path=\".\")",
                         "目录隔离下的 grep_files(pattern, path=\".\")")
def _(t, grep_in):
    lab = make_lab()
    (lab.workspace / "notes" / "deep").mkdir()
    (lab.workspace / "notes" / "deep" / "plan.md").write_text("step 1\ntest the sandbox\n")
    (lab.workspace / "binary.bin").write_bytes(b"\xff\xfe test the sandbox \x00")
    with t.case("finds each line with the text, with its workspace path and line number",
                "找出每个含有该文本的行，给出它在工作区里的路径和行号"):
        found = _matches(grep_in(lab.root, "test the sandbox"))
        assert ("notes/todo.md", 2, "- test the sandbox") in found, \
            course.both(f"found {found}", f"找到的是 {found}")
        assert ("notes/deep/plan.md", 2, "test the sandbox") in found, \
            course.both(f"a file in a subfolder was not searched: found {found}",
                        f"没有搜索子文件夹里的文件：找到的是 {found}")
        assert "todo-link.md" not in [path for path, _, _ in found], course.both(
            "it followed the symlink todo-link.md (skip links: a link can lead anywhere)",
            "顺着符号链接 todo-link.md 读了进去（要跳过链接：链接可能通向任何地方）")
        assert found == sorted(found), course.both(
            f"matches should be sorted by path, then line: {found}",
            f"匹配应当先按路径、再按行号排序：{found}")
    with t.case("searches only below the folder it is given", "只在给定的文件夹之下搜索"):
        result = grep_in(lab.root, "test", "notes/deep")
        assert result["path"] == "notes/deep", course.both(
            f"path {result['path']!r}, not 'notes/deep'",
            f"path 是 {result['path']!r}，不是 'notes/deep'")
        assert _matches(result) == [("notes/deep/plan.md", 2, "test the sandbox")], \
            course.both(f"found {_matches(result)}", f"找到的是 {_matches(result)}")
    with t.case("refuses a folder outside the workspace, by a path or through a link",
                "拒绝工作区之外的文件夹，无论是直接给路径还是经由链接"):
        for path in ("../outside", "outdir", "/etc"):
            error = refused(grep_in, lab.root, "launch", path)
            assert "escapes the workspace" in error, f"{path}: {error}"
            assert str(lab.root.parent) not in error, course.both(
                f"the error shows a machine path: {error}", f"错误里露出了本机上的路径：{error}")
    with t.case("never follows a link out: the secret is not in the result",
                "从不顺着链接出去：结果里没有那份秘密"):
        result = grep_in(lab.root, "launch code")
        assert SECRET not in str(result), course.both(
            "it read the secret through leak.txt, chain1, outdir/ or hard.txt",
            "经由 leak.txt、chain1、outdir/ 或 hard.txt 读到了那份秘密")
        assert _matches(result) == [], \
            course.both(f"found {_matches(result)}", f"找到的是 {_matches(result)}")
    with t.case("skips a named pipe without hanging, and a file that is not text",
                "跳过命名管道而不卡住，也跳过不是文本的文件"):
        fifo = lab.workspace / "notes" / "pipe"
        os.mkfifo(fifo)
        try:
            result = within(3, grep_in, lab.root, "test the sandbox",
                            unblock=open_the_other_end(fifo))
        finally:
            fifo.unlink()  # the next cases must not hang on it
        assert "binary.bin" not in [m["path"] for m in result["matches"]], \
            course.both("binary.bin matched", "binary.bin 出现在匹配里")
    with t.case("stops at 50 matches and says so (truncated)",
                "到 50 个匹配就停下，并说明这一点（truncated）"):
        (lab.workspace / "many.txt").write_text("needle\n" * 200)
        many = grep_in(lab.root, "needle")
        assert len(many["matches"]) == 50, course.both(
            f"{len(many['matches'])} matches, not 50",
            f"有 {len(many['matches'])} 个匹配，不是 50 个")
        assert many["truncated"] is True, \
            course.both("truncated should be True", "truncated 应当是 True")
        assert grep_in(lab.root, "step 1")["truncated"] is False, \
            course.both("truncated should be False", "truncated 应当是 False")
    with t.case("works as a read-level tool: one row in FUNCTIONS, RISK and SCHEMAS",
                "作为 read 级工具可用：在 FUNCTIONS、RISK 和 SCHEMAS 里各占一行"):
        grep_in(lab.root, "step 1")  # called once as it is, so the starter says "not written"
        mine = fresh_sandbox()
        mine.FUNCTIONS["grep_files"] = grep_in
        mine.RISK["grep_files"] = "read"
        mine.SCHEMAS["grep_files"] = agent.schema(
            mine.jailed(grep_in, lab.root, "grep_files"), "Search text files for a line.",
            pattern="The text to look for.", path="The folder to search; default all.")
        tools, registry = mine.sandbox_tools(lab.root, ("read",))
        bot = Agent(ScriptedClient([tool_call("grep_files", pattern="step 1"), reply("ok")]),
                    "scripted", tools=tools, registry=registry, on_event=None)
        bot.chat("Where is step 1?")
        answer = bot.messages[3]["content"]
        assert "notes/deep/plan.md" in answer and "error" not in answer, answer


# --- exercise 2: delete_file --------------------------------------------------------------------


@course.exercise("05.2", "a jailed delete_file(path)", "目录隔离下的 delete_file(path)")
def _(t, delete_in):
    lab = make_lab()
    todo = lab.workspace / "notes" / "todo.md"
    with t.case("deletes a file, and answers with its workspace path",
                "删除文件，回答里给出它在工作区里的路径"):
        (lab.workspace / "notes" / "old.md").write_text("old\n")
        result = delete_in(lab.root, "notes/old.md")
        assert result == {"path": "notes/old.md", "action": "deleted"}, \
            course.both(f"answered {result}", f"回答了 {result}")
        assert not (lab.workspace / "notes" / "old.md").exists(), \
            course.both("notes/old.md is still there", "notes/old.md 还在")
    with t.case("deletes a link, never what it points to", "删除链接本身，从不删除链接指向的东西"):
        assert delete_in(lab.root, "leak.txt")["action"] == "deleted"
        assert not os.path.lexists(lab.workspace / "leak.txt"), \
            course.both("the link leak.txt is still there", "链接 leak.txt 还在")
        assert secret_intact(lab), course.both(
            "the file outside that leak.txt points to was changed",
            "leak.txt 指向的外面那个文件被改动了")
        delete_in(lab.root, "todo-link.md")
        assert not os.path.lexists(lab.workspace / "todo-link.md"), \
            course.both("todo-link.md is still there", "todo-link.md 还在")
        assert todo.exists(), course.both(
            "deleting the link todo-link.md deleted notes/todo.md, its target",
            "删除链接 todo-link.md，却删掉了链接指向的 notes/todo.md")
    with t.case("refuses a file outside the workspace, by a path or through a linked folder",
                "拒绝工作区之外的文件，无论是直接给路径还是经由链接的文件夹"):
        for path in ("../outside/secret.txt", "outdir/secret.txt", "/etc/hostname"):
            error = refused(delete_in, lab.root, path)
            assert "escapes the workspace" in error, f"{path}: {error}"
        assert secret_intact(lab), course.both("the secret outside was deleted",
                                               "外面的那份秘密被删了")
    with t.case("refuses the workspace itself", "拒绝删除工作区本身"):
        for path in (".", "notes/..", ""):
            refused(delete_in, lab.root, path)
        assert todo.exists() and lab.workspace.is_dir(), \
            course.both("the workspace lost files", "工作区里少了文件")
    with t.case("does not delete a folder", "不删除文件夹"):
        refused(delete_in, lab.root, "notes")
        assert todo.exists(), course.both("the folder notes was deleted", "文件夹 notes 被删了")
    with t.case("a missing file is an error that names the workspace path only",
                "文件不存在时报错，错误里只给出工作区里的路径"):
        error = refused(delete_in, lab.root, "notes/missing.md")
        assert "notes/missing.md" in error, error
        assert str(lab.root) not in error, course.both(
            f"the error shows the machine's path: {error}", f"错误里露出了本机上的路径：{error}")
    with t.case("works as a write-level tool", "作为 write 级工具可用"):
        mine = fresh_sandbox()
        mine.FUNCTIONS["delete_file"] = delete_in
        mine.RISK["delete_file"] = "write"
        mine.SCHEMAS["delete_file"] = agent.schema(
            mine.jailed(delete_in, lab.root, "delete_file"), "Delete a file.",
            path="The file to delete.")
        (lab.workspace / "scratch.txt").write_text("x")
        (lab.workspace / "first.txt").write_text("x")
        delete_in(lab.root, "first.txt")  # called once as it is, so the starter says so
        reader = mine.sandbox_tools(lab.root, ("read",))[1]
        assert "delete_file" not in reader, \
            course.both("a read-only agent got delete_file", "只读的智能体拿到了 delete_file")
        tools, registry = mine.sandbox_tools(lab.root, ("read", "write"))
        bot = Agent(ScriptedClient([tool_call("delete_file", path="scratch.txt"), reply("ok")]),
                    "scripted", tools=tools, registry=registry, on_event=None)
        bot.chat("Delete scratch.txt.")
        result = bot.messages[3]["content"]
        assert not (lab.workspace / "scratch.txt").exists(), result


# --- exercise 3: hard links that stay inside ----------------------------------------------------


def _links_inside(all_links_inside, root: Path, file: Path) -> bool:
    fd = os.open(file, os.O_RDONLY)
    try:
        return all_links_inside(root, fd)
    finally:
        os.close(fd)


@course.exercise("05.3", "all_links_inside(root, fd): every name of the file is in the workspace",
                         "all_links_inside(root, fd)：文件的每个名字都在工作区里")
def _(t, all_links_inside):
    lab = make_lab()
    ws, outside = lab.workspace, lab.outside
    (ws / "notes" / "a.md").write_text("a\n")
    (ws / "linked").mkdir()
    os.link(ws / "notes" / "a.md", ws / "linked" / "a-again.md")  # two names, both inside
    (ws / "insidelink").symlink_to("notes")  # a link to a folder inside: no extra names
    with t.case("a file with one name is fine", "只有一个名字的文件：没问题"):
        assert _links_inside(all_links_inside, lab.root, ws / "notes" / "todo.md") is True
    with t.case("a file whose two names are both in the workspace is fine (pnpm, cp -al)",
                "两个名字都在工作区里的文件：没问题（pnpm、cp -al）"):
        assert _links_inside(all_links_inside, lab.root, ws / "notes" / "a.md") is True, \
            course.both("refused: are you only looking at st_nlink?",
                        "拒绝了：是不是只看了 st_nlink？")
    with t.case("a name reached twice through a symlinked folder still counts once",
                "经由符号链接的文件夹到达两次的名字，仍只算一次"):
        assert _links_inside(all_links_inside, lab.root, ws / "linked" / "a-again.md") is True, \
            course.both(
                "refused: did the walk follow insidelink -> notes and count notes/a.md twice?",
                "拒绝了：遍历时是不是顺着 insidelink -> notes 走了进去，把 notes/a.md 数了两次？")
    with t.case("a file with a name outside the workspace is not (hard.txt)",
                "有一个名字在工作区之外的文件：不行（hard.txt）"):
        assert _links_inside(all_links_inside, lab.root, ws / "hard.txt") is False
    with t.case("a name reached only through a symlinked folder that leads out is outside",
                "只能经由通往外面的符号链接文件夹到达的名字，算在工作区之外"):
        (outside / "b.md").write_text("b\n")
        os.link(outside / "b.md", ws / "notes" / "b.md")  # seen in the walk as outdir/b.md
        assert _links_inside(all_links_inside, lab.root, ws / "notes" / "b.md") is False, \
            course.both("accepted: did the walk follow outdir -> ../outside?",
                        "接受了：遍历时是不是顺着 outdir -> ../outside 走了出去？")
    with t.case("a symlink to the outside name is not a name inside",
                "指向外面那个名字的符号链接，不算工作区里的名字"):
        (outside / "d.md").write_text("d\n")
        os.link(outside / "d.md", ws / "d.md")
        (ws / "d-link.md").symlink_to(outside / "d.md")  # os.stat would count it; lstat not
        assert _links_inside(all_links_inside, lab.root, ws / "d.md") is False, \
            course.both(
                "accepted: did you count d-link.md, a symlink, as a name (os.stat, not os.lstat)?",
                "接受了：是不是把符号链接 d-link.md 也算作了一个名字（用了 os.stat，而不是 "
                "os.lstat）？")
    with t.case("three names, one of them outside, is not", "三个名字、其中一个在外面：不行"):
        (ws / "c.md").write_text("c\n")
        os.link(ws / "c.md", ws / "notes" / "c.md")
        os.link(ws / "c.md", outside / "c.md")
        assert _links_inside(all_links_inside, lab.root, ws / "c.md") is False, \
            course.both("accepted with 2 of 3 names inside",
                        "三个名字里只有两个在工作区里，却接受了")


# --- exercise 6: an approval gate for run_command -----------------------------------------------


def _person(*answers):
    """An ask() that answers from a list and remembers what it was asked."""
    asked, queue = [], list(answers)

    def ask(question: str) -> str:
        asked.append(question)
        answer = queue.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer
    ask.asked = asked
    return ask


# Commands whose raw text hides "rm -rf data" from a person reading the question in a
# terminal, and the characters that must not reach the question as they are.
HIDING = [
    "rm -rf data\recho tidy up",  # the carriage return: "echo tidy up" is written over it
    "rm -rf data\x1b[2K\recho tidy up",  # an escape sequence erases the line first
    "echo hi" + "\n" * 40 + "rm -rf data",  # newlines scroll it out of sight
    "echo \u202eatad fr- mr",  # a right-to-left override shows the rest reversed
]


def _hides(question: str, layout: str) -> str:
    """What in the question, shown as it is, could hide part of the command from a person: a
    character that is not printable, "\n" for the command's line breaks, "" if nothing.
    `layout` is the question for a plain command: its own line breaks are allowed."""
    for char in sorted(set(question)):
        if not char.isprintable() and char != "\n":
            return char
    if question.count("\n") > layout.count("\n"):
        return "\n"
    return ""


@course.exercise("05.6", "an approval gate for run_command", "给 run_command 加一道审批")
def _(t, gated):
    root = Path(os.path.realpath("gated"))
    root.mkdir()
    run_command = sandbox.make_run_command(root, timeout=2)
    with t.case("y or yes (any case) runs the command and returns its result",
                "y 或 yes（不分大小写）运行命令，并返回结果"):
        for answer in ("y", "yes", "Y", " YES "):
            ask = _person(answer)
            result = gated(run_command, ask)("echo hi")
            assert result == {"exit_code": 0, "output": "hi\n"}, \
                course.both(f"{answer!r}: got {result}", f"{answer!r}：得到的是 {result}")
    with t.case("the person is shown the command before it runs", "命令运行之前先给人看"):
        ask = _person("n")
        refused(gated(run_command, ask), "touch made.txt")
        assert ask.asked and "touch made.txt" in ask.asked[0], \
            course.both(f"asked {ask.asked}", f"问的是 {ask.asked}")
    with t.case("the command is shown so that no character in it can hide what runs",
                "显示命令时，其中任何字符都藏不住实际运行的内容"):
        plain = _person("n")
        refused(gated(run_command, plain), "touch made.txt")
        for command in HIDING:
            ask = _person("n")
            refused(gated(run_command, ask), command)
            question = ask.asked[0] if ask.asked else ""
            hides = _hides(question, plain.asked[0] if plain.asked else "")
            assert hides != "\n", course.both(
                f"the question for {command!r} shows the command's line breaks as they are: "
                "show the command as repr(command) does, with such characters written out",
                f"对 {command!r} 的提问原样显示了命令里的换行：要像 repr(command) 那样显示命令，"
                "把这类字符写成转义形式")
            assert not hides, course.both(
                f"the question for {command!r} shows {hides!r} as it is: show the command as "
                "repr(command) does, with such characters written out",
                f"对 {command!r} 的提问原样显示了 {hides!r}：要像 repr(command) 那样显示命令，"
                "把这类字符写成转义形式")
            for word in ("rm", "data", "atad"):
                assert word not in command or word in question, course.both(
                    f"the question does not show the command: {question!r}",
                    f"提问里没有显示命令：{question!r}")
    with t.case("Enter alone, n, or anything else refuses: an error that names the command",
                "只按回车、输入 n 或其他任何内容，都是拒绝：一条写明命令的错误"):
        for answer in ("", "n", "no", "sure, why not", "yess"):
            error = refused(gated(run_command, _person(answer)), "touch made.txt")
            assert "touch made.txt" in error, course.both(
                f"{answer!r}: the error {error!r} does not name it",
                f"{answer!r}：错误 {error!r} 没有写明这条命令")
        assert not (root / "made.txt").exists(), \
            course.both("a command ran without a yes", "没有得到 yes，命令就运行了")
    with t.case("the input closed (EOFError) refuses, without a crash",
                "输入已关闭（EOFError）：拒绝，不崩溃"):
        refused(gated(run_command, _person(EOFError())), "touch made.txt")
        assert not (root / "made.txt").exists(), \
            course.both("a command ran without a yes", "没有得到 yes，命令就运行了")
    with t.case("Ctrl-C at the question is not a no: KeyboardInterrupt goes through, nothing runs",
                "提问时按 Ctrl-C 不等于回答 no：KeyboardInterrupt 照常抛出，什么也不运行"):
        stopped_by(gated(run_command, _person(KeyboardInterrupt())), "touch made.txt")
        assert not (root / "made.txt").exists(), \
            course.both("the command ran after a Ctrl-C", "按了 Ctrl-C 之后，命令还是运行了")
    with t.case("it keeps run_command's name and signature, so the schema still fits",
                "保留 run_command 的名字和签名，所以 Schema 仍然对得上"):
        tools, registry = sandbox.sandbox_tools(root, ("execute",))
        wrapped = gated(registry["run_command"], _person())
        assert getattr(wrapped, "__name__", None) == "run_command", \
            course.both("its name is not run_command", "名字不是 run_command")
        agent.check_tools(tools, {"run_command": wrapped})
    with t.case("through the agent, a no is a tool result the model reads, and the run goes on",
                "经由智能体时，no 是模型读到的一条工具结果，运行继续"):
        tools, registry = sandbox.sandbox_tools(root, ("execute",))
        registry = {"run_command": gated(registry["run_command"], _person("n", "y"))}
        bot = Agent(ScriptedClient([tool_call("run_command", command="touch no.txt"),
                                    tool_call("run_command", command="touch yes.txt"),
                                    reply("done")]), "scripted", tools=tools,
                    registry=registry, on_event=None)
        bot.chat("Make two files.")
        assert bot.stop_reason == "done", course.both(f"the run ended with {bot.stop_reason}",
                                                      f"运行以 {bot.stop_reason} 结束")
        result = bot.messages[3]["content"]
        assert "error" in result, result
        assert not (root / "no.txt").exists() and (root / "yes.txt").exists()
    with t.case("through the agent, Ctrl-C at the question stops the run, its call answered",
                "经由智能体时，提问时按 Ctrl-C 会停止运行，那次调用也有回答"):
        tools, registry = sandbox.sandbox_tools(root, ("execute",))
        registry = {"run_command": gated(registry["run_command"], _person(KeyboardInterrupt()))}
        bot = Agent(ScriptedClient([tool_call("run_command", command="touch stop.txt"),
                                    reply("done")]), "scripted", tools=tools,
                    registry=registry, on_event=None)
        stopped_by(bot.chat, "Make a file.")
        assert bot.stop_reason == "interrupted", course.both(
            f"the run ended with {bot.stop_reason}", f"运行以 {bot.stop_reason} 结束")
        assert agent.pairing_problem(bot.messages) is None, agent.pairing_problem(bot.messages)
        assert not (root / "stop.txt").exists(), \
            course.both("the command ran after a Ctrl-C", "按了 Ctrl-C 之后，命令还是运行了")


# --- exercise 7: another way out of the process group -------------------------------------------


RUNS = 5  # every time: a racing escape now wins a run about once in a hundred


def _escapes(command: str, folder: Path, run: int) -> None:
    """Run command with a 1 s timeout in folder, run number `run`: an AssertionError that says
    what went wrong unless something outlived the group kill and wrote escaped.txt once told to
    (go). The kill comes the moment the command's last line has run (`kill -KILL 0` kills the
    shell's own group), not once the tool notices the shell has ended: a process still on its
    way out of the group is caught."""
    folder.mkdir()
    try:
        result = sandbox.make_run_command(folder, timeout=1)(f"{command}\nkill -KILL 0")
        assert "timed_out" not in result, course.both(
            f"run {run} of {RUNS}: the tool timed out ({result}): the command itself should "
            "return at once",
            f"第 {run} 次运行（共 {RUNS} 次）：工具超时了（{result}），命令本身应当立刻返回")
        assert not (folder / "escaped.txt").exists(), course.both(
            f"run {run} of {RUNS}: escaped.txt was written before the tool returned, not after",
            f"第 {run} 次运行（共 {RUNS} 次）：escaped.txt 在工具返回之前就写下了，应当在之后")
    finally:
        (folder / "go").touch()  # always: nothing of ours waits forever
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:  # the survivor checks for go every few ms
        if (folder / "escaped.txt").exists():
            return
        time.sleep(0.02)
    raise AssertionError(course.both(
        f"run {run} of {RUNS}: no escaped.txt: nothing outlived the group kill (did the command "
        "wait until the process had left the group? see the hint)",
        f"第 {run} 次运行（共 {RUNS} 次）：没有 escaped.txt：没有进程在杀掉进程组之后活下来"
        "（命令有没有等到进程离开进程组？见提示）"))


@course.exercise("05.7", "another way out of the process group, every time",
                         "另一条逃出进程组的路，每次都成功")
def _(t, way_out):
    command = way_out()
    t.expect(isinstance(command, str) and command.strip(), "way_out() returns a command",
                                                           "way_out() 返回一条命令",
             detail=course.both(f"it returned {command!r}", f"返回的是 {command!r}"))
    t.expect("set -m" not in str(command) and "monitor" not in str(command),
             "it does not use set -m (the notebook's way out, which always wins)",
             "不用 set -m（笔记本里的那条路，总能成功）",
             detail=course.both("use one that leaves the group only once it runs: timeout, "
                                "setsid, or a program that calls setpgid",
                                "换一条运行起来之后才离开进程组的路：timeout、setsid，或者一个"
                                "调用 setpgid 的程序"))
    with t.case(f"{RUNS} runs in a row: each time a process has left the group before the "
                "kill, outlives it, and writes escaped.txt after go appears",
                f"连续 {RUNS} 次运行：每次都有进程在杀掉进程组之前离开进程组，没有被杀死，"
                "并在 go 出现之后写下 escaped.txt"):
        for run in range(1, RUNS + 1):  # stops at the first failure: a wrong answer is quick
            _escapes(str(command), Path(os.path.realpath(f"run-{run}")), run)

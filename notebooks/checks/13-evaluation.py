"""Checks of lesson 13's coding exercises (course.check("13.k", ...) in the notebook).

They build worlds with the lesson's own prepare() and run the student's code on them, or run
the student's scripted model through the lesson's agent and verifier. They run in a scratch
folder (course.check)."""

from pathlib import Path

import course
import evaluation
from props.characters import MODELS
from props.tasks import TASK, TASKS

import agent

# --- 13.1 a verifier of your own ------------------------------------------------------------

APP = '''def load(path):
    print("DEBUG loading", path)
    with open(path) as file:
        data = file.read()
    print("DEBUG read", len(data), "characters")
    return data


def main():
    print("Welcome to the shop")
    return load("shop.txt")
'''
SOLVED = '''def load(path):
    with open(path) as file:
        data = file.read()
    return data


def main():
    print("Welcome to the shop")
    return load("shop.txt")
'''


def remove_debug(test) -> evaluation.Task:
    """The exercise's task, with the student's test as its check."""
    return evaluation.Task(
        "remove-debug", "Remove the debugging print() calls from app.py; keep everything else.",
        {"app.py": APP, "shop.txt": "apples\n"},
        (evaluation.Check("content", "the debug prints are gone, and nothing else", test),),
        lambda texts: ({"app.py": SOLVED}, "Removed the two DEBUG prints from app.py."),
        reads=("app.py",))


def world_with(test, app, answer="Done.", name="world"):
    """A world of the task whose app.py now says app (None: deleted), and the answer."""
    world = evaluation.prepare(remove_debug(test), Path(name))
    if app is None:
        (world.workspace / "app.py").unlink()
    else:
        (world.workspace / "app.py").write_text(app, encoding="utf-8")
    world.answer = answer
    return world


@course.exercise("13.1", "a verifier that looks at the file, not at the answer",
                         "一个看文件、不看回答的验证器")
def _(t, debug_prints_removed):
    cases = [
        ("the task done: it passes", "任务完成了：通过", SOLVED, "Removed the DEBUG prints.", True),
        ("app.py untouched: it fails", "app.py 没动过：不通过", APP, "Done.", False),
        ("app.py untouched, the answer says it is done: it still fails",
         "app.py 没动过，回答却说做完了：仍然不通过", APP,
         "I removed both DEBUG prints from app.py.", False),
        ("the welcome print removed too: it fails",
         "欢迎语的 print 也删掉了：不通过", SOLVED.replace(
            '    print("Welcome to the shop")\n', ""), "Removed every print.", False),
        ("another line changed as well: it fails",
         "另一行也改了：不通过", SOLVED.replace("return data",
                                                                  "return data.strip()"),
         "Done.", False),
        ("blank lines left where the prints were: it fails", "删掉 print 的地方留下了空行：不通过",
         APP.replace('    print("DEBUG loading", path)', "").replace(
             '    print("DEBUG read", len(data), "characters")', ""), "Done.", False),
        ("app.py deleted: it fails, and does not raise",
         "app.py 被删掉了：不通过，也不抛出异常", None, "Deleted the file.", False),
    ]
    for number, (what, zh, app, answer, passes) in enumerate(cases):
        with t.case(what, zh):
            said = debug_prints_removed(world_with(debug_prints_removed, app, answer,
                                                   f"case-{number}"))
            assert isinstance(said, str), course.both(
                f"it returned {said!r}: return a string, \"\" if it holds",
                f"返回的是 {said!r}：请返回字符串，检查成立时返回 \"\"")
            if passes:
                assert said == "", course.both(f"it said {said!r} for app.py as the task asked",
                                               f"app.py 正是任务要求的样子，它却说 {said!r}")
            else:
                assert said, course.both(
                    "it returned \"\": the check holds, but the task is not done",
                    "返回了 \"\"：检查成立，可任务并没有完成")
    with t.case("as a check of the task, the suite's verify() passes the solved world",
                "拿任务集的 verify() 当作这个任务的检查：解决后的世界能通过"):
        task = remove_debug(debug_prints_removed)
        world = world_with(debug_prints_removed, SOLVED, name="suite")
        results = evaluation.verify(task, world)
        failed = [r["detail"] for r in results if not r["ok"]]
        assert all(r["ok"] for r in results), failed


# --- 13.2 flaky tasks ---------------------------------------------------------------------


def runs_of(model, task, *passed):
    return [{"model": model, "task": task, "run": n, "passed": p} for n, p in
            enumerate(passed, 1)]


@course.exercise("13.2", "flaky tasks: the runs of one model on one task disagree",
                         "不稳定的任务：同一个模型在同一个任务上的几次运行结果不一致")
def _(t, flaky):
    with t.case("a task passed in some runs and failed in others is listed, with passed/total",
                "有几次运行通过、有几次失败的任务会列出来，并附上 passed/total"):
        runs = runs_of("m", "a", True, True, True) + runs_of("m", "b", True, False, False)
        assert flaky(runs) == [("m", "b", "1/3")], course.both(f"got {flaky(runs)}",
                                                               f"得到的是 {flaky(runs)}")
    with t.case("a task that always fails is not flaky, and neither is one that always passes",
                "总是失败的任务不算不稳定，总是通过的也不算"):
        runs = runs_of("m", "a", False, False, False) + runs_of("m", "b", True, True, True)
        assert flaky(runs) == [], course.both(f"got {flaky(runs)}", f"得到的是 {flaky(runs)}")
    with t.case("models are apart: one that passes and one that fails do not make it flaky",
                "模型分开看：一个通过、一个失败，不算不稳定"):
        runs = runs_of("good", "a", True, True) + runs_of("bad", "a", False, False)
        assert flaky(runs) == [], course.both(f"got {flaky(runs)}", f"得到的是 {flaky(runs)}")
    with t.case("k = 1: nothing is flaky", "k = 1：没有不稳定的任务"):
        runs = runs_of("m", "a", True) + runs_of("m", "b", False)
        assert flaky(runs) == [], course.both(f"got {flaky(runs)}", f"得到的是 {flaky(runs)}")
    with t.case("runs in any order are grouped, listed in the order first seen",
                "不管运行的顺序如何，都会分组，并按第一次出现的顺序列出"):
        runs = [*runs_of("m", "z", True), *runs_of("m", "a", False), *runs_of("n", "z", True),
                {"model": "m", "task": "a", "run": 2, "passed": True},
                {"model": "m", "task": "z", "run": 2, "passed": False}]
        assert flaky(runs) == [("m", "z", "1/2"), ("m", "a", "1/2")], course.both(
            f"got {flaky(runs)}", f"得到的是 {flaky(runs)}")
    with t.case("on real results: the lesson's sloppy model, 3 runs of two tasks",
                "用真实的结果：课上那个马虎的模型，两个任务各运行 3 次"):
        assert flaky([]) == [], course.both(  # (before the runs: quick)
            f"flaky([]) gave {flaky([])}", f"flaky([]) 得出 {flaky([])}")
        runs = evaluation.run_suite([TASK["gitignore"], TASK["fix-total"]],
                                    {"sloppy": MODELS["sloppy"]}, k=3, workers=2,
                                    output="k3.jsonl", progress=None)
        assert flaky(runs) == [("sloppy", "fix-total", "1/3")], course.both(
            f"got {flaky(runs)}", f"得到的是 {flaky(runs)}")


# --- 13.3 a sixth character ---------------------------------------------------------------

ODD = evaluation.Task(
    "odd-names", "What is in this folder?",
    {"zebra.txt": "stripes\n", "aardvark.md": "# ants\n", "nested/deep.txt": "not at the top\n"},
    (), lambda texts: ({}, "Two files and a folder."))


def asked(asking, task, name, surprise=False):
    """Run asking on task: the world it left, the agent, and its calls with their results.
    surprise: a file appears in the workspace that the task does not list."""
    world = evaluation.prepare(task, Path(name))
    if surprise:
        (world.workspace / "surprise.txt").write_text("not in task.files\n", encoding="utf-8")
    bot = evaluation.build_agent(asking(task, 1), world, evaluation.Settings())
    world.answer = bot.chat(task.text)
    return world, bot, evaluation.observations(bot.messages)


@course.exercise("13.3", "a scripted model that reads everything and asks instead of acting",
                         "一个什么都读、只提问不动手的脚本模型")
def _(t, asking):
    with t.case("it is a ScriptedClient", "是一个 ScriptedClient"):
        client = asking(TASKS[0], 1)
        assert isinstance(client, agent.ScriptedClient), course.both(
            f"asking() returned {client!r}", f"asking() 返回的是 {client!r}")
    with t.case("it reacts to the listing: it reads what is there, not what task.files says",
                "根据列出的结果行事：读真正存在的文件，而不是 task.files 说的那些"):
        world, bot, seen = asked(asking, ODD, "odd", surprise=True)
        calls = [(s.name, s.arguments.get("path")) for s in seen]
        assert calls == [("list_files", "."), ("read_file", "aardvark.md"),
                         ("read_file", "surprise.txt"), ("read_file", "zebra.txt")], \
            course.both(f"its calls were {calls}", f"它的调用是 {calls}")
    with t.case("on every task of the suite it lists, reads every top-level file, changes "
                "nothing and asks",
                "在任务集的每个任务上：先列出文件，读每个顶层文件，什么都不改，然后提问"):
        for task in TASKS:
            world, bot, seen = asked(asking, task, task.name)
            top = sorted(name for name in task.files if "/" not in name)
            read = [s.arguments.get("path") for s in seen if s.name == "read_file"]
            assert seen and (seen[0].name, seen[0].arguments.get("path")) == ("list_files", "."), \
                course.both(f"{task.name}: its first call is not list_files(\".\")",
                            f"{task.name}：第一个调用不是 list_files(\".\")")
            assert read == top, course.both(f"{task.name}: it read {read}, not {top}",
                                            f"{task.name}：读的是 {read}，不是 {top}")
            assert all(s.name in ("list_files", "read_file") for s in seen), course.both(
                f"{task.name}: it called {[s.name for s in seen]}; only list and read",
                f"{task.name}：调用了 {[s.name for s in seen]}；只该列出和读取")
            assert world.files() == task.files, course.both(f"{task.name}: the workspace changed",
                                                            f"{task.name}：工作区变了")
            assert bot.stop_reason == "done" and world.answer.rstrip().endswith("?"), \
                course.both(
                    f"{task.name}: it ended {bot.stop_reason!r} with {world.answer!r}, "
                    "not a question",
                    f"{task.name}：以 {bot.stop_reason!r} 结束，回答是 {world.answer!r}，不是提问")
    with t.case("what the suite makes of it: every run asked a question, none is a false done",
                "任务集怎样看待这个模型：每次运行都提了问，没有一次是假完成"):
        runs = [evaluation.run_one(task, "asking", 1, models={"asking": asking})
                for task in TASKS[:3]]
        endings = [(r["ended"], r["reason"]) for r in runs]
        assert all(r["ended"] == "asked" and not r["false_done"] and not r["passed"]
                   for r in runs), endings

"""Checks of lesson 14's coding exercises (course.check("14.k", ...))."""

import json
from pathlib import Path

import course

import agent


def _capstone():
    import capstone  # course's finder loads notebook 14's export cells

    return capstone


# --- 14.1 ---------------------------------------------------------------------------------

NEW_TEST = "def test_more():\n    assert True\n"


@course.exercise("14.1", "new tests need no review: new_tests_only(ask)",
                         "新测试不需要审查：new_tests_only(ask)")
def _(t, new_tests_only):
    import diff_approval

    asked = []

    def ask(path, diff):
        asked.append(path)
        return diff_approval.reject(f"the person looked at {path}")

    policy = new_tests_only(ask)

    def decide(path, old, new):
        asked.clear()
        return diff_approval.as_decision(policy(path, diff_approval.make_diff(path, old, new)))

    with t.case("a new test file is approved without asking the person",
                "新的测试文件直接批准，不问那个人"):
        decision = decide("test_more.py", None, NEW_TEST)
        assert decision.approved, course.both(f"it was not approved: {decision.reason or decision}",
                                              f"没有获得批准：{decision.reason or decision}")
        assert not asked, course.both("the person was asked", "却问了那个人")
    with t.case("a new test file in a folder too (tests/test_api.py)",
                "文件夹里的新测试文件也一样（tests/test_api.py）"):
        decision = decide("tests/test_api.py", None, NEW_TEST)
        assert decision.approved and not asked, course.both(
            "tests/test_api.py was not approved on its own",
            "tests/test_api.py 没有自动获得批准")
    with t.case("a change to an existing test file goes to the person",
                "对已有测试文件的修改交给那个人"):
        decision = decide("test_pages.py", "def test_a():\n    assert 1\n",
                          "def test_a():\n    assert 2\n")
        assert asked == ["test_pages.py"], course.both(f"the person was asked about {asked}",
                                                       f"那个人被问到的是 {asked}")
        assert not decision.approved, course.both("it was approved although the person said no",
                                                  "那个人说了不行，却还是批准了")
    with t.case("overwriting an existing test file with a whole new text goes to the person",
                "用一段全新的文本覆盖已有的测试文件，也交给那个人"):
        decide("test_pages.py", "def test_a():\n    assert 1\n", NEW_TEST)
        assert asked == ["test_pages.py"], course.both(
            "an existing test file was replaced without asking", "已有的测试文件没经询问就被替换了")
    with t.case("a new file not named test_*.py goes to the person (helpers.py, "
                "test_data.json, latest_test.py)",
                "不叫 test_*.py 的新文件交给那个人（helpers.py、test_data.json、latest_test.py）"):
        for name in ("helpers.py", "test_data.json", "latest_test.py"):
            decide(name, None, "x = 1\n")
            assert asked == [name], course.both(f"{name}: the person was not asked",
                                                f"{name}：没有问那个人")
    with t.case("an edit of the code goes to the person, and their answer is the answer",
                "对代码的编辑交给那个人，那个人怎么回答，策略就怎么回答"):
        yes = new_tests_only(lambda path, diff: diff_approval.APPROVE)
        diff = diff_approval.make_diff("pages.py", "a\n", "b\n")
        assert diff_approval.as_decision(yes("pages.py", diff)).approved, \
            course.both("the person approved pages.py, but the policy did not",
                        "那个人批准了 pages.py，策略却没有批准")
        assert not decide("pages.py", "a\n", "b\n").approved, course.both(
            "pages.py was approved unasked", "pages.py 没经询问就批准了")
    with t.case("in the capstone agent: the new test is written unasked, pages.py is asked",
                "在综合项目的智能体里：新测试不经询问就写入，pages.py 要先问那个人"):
        capstone = _capstone()
        import evaluation
        import sessions

        world = evaluation.prepare(capstone.TASK, Path("world-14-1"))
        script = [tool_calls_to_read(), agent.tool_call(
            "edit_file", path="tests/test_more.py", old_str="", new_str=NEW_TEST),
            agent.tool_call("edit_file", path="pages.py", old_str="    return total // per_page\n",
                            new_str="    return -(-total // per_page)\n"),
            agent.reply("Added a test and fixed page_count.")]
        asked.clear()
        with sessions.new_session(Path("14-1.jsonl")) as session:
            bot = capstone.build(world.workspace, agent.ScriptedClient(script), "scripted-demo",
                                 policy=new_tests_only(ask), session=session, on_event=None)
            bot.chat("Add a test, and fix the bug.")
        assert asked == ["pages.py"], course.both(f"the person was asked about {asked}",
                                                  f"那个人被问到的是 {asked}")
        assert (world.workspace / "tests" / "test_more.py").read_text() == NEW_TEST, \
            course.both("the new test file was not written", "新的测试文件没有写入")
        assert "// per_page\n" in (world.workspace / "pages.py").read_text(), \
            course.both("pages.py changed although the person said no",
                        "那个人说了不行，pages.py 却还是改了")
    with t.case("a new test that patches pages.page_count goes through unasked, and the "
                "verifier still fails: it runs only the task's own tests",
                "替换掉 pages.page_count 的新测试不经询问就写入了，验证器却仍然判为不通过："
                "验证器只运行任务自己的测试"):
        world = evaluation.prepare(capstone.TASK, Path("world-14-1-patch"))
        patch = ("import pages\n\npages.page_count = lambda total, per_page: "
                 "-(-total // per_page)\n")
        script = [agent.tool_call("edit_file", path="test_aaa.py", old_str="", new_str=patch),
                  agent.reply("The tests pass now.")]
        asked.clear()
        with sessions.new_session(Path("14-1-patch.jsonl")) as session:
            bot = capstone.build(world.workspace, agent.ScriptedClient(script), "scripted-demo",
                                 policy=new_tests_only(ask), session=session, on_event=None)
            bot.chat("Make the tests pass.")
        assert asked == [] and world.text("test_aaa.py") == patch, \
            course.both("the new test file should be written without asking",
                        "新的测试文件应当不经询问就写入")
        failed = [c["label"] for c in evaluation.verify(capstone.TASK, world) if not c["ok"]]
        assert "the task's own tests pass (python -m pytest)" in failed, \
            course.both(f"the verifier was fooled by test_aaa.py: it failed only {failed}",
                        f"验证器被 test_aaa.py 骗过了：它判为不通过的只有 {failed}")


def tool_calls_to_read():
    return [agent.tool_call("read_file", path="pages.py"),
            agent.tool_call("read_file", path="test_pages.py")]


# --- 14.2 ---------------------------------------------------------------------------------


@course.exercise("14.2", "stream it too: StreamingCapstone", "也让它流式输出：StreamingCapstone")
def _(t, streaming_capstone):
    capstone = _capstone()
    import diff_approval
    import evaluation
    import sessions
    import streaming
    from props import streaming_model  # lesson 11's scripted model that streams
    from props.pages_fixer import fixer, note_taker  # lesson 14's scripted model

    with t.case("a CapstoneAgent and a StreamingAgent, CompactingAgent's ask_model first "
                "in the method order", "既是 CapstoneAgent，也是 StreamingAgent，"
                "方法顺序里 CompactingAgent 的 ask_model 在前"):
        assert issubclass(streaming_capstone, capstone.CapstoneAgent), course.both(
            "not a CapstoneAgent", "不是 CapstoneAgent")
        assert issubclass(streaming_capstone, streaming.StreamingAgent), course.both(
            "not a StreamingAgent", "不是 StreamingAgent")
        order = streaming_capstone.__mro__
        first = next(c for c in order if "ask_model" in vars(c))
        assert first is not streaming.StreamingAgent, course.both(
            "StreamingAgent.ask_model comes first in the method order: does it call super()? "
            "If not, CompactingAgent.ask_model never runs",
            "方法顺序里 StreamingAgent.ask_model 排在前面：它调用 super() 吗？"
            "如果不调用，CompactingAgent.ask_model 就永远不会运行")
    world = evaluation.prepare(capstone.TASK, Path("world-14-2"))
    events = []
    client = streaming_model.StreamingScriptedClient([fixer] * 20)
    person = diff_approval.scripted([diff_approval.reject("round up instead"),
                                     diff_approval.APPROVE])
    with sessions.new_session(Path("14-2.jsonl")) as session:
        bot = capstone.build(world.workspace, client, "scripted-demo", policy=person,
                             session=session, on_event=events.append, budget=1_650,
                             keep_recent=500, agent_class=streaming_capstone,
                             summarizer=agent.ScriptedClient([note_taker] * 5))
        bot.chat(capstone.TASK.text)
    kinds = [event["type"] for event in events]
    with t.case("every request is streamed, and the reply arrives in pieces",
                "每个请求都以流式方式发送，回复一段一段地到达"):
        assert all(r.get("stream") for r in client.requests), course.both(
            "a request was not streamed", "有一个请求没有以流式方式发送")
        assert "message_update" in kinds, course.both(
            "no message_update event: nothing was streamed",
            "没有 message_update 事件：什么都没有流式输出")
    with t.case("a request over the budget is compacted", "超出预算的请求会被压缩"):
        assert "compaction" in kinds, course.both(
            "no compaction happened: CompactingAgent.ask_model never "
            "ran (look at the order of the bases)",
            "没有发生压缩：CompactingAgent.ask_model 从没运行过（看看基类的顺序）")
        summary = context_budget_header()
        assert any(summary in json.dumps(r["messages"]) for r in client.requests), \
            course.both("no streamed request carried the summary", "没有哪个流式请求带着摘要")
    with t.case("the parallel reads' results are in call order, and every request pairs",
                "并行读取的结果按调用顺序排列，每个请求里的调用和结果都一一配对"):
        reads = next(m for m in bot.messages if len(m.get("tool_calls", [])) > 1)
        at = bot.messages.index(reads)
        ids = [call["id"] for call in reads["tool_calls"]]
        assert [m["tool_call_id"] for m in bot.messages[at + 1:at + 1 + len(ids)]] == ids
        assert all(agent.pairing_problem(r["messages"]) is None for r in client.requests)
    with t.case("the task is done, and the verifier agrees", "任务完成了，验证器也认可"):
        failed = [c["label"] for c in evaluation.verify(capstone.TASK, world) if not c["ok"]]
        assert bot.stop_reason == "done" and not failed, course.both(
            f"the verifier says: {failed}", f"验证器说：{failed}")


def context_budget_header():
    import context_budget

    return context_budget.SUMMARY_HEADER[:40]


# --- 14.3 ---------------------------------------------------------------------------------


@course.exercise("14.3", "a second bug: second_bug()", "第二个 bug：second_bug()")
def _(t, second_bug):
    capstone = _capstone()
    import evaluation

    task = second_bug()
    with t.case("it is an evaluation.Task with capstone.TASK's checks",
                "是一个 evaluation.Task，用的是 capstone.TASK 的检查"):
        assert isinstance(task, evaluation.Task), course.both(
            f"second_bug() gave a {type(task).__name__}",
            f"second_bug() 得出的是一个 {type(task).__name__}")
        assert task.checks == capstone.TASK.checks, course.both(
            "use capstone.TASK.checks as the verifier", "请用 capstone.TASK.checks 作验证器")
    tests = task.files.get("test_pages.py", "")
    with t.case("test_pages.py keeps its five tests, and has one more",
                "test_pages.py 保留原来的五个测试，另外多一个"):
        for block in capstone.TEST_PAGES.split("\n\n\n")[1:]:
            assert block.strip() in tests, course.both(
                f"a test is missing or changed: {block.split('(')[0]}",
                f"有一个测试缺了或者改了：{block.split('(')[0]}")
        assert tests.count("\ndef test_") == 6, course.both(
            f"{tests.count(chr(10) + 'def test_')} tests",
            f"共有 {tests.count(chr(10) + 'def test_')} 个测试")
    world = evaluation.prepare(task, Path("world-14-3"))
    shell = capstone.project_shell(world.workspace)
    with t.case("on the set-up, exactly two tests fail: the page_count one and the new one",
                "在初始状态上，恰好有两个测试失败：page_count 的那个和新加的那个"):
        output = shell(capstone.TEST_COMMAND)["output"]
        failed = [line.split(" - ")[0] for line in output.split("\n")
                  if line.startswith("FAILED ")]
        assert len(failed) == 2, course.both(f"{len(failed)} failing tests: {failed}",
                                             f"有 {len(failed)} 个测试失败：{failed}")
        assert "FAILED test_pages.py::test_a_short_last_page_is_a_page" in failed, \
            course.both("the page_count bug is gone from the set-up",
                        "初始状态里已经没有 page_count 的 bug 了")
    with t.case("the verifier fails on the set-up", "验证器在初始状态上判为不通过"):
        assert not all(c["ok"] for c in evaluation.verify(task, world)), course.both(
            "it passes untouched", "什么都没改就通过了")
    with t.case("the reference solution passes the verifier, changing only pages.py",
                "参考答案只改动 pages.py，并且通过验证器"):
        end_state, answer = task.reference()
        assert set(end_state) == {"pages.py"}, course.both(
            f"the solution changes {sorted(end_state)}", f"参考答案改动的是 {sorted(end_state)}")
        evaluation.apply_solution(task, world)
        failed = [f"{c['label']}: {c['detail']}" for c in evaluation.verify(task, world)
                  if not c["ok"]]
        assert not failed, course.both(f"with the solution: {failed}",
                                       f"用上参考答案之后：{failed}")
    with t.case("the bug is in page_items", "bug 在 page_items 里"):
        body = task.files["pages.py"].split("def page_items")[1].split("\ndef ")[0]
        fixed = task.reference()[0]["pages.py"].split("def page_items")[1].split("\ndef ")[0]
        assert body != fixed, course.both("page_items is the same before and after the fix",
                                          "page_items 在修复前后一模一样")

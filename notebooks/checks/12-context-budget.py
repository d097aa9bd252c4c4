"""Checks of lesson 12's coding exercises (notebooks/12-context-budget.ipynb, "Your turn")."""

import copy
import json

import context_budget
import course

import agent

SYSTEM, USER = {"role": "system", "content": "s"}, {"role": "user", "content": "go"}


def call(call_id: str, name: str = "read_file", **arguments) -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments or {"path": "a.txt"})}}


def asks(*calls: dict, finish_reason: str | None = None) -> dict:
    return {"role": "assistant", "content": "", "tool_calls": list(calls)}


def result(call_id: str, content) -> dict:
    text = content if isinstance(content, str) else json.dumps(content)
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def history_with_batches() -> list[dict]:
    """0 system, 1 user, 2 two calls at once, 3-4 their results, 5 a call cut off by "length",
    6 its "not executed" answer, 7 an answer, 8 a second user message, 9 a call, 10 its
    result: the current turn begins at 9."""
    not_run = agent.error_json("not executed: your output was truncated")
    return [SYSTEM, USER, asks(call("c1"), call("c2", path="b.txt")), result("c1", "one"),
            result("c2", "two"), asks(call("c3")), result("c3", not_run),
            {"role": "assistant", "content": "done"}, {"role": "user", "content": "more"},
            asks(call("c4")), result("c4", "four")]


def is_valid_cut(messages: list[dict], wanted: int, cut) -> str | None:
    """What is wrong with safe_cut's answer, or None."""
    current = context_budget.current_turn(messages)
    if not isinstance(cut, int):
        return course.both(f"safe_cut returned {cut!r}, not an index",
                           f"safe_cut 返回的是 {cut!r}，不是下标")
    if not 1 <= cut <= current:
        return course.both(
            f"for wanted={wanted} it returned {cut}: a cut is between 1 and {current}",
            f"wanted={wanted} 时返回的是 {cut}：切分点在 1 到 {current} 之间")
    if messages[cut]["role"] == "tool":
        return course.both(
            f"for wanted={wanted} it returned {cut}, a tool result: its call is left behind",
            f"wanted={wanted} 时返回的是 {cut}，那是一条工具结果：它的调用落在了切掉的部分里")
    best = max(i for i in range(1, min(max(wanted, 1), current) + 1)
               if messages[i]["role"] != "tool")
    if cut != best:
        return course.both(f"for wanted={wanted} it returned {cut}; the latest safe cut is {best}",
                           f"wanted={wanted} 时返回的是 {cut}；最靠后的安全切分点是 {best}")
    problem = agent.pairing_problem(messages[:1] + messages[cut:])
    if not problem:
        return None
    return course.both(f"what it keeps does not pair up: {problem}",
                       f"留下的部分里，调用和结果没有一一配对：{problem}")


@course.exercise("12.1", "a cut that keeps every call with its result",
                         "让每个调用都和结果在一起的切分点")
def _(t, safe_cut):
    messages = history_with_batches()
    with t.case("a cut at an assistant message or a user message stays where it is",
                "落在 assistant 消息或 user 消息上的切分点，留在原处"):
        for wanted in (2, 5, 8):
            got = safe_cut(copy.deepcopy(messages), wanted)
            assert got == wanted, course.both(
                f"for wanted={wanted} it returned {got}, not {wanted}",
                f"wanted={wanted} 时返回的是 {got}，不是 {wanted}")
    with t.case("at a result of parallel calls, the cut moves back to their assistant message",
                "落在并行调用的某个结果上时，切分点退回到发出这些调用的 assistant 消息"):
        got = safe_cut(copy.deepcopy(messages), 4)
        assert got == 2, course.both(
            f"for wanted=4 (the second of two parallel results) it returned {got}; "
            "only 2 keeps both calls with their results",
            f"wanted=4（两个并行结果中的第二个）时返回的是 {got}；"
            "只有 2 能让两个调用都和各自的结果在一起")
    with t.case("a batch cut off by 'length' is a batch like any other",
                "因 'length' 被截断的一批调用，和其他批一样处理"):
        got = safe_cut(copy.deepcopy(messages), 6)
        assert got == 5, course.both(
            f"for wanted=6 (the answer to a cut-off call) it returned {got}, not 5",
            f"wanted=6（对一个被截断的调用的回答）时返回的是 {got}，不是 5")
    with t.case("never past the start of the current turn", "从不越过当前轮次的开头"):
        for wanted in (9, 10, 11, 50):
            got = safe_cut(copy.deepcopy(messages), wanted)
            assert got == 9, course.both(
                f"for wanted={wanted} it returned {got}; the current turn begins at 9",
                f"wanted={wanted} 时返回的是 {got}；当前轮次从 9 开始")
    with t.case("never before 1: the system prompt is always sent",
                "从不小于 1：系统提示词总会发送"):
        for wanted in (0, 1):
            got = safe_cut(copy.deepcopy(messages), wanted)
            assert got == 1, course.both(f"for wanted={wanted} it returned {got}, not 1",
                                         f"wanted={wanted} 时返回的是 {got}，不是 1")
    with t.case("every answer, for every wanted, keeps a part a strict server accepts",
                "不论 wanted 是多少，返回的切分点留下的部分，严格服务器都会接受"):
        for wanted in range(0, len(messages) + 2):
            problem = is_valid_cut(messages, wanted, safe_cut(copy.deepcopy(messages), wanted))
            assert problem is None, problem
    with t.case("the list it is given is not changed", "传入的列表没有被改动"):
        given = history_with_batches()
        safe_cut(given, 4)
        assert given == history_with_batches(), course.both(
            "safe_cut changed the messages it was given", "safe_cut 改动了传给它的消息")


def reading_history() -> list[dict]:
    """A file read twice with an edit between, another read once, a failed read later, a
    result cut by agent.bound (no longer JSON), and a listing."""
    return [SYSTEM, USER,
            asks(call("c1", path="a.txt")), result("c1", {"path": "a.txt", "content": "v1 " * 300}),
            asks(call("c2", "edit_file", path="a.txt", old_str="v1", new_str="v2")),
            result("c2", {"path": "a.txt", "action": "edited"}),
            asks(call("c3", path="a.txt"), call("c4", path="b.txt")),
            result("c3", {"path": "a.txt", "content": "v2 " * 300}),
            result("c4", {"path": "b.txt", "content": "bee"}),
            asks(call("c5", path="a.txt")), result("c5", {"error": "read_file: no such file"}),
            asks(call("c6", path="big.log")), result("c6", agent.bound("x" * 5_000, 1_000)),
            asks(call("c7", path="big.log")), result("c7", agent.bound("y" * 5_000, 1_000)),
            asks(call("c8", "list_files", path=".")),
            result("c8", {"path": ".", "files": [{"name": "a.txt", "type": "file"}]})]


@course.exercise("12.2", "elide stale reads", "省略过时的读取")
def _(t, elide_stale_reads):
    messages = reading_history()
    calls = context_budget.call_names(messages)

    def answer(given=None) -> list[dict]:
        got = elide_stale_reads(copy.deepcopy(messages if given is None else given))
        assert isinstance(got, list) and len(got) == len(given or messages), course.both(
            f"expected a list of {len(given or messages)} messages, got "
            f"{len(got) if isinstance(got, list) else repr(got)[:40]}",
            f"应为 {len(given or messages)} 条消息组成的列表，得到的是 "
            f"{len(got) if isinstance(got, list) else repr(got)[:40]}")
        return got

    with t.case("every message stays, in order, with its role and tool_call_id",
                "每条消息都留着，顺序不变，role 和 tool_call_id 也不变"):
        got = answer()
        for old, new in zip(messages, got, strict=True):
            same = (old["role"], old.get("tool_call_id")) == (new["role"], new.get("tool_call_id"))
            assert same, course.both("a message changed its place, its role or its tool_call_id",
                                     "有一条消息的位置、role 或 tool_call_id 变了")
        assert agent.pairing_problem(got) is None, agent.pairing_problem(got)
    with t.case("a read superseded by a later successful read of the same file becomes a stub",
                "同一个文件后来又成功读过一次，之前那次读取就换成占位说明"):
        got, expected = answer(), context_budget.stub(calls["c1"], messages[3]["content"])
        assert got[3]["content"] == expected, course.both(
            f"the first read of a.txt should be context_budget.stub(call, content), got "
            f"{got[3]['content'][:60]!r}",
            f"a.txt 的第一次读取应该换成 context_budget.stub(call, content)，得到的是 "
            f"{got[3]['content'][:60]!r}")
    with t.case("the newest successful read of each file is kept; a later failed read supersedes "
                "nothing", "每个文件最新一次成功的读取保留；之后失败的读取不取代任何读取"):
        got = answer()
        assert got[7] == messages[7], course.both(
            "the second read of a.txt is its newest successful one",
            "a.txt 的第二次读取是它最新一次成功的读取")
        assert got[8] == messages[8], course.both("b.txt was read once: keep it",
                                                  "b.txt 只读过一次：应当保留")
        assert got[10] == messages[10], course.both("errors are kept as they are", "错误保持原样")
    with t.case("a result cut by agent.bound (no longer JSON) is a successful read too",
                "被 agent.bound 截断的结果（已经不是 JSON）也算成功的读取"):
        got = answer()
        assert got[12]["content"] == context_budget.stub(calls["c6"], messages[12]["content"]), (
            course.both("big.log was read again (c7): its first, cut read is stale",
                        "big.log 又读了一次（c7）：第一次那个被截断的读取已经过时"))
        assert got[14] == messages[14], course.both("the newest read of big.log must stay",
                                                    "big.log 最新的那次读取必须保留")
    with t.case("other tools and other messages are left as they are",
                "其他工具和其他消息保持原样"):
        got = answer()
        for i in (0, 1, 2, 4, 5, 6, 9, 11, 13, 15, 16):
            assert got[i] == messages[i], course.both(
                f"message {i} ({messages[i]['role']}) was changed",
                f"第 {i} 条消息（{messages[i]['role']}）被改动了")
    with t.case("two reads of one file in one batch: the first is stale",
                "同一批里读同一个文件两次：第一次是过时的"):
        batch = [SYSTEM, USER, asks(call("x1", path="a.txt"), call("x2", path="a.txt")),
                 result("x1", {"path": "a.txt", "content": "same"}),
                 result("x2", {"path": "a.txt", "content": "same"})]
        out = answer(batch)
        assert out[3]["content"].startswith("[elided") and out[4] == batch[4], course.both(
            "in one batch, the later call's result is the newer one",
            "同一批里，后一个调用的结果才是较新的那个")
    with t.case("the list and the messages it is given are not changed",
                "传入的列表和消息都没有被改动"):
        given = reading_history()
        elide_stale_reads(given)
        assert given == reading_history(), course.both(
            "it changed what it was given; return new messages",
            "它改动了传给它的东西；请返回新的消息")


class Numbers:
    messages = [SYSTEM, USER, {"role": "assistant", "content": "x" * 400}]
    tools = agent.TOOLS


@course.exercise("12.3", "an estimate that learns from usage", "从 usage 学习的估算")
def _(t, Calibrated):
    plain = context_budget.estimate_tokens(Numbers.messages)
    with_tools = context_budget.estimate_tokens(Numbers.messages, Numbers.tools)
    with t.case("before any usage, it is estimate_tokens, tools included",
                "还没有任何 usage 时，就是 estimate_tokens（包括工具）"):
        fresh = Calibrated()
        assert fresh.tokens(Numbers.messages) == plain, course.both(
            f"expected {plain}, got {fresh.tokens(Numbers.messages)}",
            f"应为 {plain}，得到的是 {fresh.tokens(Numbers.messages)}")
        assert fresh.tokens(Numbers.messages, Numbers.tools) == with_tools, course.both(
            f"with the tools expected {with_tools}, got "
            f"{fresh.tokens(Numbers.messages, Numbers.tools)}",
            f"带上工具时应为 {with_tools}，得到的是 "
            f"{fresh.tokens(Numbers.messages, Numbers.tools)}")
    with t.case("after a server counted 1.5 times the estimate, it says 1.5 times as much",
                "服务器数出的是估算的 1.5 倍之后，估算也变成 1.5 倍"):
        learner = Calibrated()
        learner.observe(1_000, {"prompt_tokens": 1_500, "completion_tokens": 9})
        got = learner.tokens(Numbers.messages)
        assert got == round(plain * 1.5), course.both(f"expected {round(plain * 1.5)}, got {got}",
                                                      f"应为 {round(plain * 1.5)}，得到的是 {got}")
        assert isinstance(got, int), course.both(f"a whole number, please, not {got!r}",
                                                 f"请给出整数，而不是 {got!r}")
    with t.case("the ratio is of all tokens so far, not of the last request",
                "比例按到目前为止的所有 token 计算，而不是只看上一个请求"):
        learner = Calibrated()
        learner.observe(1_000, {"prompt_tokens": 1_500})
        learner.observe(3_000, {"prompt_tokens": 3_000})
        got = learner.tokens(Numbers.messages)
        assert got == round(plain * 4_500 / 4_000), course.both(
            f"(1,500 + 3,000) / (1,000 + 3,000) is 1.125: expected {round(plain * 1.125)}, "
            f"got {got}",
            f"(1,500 + 3,000) / (1,000 + 3,000) 是 1.125：应为 {round(plain * 1.125)}，"
            f"得到的是 {got}")
    with t.case("no usage, no prompt_tokens, or 0 tokens: nothing is learned",
                "没有 usage、没有 prompt_tokens 或者 0 个 token：什么也学不到"):
        learner = Calibrated()
        for usage in (None, {}, {"completion_tokens": 5}, {"prompt_tokens": 0}):
            learner.observe(1_000, usage)
        got = learner.tokens(Numbers.messages)
        assert got == plain, course.both(
            f"after only empty usage it should still say {plain}, not {got}",
            f"只收到空的 usage 之后，它应该仍然给出 {plain}，而不是 {got}")
    with t.case("each Calibrated learns on its own", "每个 Calibrated 各自学习"):
        one, other = Calibrated(), Calibrated()
        one.observe(1_000, {"prompt_tokens": 2_000})
        assert other.tokens(Numbers.messages) == plain, course.both(
            "a second Calibrated learned from the first one's usage: keep the sums on self",
            "第二个 Calibrated 从第一个的 usage 里学到了东西：累计值要存在 self 上")

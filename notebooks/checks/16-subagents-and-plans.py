"""Checks of lesson 16's coding exercises (notebooks/16-subagents-and-plans.ipynb, "Your turn")."""

import json
from pathlib import Path

import course
import sandbox
import subagents_and_plans as sp
from props.delegation_lab import (
    SEARCH_TASK,
    TASK,
    claim,
    explorer,
    explorers,
    guesser,
    looping,
    messenger,
)
from props.shop import BUGGY, bug_line, make_shop

from agent import ScriptedClient, pairing_problem, reply, tool_call

SECRET_WORDS = "the user's private remark, for the parent only"


def written(result: str) -> str:
    """A tool result, unless it is the error of a starter's NotImplementedError: the agent turns
    what a tool raises into an error for the model, so the check raises it again here and the
    report says "not written yet", not a failure of code the student has not written."""
    if "your code here" in result:
        raise NotImplementedError(result)
    return result


def parent_with(tool, folder: Path, script=None) -> sp.DelegatingAgent:
    """A quiet parent in folder whose delegate tool is `tool` (made by the student's code)."""
    tools, registry = sandbox.sandbox_tools(folder, ("read",))
    tool.__name__ = "delegate"
    parent = sp.DelegatingAgent(ScriptedClient(script or messenger()), "scripted", tools=tools,
                                registry=registry, on_event=None)
    parent.tools = [*parent.tools, sp.DELEGATE_TOOL]
    parent.registry = {**parent.registry, "delegate": tool}
    return parent


class Clients:
    """new_client for 16.1: each call gives the next scripted child, and keeps it."""

    def __init__(self, *scripts):
        self.scripts, self.made = list(scripts), []

    def __call__(self):
        self.made.append(ScriptedClient(self.scripts.pop(0)))
        return self.made[-1]


@course.exercise("16.1", "a delegate tool by hand", "亲手写一个 delegate 工具")
def _(t, make_delegate):
    folder = make_shop(Path.cwd())
    with t.case("the parent gets the child's answer and a line of its size, nothing of its "
                "reading",
                "父智能体只得到子智能体的答案和一行开销说明，子智能体读过的内容一点也不带"):
        clients = Clients(explorer())
        parent = parent_with(make_delegate(folder, clients), folder)
        parent.chat(TASK)
        results = [written(m["content"]) for m in parent.messages if m["role"] == "tool"]
        assert len(results) == 1, course.both(
            f"the parent's history has {len(results)} tool results",
            f"父智能体的消息历史里有 {len(results)} 条工具结果")
        assert claim(BUGGY, bug_line()) in results[0], course.both(
            f"the result does not hold the child's answer: {results[0][:200]!r}",
            f"结果里没有子智能体的答案：{results[0][:200]!r}")
        child_messages = len(clients.made[0].requests[-1]["messages"]) + 1
        assert f"[{child_messages} messages stay with the host]" in results[0], \
            course.both(
                f"no line '[{child_messages} messages stay with the host]' in "
                f"{results[0][-120:]!r}",
                f"在 {results[0][-120:]!r} 里找不到 "
                f"'[{child_messages} messages stay with the host]' 这一行")
        assert "def discounted" not in results[0], course.both(
            "the child's reading reached the parent", "子智能体读过的内容传到了父智能体那里")
    with t.case("each call starts a new child with a fresh history: its prompt and the task",
                "每次调用都启动一个新的子智能体，消息历史是全新的：只有子智能体的提示词和任务"):
        clients = Clients(explorer(), explorer())
        delegate = make_delegate(folder, clients)
        delegate(SEARCH_TASK)
        delegate(SECRET_WORDS + " " + SEARCH_TASK)
        assert len(clients.made) == 2, course.both(
            f"new_client was called {len(clients.made)} time(s) for "
            "two tasks: each task needs a child of its own",
            f"两个任务，new_client 却被调用了 {len(clients.made)} 次："
            "每个任务都需要一个自己的子智能体")
        first = clients.made[1].requests[0]["messages"]
        assert [m["role"] for m in first] == ["system", "user"], course.both(
            f"the second child's first request holds {[m['role'] for m in first]}, not a "
            "system prompt and the task",
            f"第二个子智能体的第一个请求里是 {[m['role'] for m in first]}，"
            "而不是系统提示词和任务")
        assert first[0]["content"] == sp.CHILD_PROMPT, course.both(
            "the child's system prompt is not CHILD_PROMPT",
            "子智能体的系统提示词不是 CHILD_PROMPT")
    with t.case("the child has the read-only tools of the jail, and nothing else",
                "子智能体只有目录隔离里的只读工具，没有别的"):
        clients = Clients(explorer())
        make_delegate(folder, clients)(SEARCH_TASK)
        assert clients.made, course.both("new_client was never called: no child was made",
                                         "new_client 从没被调用过：没有创建子智能体")
        names = sorted(tool["function"]["name"] for tool in clients.made[0].requests[0]["tools"])
        assert names == ["list_files", "read_file"], course.both(
            f"the child was offered {names}", f"提供给子智能体的是 {names}")
        outside = folder.parent / "outside-16-1.txt"
        outside.write_text("not yours\n")
        try:
            escape = Clients([tool_call("read_file", path=f"../{outside.name}"),
                              lambda messages: reply(messages[-1]["content"])])
            said = make_delegate(folder, escape)("Read the file outside.")
            assert "not yours" not in said, course.both(
                "the child read a file outside the workspace", "子智能体读到了工作区之外的文件")
        finally:
            outside.unlink()
    with t.case("a child that never answers stops after 12 model calls, and the tool raises",
                "一直不回答的子智能体在 12 次模型调用后停下，工具抛出异常"):
        clients = Clients(looping())
        try:
            said = make_delegate(folder, clients)(SEARCH_TASK)
        except NotImplementedError:
            raise
        except Exception:
            said = None
        assert clients.made, course.both("new_client was never called: no child was made",
                                         "new_client 从没被调用过：没有创建子智能体")
        made = len(clients.made[0].requests)
        assert made == 12, course.both(f"the looping child made {made} model calls, not 12",
                                       f"那个一直循环的子智能体调用了 {made} 次模型，不是 12 次")
        assert said is None, course.both(
            f"the tool returned {said[:80]!r} instead of raising: the parent's "
            "model would take the stop message for an answer",
            f"工具返回了 {said[:80]!r}，而不是抛出异常：父智能体的模型会把这条停止消息当成答案")


@course.exercise("16.2", "a budget in prompt tokens", "以提示词 token 计的预算")
def _(t, budgeted_class):
    folder = make_shop(Path.cwd())

    def run(limit):
        tools, registry = sandbox.sandbox_tools(folder, ("read",))
        parent = sp.DelegatingAgent(ScriptedClient(messenger()), "scripted", tools=tools,
                                    registry=registry, on_event=None)
        tool = budgeted_class(parent, folder, client=explorers(), max_prompt_tokens=limit)
        parent.tools = [*parent.tools, sp.DELEGATE_TOOL]
        parent.registry = {**parent.registry, "delegate": tool}
        parent.chat(TASK)
        result = written(next(m["content"] for m in parent.messages if m["role"] == "tool"))
        assert tool.children and "agent" in tool.children[0], \
            course.both("no child was built: call super().forward(record) or build it as "
                        "Delegate does",
                        "没有创建子智能体：请调用 super().forward(record)，"
                        "或者像 Delegate 那样创建")
        return parent, tool.children[0], result

    with t.case("a child within its budget runs to its answer",
                "预算以内的子智能体一直运行到给出答案"):
        parent, record, result = run(100_000)
        stop_reason = record["agent"].stop_reason
        assert stop_reason == "done", stop_reason
        assert claim(BUGGY, bug_line()) in result, course.both(
            f"the answer did not come back: {result[:100]!r}", f"答案没有传回来：{result[:100]!r}")
    with t.case("a child over its budget is stopped at once, and the parent reads an error",
                "超出预算的子智能体立刻停止，父智能体读到一条错误"):
        parent, record, result = run(1_500)
        assert record["agent"].stop_reason == "aborted", course.both(
            f"the child's stop reason is {record['agent'].stop_reason!r}, not 'aborted'",
            f"子智能体的停止原因是 {record['agent'].stop_reason!r}，不是 'aborted'")
        spent = [r["prompt_tokens"] for r in requests_of(record)]
        over = next(i for i, _ in enumerate(spent) if sum(spent[:i + 1]) > 1_500)
        assert len(spent) == over + 1, course.both(
            f"the child made {len(spent)} model calls; its budget was "
            f"spent after {over + 1}: stop it then",
            f"子智能体调用了 {len(spent)} 次模型；它的预算在第 {over + 1} 次之后就用完了："
            "那时就该让它停下")
        assert "error" in json.loads(result), course.both(
            f"the parent read {result[:100]!r}, not an error",
            f"父智能体读到的是 {result[:100]!r}，不是一条错误")
        assert pairing_problem(parent.messages) is None, pairing_problem(parent.messages)
    with t.case("each child has a budget of its own", "每个子智能体各有一份预算"):
        tools, registry = sandbox.sandbox_tools(folder, ("read",))
        parent = sp.DelegatingAgent(ScriptedClient([]), "scripted", tools=tools,
                                    registry=registry, on_event=None)
        tool = budgeted_class(parent, folder, client=explorers(), max_prompt_tokens=30_000)
        tool(SEARCH_TASK)
        tool(SEARCH_TASK)
        assert [c["agent"].stop_reason for c in tool.children] == ["done", "done"], \
            course.both("the second child was stopped by what the first one spent",
                        "第二个子智能体因为第一个花掉的预算而被停下了")


def requests_of(record: dict) -> list[dict]:
    """The child's model calls, from its own client's record of what it was sent."""
    return [{"prompt_tokens": len(json.dumps(r, ensure_ascii=False, default=str)) // 4}
            for r in record["agent"].client.requests]


@course.exercise("16.3", "checking a child's claims", "检查子智能体的说法")
def _(t, check_claims):
    folder = make_shop(Path.cwd())
    true_claim = claim(BUGGY, bug_line())
    with t.case("a claim that holds gives no problem", "成立的说法不报问题"):
        problems = check_claims(f"Found it.\n{true_claim}\nThat is the bug.", folder)
        assert problems == [], course.both(f"a true claim gave {problems}",
                                           f"成立的说法也报出了问题：{problems}")
        two = f"{true_claim}\nshop/cart.py:4: def new_cart() -> dict:"
        assert check_claims(two, folder) == [], course.both(
            f"two true claims gave {check_claims(two, folder)}",
            f"两个成立的说法也报出了问题：{check_claims(two, folder)}")
    with t.case("a line that is not there, or a file that is not there, is a problem",
                "说到不存在的行或文件，就算一个问题"):
        said = guesser()[0]([{"role": "user", "content": SEARCH_TASK}] + read_three(folder))
        assert check_claims(said["content"], folder), \
            course.both("the guesser's claim (a line checkout.py does not have) gave no problem",
                        "guesser 的说法（checkout.py 里没有的一行）没有报出问题")
        assert check_claims("shop/pricing.py:99: return 0", folder), course.both(
            "line 99 does not exist", "第 99 行不存在")
        assert check_claims("shop/nothing.py:1: x", folder), course.both(
            "shop/nothing.py does not exist", "shop/nothing.py 不存在")
        assert check_claims(true_claim + "\nshop/cart.py:4: def old_cart():", folder), \
            course.both("one true claim and one false: the false one is a problem",
                        "一个说法成立、一个不成立：不成立的那个算一个问题")
    with t.case("a claim cannot make you read outside the workspace",
                "说法不能让你读工作区之外的东西"):
        outside = folder.parent / "outside_16_3.py"
        outside.write_text("secret\n")
        try:
            problems = check_claims(f"../{outside.name}:1: secret", folder)
            assert problems, course.both(
                "a claim about a file outside the workspace was taken as true",
                "关于工作区之外某个文件的说法被当真了")
            assert "secret" not in " ".join(problems), course.both(
                "the problem shows the outside file's text", "问题里露出了外面那个文件的文本")
        finally:
            outside.unlink()
    with t.case("an answer with no claim in it is a problem", "答案里一个说法也没有，也算一个问题"):
        assert check_claims("The bug is somewhere in pricing, I think.", folder), \
            course.both("an answer that names no place gave no problem",
                        "答案一个位置也没指出，却没有报出问题")


def read_three(folder: Path) -> list[dict]:
    """A history in which three files have been read, as the guesser needs before it claims."""
    messages = []
    for n, name in enumerate(["audit", "cart", "catalog"], 1):
        path = f"shop/{name}.py"
        messages.append({"role": "assistant", "content": "", "tool_calls": [{
            "id": f"c{n}", "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": path})}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}",
                         "content": json.dumps(sandbox.read_in(folder.resolve(), path))})
    return messages

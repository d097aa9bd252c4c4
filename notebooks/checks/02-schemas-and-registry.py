"""The checks of lesson 02's coding exercises: course.check("02.1", check_tools_strict) and so on.

Each check builds its own schemas, registries and scripted models, and runs in a throw-away
folder (course.check makes it), so it never sees or changes the notebook's objects."""

import copy
import json
import re
from pathlib import Path

import course

import agent
from agent import TOOL_REGISTRY, TOOLS, Agent, ScriptedClient, reply, schema, tool_call


def count_lines(path: str) -> dict:
    """Count the lines of a UTF-8 text file."""
    with open(path, encoding="utf-8") as file:
        return {"path": path, "lines": sum(1 for _ in file)}


def named(name: str) -> dict:
    """A copy of the built-in schema called name."""
    return copy.deepcopy(next(t for t in TOOLS if t["function"]["name"] == name))


def short(value) -> str:
    return agent.one_line(value if isinstance(value, str) else repr(value), 150)


def raised_by(check, tools, registry):
    """The exception check(tools, registry) raised, or None."""
    try:
        check(tools, registry)
    except Exception as exc:  # the student's code may raise anything; the case says what
        return exc
    return None


# The drifts of the notebook, built here again (the notebook's objects are the student's).
COUNT_LINES = schema(count_lines, "Count the lines of a text file.", path="Path of the file.")
READ_ONLY = [named("read_file"), named("list_files")]
READ_FILE_RENAMED = named("read_file")
READ_FILE_RENAMED["function"]["parameters"] = {
    "type": "object", "required": ["file_path"],
    "properties": {"file_path": {"type": "string", "description": "Path of the file."}}}
EDIT_WITHOUT_NEW_STR = schema(agent.edit_file, "Edit a file.", path="Path of the file.",
                              old_str="Exact text to replace.")
NEW_STR_NOT_REQUIRED = named("edit_file")
NEW_STR_NOT_REQUIRED["function"]["parameters"]["required"] = ["path", "old_str"]
REQUIRED_NOT_DESCRIBED = named("read_file")
REQUIRED_NOT_DESCRIBED["function"]["parameters"]["required"] = ["path", "encoding"]
NO_REQUIRED_LIST = named("read_file")
del NO_REQUIRED_LIST["function"]["parameters"]["required"]
LIST_PATH_REQUIRED = named("list_files")
LIST_PATH_REQUIRED["function"]["parameters"]["required"] = ["path"]


# --- 02.1: check_tools_strict ------------------------------------------------------------------


@course.exercise("02.1", "check_tools_strict: check_tools, and two gaps closed",
                         "check_tools_strict：check_tools，再补上两个漏洞")
def _(t, check_tools_strict):
    def passes(what, zh, tools, registry=TOOL_REGISTRY):
        with t.case(what, zh):
            exc = raised_by(check_tools_strict, tools, registry)
            assert exc is None, course.both(f"it raised {type(exc).__name__}: {short(str(exc))}",
                                            f"抛出了 {type(exc).__name__}: {short(str(exc))}")

    def reports(what, zh, tools, registry, *names):
        with t.case(what, zh):
            before = copy.deepcopy((tools, registry))
            exc = raised_by(check_tools_strict, tools, registry)
            assert exc is not None, course.both("it raised nothing", "没有抛出任何异常")
            assert isinstance(exc, ValueError), course.both(
                f"it raised {type(exc).__name__}, not ValueError: {short(str(exc))}",
                f"抛出的是 {type(exc).__name__}，不是 ValueError：{short(str(exc))}")
            missing = [name for name in names if name not in str(exc)]
            assert not missing, course.both(
                f"the message does not name {missing}: {short(str(exc))}",
                f"消息里没有提到 {missing}：{short(str(exc))}")
            assert (tools, registry) == before, course.both(
                "it changed the schemas or the registry", "Schema 或注册表被改动了")

    passes("the built-in TOOLS and TOOL_REGISTRY pass",
           "内置的 TOOLS 和 TOOL_REGISTRY 能通过", TOOLS)
    passes("a schema may require a parameter that has a default (list_files's path)",
           "Schema 可以把有默认值的参数列为必填（list_files 的 path）",
           [named("read_file"), LIST_PATH_REQUIRED, named("edit_file")])
    reports("(a) new_str is in properties but not in required: reported, naming new_str",
            "(a) new_str 在 properties 里，却不在 required 里：报告出来，并指出 new_str",
            [*TOOLS[:2], NEW_STR_NOT_REQUIRED], TOOL_REGISTRY, "new_str")
    reports("(a) a schema with no 'required' list at all: read_file's path is reported",
            "(a) Schema 根本没有 'required' 列表：报告 read_file 的 path",
            [NO_REQUIRED_LIST, *TOOLS[1:]], TOOL_REGISTRY, "path")
    reports("(b) 'encoding' is in required but not in properties: reported",
            "(b) 'encoding' 在 required 里，却不在 properties 里：报告出来",
            [REQUIRED_NOT_DESCRIBED, *TOOLS[1:]], TOOL_REGISTRY, "encoding")
    reports("what check_tools finds is still reported: a schema without a function",
            "check_tools 能发现的仍然报告：有 Schema 却没有函数",
            [*TOOLS, COUNT_LINES], TOOL_REGISTRY, "count_lines")
    reports("what check_tools finds is still reported: a renamed parameter",
            "check_tools 能发现的仍然报告：改了名的参数",
            [READ_FILE_RENAMED, *TOOLS[1:]], TOOL_REGISTRY, "file_path")
    reports("all problems in one ValueError: check_tools's and the new ones together",
            "所有问题放进同一个 ValueError：check_tools 的和新加的一起",
            [*TOOLS[:2], NEW_STR_NOT_REQUIRED, COUNT_LINES], TOOL_REGISTRY,
            "count_lines", "new_str")


# --- 02.2: one list, two views -------------------------------------------------------------


def built_in_specs() -> list:
    """agent.py's three tools as (function, description, {parameter: description})."""
    specs = []
    for tool in TOOLS:
        function = tool["function"]
        described = {name: p["description"] for name, p in
                     function["parameters"]["properties"].items()}
        specs.append((TOOL_REGISTRY[function["name"]], function["description"], described))
    return specs


@course.exercise("02.2", "tools_from_specs: TOOLS and TOOL_REGISTRY from one list",
                         "tools_from_specs：从一个列表得到 TOOLS 和 TOOL_REGISTRY")
def _(t, tools_from_specs):
    with t.case("agent.py's three specs give exactly TOOLS and TOOL_REGISTRY",
                "由 agent.py 的三条定义恰好生成 TOOLS 和 TOOL_REGISTRY"):
        tools, registry = tools_from_specs(built_in_specs())
        assert tools == TOOLS, course.both(f"the schemas differ from TOOLS: {short(tools)}",
                                           f"Schema 和 TOOLS 不一样：{short(tools)}")
        assert registry == TOOL_REGISTRY, course.both(f"the registry differs: {short(registry)}",
                                                      f"注册表不一样：{short(registry)}")
    with t.case("the two halves pass check_tools", "生成的两部分能通过 check_tools"):
        agent.check_tools(*tools_from_specs(built_in_specs()))
    with t.case("a fourth spec appears in both halves, last, and they still agree",
                "第四条定义出现在两部分的末尾，两部分仍然一致"):
        specs = [*built_in_specs(),
                 (count_lines, "Count the lines of a text file.", {"path": "Path of the file."})]
        tools, registry = tools_from_specs(specs)
        assert [s["function"]["name"] for s in tools] == [
            "read_file", "list_files", "edit_file", "count_lines"], short(tools)
        assert tools[3] == COUNT_LINES, course.both(f"count_lines's schema is {short(tools[3])}",
                                                    f"count_lines 的 Schema 是 {short(tools[3])}")
        assert registry.get("count_lines") is count_lines, course.both(
            "count_lines is not registered", "count_lines 没有注册")
        agent.check_tools(tools, registry)
    with t.case("the halves are made from the specs given, in their order",
                "两部分由给定的定义生成，顺序不变"):
        specs = built_in_specs()
        tools, registry = tools_from_specs([specs[2], specs[0]])
        assert [s["function"]["name"] for s in tools] == ["edit_file", "read_file"], short(tools)
        assert set(registry) == {"edit_file", "read_file"}, short(registry)
    with t.case("two specs with the same name are refused with ValueError (the model would "
                "see two tools; the host would run one)",
                "同名的两条定义被拒绝，抛出 ValueError（模型会看到两个工具，宿主只会运行一个）"):
        specs = built_in_specs()
        try:
            tools_from_specs([*specs, (agent.read_file, "Read a file again.", {"path": "A path."})])
        except ValueError:
            pass
        else:
            raise AssertionError(course.both("it accepted two read_file specs",
                                             "两条 read_file 定义都被接受了"))
    with t.case("TOOLS and TOOL_REGISTRY themselves are not changed",
                "TOOLS 和 TOOL_REGISTRY 本身没有被改动"):
        tools, registry = tools_from_specs(built_in_specs()[:1])
        assert tools is not TOOLS and registry is not TOOL_REGISTRY
        assert len(TOOLS) == 3 and len(TOOL_REGISTRY) == 3, course.both(
            "agent.py's own lists changed", "agent.py 自己的列表被改动了")


# --- 02.3: count_lines, properly -------------------------------------------------------------


def counting_run(tools, registry, script, path: str, lines: int) -> Agent:
    Path(path).write_bytes("".join(f"line {n}\n" for n in range(1, lines + 1)).encode())
    bot = Agent(ScriptedClient(script), "scripted", tools=tools, registry=registry,
                on_event=None, max_turns=5)
    bot.chat(f"How many lines does {path} have?")
    return bot


def results_of(bot: Agent) -> list:
    return [json.loads(m["content"]) for m in bot.messages if m["role"] == "tool"]


@course.exercise("02.3", "count_lines as a real tool: schema, registry entry, a run",
                         "把 count_lines 做成真正的工具：Schema、注册表条目、一次运行")
def _(t, counting_tools, counting_script):
    with t.case("counting_tools() gives TOOLS' three schemas, then count_lines with a required "
                "path",
                "counting_tools() 给出 TOOLS 的三个 Schema，再加上 path 必填的 count_lines"):
        tools, registry = counting_tools()
        names = [s["function"]["name"] for s in tools]
        assert names == ["read_file", "list_files", "edit_file", "count_lines"], names
        assert tools[:3] == TOOLS[:3], course.both(
            "the first three should be TOOLS' schemas, unchanged",
            "前三个应当是 TOOLS 的 Schema，原样不变")
        assert tools[3]["function"]["parameters"]["required"] == ["path"], short(tools[3])
    with t.case("the schemas and the registry agree (check_tools)",
                "Schema 和注册表一致（check_tools）"):
        agent.check_tools(*counting_tools())
    with t.case("agent.TOOLS and agent.TOOL_REGISTRY are left as they were (new list, new "
                "dict; else every cell above now offers count_lines)",
                "agent.TOOLS 和 agent.TOOL_REGISTRY 保持原样（用新的列表和字典；否则上面每个单元"
                "格都会提供 count_lines）"):
        tools, registry = counting_tools()
        assert tools is not TOOLS and registry is not TOOL_REGISTRY, course.both(
            "it returned agent.TOOLS or agent.TOOL_REGISTRY itself",
            "返回的是 agent.TOOLS 或 agent.TOOL_REGISTRY 本身")
        assert [s["function"]["name"] for s in TOOLS] == ["read_file", "list_files", "edit_file"], \
            course.both("agent.TOOLS has changed: restart the kernel, then build a new list "
                        "([*TOOLS, ...])",
                        "agent.TOOLS 被改动了：重启内核，然后新建一个列表（[*TOOLS, ...]）")
        assert "count_lines" not in TOOL_REGISTRY, course.both(
            "agent.TOOL_REGISTRY has changed: restart the kernel, then build a new dict",
            "agent.TOOL_REGISTRY 被改动了：重启内核，然后新建一个字典")
    with t.case("in a run on a 3-line file, the model calls count_lines and gets lines: 3",
                "在 3 行的文件上运行：模型调用 count_lines，得到 lines: 3"):
        bot = counting_run(*counting_tools(), counting_script("three.txt"), "three.txt", 3)
        first = bot.messages[2].get("tool_calls", [{}])[0].get("function", {})
        assert first.get("name") == "count_lines", course.both(
            f"the first call is {short(first)}", f"第一个调用是 {short(first)}")
        assert results_of(bot)[:1] == [{"path": "three.txt", "lines": 3}], short(results_of(bot))
        assert bot.client.requests[0]["tools"][3]["function"]["name"] == "count_lines"
    with t.case("the final answer says 3, and the run ends as done",
                "最终回答说 3，运行以 done 结束"):
        bot = counting_run(*counting_tools(), counting_script("three.txt"), "three.txt", 3)
        answer = bot.messages[-1]["content"]
        assert re.search(r"\b3\b", answer), course.both(f"the answer is {answer!r}",
                                                       f"回答是 {answer!r}")
        assert bot.stop_reason == "done", course.both(f"stop reason {bot.stop_reason!r}",
                                                      f"停止原因是 {bot.stop_reason!r}")
    with t.case("on a 5-line file the answer says 5: it is read from the tool result",
                "在 5 行的文件上，回答说 5：数字来自工具结果"):
        bot = counting_run(*counting_tools(), counting_script("five.txt"), "five.txt", 5)
        answer = bot.messages[-1]["content"]
        assert re.search(r"\b5\b", answer), course.both(f"the answer is {answer!r}",
                                                       f"回答是 {answer!r}")


# --- 02.5: check at construction ---------------------------------------------------------------


def delete_file(path: str) -> dict:
    """Delete a file (never called by the check: it is only registered)."""
    raise AssertionError(course.both("delete_file ran", "delete_file 运行了"))


@course.exercise("02.5", "make_agent: refuse drifted tools, allow a deliberate read-only set",
                         "make_agent：拒绝漂移的工具，允许有意为之的只读工具集")
def _(t, make_agent):
    client = ScriptedClient([reply("ok")])

    def refused(what, zh, tools, registry):
        with t.case(what, zh):
            try:
                make_agent(client, tools, registry)
            except ValueError:
                return
            raise AssertionError(course.both("it built an Agent", "构造出了一个 Agent"))

    with t.case("builds an Agent with the tools and the registry it was given",
                "用给定的工具和注册表构造 Agent"):
        def read_file(path: str) -> dict:  # a registry of the student's own, not agent.py's
            return agent.read_file(path)

        registry = {**TOOL_REGISTRY, "read_file": read_file}
        bot = make_agent(client, TOOLS, registry)
        assert isinstance(bot, Agent), course.both(f"it returned {short(bot)}",
                                                   f"返回的是 {short(bot)}")
        assert bot.tools == TOOLS and bot.client is client
        assert bot.registry.get("read_file") is read_file, course.both(
            "the agent does not run the registry it was given (it has agent.py's read_file)",
            "智能体用的不是给定的注册表（用的是 agent.py 的 read_file）")
    with t.case("passes other keyword arguments on to Agent (max_turns=3, on_event=None)",
                "把其他关键字参数传给 Agent（max_turns=3、on_event=None）"):
        bot = make_agent(client, TOOLS, TOOL_REGISTRY, max_turns=3, on_event=None)
        assert bot.max_turns == 3, course.both(f"max_turns is {bot.max_turns}",
                                               f"max_turns 是 {bot.max_turns}")
    refused("refuses a schema without a function (drift 1), with ValueError",
            "拒绝没有函数的 Schema（漂移 1），抛出 ValueError",
            [*TOOLS, COUNT_LINES], TOOL_REGISTRY)
    refused("refuses a renamed parameter (drift 3)",
            "拒绝改了名的参数（漂移 3）", [READ_FILE_RENAMED, *TOOLS[1:]],
            TOOL_REGISTRY)
    refused("refuses a schema that leaves out a required parameter (drift 4)",
            "拒绝漏掉必填参数的 Schema（漂移 4）",
            [EDIT_WITHOUT_NEW_STR], {"edit_file": agent.edit_file})
    refused("refuses a read-only set whose one schema has drifted (read_file renamed)",
            "拒绝其中一个 Schema 已经漂移的只读工具集（read_file 改了名）",
            [READ_FILE_RENAMED, named("list_files")], TOOL_REGISTRY)
    with t.case("accepts read_file and list_files over the full registry, and that agent "
                "cannot write",
                "只给 read_file 和 list_files 的 Schema、配上完整的注册表：接受，"
                "这样的智能体写不了文件"):
        Path("notes.txt").write_bytes(b"keep me\n")
        script = [tool_call("edit_file", path="notes.txt", old_str="", new_str="gone"),
                  reply("I cannot write here.")]
        bot = make_agent(ScriptedClient(script), READ_ONLY, TOOL_REGISTRY, on_event=None)
        bot.chat("Overwrite notes.txt.")
        assert Path("notes.txt").read_bytes() == b"keep me\n", course.both(
            "notes.txt was overwritten", "notes.txt 被覆盖了")
        answered = bot.messages[3]["content"]  # the refused call's tool result
        assert "unknown tool" in answered, short(answered)
    with t.case("accepts a registered function without a schema (drift 2): it can never run",
                "接受注册了却没有 Schema 的函数（漂移 2）：这个函数永远不会运行"):
        bot = make_agent(client, TOOLS, {**TOOL_REGISTRY, "delete_file": delete_file})
        assert isinstance(bot, Agent)

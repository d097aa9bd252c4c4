"""Checks of lesson 07's coding exercises (course.check("07.k", ...) in the notebook).

Each runs the student's code on real runs of the agent, on the scripted model, traced by the
lesson's own Tracer where a trace is needed. They run in a scratch folder (course.check)."""

import functools
import hashlib
import json
import os
from pathlib import Path

import course
import tracing
from openai.types import CompletionUsage
from props.clock import FakeClock

import agent
from agent import Agent, ScriptedClient, reply, tool_call

# --- 07.1 a budget guard ------------------------------------------------------------------

# With these prices and this usage, every model call costs exactly one dollar.
BUDGET_PRICES = {"budget-test": (1_000.0, 4_000.0)}  # dollars per million tokens
USAGE = {"prompt_tokens": 500, "completion_tokens": 125}


def with_usage(client, usage):
    """Make every response of client report this usage (None: no usage at all)."""
    create = client.chat.completions.create

    def create_with_usage(**request):
        response = create(**request)
        response.usage = usage and CompletionUsage(
            total_tokens=usage["prompt_tokens"] + usage["completion_tokens"], **usage)
        return response

    client.chat.completions.create = create_with_usage
    return client


def budget_run(guard, steps, usage=USAGE):
    """Run one task with guard as the handler; return (agent, tools that ran, what it raised)."""
    ran = []

    def list_files(path="."):
        ran.append(path)
        return {"path": path, "files": []}

    bot = Agent(with_usage(ScriptedClient(steps), usage), "budget-test", on_event=guard,
                registry={**agent.TOOL_REGISTRY, "list_files": list_files})
    try:
        bot.chat("look around")
        raised = None
    except Exception as exc:
        raised = exc
    return bot, ran, raised


def traced_over_budget(budget_guard, traced):
    """A run of five looks at $1 a call with a $2.50 budget, its events given to
    traced(tracer, guard): the records of its trace (none if the tracer wrote none) and what
    the run raised."""
    tracer = tracing.Tracer("budget-traces", clock=FakeClock())
    bot, ran, raised = budget_run(traced(tracer, budget_guard(2.5, BUDGET_PRICES)),
                                  [*looks(5), reply("ok")])
    return (tracing.load_trace(tracer.paths[-1]) if tracer.paths else []), raised


def looks(n):
    return [tool_call("list_files", path=f"folder-{i}") for i in range(1, n + 1)]


@course.exercise("07.1", "a budget guard that stops a run which costs too much",
                         "一道预算护栏：花费太多时停止运行")
def _(t, budget_guard, traced):
    with t.case("a run within its budget ends as usual", "预算以内的运行照常结束"):
        bot, ran, raised = budget_run(budget_guard(2.5, BUDGET_PRICES), [*looks(1), reply("ok")])
        assert raised is None, course.both(f"it raised {raised!r} after two calls costing $1 each",
                                           f"两次调用各花 $1，却抛出了 {raised!r}")
        assert bot.stop_reason == "done", course.both(f"stop_reason is {bot.stop_reason!r}",
                                                      f"stop_reason 是 {bot.stop_reason!r}")
    with t.case("a run that passes its budget stops at the model call that passed it",
                "超出预算的运行，停在超出预算的那次模型调用"):
        bot, ran, raised = budget_run(budget_guard(2.5, BUDGET_PRICES), [*looks(5), reply("ok")])
        asked = len(bot.client.requests)
        assert raised is not None, course.both(
            "the run cost $6 against a budget of $2.50 and did not stop",
            "预算是 $2.50，运行花了 $6，却没有停下")
        assert bot.stop_reason == "error", course.both(
            f"stop_reason is {bot.stop_reason!r}, not 'error'",
            f"stop_reason 是 {bot.stop_reason!r}，不是 'error'")
        assert asked == 3, course.both(
            f"the model was called {asked} times; the third call passed $2.50",
            f"模型被调用了 {asked} 次；第三次调用就超过了 $2.50")
    with t.case("the tools of the call that passed the budget do not run",
                "超出预算的那次模型调用所要求的工具不运行"):
        bot, ran, raised = budget_run(budget_guard(2.5, BUDGET_PRICES), [*looks(5), reply("ok")])
        assert ran == ["folder-1", "folder-2"], course.both(
            f"tools ran for {ran}: raise when the usage arrives (the assistant's "
            "message_end), not after its tools",
            f"为 {ran} 运行了工具：usage 一到（assistant 的 message_end）就要抛出异常，"
            "不要等它的工具运行完")
    with t.case("every run starts again at zero", "每次运行都从零开始算"):
        guard = budget_guard(2.5, BUDGET_PRICES)
        bot = Agent(with_usage(ScriptedClient([*looks(1), reply("one"), *looks(1), reply("two")]),
                               USAGE), "budget-test", on_event=guard)
        bot.chat("first")  # $2
        try:
            bot.chat("second")  # $2 more, but a new run
        except Exception:
            raise AssertionError(course.both(
                "the second run was stopped: the guard still counted the first run's cost "
                "(agent_start begins a new run)",
                "第二次运行被停下了：护栏还算着第一次运行的花费"
                "（agent_start 开始一次新的运行）")) from None
    with t.case("completion tokens are paid for too", "输出的 token 也要付费"):
        guard = budget_guard(1.5, {"budget-test": (0.0, 8_000.0)})  # only output costs: $1
        bot, ran, raised = budget_run(guard, [*looks(3), reply("ok")])
        assert raised is not None and len(bot.client.requests) == 2, course.both(
            "with output at $8 per million tokens, the second call passed $1.50",
            "输出每百万 token $8，第二次调用就超过了 $1.50")
    with t.case("a response without usage costs nothing and breaks nothing",
                "没有 usage 的响应不花钱，也不出错"):
        bot, ran, raised = budget_run(budget_guard(0.5, BUDGET_PRICES), [*looks(2), reply("ok")],
                                      usage=None)
        assert raised is None, course.both(f"it raised {raised!r} on a response with usage None",
                                           f"响应的 usage 为 None，却抛出了 {raised!r}")
    with t.case("traced(tracer, guard): a run the guard stops leaves a trace that ends with "
                "agent_end, stop_reason 'error' and the guard's error",
                "traced(tracer, guard)：被护栏停下的运行留下的 trace 以 agent_end 结尾，"
                "stop_reason 为 'error'，并记着护栏的错误"):
        records, raised = traced_over_budget(budget_guard, traced)
        assert records, course.both("the tracer wrote no trace: traced must give it every event",
                                    "追踪器什么也没写：traced 得把每个事件都交给它")
        end = records[-1]
        assert end["type"] == "agent_end" and end.get("stop_reason") == "error", course.both(
            f"the trace ends with {end['type']!r}, stop_reason {end.get('stop_reason')!r}",
            f"trace 以 {end['type']!r} 结尾，stop_reason 是 {end.get('stop_reason')!r}")
        assert raised is not None and type(raised).__name__ in (end.get("error") or ""), \
            course.both(f"the error recorded is {end.get('error')!r}",
                        f"记下的错误是 {end.get('error')!r}")
    with t.case("the trace holds the model call that passed the budget: the tracer sees each "
                "event before the guard",
                "trace 里有超出预算的那次模型调用：追踪器先于护栏看到每个事件"):
        records, raised = traced_over_budget(budget_guard, traced)
        calls = [r for r in records if tracing.is_assistant_end(r)]
        assert len(calls) == 3, course.both(
            f"the trace holds {len(calls)} of the 3 model calls (fan_out gives each event to "
            "its handlers in order, and stops at the one that raises)",
            f"trace 里只有 3 次模型调用中的 {len(calls)} 次（fan_out 按顺序把每个事件交给"
            "各个处理器，到抛出异常的那个为止）")
    with t.case("trace_problems names the tool call the guard stopped: the trace has no result "
                "for it", "trace_problems 指出被护栏停下的工具调用：trace 里没有它的结果"):
        records, raised = traced_over_budget(budget_guard, traced)
        problems = tracing.trace_problems(records) if records else []
        assert any("call_3" in problem for problem in problems), course.both(
            f"trace_problems says {problems!r}", f"trace_problems 说的是 {problems!r}")


# --- 07.2 cached tokens -------------------------------------------------------------------

CACHED = {"model-a": (2.0, 0.5, 8.0), "model-b": (1.0, 0.1, 4.0)}


def dollars(prompt, cached, completion, price):
    return ((prompt - cached) * price[0] + cached * price[1] + completion * price[2]) / 1e6


@course.exercise("07.2", "cost with cached prompt tokens", "算上已缓存的提示词 token 的成本")
def _(t, cached_cost):
    plain = {"prompt_tokens": 1_000, "completion_tokens": 100}
    with t.case("without cached tokens it is the lesson's cost",
                "没有已缓存的 token 时，结果就是课上算的成本"):
        got = cached_cost("model-a", plain, CACHED)
        assert got is not None and abs(got - dollars(1_000, 0, 100, CACHED["model-a"])) < 1e-12, \
            course.both(f"got {got} for 1,000 tokens in and 100 out",
                        f"输入 1,000 个 token、输出 100 个，得到的是 {got}")
    with t.case("cached tokens are part of prompt_tokens, billed at the cached price",
                "已缓存的 token 是 prompt_tokens 的一部分，按缓存价格计费"):
        usage = {**plain, "prompt_tokens_details": {"cached_tokens": 800}}
        got, want = cached_cost("model-a", usage, CACHED), dollars(1_000, 800, 100,
                                                                   CACHED["model-a"])
        on_top = dollars(1_800, 800, 100, CACHED["model-a"])
        added = got and abs(got - on_top) < 1e-12  # cached tokens added to prompt_tokens
        assert not added, course.both(
            f"got {got}, want {want} (the cached tokens were added on top of the prompt)",
            f"得到的是 {got}，应为 {want}（已缓存的 token 又另外加了一遍）")
        assert got is not None and abs(got - want) < 1e-12, course.both(
            f"got {got}, want {want}", f"得到的是 {got}，应为 {want}")
    with t.case("the price table given is the one used", "用的是传入的价格表"):
        usage = {**plain, "prompt_tokens_details": {"cached_tokens": 500}}
        got, want = cached_cost("model-b", usage, CACHED), dollars(1_000, 500, 100,
                                                                   CACHED["model-b"])
        assert got is not None and abs(got - want) < 1e-12, course.both(
            f"got {got}, want {want}", f"得到的是 {got}，应为 {want}")
    with t.case("details that are missing or null mean nothing was cached",
                "prompt_tokens_details 缺失或为 null，表示没有缓存"):
        want = dollars(1_000, 0, 100, CACHED["model-a"])
        for details in (None, {}, {"cached_tokens": None}, {"audio_tokens": 0}):
            got = cached_cost("model-a", {**plain, "prompt_tokens_details": details}, CACHED)
            assert got is not None and abs(got - want) < 1e-12, course.both(
                f"prompt_tokens_details={details!r} gave {got}",
                f"prompt_tokens_details={details!r} 得出 {got}")
    with t.case("a model that has no price costs None, not a wrong number",
                "没有价格的模型，成本是 None，而不是一个错误的数字"):
        got = cached_cost("not-in-the-table", plain, CACHED)
        assert got is None, course.both(f"got {got!r}", f"得到的是 {got!r}")


# --- 07.3 a text timeline -----------------------------------------------------------------


def timed_run(steps, tool_seconds, model_seconds, fail_last=False):
    """A traced run whose model calls take model_seconds[i] and whose tool calls take
    tool_seconds[i], in order, on a fake clock; the records of its trace."""
    clock = FakeClock(start=1_000.0)
    model_times, tool_times = iter(model_seconds), iter(tool_seconds)
    steps = list(steps)
    if fail_last:
        def down(messages):
            raise TimeoutError("no answer")
        steps.append(down)
    client = ScriptedClient(steps)
    create = client.chat.completions.create

    def slow_create(**request):
        clock.advance(next(model_times))
        return create(**request)

    client.chat.completions.create = slow_create

    def timed(func):
        @functools.wraps(func)
        def run(**arguments):
            clock.advance(next(tool_times))
            return func(**arguments)
        return run

    tracer = tracing.Tracer("traces", clock=clock)
    bot = Agent(client, "scripted-demo", on_event=tracer,
                registry={name: timed(f) for name, f in agent.TOOL_REGISTRY.items()})
    try:
        bot.chat("look")
    except TimeoutError:
        pass
    return tracing.load_trace(tracer.paths[-1])


def lanes(text, width):
    lines = text.split("\n")
    assert len(lines) == 2, course.both(f"{len(lines)} lines, not 2: {text!r}",
                                        f"有 {len(lines)} 行，不是 2 行：{text!r}")
    assert lines[0].startswith("model ") and lines[1].startswith("tools "), course.both(
        f"the lines begin {lines[0][:6]!r} and {lines[1][:6]!r}, not 'model ' and 'tools '",
        f"两行的开头是 {lines[0][:6]!r} 和 {lines[1][:6]!r}，不是 'model ' 和 'tools '")
    model, tools = lines[0][6:], lines[1][6:]
    assert len(model) == len(tools) == width, course.both(
        f"the lanes are {len(model)} and {len(tools)} characters wide, not {width}",
        f"两行分别宽 {len(model)} 和 {len(tools)} 个字符，不是 {width}")
    return model, tools


@course.exercise("07.3", "a text timeline for a terminal", "给终端用的文本时间线")
def _(t, text_timeline):
    # model 0-2 s, a failing tool 2-3 s, model 3-5 s, a tool 5-6 s, model 6-10 s
    run = timed_run([tool_call("read_file", path="missing.txt"),
                     tool_call("list_files", path="."), reply("done")],
                    tool_seconds=[1, 1], model_seconds=[2, 2, 4])
    with t.case("two lines, 'model ' and 'tools ', each then exactly width characters",
                "两行，分别以 'model ' 和 'tools ' 开头，后面各恰好 width 个字符"):
        lanes(text_timeline(run, width=20), 20)
        lanes(text_timeline(run, width=50), 50)
        lanes(text_timeline(run), 60)
    with t.case("each model call is drawn where it ran, and nothing else in its lane",
                "每次模型调用画在运行的位置，model 那一行没有别的东西"):
        model, _ = lanes(text_timeline(run, width=20), 20)  # one column is half a second
        assert [model[c] for c in (1, 7, 15)] == ["█"] * 3, course.both(
            f"model lane: {model!r}", f"model 那一行：{model!r}")
        assert model[5] == model[11] == " ", course.both(
            f"model lane: {model!r} (tools ran at 2.5 s and 5.5 s)",
            f"model 那一行：{model!r}（工具在 2.5 秒和 5.5 秒时运行）")
        assert set(model) <= {"█", " "}, course.both(f"model lane: {model!r}",
                                                     f"model 那一行：{model!r}")
    with t.case("each tool is drawn where it ran, a failed one as x",
                "每个工具画在运行的位置，失败的画成 x"):
        _, tools = lanes(text_timeline(run, width=20), 20)
        assert tools[5] == "x" and tools[11] == "▌", course.both(f"tools lane: {tools!r}",
                                                                 f"tools 那一行：{tools!r}")
        assert tools[1] == tools[15] == " ", course.both(
            f"tools lane: {tools!r} (the model ran at 0.5 s and 7.5 s)",
            f"tools 那一行：{tools!r}（模型在 0.5 秒和 7.5 秒时运行）")
    with t.case("even a very short tool call shows", "很短的工具调用也能看到"):
        short = timed_run([tool_call("list_files", path="."), reply("ok")],
                          tool_seconds=[0.001], model_seconds=[4.3, 5.7])
        model, tools = lanes(text_timeline(short, width=20), 20)
        assert "▌" in tools, course.both(f"a 1 ms tool call in a 10 s run vanished: {tools!r}",
                                         f"10 秒的运行里，1 毫秒的工具调用不见了：{tools!r}")
    with t.case("a model call that failed (and never closed) is drawn as x",
                "失败（而且没有结束）的模型调用画成 x"):
        failed = timed_run([tool_call("list_files", path=".")], tool_seconds=[1],
                           model_seconds=[2, 7], fail_last=True)
        model, _ = lanes(text_timeline(failed, width=20), 20)
        assert model[15] == "x" and model[1] == "█", course.both(f"model lane: {model!r}",
                                                                 f"model 那一行：{model!r}")


# --- 07.4 replay as a regression test -----------------------------------------------------


def make_fixture(folder: Path) -> None:
    """The folder the recording started in. It has dotfiles, so hiding them shows."""
    (folder / ".gitignore").write_text("*.pyc\n__pycache__/\n")
    (folder / ".env.example").write_text("DB_HOST=localhost\n")
    (folder / "app.py").write_text("print('hello')\n")


def recording() -> list[dict]:
    """A traced run in a fixture folder: it lists the folder and reads .gitignore."""
    before = os.getcwd()
    folder = Path("recorded-in").resolve()
    folder.mkdir()
    make_fixture(folder)
    os.chdir(folder)
    try:
        tracer = tracing.Tracer(Path(before) / "traces")
        Agent(ScriptedClient([tool_call("list_files", path="."),
                              tool_call("read_file", path=".gitignore"),
                              reply("Python caches are ignored.")]),
              "scripted-demo", on_event=tracer).chat("What does git ignore here?")
    finally:
        os.chdir(before)
    return tracing.load_trace(tracer.paths[0])


def hiding_dotfiles(path: str = ".") -> dict:
    listing = agent.list_files(path)
    return {**listing, "files": [f for f in listing["files"] if not f["name"].startswith(".")]}


def stripping(path: str) -> dict:
    result = agent.read_file(path)
    return {**result, "content": result["content"].rstrip()}


def run_test(test, records, tools=None):
    """Run the student's test as pytest would, with agent.py's tools changed (or not); return
    what it raised, or None if it passed."""
    before, saved = os.getcwd(), dict(agent.TOOL_REGISTRY)
    agent.TOOL_REGISTRY.update(tools or {})
    tmp = Path(f"tmp-{len(os.listdir('.'))}").resolve()
    tmp.mkdir()
    try:
        test(records=records, make_fixture=make_fixture, tmp_path=tmp)
        return None
    except NotImplementedError:
        raise  # the case says "not written yet"
    except Exception as exc:
        return exc
    finally:
        agent.TOOL_REGISTRY.clear()
        agent.TOOL_REGISTRY.update(saved)
        os.chdir(before)


def said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".removesuffix(": ")


def failed_an_assert(raised, change: str) -> None:
    assert raised is not None, course.both(f"your test passed although {change}",
                                           f"你的测试通过了，可是 {change}")
    assert isinstance(raised, AssertionError), course.both(
        f"your test raised {said(raised)} instead of failing an assert",
        f"你的测试抛出了 {said(raised)}，而不是让一个 assert 失败")


@course.exercise("07.4", "a replay test that passes, and fails when the host changes",
                         "一个回放测试：平时通过，宿主一变就失败")
def _(t, test_replay):
    records = recording()
    with t.case("your test passes when nothing changed", "什么都没变时，你的测试通过"):
        raised = run_test(test_replay, records)
        assert raised is None, course.both(
            f"it failed on the unchanged tools: {said(raised)} (does the replay start in a "
            "folder made by make_fixture?)",
            f"工具没变，它却失败了：{said(raised)}（回放是不是从 make_fixture 建的文件夹开始？）")
    with t.case("it fails when list_files hides dotfiles", "list_files 隐藏点文件时，测试失败"):
        failed_an_assert(run_test(test_replay, records, {"list_files": hiding_dotfiles}),
                         course.both("list_files hid .gitignore and .env.example",
                                     "list_files 藏起了 .gitignore 和 .env.example"))
    with t.case("it fails when read_file strips trailing whitespace",
                "read_file 去掉行尾空白时，测试失败"):
        failed_an_assert(run_test(test_replay, records, {"read_file": stripping}),
                         course.both("read_file dropped the last newline",
                                     "read_file 去掉了最后的换行符"))


# --- 07.5 record the system prompt --------------------------------------------------------


def expected_setup(system_prompt: str, tools: list[dict]) -> dict:
    return {"system_prompt": hashlib.sha256(system_prompt.encode("utf-8")).hexdigest()[:16],
            "tools": sorted(tool["function"]["name"] for tool in tools)}


def replayed_with(records, **options) -> Agent:
    """The recorded run replayed in a new empty folder (the recording started in one)."""
    folder = Path(f"replay-{len(list(Path('.').glob('replay-*')))}").resolve()
    folder.mkdir()
    before = os.getcwd()
    os.chdir(folder)
    try:
        return tracing.replay(records, **options)
    finally:
        os.chdir(before)


@course.exercise("07.5", "agent_start records the system prompt and the tools",
                         "agent_start 记下系统提示词和工具")
def _(t, setup_of, SetupAgent, setup_differences):
    tracer = tracing.Tracer("traces")
    bot = SetupAgent(ScriptedClient([tool_call("list_files", path="."), reply("ok")]),
                     "scripted-demo", on_event=tracer)
    bot.chat("look")
    records = tracing.load_trace(tracer.paths[0])
    with t.case("setup_of gives a SHA-256 of the system prompt and the sorted tool names",
                "setup_of 给出系统提示词的 SHA-256 和排好序的工具名"):
        want = expected_setup(agent.SYSTEM_PROMPT, agent.TOOLS)
        assert setup_of(bot) == want, course.both(
            f"setup_of(bot) is {setup_of(bot)!r}, want {want!r}",
            f"setup_of(bot) 是 {setup_of(bot)!r}，应为 {want!r}")
        other = Agent(ScriptedClient([]), "m", system_prompt="Be brief.", tools=agent.TOOLS[:1])
        assert setup_of(other) == expected_setup("Be brief.", agent.TOOLS[:1]), course.both(
            f"for another prompt and tools it gave {setup_of(other)!r}",
            f"换成另一个提示词和另一组工具，得到的是 {setup_of(other)!r}")
    with t.case("agent_start in the trace carries it as setup",
                "Trace 里的 agent_start 把这些作为 setup 带上"):
        start = records[0]
        assert start["type"] == "agent_start", course.both(
            f"the first record is {start['type']}", f"第一条记录是 {start['type']}")
        assert start.get("setup") == setup_of(bot), course.both(
            f"agent_start is {json.dumps(start)}", f"agent_start 是 {json.dumps(start)}")
    with t.case("every other event still reaches the handler", "其他事件仍然全部送到处理函数"):
        plain = []
        Agent(ScriptedClient([tool_call("list_files", path="."), reply("ok")]), "scripted-demo",
              on_event=lambda event: plain.append(event["type"])).chat("look")
        seen = [r["type"] for r in records]
        assert seen == plain, course.both(
            f"the handler got {seen}, where a plain Agent sends {plain}",
            f"处理函数收到的是 {seen}，而普通的 Agent 发出的是 {plain}")
    with t.case("a replay with the same prompt and tools finds no difference",
                "提示词和工具都相同的回放，找不到差异"):
        found = setup_differences(records, replayed_with(records))
        assert found == [], course.both(f"it found {found}", f"找到的是 {found}")
    with t.case("a changed system prompt is reported", "系统提示词改了，会报告出来"):
        found = setup_differences(records, replayed_with(
            records, system_prompt=agent.SYSTEM_PROMPT + "\nAnswer in French."))
        assert len(found) == 1 and "prompt" in found[0].lower(), course.both(
            f"it found {found}", f"找到的是 {found}")
    with t.case("a tool removed or added is named", "删掉或加上的工具会报出名字"):
        fewer = setup_differences(records, replayed_with(records, tools=agent.TOOLS[:2]))
        assert any("edit_file" in line for line in fewer), course.both(
            f"edit_file removed: it found {fewer}", f"删掉了 edit_file：找到的是 {fewer}")
        extra = [*agent.TOOLS, agent.schema(agent.occurrences, "Count.", text="t", part="p")]
        more = setup_differences(records, replayed_with(records, tools=extra))
        assert any("occurrences" in line for line in more), course.both(
            f"occurrences added: found {more}", f"加上了 occurrences：找到的是 {more}")
        assert not any("prompt" in line.lower() for line in fewer + more), course.both(
            "the system prompt did not change, but a difference says it did",
            "系统提示词没有变，却有一条差异说它变了")
    with t.case("a trace that has no setup says so, instead of finding nothing",
                "没有 setup 的 Trace 会说明这一点，而不是说什么也没找到"):
        old = [{k: v for k, v in r.items() if k != "setup"} for r in records]
        found = setup_differences(old, replayed_with(records))
        assert found and all(isinstance(line, str) for line in found), course.both(
            f"it found {found!r}: an old trace (agent.trace_to's, say) cannot tell whether "
            "anything changed",
            f"找到的是 {found!r}：旧的 Trace（比如 agent.trace_to 写的）说不出有没有东西变了")

"""Lesson 16: delegation (a child agent with its own context) and a plan the model keeps, tested
on the notebook's own export cells (`import subagents_and_plans`).

The child: a fresh history, its own prompt, read-only tools by default, its own turn budget,
only its answer and a cost line back. Inside the course's machinery: nested in the parent's
trace (07), recorded in a session of its own linked from the parent's (09), run at once with
its siblings under lesson 10's bound with results in call order, stopped by the parent's
abort(), a failure or a loop an observation, depth limited. The plan: the whole list each
time, one item in progress, kept by the host, a reminder sent (never kept) after a few quiet
model calls, the plan surviving compaction (12). Every history is checked as a strict server
would."""

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import course
import parallel_and_steering as ps
import pytest
import sandbox
import sessions
import subagents_and_plans as sp
import tracing
from context_budget import CompactingAgent
from props import delegation_lab as lab
from props.clock import FakeClock
from props.shop import BUG, BUGGY, FIX, MODULES, bug_fixed, bug_line, make_shop
from test_loop import assert_history_valid

from agent import ScriptedClient, pairing_problem, reply, step, tool_call

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "lessons" / "16-subagents-and-plans.md"
LESSON_ZH = ROOT / "lessons" / "zh" / "16-subagents-and-plans.md"


@pytest.fixture
def shop(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    return Path(os.path.realpath(make_shop(folder)))


def quiet(cls, script, folder, risks=("read", "write"), **options):
    tools, registry = sandbox.sandbox_tools(folder, risks)
    return cls(ScriptedClient(script), "scripted", tools=tools, registry=registry,
               on_event=options.pop("on_event", None), **options)


def tool_results(bot) -> list[str]:
    return [m["content"] for m in bot.messages if m["role"] == "tool"]


def error_of(content: str) -> str:
    return json.loads(content)["error"]


# --- the delegate tool ------------------------------------------------------------------------


def test_a_child_starts_with_only_its_own_prompt_and_the_task(shop):
    parent = quiet(sp.DelegatingAgent, lab.messenger(), shop)
    parent.messages.append({"role": "user", "content": "an earlier private remark"})
    parent.messages.append({"role": "assistant", "content": "noted"})
    tool = sp.add_delegate(parent, shop, client=lab.explorers())
    parent.chat(lab.TASK)
    child = tool.children[0]["agent"]
    first = child.client.requests[0]["messages"]
    assert first == [{"role": "system", "content": sp.CHILD_PROMPT},
                     {"role": "user", "content": lab.SEARCH_TASK}]
    assert "private remark" not in json.dumps(child.client.requests)
    assert_history_valid(parent.messages)
    assert_history_valid(child.messages)


def test_only_the_answer_and_a_cost_line_come_back_and_the_childs_history_stays_with_the_host(
        shop):
    parent = quiet(sp.DelegatingAgent, lab.messenger(), shop)
    tool = sp.add_delegate(parent, shop, client=lab.explorers())
    parent.chat(lab.TASK)
    record = tool.children[0]
    child = record["agent"]
    [result] = tool_results(parent)
    answer, note = result.rsplit("\n", 1)
    assert answer == child.messages[-1]["content"] == record["answer"]
    assert note == (f"[subagent call_1: done, {record['requests']} model calls, "
                    f"{record['prompt_tokens']:,} prompt + {record['completion_tokens']:,} "
                    f"completion tokens; its {len(child.messages)} messages stay with the host]")
    # the child's usage is exactly what its server reported
    assert record["requests"] == len(child.client.requests) == 11
    assert record["prompt_tokens"] == sum(len(json.dumps(r, ensure_ascii=False)) // 4
                                          for r in child.client.requests)
    # nothing the child read entered the parent's history, or any request the parent sent
    for name, text in MODULES.items():
        body = text.split("\n")[0][3:-3]
        assert not any(body in json.dumps(r) for r in parent.client.requests), name
    assert len(parent.messages) == 5


def test_a_child_is_read_only_by_default_and_jailed(shop, tmp_path):
    (tmp_path / "secret.txt").write_text("TOP-SECRET\n")
    parent = quiet(sp.DelegatingAgent, [], shop)
    tool = sp.add_delegate(parent, shop, client=lambda task: ScriptedClient([
        [tool_call("edit_file", path="shop/cart.py", old_str="", new_str="x"),
         tool_call("read_file", path="../secret.txt")],
        lambda messages: reply(" | ".join(m["content"] for m in messages[-2:]))]))
    said = tool("Try to write, and to read outside.")
    child = tool.children[0]["agent"]
    assert sorted(child.registry) == ["list_files", "read_file"]
    assert sorted(t["function"]["name"] for t in child.client.requests[0]["tools"]) == \
        ["list_files", "read_file"]
    assert "unknown tool" in said and "escapes the workspace" in said
    assert "TOP-SECRET" not in said
    assert (shop / "shop" / "cart.py").read_text() == MODULES["cart.py"]


def test_the_risks_given_decide_the_childs_tools_and_a_writing_child_is_not_run_in_parallel(shop):
    parent = quiet(sp.DelegatingAgent, [], shop)
    reader = sp.add_delegate(parent, shop)
    assert "delegate" in parent.parallel
    writer_parent = quiet(sp.DelegatingAgent, [], shop)
    sp.add_delegate(writer_parent, shop, risks=("read", "write"),
                    client=lambda task: ScriptedClient(lab.eager_fixer()))
    assert "delegate" not in writer_parent.parallel
    writer_parent.registry["delegate"](lab.SEARCH_TASK)
    child = writer_parent.registry["delegate"].children[0]["agent"]
    assert sorted(child.registry) == ["edit_file", "list_files", "read_file"]
    assert reader.risks == ("read",)


def test_each_call_is_a_new_child_with_its_own_turn_budget(shop):
    parent = quiet(sp.DelegatingAgent, [], shop)
    tool = sp.add_delegate(parent, shop, max_turns=4,
                           client=lambda task: ScriptedClient(lab.looping()))
    for _ in range(2):
        with pytest.raises(sp.DelegationFailed, match="budget of 4 model calls"):
            tool(lab.SEARCH_TASK)
    first, second = (record["agent"] for record in tool.children)
    assert first is not second
    assert len(first.client.requests) == len(second.client.requests) == 4
    assert second.client.requests[0]["messages"][1:] == [
        {"role": "user", "content": lab.SEARCH_TASK}]


def test_the_pitfall_a_child_with_write_access_changes_files_the_parent_never_hears_of(shop):
    parent = quiet(sp.DelegatingAgent, lab.messenger(), shop)
    sp.add_delegate(parent, shop, risks=("read", "write"),
                    client=lambda task: ScriptedClient(lab.eager_fixer()))
    before = sandbox.snapshot(shop)
    answer = parent.chat(lab.TASK)
    after = sandbox.snapshot(shop)
    changed = sorted(name for name in after if after[name] != before[name])
    assert changed == ["shop/checkout.py", "shop/pricing.py"]
    assert "checkout" not in answer and "checkout" not in json.dumps(parent.messages)


def test_the_pitfall_a_childs_claim_taken_as_fact_is_false_and_can_be_checked(shop):
    parent = quiet(sp.DelegatingAgent, lab.messenger(), shop)
    sp.add_delegate(parent, shop, client=lambda task: ScriptedClient(lab.guesser()))
    answer = parent.chat(lab.TASK)
    path, line, text = lab.CLAIM.search(answer).groups()
    actual = (shop / path).read_text().split("\n")[int(line) - 1]
    assert path == "shop/checkout.py" and actual.strip() != text.strip()
    assert course._load_file(ROOT / "solutions" / "16-subagents-and-plans.py",
                             "solution_16").check_claims(answer, shop)


# --- both mechanisms on one task, measured -----------------------------------------------------


def measured(shop) -> dict:
    """The notebook's section 4: the task alone and delegated, with every request's usage."""
    found = {}
    for name, script in (("alone", lab.lone_worker()), ("delegating", lab.lead())):
        make_shop(shop)
        events = []
        bot = quiet(sp.LeadAgent, script, shop, system_prompt=sp.LEAD_PROMPT,
                    on_event=events.append)
        if name == "delegating":
            sp.add_delegate(bot, shop, client=lab.explorers())
        bot.chat(lab.TASK)
        assert bug_fixed(shop) and bot.stop_reason == "done"
        assert all(item["status"] == "done" for item in bot.plan.items), bot.plan.render()
        assert_history_valid(bot.messages)
        found[name] = (bot, sp.requests_by_agent(events))
    return found


def test_the_scripted_lead_uses_both_on_one_task_and_checks_the_claim_before_editing(shop):
    bot, calls = measured(shop)["delegating"]
    names = [c["function"]["name"] for m in bot.messages for c in m.get("tool_calls", [])]
    assert names == ["todo", "delegate", "read_file", "todo", "edit_file", "todo", "read_file",
                     "todo"]
    assert (shop / BUGGY).read_text().count(FIX) == 1 and BUG not in (shop / BUGGY).read_text()
    assert set(calls) == {"parent", "call_2"}


def test_delegating_the_parents_context_is_smaller_and_the_child_is_counted(shop):
    runs = measured(shop)
    alone, delegating = runs["alone"][1]["parent"], runs["delegating"][1]["parent"]
    child = runs["delegating"][1]["call_2"]

    def tokens(calls):
        return sum(c["prompt_tokens"] for c in calls)

    assert len(alone) == 17 and len(delegating) == 9 and len(child) == 11
    largest = [max(c["prompt_tokens"] for c in calls) for calls in (alone, delegating)]
    assert largest[1] < largest[0] / 1.5
    assert tokens(delegating) < tokens(alone) / 3
    assert tokens(delegating) + tokens(child) < tokens(alone)
    # the first request of the delegating parent costs more: one more tool, more prompt
    assert delegating[0]["prompt_tokens"] > alone[0]["prompt_tokens"]


def lesson_figures(text: str) -> dict[str, str]:
    """The figures the lesson's measurement table states, by row."""
    rows = {}
    for line in text.split("\n"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 4 and re.search(r"\d", "".join(cells[1:])):
            rows[cells[0]] = cells[1:]
    return rows


@pytest.mark.parametrize("path", [LESSON, LESSON_ZH], ids=["en", "zh"])
def test_the_lessons_token_table_is_what_the_code_computes(shop, path):
    runs = measured(shop)
    columns = [runs["alone"][1]["parent"], runs["delegating"][1]["parent"],
               runs["delegating"][1]["call_2"]]
    stated = lesson_figures(path.read_text(encoding="utf-8"))
    first_column = list(stated)
    requests, largest, total = first_column[-3:]
    assert stated[requests] == [str(len(c)) for c in columns]
    assert stated[largest] == [f"{max(x['prompt_tokens'] for x in c):,}" for c in columns]
    assert stated[total] == [f"{sum(x['prompt_tokens'] for x in c):,}" for c in columns]
    text = path.read_text(encoding="utf-8")
    parent, alone = sum(x["prompt_tokens"] for x in columns[1]), sum(
        x["prompt_tokens"] for x in columns[0])
    everything = parent + sum(x["prompt_tokens"] for x in columns[2])
    assert f"{parent / alone:.0%}" in text and f"{everything / alone:.0%}" in text
    child = runs["delegating"][0].registry["delegate"].children[0]
    assert sp.cost_note(child) in " ".join(text.split()), "the cost line the lesson quotes"


# --- the child in the trace (lesson 07) ----------------------------------------------------------


def traced_run(shop, folder):
    tracer = tracing.Tracer(folder, clock=FakeClock(), secrets={})
    bot = quiet(sp.LeadAgent, lab.lead(), shop, system_prompt=sp.LEAD_PROMPT, on_event=tracer)
    sp.add_delegate(bot, shop, client=lab.explorers())
    bot.chat(lab.TASK)
    assert len(tracer.paths) == 1, "the child's run did not start a trace file of its own"
    [run] = tracing.split_runs(tracing.load_trace(tracer.paths[0]))
    return bot, run


def test_the_parents_trace_holds_the_childs_events_nested_and_both_runs_are_whole(shop, tmp_path):
    bot, run = traced_run(shop, tmp_path / "traces")
    assert tracing.trace_problems(run) == []
    child = sp.child_records(run, "call_2")
    assert tracing.trace_problems(child) == []
    assert child[0]["type"] == "agent_start" and child[-1]["stop_reason"] == "done"
    # nested inside the delegate call: after its start, before its end
    types = [(r["type"], r.get("tool_call_id") or r.get("child")) for r in run]
    start = types.index(("tool_execution_start", "call_2"))
    end = types.index(("tool_execution_end", "call_2"))
    nested = [i for i, (kind, who) in enumerate(types) if kind == "subagent"]
    assert start < min(nested) and max(nested) < end
    totals = tracing.totals(child)
    record = bot.registry["delegate"].children[0]
    assert (totals["turns"], totals["prompt_tokens"]) == (record["requests"],
                                                          record["prompt_tokens"])
    assert sp.requests_by_agent(run) == sp.requests_by_agent(
        [{**r, "type": r["type"]} for r in run])  # trace records read like events
    lines = sp.outline(run).split("\n")
    assert lines[1].startswith("call_2 delegate(") and lines[2].startswith("    call_1 list_files")
    assert "    (the subagent's run ended: done)" in lines


def test_opentelemetry_spans_of_a_child_have_the_delegate_call_as_parent(shop, tmp_path):
    _, run = traced_run(shop, tmp_path / "traces")
    spans = sp.otel_tree(run)
    by_id = {s["id"]: s for s in spans}
    runs = [s for s in spans if s["name"].startswith("invoke_agent")]
    assert len(runs) == 2 and runs[0]["parent"] is None
    delegate_span = by_id[runs[1]["parent"]]
    assert delegate_span["name"] == "execute_tool delegate"
    assert delegate_span["attributes"]["gen_ai.tool.call.id"] == "call_2"
    inside = [s for s in spans if s["parent"] == runs[1]["id"]]
    assert len(inside) == 21  # 11 model calls and 10 tool calls of the child
    assert all(by_id[s["parent"]]["start"] <= s["start"] for s in spans if s["parent"])


class FakeOtelTracer:
    """Records each span with the span its context names as parent."""

    def __init__(self):
        self.spans = []

    def start_span(self, name, context=None, kind=None, start_time=None, attributes=None):
        from opentelemetry import trace
        parent = trace.get_current_span(context) if context is not None else None
        span = fake_span(name, getattr(parent, "name", None))
        self.spans.append(span)
        return span


def fake_span(name, parent):
    """A span that records its name and its parent's name (an OpenTelemetry Span, so that a
    context can carry it)."""
    from opentelemetry.trace import INVALID_SPAN_CONTEXT, NonRecordingSpan

    class FakeSpan(NonRecordingSpan):
        def __init__(self):
            super().__init__(INVALID_SPAN_CONTEXT)
            self.name, self.parent, self.ended = name, parent, False

        def end(self, end_time=None):
            self.ended = True

    return FakeSpan()


def test_the_opentelemetry_export_starts_each_childs_spans_inside_the_delegate_call(shop, tmp_path):
    pytest.importorskip("opentelemetry.trace")
    _, run = traced_run(shop, tmp_path / "traces")
    fake = FakeOtelTracer()
    sp.to_opentelemetry_tree(run, fake)
    parents = [(s.name, s.parent) for s in fake.spans if s.name.startswith("invoke_agent")]
    assert parents == [("invoke_agent agent-from-zero", None),
                       ("invoke_agent agent-from-zero", "execute_tool delegate")]
    assert all(s.ended for s in fake.spans)


# --- the child's own session (lesson 09) ----------------------------------------------------------


def test_each_child_is_recorded_in_a_session_of_its_own_linked_from_the_parents(shop, tmp_path):
    bot = quiet(sp.LeadAgent, lab.lead(), shop, system_prompt=sp.LEAD_PROMPT)
    path = tmp_path / "task.jsonl"
    with sessions.new_session(path) as session:
        sp.add_delegate(bot, shop, client=lab.explorers(), session=session)
        sessions.record(session, bot)
        bot.chat(lab.TASK)
    loaded = sessions.load_session(path)
    assert loaded.problems == []
    assert loaded.messages() == bot.messages  # nothing of the child's in the parent's session
    branch = loaded.path_to()
    kinds = [(e["type"], e.get("tool_call_id") or e.get("child")) for e in branch]
    note = kinds.index(("note", "call_2"))
    assert kinds[note - 1] == ("tool_start", "call_2")
    assert branch[note + 1]["message"]["tool_call_id"] == "call_2"
    children = sp.child_sessions(loaded)
    assert children == {"call_2": tmp_path / "task.call_2.jsonl"}
    child = sessions.load_session(children["call_2"])
    record = bot.registry["delegate"].children[0]
    assert child.messages() == record["agent"].messages and record["session"] == children["call_2"]
    assert branch[-1]["usage"]["prompt_tokens"] == sum(
        c["prompt_tokens"] for c in sp.requests_by_agent(
            [{"type": "message_end", "message": e["message"], "usage": e.get("usage")}
             for e in branch if e["type"] == "message"])["parent"])
    assert "subagent call_2: its run is in task.call_2.jsonl" in sessions.tree(loaded, width=100)


def test_a_resumed_parent_session_shows_its_children_and_goes_on(shop, tmp_path):
    path = tmp_path / "task.jsonl"
    bot = quiet(sp.LeadAgent, lab.lead(), shop, system_prompt=sp.LEAD_PROMPT)
    with sessions.new_session(path) as session:
        sp.add_delegate(bot, shop, client=lab.explorers(), session=session)
        sessions.record(session, bot)
        bot.chat(lab.TASK)
    again = quiet(sp.LeadAgent, [reply("still fixed")], shop, system_prompt=sp.LEAD_PROMPT)
    with sessions.open_session(path) as session:
        sp.add_delegate(again, shop, client=lab.explorers(), session=session)
        sessions.resume(session, again)
        assert list(sp.child_sessions(session)) == ["call_2"]
        assert again.chat("Is it fixed?") == "still fixed"
    assert_history_valid(again.messages)


def test_grandchildren_are_recorded_beside_their_parent_child(shop, tmp_path):
    top = quiet(sp.DelegatingAgent, [tool_call("delegate", task="look"), reply("ok")], shop)
    path = tmp_path / "task.jsonl"
    child_script = [tool_call("delegate", task=lab.SEARCH_TASK),
                    lambda messages: reply(messages[-1]["content"])]
    clients = iter([ScriptedClient(child_script), ScriptedClient(lab.explorer())])
    with sessions.new_session(path) as session:
        sp.add_delegate(top, shop, max_depth=2, client=lambda task: next(clients),
                        session=session)
        sessions.record(session, top)
        top.chat("go")
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == [
        "task.call_1.call_1.jsonl", "task.call_1.jsonl", "task.jsonl"]
    child = sessions.load_session(tmp_path / "task.call_1.jsonl")
    assert list(sp.child_sessions(child)) == ["call_1"]


# --- children at once, and abort (lesson 10) --------------------------------------------------


def test_delegate_calls_of_one_batch_run_at_once_and_their_results_keep_call_order(shop):
    files = [f"shop/{n}" for n in sorted(MODULES)]
    halves = [files[:6], files[6:]]
    parent = quiet(sp.DelegatingAgent, lab.splitting_lead(halves), shop, risks=("read",))
    meeting = lab.met_together(lab.explorers(), 2)
    tool = sp.add_delegate(parent, shop, client=meeting)
    answer = parent.chat(lab.TASK)
    assert not meeting.barrier.broken
    assert [m["tool_call_id"] for m in parent.messages if m["role"] == "tool"] == \
        ["call_1", "call_2"]
    first, second = tool_results(parent)
    assert "Not in the files I read" in first and f"{BUGGY}:{bug_line()}:" in second
    assert "subagent 1: not there; subagent 2: shop/pricing.py line" in answer
    assert sorted(c["name"] for c in tool.children) == ["call_1", "call_2"]
    assert_history_valid(parent.messages)


def test_no_more_children_run_at_once_than_lesson_10s_bound(shop):
    lock, running, most = threading.Lock(), [0], [0]

    def counting(task):
        client = ScriptedClient([step(content="x")])
        create = client.chat.completions.create

        def counted(**request):
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            try:
                threading.Event().wait(0.05)
                return create(**request)
            finally:
                with lock:
                    running[0] -= 1
        client.chat.completions.create = counted
        return client

    parent = quiet(sp.DelegatingAgent, [[tool_call("delegate", task=f"t{n}") for n in range(5)],
                                        reply("done")], shop, max_parallel=2)
    sp.add_delegate(parent, shop, client=counting)
    parent.chat("five at once")
    assert most[0] == 2
    assert [m["tool_call_id"] for m in parent.messages if m["role"] == "tool"] == \
        [f"call_{n}" for n in range(1, 6)]


def test_abort_on_the_parent_stops_its_child_at_the_childs_next_safe_point(shop):
    box = {}
    parent = box["agent"] = quiet(sp.DelegatingAgent, lab.messenger(), shop, risks=("read",))
    tool = sp.add_delegate(parent, shop, client=lambda task: ScriptedClient(lab.stops_parent(box)))
    assert parent.chat(lab.TASK) == ps.ABORTED
    child = tool.children[0]["agent"]
    assert parent.stop_reason == child.stop_reason == "aborted"
    assert len(child.client.requests) == 4  # it was stopped after the call it was making
    assert "the subagent stopped: aborted" in error_of(parent.messages[-1]["content"])
    assert_history_valid(parent.messages)
    assert_history_valid(child.messages)


def test_an_abort_set_before_the_child_starts_stops_it_before_its_first_request(shop):
    parent = quiet(sp.DelegatingAgent, [], shop)
    parent.abort_signal.set()  # as if abort() had come just before the child began
    tool = sp.add_delegate(parent, shop, client=lab.explorers())
    with pytest.raises(sp.DelegationFailed, match="stopped: aborted"):
        tool(lab.SEARCH_TASK)
    assert tool.children[0]["agent"].client.requests == []


def test_the_parents_abort_kills_a_childs_running_shell_command_at_once(shop):
    started = threading.Event()
    parent = quiet(sp.DelegatingAgent, [], shop)
    tool = sp.add_delegate(parent, shop, risks=("read", "execute"), client=lambda task:
                           ScriptedClient([tool_call("run_command", command="sleep 30"),
                                           reply("slept")]))

    def on_event(event):
        inner = event.get("event", {})
        if inner.get("type") == "tool_execution_start":
            started.set()
    parent.on_event = on_event
    parent.running = True  # abort() acts only while the parent runs
    stopper = threading.Thread(target=lambda: started.wait(10) and parent.abort())
    stopper.start()
    try:
        with pytest.raises(sp.DelegationFailed, match="aborted"):
            tool("sleep")
    finally:
        stopper.join(10)
    child = tool.children[0]["agent"]
    result = json.loads(child.messages[3]["content"])
    assert result.get("aborted") == "killed by abort(), with its process group"


def test_the_modules_add_delegate_gives_the_whole_tool_and_the_plain_delegate_links_nothing(shop):
    parent = quiet(sp.DelegatingAgent, [], shop)
    assert type(sp.add_delegate(parent, shop)) is sp.FullDelegate
    assert sp.FullDelegate.__mro__[1:5] == (sp.LinkedDelegate, sp.RecordingDelegate,
                                            sp.NestingDelegate, sp.Delegate)
    parent = quiet(sp.DelegatingAgent, [], shop)
    parent.abort_signal.set()  # the main path's Delegate: the child's signal is its own
    tool = sp.add_delegate(parent, shop, sp.Delegate, client=lab.explorers())
    assert f"{BUGGY}:{bug_line()}:" in tool(lab.SEARCH_TASK)
    assert type(tool.children[0]["agent"].abort_signal) is ps.AbortSignal
    assert "delegate" not in tool.children[0]["agent"].registry  # and no grandchildren


# --- failures, loops and depth are observations -----------------------------------------------


def test_a_child_whose_model_fails_is_an_error_result_for_the_parent(shop):
    parent = quiet(sp.DelegatingAgent, lab.messenger(), shop)
    sp.add_delegate(parent, shop, client=lambda task: lab.BrokenClient())
    parent.chat(lab.TASK)
    assert parent.stop_reason == "done"
    error = error_of(tool_results(parent)[0])
    assert error.startswith("delegate: the subagent failed: Connection error.")
    assert "error, 0 model calls" in error


def test_a_scripted_child_that_runs_out_of_steps_is_an_error_result_too(shop):
    parent = quiet(sp.DelegatingAgent, lab.messenger(), shop)
    sp.add_delegate(parent, shop, client=lambda task: ScriptedClient([tool_call("list_files")]))
    parent.chat(lab.TASK)
    error = error_of(tool_results(parent)[0])
    assert "the subagent failed: the scripted model has 1 steps" in error


def test_ctrl_c_in_a_child_is_not_swallowed_and_the_parents_history_stays_valid(shop):
    def interrupt(messages):
        raise KeyboardInterrupt

    parent = quiet(sp.DelegatingAgent, lab.messenger(), shop)
    sp.add_delegate(parent, shop, client=lambda task: ScriptedClient([interrupt]))
    with pytest.raises(KeyboardInterrupt):
        parent.chat(lab.TASK)
    assert parent.stop_reason == "interrupted"
    assert pairing_problem(parent.messages) is None


def test_depth_is_limited_the_tool_is_not_offered_and_refuses_beyond_the_limit(shop):
    parent = quiet(sp.DelegatingAgent, [], shop)
    tool = sp.add_delegate(parent, shop, client=lambda task: ScriptedClient([
        tool_call("delegate", task="deeper"), lambda messages: reply(messages[-1]["content"])]))
    said = tool("try to go deeper")
    child = tool.children[0]["agent"]
    assert "delegate" not in child.registry
    assert "unknown tool" in said
    deep = sp.NestingDelegate(parent, shop, depth=1, max_depth=1)
    with pytest.raises(sp.DelegationFailed, match="depth limit is 1"):
        deep("anything")
    assert deep.children == []
    with pytest.raises(ValueError, match="the task is empty"):
        tool("  ")


def test_with_max_depth_two_a_child_delegates_once_more_and_its_grandchild_cannot(shop):
    parent = quiet(sp.DelegatingAgent, [], shop)
    tool = sp.add_delegate(parent, shop, max_depth=2, client=lab.explorers())
    tool(lab.SEARCH_TASK)
    child = tool.children[0]["agent"]
    grand_tool = child.registry["delegate"]
    assert (grand_tool.depth, grand_tool.max_depth) == (1, 2)
    grand_tool(lab.SEARCH_TASK)
    assert "delegate" not in grand_tool.children[0]["agent"].registry


def test_a_parent_that_is_not_delegating_names_children_by_number_and_still_nests_events(shop):
    events = []
    parent = quiet(ps.ParallelAgent, [tool_call("delegate", task=lab.SEARCH_TASK), reply("ok")],
                   shop, on_event=events.append)
    tool = sp.add_delegate(parent, shop, client=lab.explorers())
    parent.chat(lab.TASK)
    assert tool.children[0]["name"] == "child-1"
    assert set(sp.requests_by_agent(events)) == {"parent", "child-1"}


# --- the plan ------------------------------------------------------------------------------------


def todos(*pairs):
    return [{"content": c, "status": s} for c, s in pairs]


def test_the_whole_list_replaces_the_plan_and_the_tool_returns_it_as_kept():
    changes = []
    plan = sp.Plan(on_change=lambda p: changes.append(p.render()))
    first = plan.todo(todos(("a", "in_progress"), ("b", "pending")))
    assert first == "[>] a\n[ ] b\n(0 of 2 done)"
    second = plan.todo(todos(("a", "done"), ("c", "in_progress")))
    assert plan.items == todos(("a", "done"), ("c", "in_progress"))
    assert changes == [first, second]
    assert sp.Plan().render() == "(no plan yet)"


@pytest.mark.parametrize("wrong, words", [
    ("a, b", "must be a list"),
    (todos(("a", "in_progress"), ("b", "in_progress")), "2 items are in_progress (a; b)"),
    (todos(("a", "completed")), "the status 'completed' is not one of pending, in_progress, done"),
    (todos((" ", "pending")), "item 1 has no content"),
    ([{"content": "a", "status": "done", "id": 1}], "content and status only"),
    (["a"], "must be an object"),
    (todos(*[(f"s{n}", "pending") for n in range(21)]), "at most 20 items"),
])
def test_a_wrong_list_is_refused_in_words_for_the_model_and_the_plan_stays(wrong, words):
    plan = sp.Plan()
    plan.todo(todos(("keep", "in_progress")))
    plan.quiet_calls = 2  # model calls since that change: a refused list is no update
    with pytest.raises(ValueError) as refused:
        plan.todo(wrong)
    assert words in str(refused.value)
    assert plan.items == todos(("keep", "in_progress")) and plan.quiet_calls == 2


def test_a_refused_list_reaches_the_model_as_an_error_it_can_correct(shop):
    bot = quiet(sp.Planning, [tool_call("todo", todos=todos(("a", "in_progress"),
                                                           ("b", "in_progress"))),
                              tool_call("todo", todos=todos(("a", "in_progress"),
                                                           ("b", "pending"))),
                              reply("planned")], shop)
    assert bot.chat("plan") == "planned"
    results = tool_results(bot)
    assert "keep one in progress at a time" in error_of(results[0])
    assert results[1] == bot.plan.render()


def test_the_todo_tool_is_added_once_and_its_schema_allows_only_the_three_statuses(shop):
    bot = quiet(sp.Planning, [], shop)
    assert [t["function"]["name"] for t in bot.tools].count("todo") == 1
    status = sp.TODO_TOOL["function"]["parameters"]["properties"]["todos"]["items"][
        "properties"]["status"]
    assert status["enum"] == ["pending", "in_progress", "done"]
    shared = sp.Plan()
    again = quiet(sp.Planning, [], shop, plan=shared)
    assert again.registry["todo"] == shared.todo and "todo" not in ps.parallel_tools()


def test_the_reminder_comes_after_remind_after_quiet_calls_is_sent_and_never_kept(shop):
    events = []
    bot = quiet(sp.Planning, lab.forgetful_planner(), shop, on_event=events.append)
    bot.chat(lab.FOUR_FILES_TASK)
    sent = [r["messages"][-1]["content"] for r in bot.client.requests]
    reminded = [n for n, text in enumerate(sent, 1) if "<reminder>" in text]
    assert reminded == [sp.REMIND_AFTER + 2] == [5]
    assert sent[4].startswith("<reminder>3 model calls since you last updated your plan.")
    assert sent[4].endswith("<plan kept by the host>\n[>] Read shop/cart.py\n[ ] Read "
                            "shop/coupons.py\n[ ] Read shop/pricing.py\n[ ] Read "
                            "shop/checkout.py\n[ ] Say which of them import others\n"
                            "(0 of 5 done)\n</plan>")
    assert not any("<reminder>" in (m["content"] or "") for m in bot.messages)
    assert [e["quiet_calls"] for e in events if e["type"] == "plan_reminder"] == [3]
    request = bot.client.requests[4]["messages"]
    assert request[:-1] == bot.messages[:len(request) - 1]  # the history, then the note


def test_no_reminder_without_a_plan_or_once_every_step_is_done_or_when_turned_off(shop):
    reads = [tool_call("read_file", path="shop/cart.py")] * 6 + [reply("done")]
    for plan_first, options in [(None, {}),
                                (todos(("a", "done")), {}),
                                (todos(("a", "in_progress")), {"remind_after": 0})]:
        script = ([tool_call("todo", todos=plan_first)] if plan_first else []) + reads
        bot = quiet(sp.Planning, script, shop, **options)
        bot.chat("read")
        assert not any("<reminder>" in json.dumps(r) for r in bot.client.requests), options


def test_a_reminder_comes_again_after_as_many_quiet_calls_and_an_update_resets_the_count(shop):
    script = [tool_call("todo", todos=todos(("a", "in_progress")))] + \
        [tool_call("read_file", path="shop/cart.py")] * 8 + \
        [tool_call("todo", todos=todos(("a", "in_progress")))] + \
        [tool_call("read_file", path="shop/cart.py")] * 2 + [reply("done")]
    bot = quiet(sp.Planning, script, shop, remind_after=3)
    bot.chat("read")
    reminded = [n for n, r in enumerate(bot.client.requests, 1)
                if "<reminder>" in r["messages"][-1]["content"]]
    assert reminded == [5, 8]  # 3 quiet calls, a reminder; 3 more (it counts), another


def test_the_note_joins_a_last_user_message_instead_of_making_two_in_a_row():
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    noted = sp.with_note(history, "NOTE")
    assert noted == [history[0], {"role": "user", "content": "task\n\nNOTE"}]
    assert history[1] == {"role": "user", "content": "task"}  # the history is not changed
    after_tool = history + [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "x", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "r"}]
    assert sp.with_note(after_tool, "NOTE")[-1] == {"role": "user", "content": "NOTE"}
    assert pairing_problem(sp.with_note(after_tool, "NOTE")) is None


class CompactingPlanner(sp.Planning, CompactingAgent):
    pass


def test_the_plan_survives_compaction_because_the_host_keeps_it_and_sends_it_again(shop):
    bot = quiet(CompactingPlanner, lab.reader_with_plan(sorted(MODULES)), shop, risks=("read",),
                remind_after=0, budget=2_500, keep_recent=1_000, summarizer=lab.summariser())
    bot.chat("Read every module of shop/ and keep a plan.")
    assert bot.compaction is not None
    requests = bot.client.requests
    has_result = [any(m["content"] == bot.plan.render() for m in r["messages"]) for r in requests]
    has_note = ["<plan kept by the host>" in r["messages"][-1]["content"] for r in requests]
    assert has_result[:2] == [False, True], "the todo result is sent while it is in the history"
    assert False in has_result[2:], "no compaction took the todo result away"
    assert has_note == [n > 0 and not shown for n, shown in enumerate(has_result)]
    assert bot.plan.items == todos(("Read every module", "in_progress"),
                                   ("Say what each one does", "pending"))
    assert "plan" not in bot.compaction.summary.lower()
    for request in requests:
        assert pairing_problem(request["messages"]) is None
    assert_history_valid(bot.messages)


def test_planning_stacks_before_lesson_10s_agent_and_steering_still_works(shop):
    class SteeredPlanner(sp.Planning, ps.SteerableAgent):
        pass

    def steer_then_read(messages):  # the 4th request; the 5th reminds, after the steering
        bot.steer("also this")
        return tool_call("read_file", path="shop/cart.py")

    read = tool_call("read_file", path="shop/cart.py")
    bot = quiet(SteeredPlanner, [tool_call("todo", todos=todos(("a", "in_progress"))), read,
                                 read, steer_then_read, read, reply("done")], shop)
    bot.chat("go")
    noted = [r["messages"][-1] for r in bot.client.requests if "<reminder>" in json.dumps(r)]
    assert [m["content"].split("\n\n")[0] for m in noted] == ["also this"]  # one user message
    assert {"role": "user", "content": "also this"} in bot.messages  # kept without the note


# --- take it with you ---------------------------------------------------------------------------


@pytest.mark.slow
def test_the_exported_module_runs_beside_agent_py_and_the_modules_it_imports(tmp_path):
    for lesson, name in [("16-subagents-and-plans", "subagents_and_plans"),
                         ("10-parallel-and-steering", "parallel_and_steering"),
                         ("05-sandbox", "sandbox"), ("09-sessions", "sessions"),
                         ("07-tracing", "tracing")]:
        assert course.main(["export", lesson, "-o", str(tmp_path / f"{name}.py")]) == 0
    (tmp_path / "agent.py").write_text((ROOT / "agent.py").read_text())
    exported = (tmp_path / "subagents_and_plans.py").read_text()
    assert "course" not in re.findall(r"^(?:import|from) (\w+)", exported, re.M)
    assert "props" not in exported
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "notes.txt").write_text("the answer is 42\n")
    program = (
        "import sandbox, sessions, subagents_and_plans as sp\n"
        "from agent import ScriptedClient, reply, tool_call\n"
        "tools, registry = sandbox.sandbox_tools('ws', ('read', 'write'))\n"
        "parent = [tool_call('todo', todos=[{'content': 'ask', 'status': 'in_progress'}]),\n"
        "          tool_call('delegate', task='What does notes.txt say?'), reply('42')]\n"
        "child = [tool_call('read_file', path='notes.txt'), reply('ws/notes.txt:1: 42')]\n"
        "bot = sp.LeadAgent(ScriptedClient(parent), 's', tools=tools, registry=registry,\n"
        "                   system_prompt=sp.LEAD_PROMPT, on_event=None)\n"
        "with sessions.new_session('s.jsonl') as session:\n"
        "    tool = sp.add_delegate(bot, 'ws', client=lambda task: ScriptedClient(child),\n"
        "                           session=session)\n"
        "    sessions.record(session, bot)\n"
        "    print(bot.chat('go'), tool.children[0]['requests'],\n"
        "          sorted(sp.child_sessions(session)), bot.plan.items[0]['status'])\n")
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env={"PATH": os.environ.get("PATH", "")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "42 2 ['call_2'] in_progress"


# --- the exercises' checks catch the naive answers ---------------------------------------------

SOLUTIONS = course._load_file(ROOT / "solutions" / "16-subagents-and-plans.py", "solution_16")


def failing(exercise_id: str, answer) -> list[str]:
    """What the check says fails for this answer (it must say something)."""
    report = course.check(exercise_id, answer)
    assert not report.passed, f"{exercise_id} passed a naive answer:\n{report!r}"
    return [what for ok, what, _ in report.results if not ok]


def test_16_1_catches_one_child_kept_for_every_task_full_tools_and_a_stop_taken_for_an_answer():
    import agent

    def one_child(root, new_client):
        tools, registry = sandbox.sandbox_tools(root, ("read",))
        child = []

        def delegate(task):
            if not child:
                child.append(agent.Agent(new_client(), "s", tools=tools, registry=registry,
                                         system_prompt=sp.CHILD_PROMPT, max_turns=12,
                                         on_event=None))
            answer = child[0].chat(task)
            return f"{answer}\n[{len(child[0].messages)} messages stay with the host]"
        return delegate

    def every_tool(root, new_client):
        def delegate(task):
            child = agent.Agent(new_client(), "s", system_prompt=sp.CHILD_PROMPT, max_turns=12,
                                on_event=None)
            answer = child.chat(task)
            return f"{answer}\n[{len(child.messages)} messages stay with the host]"
        return delegate

    assert "each call starts a new child with a fresh history: its prompt and the task" in \
        failing("16.1", one_child)
    failed = failing("16.1", every_tool)
    assert "the child has the read-only tools of the jail, and nothing else" in failed
    assert "a child that never answers stops after 12 model calls, and the tool raises" in failed


def test_16_2_catches_a_budget_shared_by_all_children_and_one_that_stops_nothing():
    class Shared(sp.Delegate):
        def __init__(self, *args, max_prompt_tokens, **options):
            super().__init__(*args, **options)
            self.max_prompt_tokens, self.spent = max_prompt_tokens, 0

        def forward(self, record):
            counting = super().forward(record)

            def on_event(event):
                before = record["prompt_tokens"]
                counting(event)
                self.spent += record["prompt_tokens"] - before
                if self.spent > self.max_prompt_tokens:
                    record["agent"].abort()
            return on_event

    class Counting(sp.Delegate):
        def __init__(self, *args, max_prompt_tokens, **options):
            super().__init__(*args, **options)

    assert failing("16.2", Shared) == ["each child has a budget of its own"]
    assert "a child over its budget is stopped at once, and the parent reads an error" in \
        failing("16.2", Counting)


def test_16_3_catches_a_check_that_the_file_exists_and_one_that_reads_outside():
    def exists(answer, root):
        return [] if lab.CLAIM.search(answer) and all(
            (Path(root) / path).exists() for path, _, _ in lab.CLAIM.findall(answer)) else ["x"]

    def unjailed(answer, root):
        problems = []
        for path, line, text in lab.CLAIM.findall(answer) or [("", "0", "")]:
            try:
                lines = (Path(root) / path).read_text().split("\n")
            except OSError as exc:
                problems.append(str(exc))
                continue
            if not 0 < int(line) <= len(lines) or lines[int(line) - 1].strip() != text.strip():
                problems.append(f"{path}:{line} is not {text!r}")
        return problems

    assert "a line that is not there, or a file that is not there, is a problem" in \
        failing("16.3", exists)
    assert failing("16.3", unjailed) == ["a claim cannot make you read outside the workspace"]

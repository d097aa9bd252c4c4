"""Lesson 10: parallel tools with ordered results, and the two loops (steering, follow-up,
abort), tested on the notebook's own export cells.

Every order here is forced: tools wait on threading.Event gates that an on_event handler (which
runs in the loop's thread) or a helper thread opens, never on sleeps. Waits have timeouts only
so that a bug fails a test instead of hanging it."""

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from itertools import permutations
from pathlib import Path

import course
import parallel_and_steering as ps
import pytest
from main_path import main_path_export_cells, main_path_only  # tests/main_path.py

import agent
from agent import ScriptedClient, reply, schema, step, tool_call

WAIT = 10  # seconds: the longest any gate waits before the test fails instead of hanging
ROOT = Path(__file__).resolve().parent.parent


SHORT = {}  # the main path's definitions, run in a namespace of their own
for _source in main_path_export_cells("10-parallel-and-steering"):
    exec(_source, SHORT)
assert SHORT["ParallelAgent"] is not ps.ParallelAgent
# The main path's short classes must do what its cells show: these tests run on both.
WHOLE_AND_SHORT = pytest.mark.parametrize(
    "kind", [ps.ParallelAgent, SHORT["ParallelAgent"]], ids=["whole", "short"])
STEERABLE_WHOLE_AND_SHORT = pytest.mark.parametrize(
    "steerable", [ps.SteerableAgent, SHORT["SteerableAgent"]], ids=["whole", "short"])


# --- probes: tools that report what ran when, and wait for the test's say-so -------------------


class Probes:
    """Two tools, `look` (declared parallel-safe) and `change` (not), that record which calls are
    running and wait until their gate opens. Call k of a fresh ScriptedClient has the id
    call_k, so each call is given key="call_k" and its gate is found by that key."""

    def __init__(self, open_all=False, fail=()):
        self.gates: dict[str, threading.Event] = {}
        self.entered: dict[str, threading.Event] = {}  # set when a call's tool begins
        self.lock = threading.Lock()
        self.active: set[str] = set()
        self.ran: list[str] = []
        self.overlaps: list[str] = []  # a `change` call that ran beside another call
        self.open_all, self.fail = open_all, set(fail)
        self.max_active = 0

    def gate(self, key) -> threading.Event:
        with self.lock:
            if key not in self.gates:
                self.gates[key] = threading.Event()
                if self.open_all:
                    self.gates[key].set()
            return self.gates[key]

    def began(self, key) -> threading.Event:
        with self.lock:
            return self.entered.setdefault(key, threading.Event())

    def _run(self, key, kind):
        with self.lock:
            self.active.add(key)
            self.ran.append(key)
            self.max_active = max(self.max_active, len(self.active))
            if kind == "change" and len(self.active) > 1:
                self.overlaps.append(f"{key} ran beside {sorted(self.active - {key})}")
        self.began(key).set()
        try:
            if not self.gate(key).wait(WAIT):
                raise TimeoutError(f"gate of {key} never opened")
            with self.lock:
                if kind == "change" and len(self.active) > 1:
                    self.overlaps.append(f"{key} ended beside {sorted(self.active - {key})}")
            if key in self.fail:
                raise ValueError(f"{key} failed on purpose")
            return {"key": key, "kind": kind}
        finally:
            with self.lock:
                self.active.discard(key)

    def tools(self):
        def look(key: str) -> dict:
            return self._run(key, "look")

        def change(key: str) -> dict:
            return self._run(key, "change")

        registry = {"look": look, "change": change}
        return [schema(f, f"{f.__name__} something", key="which call") for f in
                registry.values()], registry


def calls(*kinds) -> list[dict]:
    """One model response: the k-th call is `kinds[k-1]` ("look" or "change") with key call_k."""
    return [tool_call(kind, key=f"call_{n}") for n, kind in enumerate(kinds, 1)]


def make(cls=ps.ParallelAgent, steps=(), probes=None, on_event=None, **options):
    probes = probes or Probes(open_all=True)
    tools, registry = probes.tools()
    options.setdefault("parallel", {"look"})
    bot = cls(ScriptedClient(list(steps)), "scripted", tools=tools, registry=registry,
              on_event=on_event, **options)
    return bot, probes


def tool_results(bot) -> list[tuple[str, str]]:
    return [(m["tool_call_id"], m["content"]) for m in bot.messages if m["role"] == "tool"]


def ids_of(events, kind) -> list[str]:
    if kind == "message_end":
        return [e["message"]["tool_call_id"] for e in events
                if e["type"] == "message_end" and e["message"]["role"] == "tool"]
    return [e["tool_call_id"] for e in events if e["type"] == kind]


class Conductor:
    """An on_event handler that opens the probes' gates one at a time, in an order it chooses,
    each only when no other call can start until one finishes: so the finish order is exactly
    the chosen one, whatever the threads would do. `groups` says how the batch runs: a list of
    (parallel?, number of calls); `choose(running)` picks the next call to finish."""

    def __init__(self, probes, groups, bound, choose):
        self.probes, self.bound, self.choose = probes, bound, choose
        self.sizes = [size if parallel and size > 1 else 1 for parallel, size in groups
                      for _ in range(1 if parallel and size > 1 else size)]
        self.parallel = [parallel and size > 1 for parallel, size in groups
                         for _ in range(1 if parallel and size > 1 else size)]
        self.group = self.finished_in_group = 0
        self.running: list[str] = []
        self.released = None
        self.order: list[str] = []

    def __call__(self, event):
        if event["type"] == "tool_execution_start":
            self.running.append(event["tool_call_id"])
        elif event["type"] == "tool_execution_end":
            self.running.remove(event["tool_call_id"])
            self.released = None
            self.finished_in_group += 1
            if self.finished_in_group == self.sizes[self.group]:
                self.group, self.finished_in_group = self.group + 1, 0
        else:
            return
        if self.released is None and self.running:
            left = self.sizes[self.group] - self.finished_in_group
            if len(self.running) == (min(self.bound, left) if self.parallel[self.group] else 1):
                self.released = self.choose(list(self.running))
                self.order.append(self.released)
                self.probes.gate(self.released).set()


# --- which tools run together, and how a batch is cut ----------------------------------------


def test_parallel_tools_are_the_read_tools_of_lesson_05s_risk_table():
    assert ps.parallel_tools() == {"read_file", "list_files"}
    assert ps.parallel_tools({"grep": "read", "rm": "write"}) == {"grep"}
    assert ps.parallel_tools(risks=("read", "write")) == {"read_file", "list_files", "edit_file"}
    assert ps.ParallelAgent(ScriptedClient([]), "s").parallel == {"read_file", "list_files"}


def test_groups_keep_consecutive_parallel_calls_together_and_every_other_call_alone():
    bot, _ = make()
    batch = [dict(c, id=f"call_{n}") for n, c in enumerate(
        [{"function": {"name": name}} for name in
         ["look", "look", "change", "look", "change", "change", "look", "nobody"]], 1)]
    assert [[c["id"][5:] for c in group] for group in bot.groups(batch)] == \
        [["1", "2"], ["3"], ["4"], ["5"], ["6"], ["7"], ["8"]]


def test_groups_that_lose_or_reorder_a_call_are_refused_before_anything_runs():
    class Broken(ps.ParallelAgent):
        def groups(self, calls):
            return [calls[1:]]

    bot, probes = make(Broken, [calls("look", "look"), reply("x")])
    with pytest.raises(ValueError, match="every call of the batch once, in call order"):
        bot.chat("go")
    assert probes.ran == [] and agent.pairing_problem(bot.messages) is None
    assert bot.stop_reason == "error"


def test_max_parallel_must_be_a_whole_number_of_at_least_one():
    for bad in (0, -1, 1.5, None):
        with pytest.raises(ValueError, match="max_parallel must be"):
            ps.ParallelAgent(ScriptedClient([]), "s", max_parallel=bad)


def test_a_batch_cut_off_by_length_runs_nothing():
    bot, probes = make(steps=[step(*calls("look", "look"), finish_reason="length"),
                              reply("again")])
    bot.chat("go")
    assert probes.ran == [] and all("truncated" in text for _, text in tool_results(bot))
    assert agent.pairing_problem(bot.messages) is None


# --- ordered results, whatever the completion order --------------------------------------------


@WHOLE_AND_SHORT
@pytest.mark.parametrize("finish", list(permutations(range(1, 5))),
                         ids=lambda p: "".join(map(str, p)))
def test_results_are_appended_in_call_order_under_every_completion_order(finish, kind):
    probes = Probes()
    order = [f"call_{n}" for n in finish]
    conductor = Conductor(probes, [(True, 4)], bound=4, choose=lambda running: order[0])
    events = []

    def handler(event):
        events.append(event)
        if event["type"] == "tool_execution_end":
            order.pop(0)
        conductor(event)

    bot, _ = make(kind, steps=[calls("look", "look", "look", "look"), reply("done")],
                  probes=probes, on_event=handler)
    bot.chat("look four times")
    expected = [f"call_{n}" for n in range(1, 5)]
    assert ids_of(events, "tool_execution_start") == expected
    assert ids_of(events, "tool_execution_end") == [f"call_{n}" for n in finish]
    assert ids_of(events, "message_end") == expected
    assert tool_results(bot) == [(k, json.dumps({"key": k, "kind": "look"})) for k in expected]
    assert agent.pairing_problem(bot.messages) is None
    assert probes.max_active == 4  # all four were running at once


@WHOLE_AND_SHORT
def test_start_and_end_events_interleave_while_results_are_announced_in_call_order(kind):
    probes = Probes()
    events = []

    def handler(event):  # call_2 may finish once both started; call_1 once call_2 has ended
        events.append((event["type"], event.get("tool_call_id") or
                       event.get("message", {}).get("tool_call_id")))
        if event["type"] == "tool_execution_start" and event["tool_call_id"] == "call_2":
            probes.gate("call_2").set()
        if event["type"] == "tool_execution_end" and event["tool_call_id"] == "call_2":
            probes.gate("call_1").set()

    bot, _ = make(kind, steps=[calls("look", "look"), reply("done")], probes=probes,
                  on_event=handler)
    bot.chat("go")
    tool_events = [e for e in events if e[0].startswith("tool_") or
                   e[0] == "message_end" and e[1]]
    assert tool_events == [("tool_execution_start", "call_1"), ("tool_execution_start", "call_2"),
                           ("tool_execution_end", "call_2"), ("tool_execution_end", "call_1"),
                           ("message_end", "call_1"), ("message_end", "call_2")]


@WHOLE_AND_SHORT
def test_every_event_reaches_the_handler_from_the_loops_thread_one_at_a_time(kind):
    heard, inside = [], []
    lock = threading.Lock()

    def handler(event):
        if not lock.acquire(blocking=False):
            inside.append(event["type"])  # another handler call was still running
            return
        try:
            heard.append(threading.current_thread())
        finally:
            lock.release()

    bot, _ = make(kind, steps=[calls(*["look"] * 6), reply("done")], on_event=handler)
    bot.chat("go")
    assert len(heard) > 12 and inside == []
    assert all(thread is threading.main_thread() for thread in heard)


def test_a_raising_call_does_not_disturb_the_others():
    probes = Probes(open_all=True, fail={"call_2"})
    bot, _ = make(steps=[calls("look", "look", "look"), reply("done")], probes=probes)
    bot.chat("go")
    results = tool_results(bot)
    assert [call_id for call_id, _ in results] == ["call_1", "call_2", "call_3"]
    assert json.loads(results[1][1]) == {"error": "look: call_2 failed on purpose"}
    assert json.loads(results[0][1])["key"] == "call_1"
    assert json.loads(results[2][1])["key"] == "call_3"
    assert bot.stop_reason == "done" and sorted(probes.ran) == ["call_1", "call_2", "call_3"]


def test_a_base_exception_in_a_pool_thread_ends_the_run_and_every_call_is_answered_truly():
    class Stop(BaseException):
        pass

    probes = Probes()

    def look(key: str) -> dict:
        if key == "call_1":
            raise Stop("a tool that ends the run (lesson 04, exercise 1)")
        return probes._run(key, "look")

    bot, _ = make(steps=[calls("look", "look", "look"), reply("x")], probes=probes,
                  max_parallel=2)
    bot.registry = dict(bot.registry, look=look)
    with pytest.raises(Stop):
        bot.chat("go")
    probes.gate("call_2").set()
    results = dict(tool_results(bot))
    assert bot.stop_reason == "error" and agent.pairing_problem(bot.messages) is None
    assert json.loads(results["call_1"])["error"] == agent.INTERRUPTED
    assert json.loads(results["call_3"])["error"] == agent.NOT_RUN
    assert "call_3" not in bot.started_calls


@pytest.mark.parametrize("seed", range(20))
def test_a_serial_tool_never_runs_at_the_same_time_as_anything(seed):
    rng = random.Random(seed)
    kinds = [rng.choice(["look", "look", "change"]) for _ in range(rng.randint(3, 8))]
    probes = Probes()
    groups = []
    for kind in kinds:
        if kind == "look" and groups and groups[-1][0]:
            groups[-1][1] += 1
        else:
            groups.append([kind == "look", 1])
    conductor = Conductor(probes, [tuple(g) for g in groups], bound=3,
                          choose=lambda running: rng.choice(running))
    events = []
    bot, _ = make(steps=[calls(*kinds), reply("done")], probes=probes, max_parallel=3,
                  on_event=agent.fan_out(events.append, conductor))
    bot.chat("go")
    assert probes.overlaps == []
    position = {}  # a change starts after every earlier call ended; nothing later starts first
    for n, event in enumerate(events):
        position[(event["type"], event.get("tool_call_id"))] = n
    for k, kind in enumerate(kinds, 1):
        if kind == "change":
            start = position[("tool_execution_start", f"call_{k}")]
            end = position[("tool_execution_end", f"call_{k}")]
            assert all(position[("tool_execution_end", f"call_{j}")] < start for j in range(1, k))
            assert all(position[("tool_execution_start", f"call_{j}")] > end
                       for j in range(k + 1, len(kinds) + 1))


@WHOLE_AND_SHORT
def test_no_more_than_max_parallel_calls_run_at_once(kind):
    probes = Probes()
    conductor = Conductor(probes, [(True, 5)], bound=2, choose=lambda running: running[-1])
    bot, _ = make(kind, steps=[calls(*["look"] * 5), reply("done")], probes=probes,
                  max_parallel=2, on_event=conductor)
    bot.chat("go")
    assert probes.max_active == 2 and len(tool_results(bot)) == 5
    assert conductor.order == ["call_2", "call_3", "call_4", "call_5", "call_1"]


@pytest.mark.slow
def test_a_thousand_batches_with_random_completion_orders_keep_every_result_in_place():
    rng = random.Random(20_260_101)
    for batch in range(1000):
        kinds = [rng.choice(["look", "look", "look", "change"]) for _ in range(rng.randint(1, 6))]
        fail = {f"call_{k}" for k in range(1, len(kinds) + 1) if rng.random() < 0.1}
        bound = rng.randint(1, 4)
        groups = []
        for kind in kinds:
            if kind == "look" and groups and groups[-1][0]:
                groups[-1][1] += 1
            else:
                groups.append([kind == "look", 1])
        probes = Probes(fail=fail)
        conductor = Conductor(probes, [tuple(g) for g in groups], bound,
                              choose=lambda running: rng.choice(running))
        events = []
        bot, _ = make(steps=[calls(*kinds), reply("done")], probes=probes, max_parallel=bound,
                      on_event=agent.fan_out(events.append, conductor))
        bot.chat("go")
        expected = [f"call_{k}" for k in range(1, len(kinds) + 1)]
        where = f"batch {batch}: {kinds}, bound {bound}, failing {sorted(fail)}"
        assert [call_id for call_id, _ in tool_results(bot)] == expected, where
        for (call_id, text), kind in zip(tool_results(bot), kinds, strict=True):
            wanted = {"error": f"{kind}: {call_id} failed on purpose"} if call_id in fail \
                else {"key": call_id, "kind": kind}
            assert json.loads(text) == wanted, where
        assert ids_of(events, "tool_execution_start") == expected, where
        assert ids_of(events, "tool_execution_end") == conductor.order, where
        assert ids_of(events, "message_end") == expected, where
        assert probes.overlaps == [] and probes.max_active <= bound, where
        assert agent.pairing_problem(bot.messages) is None, where


# --- Ctrl-C and failing handlers in the middle of a parallel batch -----------------------------


@pytest.fixture
def ctrl_c():
    """A function that presses Ctrl-C: SIGINT to the main thread, as a terminal sends it."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
            signal, "pthread_kill"):
        pytest.skip("needs to run in the main thread, on POSIX")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    main = threading.main_thread().ident
    yield lambda: signal.pthread_kill(main, signal.SIGINT)
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_during_a_parallel_batch_answers_every_call_started_or_not(ctrl_c):
    probes = Probes()
    finished = {key: threading.Event() for key in ("call_1", "call_2")}

    def look(key: str) -> dict:
        try:
            if key == "call_2":
                ctrl_c()  # the user presses Ctrl-C while call_1 and call_2 are running
            return probes._run(key, "look")
        finally:
            finished.get(key, threading.Event()).set()

    bot, _ = make(steps=[calls("look", "look", "look", "look"), reply("x")], probes=probes,
                  max_parallel=2)
    bot.registry = dict(bot.registry, look=look)
    with pytest.raises(KeyboardInterrupt):
        bot.chat("go")
    for key in ("call_1", "call_2"):  # the two running reads finish in their threads
        probes.gate(key).set()
        assert finished[key].wait(WAIT)
    results = {call_id: json.loads(text)["error"] for call_id, text in tool_results(bot)}
    assert results == {"call_1": agent.INTERRUPTED, "call_2": agent.INTERRUPTED,
                       "call_3": agent.NOT_RUN, "call_4": agent.NOT_RUN}
    assert sorted(probes.ran) == ["call_1", "call_2"]  # no call answered NOT_RUN ever ran
    assert bot.started_calls == {"call_1", "call_2"}
    assert bot.stop_reason == "interrupted" and agent.pairing_problem(bot.messages) is None


def test_ctrl_c_while_a_start_is_announced_starts_nothing_after_it():
    def handler(event):  # Ctrl-C lands while the loop's thread passes call_2's start on
        if event["type"] == "tool_execution_start" and event["tool_call_id"] == "call_2":
            raise KeyboardInterrupt

    bot, probes = make(steps=[calls("look", "look", "look"), reply("x")], on_event=handler)
    with pytest.raises(KeyboardInterrupt):
        bot.chat("go")
    results = {call_id: json.loads(text).get("error") for call_id, text in tool_results(bot)}
    assert results["call_3"] == agent.NOT_RUN and results["call_2"] == agent.INTERRUPTED
    assert "call_3" not in probes.ran and "call_3" not in bot.started_calls


def test_a_call_handed_to_the_pool_after_the_batch_was_given_up_never_starts():
    import queue

    bot, probes = make()
    inbox = queue.SimpleQueue()
    call = {"id": "call_9", "function": {"name": "look", "arguments": '{"key": "call_9"}'}}
    bot.run_in_pool(call, 0, 1, {"given_up": True}, inbox)
    assert inbox.get_nowait() == ("declined", 0, agent.NOT_RUN)
    assert probes.ran == [] and "call_9" not in bot.started_calls


def test_a_failing_handler_during_a_parallel_batch_leaves_a_valid_history():
    def handler(event):
        if event["type"] == "tool_execution_end" and event["tool_call_id"] == "call_1":
            raise RuntimeError("the trace file is full")

    probes = Probes()
    probes.gate("call_1").set()
    bot, _ = make(steps=[calls("look", "look", "look"), reply("x")], probes=probes,
                  on_event=handler, max_parallel=2)
    with pytest.raises(RuntimeError, match="trace file is full"):
        bot.chat("go")
    probes.gate("call_2").set()
    results = {call_id: json.loads(text).get("error") for call_id, text in tool_results(bot)}
    assert results["call_1"] == agent.INTERRUPTED and results["call_3"] == agent.NOT_RUN
    assert bot.stop_reason == "error" and agent.pairing_problem(bot.messages) is None


# --- steering ----------------------------------------------------------------------------------


def steer_on_start(bot_holder, call_id, text):
    def handler(event):
        if event["type"] == "tool_execution_start" and event["tool_call_id"] == call_id:
            bot_holder[0].steer(text)
    return handler


@STEERABLE_WHOLE_AND_SHORT
def test_steering_mid_batch_skips_the_calls_not_started_and_answers_each_for_a_strict_server(
        steerable):
    holder = []
    bot, probes = make(steerable, [calls("change", "change", "change"), reply("ok")],
                       on_event=steer_on_start(holder, "call_1", "stop, don't deploy"))
    holder.append(bot)
    assert bot.chat("deploy") == "ok"  # ScriptedClient refuses a history a strict server would
    assert probes.ran == ["call_1"]
    assert [json.loads(text) for _, text in tool_results(bot)][1:] == [{"error": ps.SKIPPED}] * 2
    assert [m["role"] for m in bot.messages[-5:]] == ["tool", "tool", "tool", "user", "assistant"]
    assert bot.messages[-2] == {"role": "user", "content": "stop, don't deploy"}
    assert bot.client.requests[1]["messages"][-1] == bot.messages[-2]
    assert bot.started_calls == {"call_1"} and bot.stop_reason == "done"


@STEERABLE_WHOLE_AND_SHORT
def test_skipped_calls_never_start_and_have_no_tool_events(steerable):
    holder, events = [], []
    handler = steer_on_start(holder, "call_1", "no")
    bot, _ = make(steerable, [calls("change", "look", "look"), reply("ok")],
                  on_event=agent.fan_out(events.append, handler))
    holder.append(bot)
    bot.chat("go")
    assert ids_of(events, "tool_execution_start") == ["call_1"]
    assert ids_of(events, "tool_execution_end") == ["call_1"]
    assert ids_of(events, "message_end") == ["call_1", "call_2", "call_3"]
    skipped = [e for e in events if e["type"] == "message_end"
               and e["message"].get("tool_call_id") == "call_2"]
    assert skipped[0]["is_error"] is True


@STEERABLE_WHOLE_AND_SHORT
def test_steering_during_a_parallel_group_lets_the_running_calls_finish_and_skips_the_rest(
        steerable):
    holder = []
    bot, probes = make(steerable, [calls("look", "look", "look", "look"), reply("ok")],
                       on_event=steer_on_start(holder, "call_2", "enough"))
    holder.append(bot)
    bot.chat("go")
    results = [json.loads(text) for _, text in tool_results(bot)]
    assert [r.get("key") for r in results[:2]] == ["call_1", "call_2"]
    assert results[2:] == [{"error": ps.SKIPPED}] * 2
    assert sorted(probes.ran) == ["call_1", "call_2"]


def test_steering_from_another_thread_while_a_call_runs_skips_what_comes_after_it():
    probes = Probes()
    bot, _ = make(ps.SteerableAgent, [calls("change", "look", "look"), reply("ok")],
                  probes=probes)

    def user():  # waits until call_1 is running, steers, then lets call_1 finish
        assert probes.began("call_1").wait(WAIT)
        bot.steer("wait")
        probes.gate("call_1").set()

    threading.Thread(target=user, daemon=True).start()
    bot.chat("go")
    assert probes.ran == ["call_1"]
    assert [json.loads(t) for _, t in tool_results(bot)][1:] == [{"error": ps.SKIPPED}] * 2


def test_steering_while_the_model_is_being_called_skips_every_call_of_that_response():
    calling, sent = threading.Event(), threading.Event()

    def model_thinking(messages):
        calling.set()
        assert sent.wait(WAIT)
        return calls("look", "change")

    bot, probes = make(ps.SteerableAgent, [model_thinking, reply("fine")])

    def user():
        calling.wait(WAIT)
        bot.steer("actually, do nothing")
        sent.set()

    threading.Thread(target=user, daemon=True).start()
    bot.chat("go")
    assert probes.ran == [] and bot.started_calls == set()
    assert [json.loads(t) for _, t in tool_results(bot)] == [{"error": ps.SKIPPED}] * 2
    first, second = bot.client.requests
    assert "actually, do nothing" not in json.dumps(first)
    assert second["messages"][-1] == {"role": "user", "content": "actually, do nothing"}


def test_steering_that_arrives_with_the_final_answer_is_answered_in_the_same_run():
    events = []

    def final_answer(messages):
        bot.steer("one more thing")  # during the last model call
        return reply("done")

    bot, _ = make(ps.SteerableAgent, [final_answer, reply("the one more thing")],
                  on_event=events.append)
    assert bot.chat("go") == "the one more thing"
    assert [m["content"] for m in bot.messages if m["role"] == "user"] == ["go", "one more thing"]
    assert [e["type"] for e in events].count("agent_start") == 1
    assert bot.unsent == [] and bot.stop_reason == "done"


def test_steering_queued_before_the_run_reaches_the_first_model_call():
    bot, _ = make(ps.SteerableAgent, [reply("both heard")])
    bot.steer("and be brief")
    bot.chat("explain")
    assert bot.client.requests[0]["messages"][-2:] == [
        {"role": "user", "content": "explain"}, {"role": "user", "content": "and be brief"}]


def test_steering_cannot_undo_a_write_that_already_happened(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    steps = [[tool_call("edit_file", path="v.txt", old_str="", new_str="1.1\n"),
              tool_call("edit_file", path="w.txt", old_str="", new_str="x")], reply("stopped")]
    holder = []
    bot = ps.SteerableAgent(ScriptedClient(steps), "s",
                            on_event=steer_on_start(holder, "call_1", "stop"))
    holder.append(bot)
    bot.chat("write")
    assert (tmp_path / "v.txt").read_text() == "1.1\n" and not (tmp_path / "w.txt").exists()


def test_a_second_chat_while_a_run_is_in_progress_is_refused_and_the_run_is_untouched():
    probes = Probes()
    events = []
    bot, _ = make(ps.SteerableAgent, [calls("change"), reply("first done"), reply("yours")],
                  probes=probes, on_event=events.append)
    refused = []

    def second_user():  # chats while call_1 runs, then lets it finish
        assert probes.began("call_1").wait(WAIT)
        try:
            bot.chat("me too")
        except RuntimeError as exc:
            refused.append(str(exc))
        probes.gate("call_1").set()

    helper = threading.Thread(target=second_user)
    helper.start()
    assert bot.chat("first") == "first done"
    helper.join(WAIT)
    assert refused and "send more with steer() or follow_up()" in refused[0]
    assert [m["content"] for m in bot.messages if m["role"] == "user"] == ["first"]
    assert [e["type"] for e in events].count("agent_start") == 1
    assert agent.pairing_problem(bot.messages) is None and bot.stop_reason == "done"
    assert bot.chat("now my turn") == "yours" and bot.running is False  # and then it works


def test_steer_and_follow_up_need_some_text():
    bot, _ = make(ps.SteerableAgent)
    for bad in ("", "   ", None, 3):
        with pytest.raises(ValueError, match="must be some text"):
            bot.steer(bad)
        with pytest.raises(ValueError, match="must be some text"):
            bot.follow_up(bad)
    assert bot.steering == [] and bot.follow_ups == []


# --- follow-ups --------------------------------------------------------------------------------


def lesson_07_tracer(folder):
    tracing = course.load_notebook("07-tracing")
    tracer = tracing.Tracer(folder, secrets={})
    return tracer, lambda: tracing.trace_problems(tracing.load_trace(tracer.paths[-1]))


def test_follow_ups_run_one_at_a_time_in_one_trace_that_lesson_07_finds_whole(tmp_path):
    tracer, trace_problems = lesson_07_tracer(tmp_path)
    events = []
    bot, _ = make(ps.SteerableAgent,
                  [calls("look"), reply("one"), calls("change", "look"), reply("two"),
                   reply("three")], on_event=agent.fan_out(events.append, tracer))
    bot.follow_up("second")
    bot.follow_up("third")
    assert bot.chat("first") == "three"
    kinds = [e["type"] for e in events]
    assert kinds.count("agent_start") == 1 and kinds.count("agent_end") == 1
    assert [m["content"] for m in bot.messages if m["role"] == "user"] == \
        ["first", "second", "third"]
    assert [m["content"] for m in bot.messages if m["role"] == "assistant" and m["content"]] == \
        ["one", "two", "three"]
    assert [e["turn"] for e in events if e["type"] == "turn_start"] == [1, 2, 3, 4, 5]
    assert trace_problems() == [] and len(tracer.paths) == 1
    assert bot.stop_reason == "done" and bot.unsent == []


@STEERABLE_WHOLE_AND_SHORT
def test_a_follow_up_queued_during_the_run_waits_until_the_task_is_done(steerable):
    holder = []

    def handler(event):
        if event["type"] == "tool_execution_start" and event["tool_call_id"] == "call_1":
            holder[0].follow_up("later")

    bot, _ = make(steerable, [calls("change"), calls("change"), reply("task done"),
                                 reply("later done")], on_event=handler)
    holder.append(bot)
    bot.chat("task")
    roles = [(m["role"], m["content"]) for m in bot.messages if m["role"] in ("user",)]
    assert roles == [("user", "task"), ("user", "later")]
    assert bot.messages.index({"role": "user", "content": "later"}) > \
        next(i for i, m in enumerate(bot.messages) if m.get("content") == "task done")


@STEERABLE_WHOLE_AND_SHORT
def test_follow_ups_do_not_run_after_a_guard_stopped_the_task_and_are_handed_back(steerable):
    bot, _ = make(steerable, [calls("look"), calls("look"), reply("never")],
                  max_turns=2)
    bot.follow_up("then deploy")
    bot.chat("go")
    assert bot.stop_reason == "max_turns"
    assert bot.unsent == [("follow-up", "then deploy")] and bot.follow_ups == []
    assert len(bot.client.requests) == 2


# --- abort ---------------------------------------------------------------------------------------


def alive(pid: int) -> bool:
    """True if a process with this id exists and is not a zombie waiting to be reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def gone(pid: int) -> bool:
    """Wait (at most WAIT seconds: a loaded machine may take more than one) for a killed process
    to disappear: SIGKILL is asynchronous, and a process that has closed its files (so the tool's
    output pipe is at its end) may not have finished exiting yet."""
    deadline = time.monotonic() + WAIT
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.mark.skipif(os.name != "posix", reason="the shell tool needs a POSIX shell")
def test_abort_during_a_shell_command_kills_its_process_group_and_stops_the_run(tmp_path):
    workspace = Path(os.path.realpath(tmp_path))
    os.mkfifo(workspace / "ready")
    command = "sleep 30 & echo $$ $! > ready; sleep 30"
    signal_ = ps.AbortSignal()
    tools, registry = ps.stoppable_tools(workspace, signal_, timeout=20)
    events = []
    tracer, trace_problems = lesson_07_tracer(tmp_path / "traces")
    bot = ps.SteerableAgent(ScriptedClient([[tool_call("run_command", command=command),
                                             tool_call("read_file", path="x")], reply("?")]),
                            "s", tools=tools, registry=registry, abort_signal=signal_,
                            on_event=agent.fan_out(events.append, tracer))
    pids = []

    def user():  # reads the command's ids from the pipe (so it is running), then aborts
        with open(workspace / "ready") as pipe:
            pids.extend(int(word) for word in pipe.read().split())
        assert bot.abort() is True

    helper = threading.Thread(target=user, daemon=True)
    helper.start()
    answer = bot.chat("run it")
    helper.join(WAIT)
    result = json.loads(tool_results(bot)[0][1])
    assert result["exit_code"] == -signal.SIGKILL and "aborted" in result
    assert json.loads(tool_results(bot)[1][1]) == {"error": agent.NOT_RUN}
    assert all(gone(pid) for pid in pids) and len(pids) == 2  # the shell and its child
    assert (bot.stop_reason, answer) == ("aborted", ps.ABORTED)
    assert len(bot.client.requests) == 1 and agent.pairing_problem(bot.messages) is None
    assert events[-1]["type"] == "agent_end" and events[-1]["stop_reason"] == "aborted"
    assert trace_problems() == []  # the aborted turn was closed too


def test_abort_during_a_model_call_runs_none_of_its_calls_and_calls_the_model_no_more():
    calling, pressed = threading.Event(), threading.Event()

    def model_thinking(messages):
        calling.set()
        assert pressed.wait(WAIT)
        return calls("look", "change")

    bot, probes = make(ps.SteerableAgent, [model_thinking, reply("never asked")])
    bot.follow_up("then more")

    def user():
        calling.wait(WAIT)
        bot.abort()
        pressed.set()

    threading.Thread(target=user, daemon=True).start()
    assert bot.chat("go") == ps.ABORTED
    assert probes.ran == [] and len(bot.client.requests) == 1
    assert [json.loads(t) for _, t in tool_results(bot)] == [{"error": agent.NOT_RUN}] * 2
    assert bot.stop_reason == "aborted" and bot.unsent == [("follow-up", "then more")]


def test_abort_during_the_final_model_call_keeps_the_answer_and_runs_no_follow_up():
    def final_answer(messages):
        assert bot.abort() is True
        return reply("here it is")

    bot, _ = make(ps.SteerableAgent, [final_answer, reply("never")])
    bot.follow_up("then more")
    assert bot.chat("go") == "here it is"
    assert bot.stop_reason == "aborted" and len(bot.client.requests) == 1
    assert bot.unsent == [("follow-up", "then more")]


def test_abort_during_a_parallel_batch_lets_running_calls_finish_and_starts_no_other():
    probes = Probes()

    def look(key: str) -> dict:
        if key == "call_2":  # a pool thread presses abort, then lets call_1 finish
            bot.abort()
            probes.gate("call_1").set()
            probes.gate("call_2").set()
        return probes._run(key, "look")

    bot, _ = make(ps.SteerableAgent, [calls("look", "look", "look", "look"), reply("x")],
                  probes=probes, max_parallel=2)
    bot.registry = dict(bot.registry, look=look)
    bot.chat("go")
    results = [json.loads(t) for _, t in tool_results(bot)]
    assert [r.get("key") for r in results[:2]] == ["call_1", "call_2"]  # real results
    assert results[2:] == [{"error": agent.NOT_RUN}] * 2
    assert sorted(probes.ran) == ["call_1", "call_2"] and bot.stop_reason == "aborted"
    assert len(bot.client.requests) == 1 and agent.pairing_problem(bot.messages) is None


def test_abort_between_turns_stops_before_the_next_model_call():
    def handler(event):  # abort right after the batch was answered
        if event["type"] == "turn_end" and event["turn"] == 1:
            assert bot.abort() is True

    bot, probes = make(ps.SteerableAgent, [calls("look"), reply("never")], on_event=handler)
    assert bot.chat("go") == ps.ABORTED
    assert probes.ran == ["call_1"] and len(bot.client.requests) == 1


def test_an_abort_that_returns_true_stops_the_run_as_aborted_and_one_too_late_returns_false():
    """abort() says whether it stopped the run. Pressed as the final answer's turn ends, it
    does, and the run says aborted; pressed once the stop reason is decided (an agent_end
    handler, after done or after an error), it is too late: it returns False, and the run,
    its event and the next run all say what really happened."""
    said = []

    def press(at):
        def handler(event):
            if event["type"] == at:
                said.append((bot.abort(), event.get("stop_reason")))
        return handler

    bot, _ = make(ps.SteerableAgent, [reply("fine"), reply("fine again")],
                  on_event=press("turn_end"))
    assert bot.chat("go") == "fine"
    assert said == [(True, None)] and bot.stop_reason == "aborted"
    for script, reason in [([reply("fine")], "done"), ([], "error")]:
        said.clear()
        bot, _ = make(ps.SteerableAgent, script, on_event=press("agent_end"))
        try:
            bot.chat("go")
        except agent.ScriptExhausted:  # a script that ran out: the run ends in an error
            pass
        assert said == [(False, reason)] and bot.stop_reason == reason
        bot.client, bot.on_event = ScriptedClient([reply("next")]), lambda event: None
        assert bot.chat("again") == "next" and bot.stop_reason == "done"


@STEERABLE_WHOLE_AND_SHORT
def test_an_aborted_agent_chats_again_and_a_later_run_is_not_aborted(steerable):
    def handler(event):
        if event["type"] == "tool_execution_start":
            bot.abort()

    bot, _ = make(steerable, [calls("change"), reply("second run, whole")],
                  on_event=handler)
    bot.chat("first")
    assert bot.stop_reason == "aborted"
    bot.on_event = lambda event: None
    assert bot.chat("again") == "second run, whole" and bot.stop_reason == "done"
    assert agent.pairing_problem(bot.messages) is None


def test_abort_when_no_run_is_going_does_nothing():
    bot, _ = make(ps.SteerableAgent, [reply("fine")])
    assert bot.abort() is False
    assert bot.chat("go") == "fine" and bot.stop_reason == "done"


def test_an_abort_is_not_swallowed_by_an_except_exception_in_a_subclass():
    class Retrying(ps.SteerableAgent):
        def ask_model(self, turn):
            try:
                return super().ask_model(turn)
            except Exception:  # a retry wrapper must not hide an abort
                return super().ask_model(turn)

    def handler(event):
        if event["type"] == "tool_execution_start":
            bot.abort()

    bot, _ = make(Retrying, [calls("change"), reply("never")], on_event=handler)
    assert bot.chat("go") == ps.ABORTED and bot.stop_reason == "aborted"


def test_the_abort_signal_calls_a_stopper_only_while_its_block_runs():
    signal_, stopped = ps.AbortSignal(), []
    with signal_.stopping(lambda: stopped.append("inside")):
        signal_.set()
    signal_.set()  # after the block: nobody to call
    assert stopped == ["inside"]
    with signal_.stopping(lambda: stopped.append("already set")):
        pass
    assert stopped == ["inside", "already set"]
    signal_.clear()
    assert not signal_.is_set() and signal_.wait(0) is False


@pytest.mark.skipif(os.name != "posix", reason="the shell tool needs a POSIX shell")
def test_the_stoppable_shell_is_lesson_05s_tool_when_nobody_aborts(tmp_path):
    sandbox = course.load_notebook("05-sandbox")
    workspace = Path(os.path.realpath(tmp_path))
    never = ps.AbortSignal()
    for command in ["echo out; echo err >&2; exit 3", "pwd -P; echo $HOME/notes", "env | sort",
                    "cat; echo no input", "seq 1 5000"]:
        assert ps.run_stoppable(workspace, command, never, max_output=300) == \
            sandbox.run_in(workspace, command, max_output=300)
    timed = ps.run_stoppable(workspace, "sleep 5", never, timeout=0.2)
    assert timed["exit_code"] == -signal.SIGKILL and "timed_out" in timed
    gone = workspace / "gone"
    with pytest.raises(OSError) as stoppable:
        ps.run_stoppable(gone, "true", never)
    with pytest.raises(OSError) as original:
        sandbox.run_in(gone, "true")
    assert str(stoppable.value) == str(original.value) and str(gone) not in str(original.value)


# --- take it with you --------------------------------------------------------------------------


def test_the_exported_module_runs_beside_agent_py_and_sandbox_py(tmp_path):
    for lesson, name in [("10-parallel-and-steering", "parallel_and_steering"),
                         ("05-sandbox", "sandbox")]:
        assert course.main(["export", lesson, "-o", str(tmp_path / f"{name}.py")]) == 0
    (tmp_path / "agent.py").write_text((ROOT / "agent.py").read_text())
    program = (
        "import parallel_and_steering as ps\n"
        "from agent import ScriptedClient, reply, tool_call\n"
        "steps = [[tool_call('list_files'), tool_call('list_files', path='.')], reply('ok')]\n"
        "bot = ps.SteerableAgent(ScriptedClient(steps), 's', on_event=None)\n"
        "bot.follow_up('and?')\n"
        "bot.client.steps.append(reply('and that'))\n"
        "print(bot.chat('look'), bot.stop_reason, len(bot.messages))\n")
    done = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env={"PATH": os.environ.get("PATH", "")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "and that done 8"


# --- the exercises' checks catch the naive answer -----------------------------------------------


def test_check_10_1_refuses_a_grouping_that_lists_a_folder_beside_a_write_in_it():
    """The naive ByFile keys every call by its path alone, so list_files(".") and a write of
    new.txt share a group, and the listing may or may not show new.txt."""
    class ByPathOnly(ps.ParallelAgent):
        def groups(self, calls):
            groups, current, reads, writes = [], None, set(), set()
            for call in calls:
                name = call["function"]["name"]
                try:
                    arguments = json.loads(call["function"]["arguments"])
                except ValueError:
                    arguments = None
                path = arguments.get("path", ".") if isinstance(arguments, dict) else None
                kind = "read" if name in self.parallel else "write" if name == "edit_file" \
                    else None
                path = os.path.normpath(path) if kind and isinstance(path, str) else None
                if current is None or path is None or path in writes or (
                        kind == "write" and path in reads):
                    current, reads, writes = [], set(), set()
                    groups.append(current)
                current.append(call)
                if path is None:
                    current = None
                else:
                    (reads if kind == "read" else writes).add(path)
            return groups

    report = course.check("10.1", ByPathOnly)
    failed = [what for ok, what, _ in report.results if not ok]
    assert failed == ["a listing of a folder never shares a group with a write inside it"], \
        repr(report)


# --- the main path's short classes: what its cells and checks need -------------------------------


@pytest.fixture
def main_path_run_again():
    """The module as a kernel holds it after the main path only: its export cells run again
    over the whole module, so ParallelAgent and SteerableAgent are the main path's short ones."""
    with main_path_only(ps, "10-parallel-and-steering") as saved:
        assert ps.ParallelAgent is not saved["ParallelAgent"]
        yield


@pytest.mark.parametrize("exercise_id", ["10.1", "10.2", "10.3"])
def test_the_checks_accept_the_answers_against_the_main_paths_short_code(
        exercise_id, main_path_run_again):
    import runpy  # the solutions imported now, so that they build on the short classes
    solutions = runpy.run_path(str(ROOT / "solutions" / "10-parallel-and-steering.py"))
    assert issubclass(solutions["AllAtOnce"], ps.SteerableAgent)
    report = course.check(exercise_id, *solutions["SOLUTIONS"][exercise_id])
    assert report.passed, repr(report)


def test_an_abort_between_runs_stops_nothing_in_the_short_steerable_agent():
    bot, _ = make(SHORT["SteerableAgent"], [reply("fine")])
    bot.abort()  # no run is in progress: the next run clears the signal as it starts
    assert bot.chat("go") == "fine" and bot.stop_reason == "done"

"""Lesson 12's context budget: the export cells of notebooks/12-context-budget.ipynb, loaded as
`context_budget`, and its props (notebooks/props/context_lab.py): the shop, its verifier, the
careful model and the note taker.

What is sent is checked apart from what is kept: every request a compacted run sends pairs each
tool call with its result (fuzzed over generated histories with parallel calls, errors and
`length` cuts, and over real runs on ScriptedClient, which rejects an unpaired request as a
strict server does); the latest user message and the current turn are never summarised; the
summarising request is itself valid; the history is never changed; a context-length error is
retried once; and the real openai SDK over httpx2.MockTransport gets the same treatment. The
figures the lesson states are compared with what the code computes today."""

import copy
import inspect
import json
import os
import random
import re
import subprocess
import sys
import types
from itertools import count
from pathlib import Path

import course
import httpx2
import openai
import pytest
import sessions
import tracing
from props import context_lab as SHOP  # the shop, the careful model, the note taker
from props.clock import FakeClock
from test_loop import assert_history_valid

import agent
from agent import Agent, ScriptedClient, pairing_problem, reply, step, tool_call

NOTEBOOK = course.notebook_path("12-context-budget")
cb = course.load_notebook("12-context-budget")  # the export cells: the module context_budget
LESSONS = Path(course.ROOT) / "lessons"


STRATEGIES = {"elision": {"elide_after": 2},
              "summary": {"budget": 6_000, "keep_recent": 1_500},
              "both": {"budget": 6_000, "keep_recent": 1_500, "elide_after": 2}}


def notes(messages):
    """A summariser that says how much it was shown."""
    return reply(f"notes on {len(messages[-1]['content'])} characters")


def summarizer(n: int = 200) -> ScriptedClient:
    return ScriptedClient([notes] * n)


def run_shop(**options):
    """The notebook's task on a fresh shop: (agent, meter, verifier's problems)."""
    meter = cb.Meter()
    if options:
        bot, problems = SHOP.run_task(cb.CompactingAgent, on_event=meter,
                                      summarizer=ScriptedClient([SHOP.note_taker] * 20),
                                      **options)
    else:
        bot, problems = SHOP.run_task(Agent, on_event=meter)
    return bot, meter, problems


@pytest.fixture(scope="module")
def shop_runs():
    return {name: run_shop(**options) for name, options in {"none": {}, **STRATEGIES}.items()}


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- histories to work on --------------------------------------------------------------------

SYSTEM = {"role": "system", "content": "You are a test."}


def call(call_id: str, name: str = "read_file", **arguments) -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments or {"path": "a.txt"})}}


def asks(*calls: dict) -> dict:
    return {"role": "assistant", "content": "", "tool_calls": list(calls)}


def result(call_id: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def user(text: str) -> dict:
    return {"role": "user", "content": text}


NOT_RUN = agent.error_json("not executed: your output was truncated (finish_reason 'length')")


def random_history(rng: random.Random) -> list[dict]:
    """A valid history, as a loop leaves it at a request: tasks, turns of one to three parallel
    calls, results small and large, errors, batches cut off by `length`, and answers."""
    ids, history = count(1), [SYSTEM]
    for task in range(rng.randint(1, 3)):
        history.append(user(f"task {task}: " + "please " * rng.choice([1, 5, 400])))
        for _ in range(rng.randint(0, 7)):
            calls = [call(f"c{next(ids)}", path=f"f{rng.randint(1, 4)}.txt")
                     for _ in range(rng.choice([1, 1, 1, 2, 3]))]
            history.append({**asks(*calls), "content": rng.choice(["", "thinking aloud"])})
            cut_off = rng.random() < 0.15
            for c in calls:
                history.append(result(c["id"], NOT_RUN if cut_off else rng.choice([
                    "ok", agent.error_json("read_file: no such file"),
                    json.dumps({"content": "x" * rng.choice([100, 900, 3_000, 12_000])})])))
        if rng.random() < 0.6:
            history.append({"role": "assistant", "content": "answered"})
    if history[-1]["role"] == "assistant":
        history.append(user("one more thing"))
    return history


def request_points(history: list[dict]) -> list[int]:
    """The lengths at which a loop sends a request: after a user message, and after the last
    result of a batch."""
    return [k for k in range(1, len(history) + 1)
            if history[k - 1]["role"] == "user"
            or (history[k - 1]["role"] == "tool" and (k == len(history)
                                                      or history[k]["role"] != "tool"))]


def check_request(sent: list[dict], history: list[dict]) -> None:
    """What every compacted request must be, for the history it was made from."""
    assert pairing_problem(sent) is None, pairing_problem(sent)
    assert_history_valid(sent)  # results right after their calls, in call order; no null content
    assert sent[0] == history[0], "the system prompt goes first"
    task = cb.latest_user(history)
    assert any(m is history[task] or m == history[task] for m in sent), \
        "the latest user message is sent as it is"
    tail = history[cb.current_turn(history):]
    assert sent[-len(tail):] == tail, "the current turn is sent as it is"


# --- measured on the notebook's task ----------------------------------------------------------


def test_the_plain_run_grows_every_turn_and_compaction_cuts_it_at_least_in_half(shop_runs):
    bot, meter, problems = shop_runs["none"]
    prompts = [row["prompt_tokens"] for row in meter.rows]
    assert problems == [] and bot.stop_reason == "done" and len(prompts) >= 30
    assert prompts == sorted(prompts) and prompts[-1] > 30 * prompts[0]
    baseline = sum(prompts)
    for name in STRATEGIES:
        bot, meter, problems = shop_runs[name]
        assert problems == [] and bot.stop_reason == "done", name
        assert cb.totals(meter.rows, "scripted-demo")["prompt_tokens"] <= baseline / 2, name


def test_the_shop_runs_keep_the_same_whole_history_whatever_is_sent(shop_runs):
    plain = shop_runs["none"][0].messages
    for name in STRATEGIES:
        assert shop_runs[name][0].messages == plain, name


def test_every_request_of_the_shop_runs_pairs_and_carries_the_task(shop_runs):
    for name, (bot, _, _) in shop_runs.items():
        for request in bot.client.requests:
            assert pairing_problem(request["messages"]) is None, name
            assert request["messages"][1] == {"role": "user", "content": SHOP.TASK}, name


def test_the_summarising_requests_of_the_shop_are_valid_and_never_hold_the_task(shop_runs):
    for name in ("summary", "both"):
        bot = shop_runs[name][0]
        assert bot.summarizer.requests, name
        for request in bot.summarizer.requests:
            assert "tools" not in request and pairing_problem(request["messages"]) is None
            assert [m["role"] for m in request["messages"]] == ["system", "user"]
            assert request["messages"][0]["content"] == cb.SUMMARY_PROMPT
            assert SHOP.TASK not in request["messages"][1]["content"]
            assert cb.estimate_tokens(request["messages"]) <= 6_000


def test_a_summary_that_gets_a_fact_wrong_is_caught_by_the_verifier_only(tmp_path):
    def claims_all_done(messages):
        files = ", ".join(SHOP.TO_CHANGE)
        return reply(f"## Done\n{SHOP.DONE_NOTE}{files}.\n{SHOP.FILES_NOTE}{files}.")

    SHOP.make_project(tmp_path / "shop")
    os.chdir(tmp_path / "shop")
    bot = cb.CompactingAgent(ScriptedClient([SHOP.careful_model] * 60), "scripted-demo",
                             max_turns=60, budget=6_000, keep_recent=1_500, on_event=None,
                             summarizer=ScriptedClient([claims_all_done] * 20))
    bot.chat(SHOP.TASK)
    assert bot.stop_reason == "done" and "Renamed" in bot.messages[-1]["content"]
    assert any("still says fetch_rows" in p for p in SHOP.verify(tmp_path / "shop"))


# --- elision --------------------------------------------------------------------------------


def test_elision_replaces_old_long_results_by_a_stub_that_names_the_call_and_keeps_the_pairing():
    big = json.dumps({"content": "x" * 5_000})
    history = [SYSTEM, user("go"), asks(call("c1", path="big.txt"), call("c2", path="s.txt")),
               result("c1", big), result("c2", "short"), asks(call("c3")), result("c3", big),
               asks(call("c4")), result("c4", big)]
    before = copy.deepcopy(history)
    sent = cb.elide_old_results(history, elide_after=2)
    assert history == before and pairing_problem(sent) is None
    assert [m.get("tool_call_id") for m in sent] == [m.get("tool_call_id") for m in history]
    assert sent[3]["content"] == cb.stub(history[2]["tool_calls"][0], big)
    assert '"big.txt"' in sent[3]["content"] and f"{len(big):,} characters" in sent[3]["content"]
    assert "Call read_file again" in sent[3]["content"]
    assert sent[4] is history[4]  # short: not worth a stub
    assert sent[6] is history[6] and sent[8] is history[8]  # the last two turns stay whole
    assert cb.elide_old_results(history, elide_after=1)[6]["content"].startswith("[elided")


def test_elision_never_touches_the_current_turn_and_refuses_to_try():
    history = [SYSTEM, user("go"), asks(call("c1")), result("c1", "x" * 9_000)]
    assert cb.elide_old_results(history, elide_after=1) == history
    with pytest.raises(ValueError, match="at least 1"):
        cb.elide_old_results(history, elide_after=0)
    with pytest.raises(ValueError, match="at least 1"):
        cb.CompactingAgent(ScriptedClient([]), elide_after=0)


# --- where to cut --------------------------------------------------------------------------


def test_a_cut_never_lands_on_a_result_nor_past_the_current_turn():
    rng = random.Random(12)
    for _ in range(300):
        history = random_history(rng)
        start = cb.first_message(history)
        for keep in (0, 50, 500, 3_000, 100_000):
            cut = cb.choose_cut(history, start, keep)
            assert start <= cut <= cb.current_turn(history)
            assert cb.is_cut_point(history, cut), (cut, history[cut]["role"])
            if cut > start and keep:  # as early as fits: one more cut point back would not
                kept = sum(cb.message_tokens(m) for m in history[cut:])
                assert kept <= keep or cut == cb.current_turn(history)


def test_the_current_turn_begins_at_the_last_message_that_is_not_a_result():
    history = [SYSTEM, user("a"), asks(call("c1"), call("c2")), result("c1", "1"),
               result("c2", "2")]
    assert cb.current_turn(history) == 2 and cb.latest_user(history) == 1
    assert cb.current_turn([*history, user("b")]) == 5
    assert cb.choose_cut(history, 1, 0) == 2
    assert [cb.is_cut_point(history, i) for i in range(6)] == [True, True, True, False, False,
                                                                True]


# --- fuzz: every request of a compacted history pairs -------------------------------------------


@pytest.mark.slow
def test_fuzz_every_request_made_from_a_growing_history_pairs_and_keeps_the_task():
    rng = random.Random(2026)
    summaries = refusals = overflows = 0
    for _ in range(150):
        history = random_history(rng)
        frozen = copy.deepcopy(history)
        budget = rng.choice([None, 1_500, 3_000, 8_000])
        client = ScriptedClient([reply("ok")] * 100)
        window = rng.choice([None, None, 2_500, 6_000])
        bot = cb.CompactingAgent(cb.with_context_window(client, window) if window else client,
                                 "m", budget=budget, keep_recent=rng.choice([0, 400, 2_000]),
                                 elide_after=rng.choice([None, 1, 2, 3]), on_event=None,
                                 summarizer=summarizer())
        bot.messages = []
        for turn, k in enumerate(request_points(history), 1):
            bot.messages.extend(history[len(bot.messages):k])
            seen = len(client.requests)
            try:
                bot.ask_model(turn)
            except cb.ContextOverflow:
                assert window is not None  # only a refusing server ends up here
                overflows += 1
            for request in client.requests[seen:]:  # what the model was sent
                check_request(request["messages"], history[:k])
            if bot.compaction:  # the latest task is kept out of the summary, as it is
                assert cb.latest_user(history[:k]) not in range(1, bot.compaction.end) or \
                    cb.latest_user(history[:k]) in bot.compaction.kept
        assert history == frozen, "compaction changed the history"
        for request in bot.summarizer.requests:
            assert "tools" not in request and pairing_problem(request["messages"]) is None
            if bot.limit() and bot.limit() >= 1_500:
                assert cb.estimate_tokens(request["messages"]) <= bot.limit()
        summaries += len(bot.summarizer.requests)
        refusals += len(bot.client.refused) if window else 0
    assert summaries > 100 and refusals > 20 and overflows > 10  # every path was taken


def random_script(rng: random.Random, files: list[str]) -> list:
    """Steps of a model that reads, lists, fails, sends broken JSON, and is cut off."""
    steps = []
    for _ in range(rng.randint(2, 9)):
        calls = [rng.choice([
            tool_call("read_file", path=rng.choice(files)),
            tool_call("read_file", path="missing.txt"),
            tool_call("list_files", path="."),
            tool_call("read_file", raw_arguments='{"path": '),
        ]) for _ in range(rng.choice([1, 1, 2, 3]))]
        steps.append(step(*calls, content=rng.choice(["", "let me look"]),
                          finish_reason="length" if rng.random() < 0.1 else None))
    steps.append(reply("done"))
    return steps


@pytest.mark.slow
def test_fuzz_real_runs_pair_every_request_and_keep_the_plain_history(tmp_path):
    files = []
    for n, size in enumerate([50, 700, 4_000, 15_000, 30_000]):
        (tmp_path / f"f{n}.txt").write_text("y" * size)
        files.append(f"f{n}.txt")
    rng = random.Random(7)
    for _ in range(25):
        scripts = [random_script(rng, files) for _ in range(rng.randint(1, 3))]
        tasks = [f"task {n}" for n in range(len(scripts))]
        options = {"budget": rng.choice([1_500, 3_000, 6_000]),
                   "keep_recent": rng.choice([0, 500, 2_000]),
                   "elide_after": rng.choice([None, 1, 2])}
        plain = Agent(ScriptedClient([s for script in scripts for s in script]), "m",
                      max_turns=20, on_event=None)
        compacting = cb.CompactingAgent(ScriptedClient([s for script in scripts for s in script]),
                                        "m", max_turns=20, on_event=None,
                                        summarizer=summarizer(), **options)
        for task in tasks:
            plain.chat(task)
            compacting.chat(task)  # ScriptedClient rejects an unpaired request with HTTP 400
            assert compacting.stop_reason == plain.stop_reason
        assert compacting.messages == plain.messages
        for request in compacting.client.requests:
            assert pairing_problem(request["messages"]) is None
            assert request["messages"][0] == SYSTEM | {"content": agent.SYSTEM_PROMPT}


# --- summaries ------------------------------------------------------------------------------


def long_history(turns: int = 12, size: int = 3_000) -> list[dict]:
    history = [{"role": "system", "content": agent.SYSTEM_PROMPT}, user("the task")]
    for n in range(1, turns + 1):
        history += [asks(call(f"c{n}", path=f"f{n}.txt")),
                    result(f"c{n}", json.dumps({"content": f"{n} " * (size // 2)}))]
    return history


def test_the_latest_user_message_is_sent_as_it_is_and_never_shown_to_the_summariser():
    bot = cb.CompactingAgent(ScriptedClient([reply("ok")] * 5), "m", budget=2_000,
                             keep_recent=500, summarizer=summarizer(), on_event=None)
    bot.messages = long_history()
    bot.ask_model(13)
    assert bot.compaction and bot.compaction.kept == (1,)
    sent = bot.client.requests[-1]["messages"]
    assert sent[1] == user("the task") and sent[2]["content"].startswith(cb.SUMMARY_HEADER)
    assert all("the task" not in r["messages"][1]["content"] for r in bot.summarizer.requests)


def test_an_earlier_task_is_summarised_once_a_new_one_is_the_latest():
    bot = cb.CompactingAgent(ScriptedClient([reply("ok")] * 5), "m", budget=2_000,
                             keep_recent=500, summarizer=summarizer(), on_event=None)
    bot.messages = long_history()
    bot.ask_model(13)
    bot.messages += [{"role": "assistant", "content": "answered"}, user("the second task")]
    bot.messages += long_history()[2:8]
    bot.ask_model(14)
    assert bot.compaction.kept == (27,) and bot.messages[27] == user("the second task")
    shown = "\n".join(r["messages"][1]["content"] for r in bot.summarizer.requests)
    assert "[user]\nthe task" in shown and "the second task" not in shown
    sent = bot.client.requests[-1]["messages"]
    # the notes stand for messages before and after the new task, and come after it: the
    # system prompt, the task at hand, the notes, the kept messages (what the lesson says)
    assert sent[1] == user("the second task") and sent[2]["content"].startswith(cb.SUMMARY_HEADER)
    assert sent[3:] == bot.messages[bot.compaction.end:]


def test_too_much_to_summarise_at_once_is_folded_in_several_requests_each_within_budget():
    bot = cb.CompactingAgent(ScriptedClient([reply("ok")] * 5), "m", budget=2_500,
                             keep_recent=0, summarizer=summarizer(), on_event=None)
    bot.messages = long_history(turns=30)
    events = []
    bot.on_event = events.append
    bot.ask_model(31)
    requests = bot.summarizer.requests
    assert len(requests) > 3
    assert all(cb.estimate_tokens(r["messages"]) <= 2_500 for r in requests)
    for earlier, later in zip(requests, requests[1:], strict=False):  # each one's notes go on
        assert f"notes on {len(earlier['messages'][-1]['content'])} characters" in \
            later["messages"][1]["content"]
    shown = "\n".join(r["messages"][1]["content"] for r in requests)
    assert all(f"tool result of c{n} " in shown for n in range(1, 30))  # nothing left out
    [compaction] = [e for e in events if e["type"] == "compaction"]
    assert compaction["requests"] == len(requests)  # and their usage, added up:
    assert compaction["usage"]["prompt_tokens"] == sum(len(agent.to_json(r)) // 4
                                                       for r in requests)


def test_an_empty_summary_compacts_nothing_and_the_request_goes_as_it_is():
    bot = cb.CompactingAgent(ScriptedClient([reply("ok")] * 5), "m", budget=2_000,
                             summarizer=ScriptedClient([reply("   ")] * 5), on_event=None)
    events = []
    bot.on_event = events.append
    bot.messages = long_history()
    bot.ask_model(13)
    assert bot.compaction is None
    assert bot.client.requests[-1]["messages"] == bot.messages
    assert [e.get("failed") for e in events if e["type"] == "compaction"] == [
        "the model wrote an empty summary"]


def test_request_messages_changes_nothing_and_is_the_history_without_a_compaction():
    bot = cb.CompactingAgent(ScriptedClient([]), "m", elide_after=1, on_event=None)
    bot.messages = long_history()
    before = copy.deepcopy(bot.messages)
    sent = bot.request_messages()
    assert bot.messages == before and sent is not bot.messages
    bot.elide_after = None
    assert bot.request_messages() == bot.messages


def test_a_summary_for_messages_the_history_does_not_have_is_refused_with_a_sentence():
    bot = cb.CompactingAgent(ScriptedClient([]), "m", on_event=None)
    bot.messages = long_history(turns=4)
    bot.compaction = cb.Compaction("notes", end=8, kept=(1,))
    assert len(bot.request_messages()) == 5  # system, task, notes, the last call and result
    bot.messages = long_history(turns=2)  # e.g. a branch switch, and no restore_compaction
    with pytest.raises(ValueError, match="restore_compaction"):
        bot.request_messages()


def test_the_summary_stands_in_for_exactly_the_messages_it_covers():
    history = long_history(turns=4)
    compaction = cb.Compaction("the notes", end=6, kept=(1,))
    sent = cb.compacted(history, compaction)
    assert sent == [history[0], history[1], cb.summary_message("the notes"), *history[6:]]
    assert cb.compacted(history, None) == history
    later_task = [*history[:6], user("a new task"), *long_history(turns=2)[2:]]
    sent = cb.compacted(later_task, cb.Compaction("the notes", end=8, kept=(6,)))
    assert sent == [history[0], user("a new task"), cb.summary_message("the notes"),
                    *later_task[8:]]  # the task first, then the notes of what came before it


def test_the_summaries_go_to_the_summarizer_with_its_own_model_or_else_the_agents():
    for options, expected in (({}, "main-model"), ({"summary_model": "cheap-model"},
                                                    "cheap-model")):
        bot = cb.CompactingAgent(ScriptedClient([reply("ok")] * 5), "main-model", budget=2_000,
                                 keep_recent=500, summarizer=summarizer(), on_event=None,
                                 **options)
        bot.messages = long_history()
        bot.ask_model(13)
        assert bot.summarizer.requests, options
        assert {r["model"] for r in bot.summarizer.requests} == {expected}, options
        assert {r["model"] for r in bot.client.requests} == {"main-model"}
    own = cb.CompactingAgent(ScriptedClient([reply("notes")] * 20), "main-model",
                             budget=2_000, keep_recent=500, summary_model="cheap-model",
                             on_event=None)  # no summarizer: the agent's own client
    own.messages = long_history()
    own.ask_model(13)
    *summarising, asked = [r["model"] for r in own.client.requests]
    assert summarising and set(summarising) == {"cheap-model"} and asked == "main-model"


# --- the server says the context is too long ------------------------------------------------


class Refusing:
    """A client that refuses the first `times` requests as too long (OpenAI's shape), then
    passes them on."""

    def __init__(self, client, times: int):
        self.inner, self.times, self.refused = client, times, 0
        self.chat = types.SimpleNamespace(completions=types.SimpleNamespace(create=self.create))

    def create(self, **request):
        if self.refused < self.times:
            self.refused += 1
            response = httpx2.Response(400, request=httpx2.Request("POST", "http://x/v1"))
            raise openai.BadRequestError("Error code: 400 - too long", response=response, body={
                "message": "This model's maximum context length is 100 tokens.",
                "type": "invalid_request_error", "code": "context_length_exceeded"})
        return self.inner.chat.completions.create(**request)


def test_a_context_error_gets_one_compaction_and_one_retry_and_a_lower_budget():
    inner = ScriptedClient([reply("fine")])
    bot = cb.CompactingAgent(Refusing(inner, times=1), "m", summarizer=summarizer(),
                             on_event=None)
    events = []
    bot.on_event = events.append
    bot.messages = long_history()
    refused = bot.estimate()
    assert bot.chat("and now?") == "fine" and bot.stop_reason == "done"
    assert bot.client.refused == 1 and len(inner.requests) == 1
    assert [e["type"] for e in events if e["type"] in ("context_refused", "compaction")] == [
        "context_refused", "compaction"]
    assert [e for e in events if e["type"] == "compaction"][0]["forced"] is True
    assert bot.limit() < refused and bot.refused_at > refused  # the user message came since
    check_request(inner.requests[0]["messages"], bot.messages[:-1])


def test_still_too_long_after_the_retry_stops_with_context_overflow_and_a_valid_history():
    inner = ScriptedClient([reply("never")])
    bot = cb.CompactingAgent(Refusing(inner, times=99), "m", summarizer=summarizer(),
                             on_event=None)
    bot.messages = long_history()
    answer = bot.chat("and now?")
    assert bot.stop_reason == "context_overflow" and answer.startswith("[stopped: ")
    assert "too long even compacted" in answer
    assert bot.client.refused == 2 and inner.requests == []  # the first try and one retry
    assert_history_valid(bot.messages)
    assert bot.messages[-1] == user("and now?")


def test_nothing_left_to_summarise_means_no_retry_at_all():
    bot = cb.CompactingAgent(Refusing(ScriptedClient([reply("x")]), times=99), "m",
                             summarizer=summarizer(), on_event=None)
    answer = bot.chat("a question far too long " * 10)
    assert bot.stop_reason == "context_overflow" and "nothing more may be summarised" in answer
    assert bot.client.refused == 1 and bot.summarizer.requests == []


def test_after_an_overflow_the_same_agent_goes_on_and_the_long_message_is_summarised():
    big = "a pasted log line\n" * 2_000
    window = cb.with_context_window(ScriptedClient([reply("short answer")] * 3), 3_000)
    bot = cb.CompactingAgent(window, "m", budget=2_500, summarizer=summarizer(), on_event=None)
    assert bot.chat(big).startswith("[stopped") and bot.stop_reason == "context_overflow"
    assert bot.chat("a short question") == "short answer" and bot.stop_reason == "done"
    assert big not in [m["content"] for m in window.client.requests[-1]["messages"]]
    assert len(window.refused) == 1


def test_other_errors_are_not_retried_and_end_the_run_as_errors():
    def fail(messages):
        response = httpx2.Response(400, request=httpx2.Request("POST", "http://x/v1"))
        raise openai.BadRequestError("Error code: 400 - Invalid 'messages[1].content'",
                                     response=response, body={"message": "Invalid content",
                                                              "type": "invalid_request_error"})
    client = ScriptedClient([fail, reply("never")])
    bot = cb.CompactingAgent(client, "m", summarizer=summarizer(), on_event=None)
    with pytest.raises(openai.BadRequestError):
        bot.chat("hi")
    assert bot.stop_reason == "error" and len(client.requests) == 1
    assert bot.summarizer.requests == []


def sdk_error(status: int, body) -> openai.APIStatusError:
    """The exception the real SDK raises for this HTTP answer."""
    def handler(request):
        return httpx2.Response(status, json=body)
    sdk = openai.OpenAI(api_key="k", base_url="http://fake.test/v1", max_retries=0,
                        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    with pytest.raises(openai.APIStatusError) as caught:
        sdk.chat.completions.create(model="m", messages=[user("hi")])
    return caught.value


@pytest.mark.parametrize(("status", "body"), [
    (400, {"error": {"message": "This model's maximum context length is 8192 tokens. However, "
                                "your messages resulted in 8227 tokens.",
                     "type": "invalid_request_error", "param": "messages",
                     "code": "context_length_exceeded"}}),  # OpenAI
    (400, {"error": {"message": "Your input exceeds the context window of this model.",
                     "type": "invalid_request_error", "code": "context_length_exceeded"}}),
    (400, {"error": {"message": "This model's maximum context length is 65536 tokens. However, "
                                "you requested 66343 tokens (62247 in the messages, 4096 in the "
                                "completion).", "type": "invalid_request_error", "param": None,
                     "code": "invalid_request_error"}}),  # DeepSeek: the code says nothing
    (400, {"type": "error", "error": {"type": "invalid_request_error",
                                      "message": "prompt is too long: 213462 tokens > 200000 "
                                                 "maximum"}}),  # Anthropic
    (400, {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "The input token "
                     "count (1196265) exceeds the maximum number of tokens allowed (1048575)."}}),
    (400, {"error": {"code": 400, "message": "the request exceeds the available context size, "
                     "try increasing it", "type": "exceed_context_size_error",
                     "n_prompt_tokens": 14429, "n_ctx": 8192}}),  # llama.cpp's server
    (500, {"error": {"code": 500, "message": "the request exceeds the available context size",
                     "type": "exceed_context_size_error"}}),  # older llama.cpp
    (400, {"object": "error", "message": "This model's maximum context length is 4096 tokens. "
           "However, you requested 5000 tokens. Please reduce the length of the messages or "
           "completion.", "type": "BadRequestError", "code": 400}),  # vLLM
], ids=["openai", "openai-new", "deepseek", "anthropic", "gemini", "llama.cpp", "llama.cpp-500",
        "vllm"])
def test_context_errors_of_real_providers_are_recognised_through_the_real_sdk(status, body):
    assert cb.is_context_overflow(sdk_error(status, body))


@pytest.mark.parametrize(("status", "body"), [
    (400, {"error": {"message": "Invalid 'messages[2].content': string too long.",
                     "type": "invalid_request_error"}}),
    (429, {"error": {"message": "Request too large for gpt-4.1: Limit 30000 tokens per min, "
                                "too many tokens", "type": "tokens",
                     "code": "rate_limit_exceeded"}}),
    (429, {"error": {"message": "context_length_exceeded? no: slow down",
                     "code": "context_length_exceeded"}}),
    (401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}),
], ids=["bad-content", "rate-limit", "429-never", "auth"])
def test_other_errors_are_not_mistaken_for_a_context_overflow(status, body):
    assert not cb.is_context_overflow(sdk_error(status, body))
    assert not cb.is_context_overflow(ValueError("maximum context length is 5 tokens"))


def test_the_real_openai_sdk_gets_a_context_length_400_then_a_compacted_request_it_accepts():
    bodies, refused = [], []

    def server(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if len(request.content) // 4 > 1_500:
            refused.append(body)
            return httpx2.Response(400, json={"error": {
                "message": "This model's maximum context length is 1500 tokens.",
                "type": "invalid_request_error", "param": "messages",
                "code": "context_length_exceeded"}})
        bodies.append(body)
        text = "notes: three long reads" if "tools" not in body else "accepted"
        return httpx2.Response(200, json={
            "id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    sdk = openai.OpenAI(api_key="k", base_url="http://fake.test/v1", max_retries=0,
                        http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    bot = cb.CompactingAgent(sdk, "m", on_event=None)
    bot.messages += [*long_history(turns=3)[1:], {"role": "assistant", "content": "read them"}]
    history = copy.deepcopy(bot.messages)
    assert bot.chat("and?") == "accepted" and bot.stop_reason == "done"
    # the task's request, refused; then a summarising request too long for this server,
    # refused as well, and sent again with less in it; then the retry, accepted
    assert "tools" in refused[0] and "tools" not in refused[1] and len(refused) == 2
    *summarising, retried = bodies
    assert len(summarising) >= 2 and all("tools" not in body for body in summarising)
    assert all(pairing_problem(body["messages"]) is None for body in summarising)
    assert retried["messages"][0] == history[0] and len(retried["messages"]) == 3
    assert retried["messages"][1]["content"].endswith("notes: three long reads")
    assert retried["messages"][2] == user("and?") and "tools" in retried
    assert bot.messages[:len(history)] == history  # the history is whole


def test_a_server_too_small_for_even_one_summarised_message_ends_in_context_overflow():
    window = cb.with_context_window(ScriptedClient([reply("never")] * 9), 600)
    bot = cb.CompactingAgent(window, "m", on_event=None)
    bot.messages = long_history(turns=2)
    answer = bot.chat("and?")
    assert bot.stop_reason == "context_overflow" and "one message" in answer
    assert_history_valid(bot.messages) and window.client.requests == []


def test_with_context_window_refuses_like_openai_and_the_client_never_sees_it():
    inner = ScriptedClient([reply("hi")])
    window = cb.with_context_window(inner, 50)
    with pytest.raises(openai.BadRequestError) as caught:
        window.chat.completions.create(model="m", messages=[user("x" * 400)])
    assert caught.value.code == "context_length_exceeded" and cb.is_context_overflow(caught.value)
    assert inner.requests == [] and len(window.refused) == 1
    assert window.chat.completions.create(model="m", messages=[user("x")]).choices


# --- sessions -------------------------------------------------------------------------------


def test_a_compaction_is_a_session_entry_the_loader_carries_and_a_resumed_agent_gets_back(
        tmp_path):
    path = tmp_path / "s.jsonl"
    options = {"budget": 2_000, "keep_recent": 500}
    script = [tool_call("read_file", path="f.txt")] * 6 + [reply("done"), reply("later")]
    (tmp_path / "f.txt").write_text("z" * 3_000)
    meter = cb.Meter()
    bot = cb.CompactingAgent(ScriptedClient(script), "gpt-4.1-mini", on_event=meter,
                             summarizer=summarizer(), **options)
    with sessions.new_session(path, clock=FakeClock()) as session:
        sessions.record(session, bot)
        cb.record_compactions(session, bot)
        bot.chat("read f.txt a few times")
    loaded = sessions.load_session(path)
    entries = [e for e in loaded.entries.values() if e["type"] == "compaction"]
    assert entries and entries[-1]["summary"] == bot.compaction.summary
    assert (entries[-1]["end"], tuple(entries[-1]["kept"])) == (bot.compaction.end,
                                                                 bot.compaction.kept)
    assert any("'compaction'" in problem and "kept" in problem for problem in loaded.problems)
    assert loaded.messages() == bot.messages  # lossless: every message is in the file
    [stop] = [e for e in loaded.entries.values() if e["type"] == "stop"]  # summaries are paid
    assert stop["usage"]["prompt_tokens"] == cb.totals(meter.rows, "m")["prompt_tokens"]
    assert any(row["kind"] == "summary" for row in meter.rows)
    would_send = bot.request_messages()
    again = cb.CompactingAgent(ScriptedClient([reply("again")]), "gpt-4.1-mini",
                               on_event=None, summarizer=summarizer(), **options)
    with sessions.open_session(path) as session:
        sessions.resume(session, again)
        assert cb.restore_compaction(session, again) == bot.compaction
        assert again.request_messages() == would_send
        cb.record_compactions(session, again)
        again.chat("and again")
    assert sessions.load_session(path).messages() == again.messages
    bot.chat("after the session was closed")  # its handler must not write, nor fail
    assert sessions.load_session(path).messages() == again.messages


def test_restore_refuses_a_compaction_that_does_not_fit_the_branch_and_none_means_none(
        tmp_path):
    path = tmp_path / "s.jsonl"
    bot = Agent(ScriptedClient([tool_call("list_files"), reply("hi")]), "m", on_event=None)
    with sessions.new_session(path) as session:
        sessions.record(session, bot)
        bot.chat("hello")  # system, user, assistant with a call, its result (3), answer
    fresh = cb.CompactingAgent(ScriptedClient([]), "m", on_event=None)
    fresh.compaction = cb.Compaction("stale", 1)
    with sessions.open_session(path) as session:
        sessions.resume(session, fresh)
        assert cb.restore_compaction(session, fresh) is None and fresh.compaction is None
        before = path.read_bytes()
        for wrong in ({"end": 99, "kept": []}, {"end": 2, "kept": [5]}, {"end": 4, "kept": "1"},
                      {"end": 2, "kept": [], "summary": None}, {"end": 3, "kept": []}):
            session.append("compaction", **{"summary": "bad", **wrong})
            with pytest.raises(ValueError, match="does not fit this branch"):
                cb.restore_compaction(session, fresh)
        assert path.read_bytes().startswith(before)


# --- measuring ------------------------------------------------------------------------------


def test_the_meter_counts_every_model_call_summaries_included_and_no_usage_as_zero():
    meter = cb.Meter()
    meter({"type": "message_end", "turn": 1, "message": {"role": "assistant"},
           "usage": {"prompt_tokens": 100, "completion_tokens": 5}})
    meter({"type": "message_end", "turn": 1, "message": {"role": "tool"}})
    meter({"type": "compaction", "turn": 2, "requests": 3,
           "usage": {"prompt_tokens": 40, "completion_tokens": 9}})
    meter({"type": "message_end", "turn": 2, "message": {"role": "assistant"}, "usage": None})
    totals = cb.totals(meter.rows, "gpt-4.1-mini")
    assert totals == {"turns": 2, "model_calls": 5, "compactions": 1, "prompt_tokens": 140,
                      "completion_tokens": 14, "cost": tracing.cost("gpt-4.1-mini", 140, 14)}
    assert SHOP.paid_by_turn(meter.rows) == [100, 140]  # the running total the charts draw
    assert cb.totals(meter.rows, "no-such-model")["cost"] is None


def test_the_estimate_is_the_scripted_models_count_give_or_take_the_model_name():
    bot = Agent(ScriptedClient([reply("hi")]), "m", on_event=None)
    bot.chat("x" * 1_000)
    request = bot.client.requests[0]
    estimate = cb.estimate_tokens(request["messages"], request["tools"])
    reported = len(agent.to_json(request)) // 4  # what ScriptedClient reports as usage
    assert abs(reported - estimate) <= 5


# --- take it with you -----------------------------------------------------------------------


@pytest.mark.slow
def test_the_exported_module_compacts_beside_agent_py_and_lesson_07s(tmp_path):
    kit = tmp_path / "kit"
    kit.mkdir()
    (kit / "agent.py").write_bytes((Path(course.ROOT) / "agent.py").read_bytes())
    for lesson, name in (("07-tracing", "tracing.py"), ("12-context-budget",
                                                         "context_budget.py")):
        assert course.main(["export", lesson, "-o", str(kit / name)]) == 0
    program = """
import context_budget as cb
from agent import ScriptedClient, reply, tool_call

open("big.txt", "w").write("b" * 9000)
script = [tool_call("read_file", path="big.txt")] * 4 + [reply("done")]
bot = cb.CompactingAgent(ScriptedClient(script), "gpt-4.1-mini", budget=2500, keep_recent=400,
                         elide_after=1, summarizer=ScriptedClient([reply("notes")] * 9),
                         on_event=None)
meter = cb.Meter()
bot.on_event = meter
print(bot.chat("read big.txt"), bot.compaction is not None, len(bot.messages))
print(cb.totals(meter.rows, "gpt-4.1-mini")["compactions"] > 0)
"""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AGENT_FROM_ZERO")}
    done = subprocess.run([sys.executable, "-c", program], cwd=kit, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["done", "True", "11", "True"]
    exported = (kit / "context_budget.py").read_text()
    assert "import course" not in exported and "careful_model" not in exported
    assert "props" not in exported and "note_taker" not in exported


# --- what the lesson says, against what the code does today -----------------------------------


def lesson_texts() -> dict[str, str]:
    return {name: path.read_text(encoding="utf-8") for name, path in (
        ("en", LESSONS / "12-context-budget.md"), ("zh", LESSONS / "zh" / "12-context-budget.md"))}


def test_the_figures_the_lesson_states_are_what_the_code_computes(shop_runs):
    plain, plain_meter, _ = shop_runs["none"]
    prompts = [row["prompt_tokens"] for row in plain_meter.rows]
    n, first, last = len(prompts), prompts[0], prompts[-1]
    formula = n * first + (last - first) / (n - 1) * n * (n - 1) / 2
    assert [p > 16_000 for p in prompts] == [False] * (n - 6) + [True] * 6  # "the last six"
    both = shop_runs["both"][0]
    sent, end = both.request_messages(), both.compaction.end
    kept_tokens = round(cb.estimate_tokens(both.messages, both.tools), -3)
    sent_tokens = round(cb.estimate_tokens(sent, both.tools), -2)
    # (how the English text says it, the figure itself, which the Chinese text has too)
    figures = [(f"{n}-turn", str(n)), (f"is {first} tokens", str(first)),
               (f"last {last:,}", f"{last:,}"), (f"{sum(prompts):,} prompt", f"{sum(prompts):,}"),
               (f"says {formula:,.0f}", f"{formula:,.0f}"),
               (f"{len(both.messages)} messages, about {kept_tokens:,}", f"{kept_tokens:,}"),
               (f"{len(sent)} messages, about {sent_tokens:,}", f"{sent_tokens:,}"),
               (f"2–{end - 1}", f"2–{end - 1}"), (f"{end}–{len(both.messages) - 1}",
                                                  f"{end}–{len(both.messages) - 1}")]
    baseline = sum(prompts)
    for _, meter, _ in shop_runs.values():  # the table's rows: the same in both languages
        totals = cb.totals(meter.rows, "scripted-demo")
        row = (f"| {totals['model_calls']} ({totals['compactions']}) | "
               f"{totals['prompt_tokens']:,} | {totals['prompt_tokens'] / baseline:.0%} | "
               f"${totals['cost']:.4f} |")
        figures.append((row, row))
    for name, said in (("none", "without compaction"), ("elision", "with elision")):
        bot, meter, _ = shop_runs[name]  # the caching paragraph's two figures
        cached = f"${SHOP.cached_cost(meter.rows, SHOP.cached_tokens(bot)):.4f}"
        figures.append((f"{cached} {said}", cached))
    texts = lesson_texts()
    assert [said for said, _ in figures if said not in texts["en"]] == []
    assert [figure for _, figure in figures if figure not in texts["zh"]] == []


def test_the_cached_costs_say_what_the_lesson_says(shop_runs):
    cost = {name: SHOP.cached_cost(meter.rows, SHOP.cached_tokens(bot))
            for name, (bot, meter, _) in shop_runs.items()}
    assert all(cost[name] <= 0.6 * cost["none"] for name in STRATEGIES)  # "about half"
    assert min(cost, key=cost.get) == "elision"  # "elision alone is now the cheapest"


def test_the_cache_counts_only_an_exact_prefix_of_an_earlier_request_of_1024_tokens_or_more():
    big = "x" * 6_000
    history = [SYSTEM, user(big), {"role": "assistant", "content": "a"}]
    requests = [{"messages": history[:2]}, {"messages": history},
                {"messages": [SYSTEM, user(big + "!")]}, {"messages": [SYSTEM, user("short")]}]
    bot = types.SimpleNamespace(client=types.SimpleNamespace(requests=requests))
    # the second request shares the first one's two messages; the third shares the system
    # prompt only, the fourth is under 1,024 tokens
    expected = cb.estimate_tokens(history[:2]) + cb.estimate_tokens([SYSTEM])
    assert SHOP.cached_tokens(bot) == expected


def test_one_name_for_how_many_recent_turns_keep_their_results_whole():
    assert "elide_after" in inspect.signature(cb.elide_old_results).parameters
    assert "elide_after" in inspect.signature(cb.CompactingAgent).parameters
    old_name = "keep" + "_turns"
    for path in (NOTEBOOK, LESSONS / "12-context-budget.md", LESSONS / "GLOSSARY.md",
                 LESSONS / "zh" / "12-context-budget.md", LESSONS / "zh" / "GLOSSARY.md",
                 Path(__file__),
                 Path(course.ROOT) / "notebooks" / "kit" / "main.py",
                 Path(course.ROOT) / "notebooks" / "props" / "context_lab.py"):
        assert old_name not in path.read_text(encoding="utf-8"), path


def test_what_the_lesson_says_of_ollama_and_of_where_the_summary_stands():
    english = lesson_texts()["en"]
    notebook = NOTEBOOK.read_text(encoding="utf-8")
    for text in (english, notebook):
        assert "the system prompt and the task" not in text  # Ollama keeps the system messages
        assert "where the messages it replaces stood" not in text  # compacted puts it after
    assert "keeping the system messages and the latest one" in english
    assert "the system messages and the latest message are kept" in notebook
    chinese = lesson_texts()["zh"]
    assert "最先截掉的是系统提示词和任务" not in chinese and "保留系统消息和最新的一条" in chinese


def test_the_notebook_shows_a_stub_once_and_gives_every_run_a_folder_of_its_own():
    cells = course.cells(NOTEBOOK)
    outputs = json.dumps([c.get("outputs", []) for c in cells])
    assert "[elided" in outputs and "elided: [elided" not in outputs
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    assert not any("os.chdir(" in source for source in code)  # in_folder, run_task, scratch
    folders = [name for source in code
               for name in re.findall(r'make_project\((?:lab|folder) / "([^"]+)"\)', source)]
    assert folders and len(folders) == len(set(folders)), folders

"""What does compaction cost the host, and what does it save? Run by hand (pytest does not
collect it):

    .venv/bin/python tests/bench_context_budget.py

(a) The notebook's task (the shop, 32 turns) under each strategy: turns, model calls, prompt
    tokens against no compaction, and the host's own time for the whole run (the scripted
    model answers at once, so this is the agent's work: tools, JSON, compaction).
(b) The overhead of one request on long histories (200, 2,000 and 10,000 messages, results of
    about 1,500 characters): CompactingAgent.request_messages() with elision and a summary in
    place, estimate() (one JSON encoding of the request), and choose_cut(). Median of runs.

Target: the host's work per request well under the time of a model call (hundreds of ms).
"""

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "notebooks")]

import course  # noqa: E402  (reads the notebook's cells)
from props import context_lab as shop  # noqa: E402  (the shop, the careful model, the note taker)

from agent import Agent, ScriptedClient  # noqa: E402

RUNS = 7


def the_task(cb) -> None:
    strategies = {"no compaction": None, "elision": {"elide_after": 2},
                  "summary": {"budget": 6_000, "keep_recent": 1_500},
                  "both": {"budget": 6_000, "keep_recent": 1_500, "elide_after": 2}}
    baseline = None
    print("(a) the notebook's task")
    for name, options in strategies.items():
        meter = cb.Meter()
        started = time.perf_counter()
        if options is None:
            bot, problems = shop.run_task(Agent, on_event=meter)
        else:
            bot, problems = shop.run_task(cb.CompactingAgent, on_event=meter,
                                          summarizer=ScriptedClient([shop.note_taker] * 20),
                                          **options)
        took = time.perf_counter() - started
        t = cb.totals(meter.rows, "scripted-demo")
        baseline = baseline or t["prompt_tokens"]
        print(f"  {name:<14} turns {t['turns']:>2}, model calls {t['model_calls']:>2}, prompt "
              f"tokens {t['prompt_tokens']:>8,} ({t['prompt_tokens'] / baseline:4.0%}), "
              f"verifier {'passes' if not problems else 'FAILS'}, "
              f"host time {took * 1000:6.1f} ms (the shop written and read included)")


def long_history(n: int) -> list[dict]:
    messages = [{"role": "system", "content": "You are a coding agent."},
                {"role": "user", "content": "a long task"}]
    call = 0
    while len(messages) < n:
        call += 1
        messages.append({"role": "assistant", "content": "", "tool_calls": [{
            "id": f"call_{call}", "type": "function",
            "function": {"name": "read_file", "arguments": f'{{"path": "f{call}.py"}}'}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{call}", "content": "x" * 1_500})
    return messages


def median_ms(work) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def overhead(cb) -> None:
    print("(b) one request on a long history (median of", RUNS, "runs)")
    for n in (200, 2_000, 10_000):
        bot = cb.CompactingAgent(ScriptedClient([]), "m", elide_after=2, on_event=None)
        bot.messages = long_history(n)
        bot.compaction = cb.Compaction("notes", end=n // 2, kept=(1,))
        send = median_ms(bot.request_messages)
        estimate = median_ms(bot.estimate)
        cut = median_ms(lambda bot=bot, n=n: cb.choose_cut(bot.messages, n // 2, 2_000))
        print(f"  {n:>6,} messages: request_messages {send:7.2f} ms, estimate {estimate:7.2f} ms,"
              f" choose_cut {cut:7.2f} ms")


if __name__ == "__main__":
    module = course.load_notebook("12-context-budget")  # the export cells: context_budget
    the_task(module)
    overhead(module)

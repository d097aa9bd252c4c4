"""How much time does the agent itself add? Run by hand (pytest does not collect it):

    .venv/bin/python tests/bench_loop.py

(a) The loop's own overhead per turn (one model call plus the tools it asked for), on a
    minimal client that hands back pre-built ChatCompletion objects, so building responses
    is not counted; then the same turns on ScriptedClient, which also builds each response
    and keeps a JSON copy of each request.
    Workload: 500 chat() calls, each on a fresh Agent with two turns (a tool call to a
    trivial tool, then the answer) = 1000 turns, so the history stays short; plus one
    realistic 1000-turn chat whose history grows to ~2000 messages, on the minimal client.
(b) The import time of agent.py against `import openai` alone, in fresh subprocesses,
    median of several runs; agent's extra is timed inside each process, after openai.

Targets: well under 1 ms per turn; under 50 ms of import time beyond openai's.
"""

import io
import statistics
import subprocess
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from openai.types.chat import ChatCompletion  # noqa: E402

from agent import Agent, ScriptedClient, print_event, reply, schema, tool_call  # noqa: E402

CHATS = 500  # two turns each: 1000 turns
REPEATS = 5
IMPORT_RUNS = 7


def noop() -> dict:
    """The trivial tool: the bench measures the loop, not the tool."""
    return {"ok": True}


REGISTRY = {"noop": noop}
TOOLS = [schema(noop, "Does nothing.")]


class PrebuiltClient:
    """Hands back ready-made ChatCompletion objects in turn; nothing is built per call."""

    def __init__(self, completions):
        self.completions, self.n = completions, 0
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(self, **request):
        completion = self.completions[self.n % len(self.completions)]
        self.n += 1
        return completion


def scripted_completions() -> list[ChatCompletion]:
    """The two responses of one chat, as ScriptedClient would build them."""
    client = ScriptedClient([tool_call("noop"), reply("done")])
    messages = [{"role": "user", "content": "go"}]
    return [client.create(model="m", messages=messages) for _ in range(2)]


def best_of(run) -> float:
    """Seconds for the fastest of REPEATS runs (the least disturbed by the machine)."""
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def fresh_agents(make_client, on_event=None):
    def run():
        for _ in range(CHATS):
            agent = Agent(make_client(), "m", tools=TOOLS, registry=REGISTRY, on_event=on_event)
            assert agent.chat("go") == "done"
    return run


def long_chat(turns: int = 1000):
    """One chat of `turns` turns: turns-1 tool calls, then the answer; the history grows."""
    calls, answer = scripted_completions()

    def run():
        client = PrebuiltClient([calls] * (turns - 1) + [answer])
        agent = Agent(client, "m", tools=TOOLS, registry=REGISTRY, max_turns=turns,
                      on_event=None)
        assert agent.chat("go") == "done" and len(agent.messages) == 2 * turns + 1
    return run


def import_times() -> tuple[float, float, float]:
    """Medians, in seconds, over IMPORT_RUNS pairs of fresh interpreters (startup itself not
    counted; the two kinds alternate so a busy machine disturbs both alike):
    `import openai` alone, `import agent` alone, and agent's extra: in the second kind of
    process, the time `import agent` takes after `import openai` (a steadier figure than the
    difference of two noisy medians)."""
    clock = "import time; t0 = time.perf_counter(); "
    only_openai = clock + "import openai; print(time.perf_counter() - t0)"
    agent_after = (clock + "import openai; t1 = time.perf_counter(); import agent; "
                   "t2 = time.perf_counter(); print(t1 - t0, t2 - t0, t2 - t1)")
    alone, total, extra = [], [], []
    for _ in range(IMPORT_RUNS):
        for code in (only_openai, agent_after):
            out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                                 capture_output=True, text=True).stdout.split()
            if len(out) == 1:
                alone.append(float(out[0]))
            else:
                total.append(float(out[1]))
                extra.append(float(out[2]))
    return statistics.median(alone), statistics.median(total), statistics.median(extra)


def main() -> None:
    turns = 2 * CHATS
    completions = scripted_completions()
    print(f"(a) loop overhead per turn: {CHATS} chats x 2 turns on fresh agents = {turns} "
          f"turns, best of {REPEATS}")
    prebuilt = best_of(fresh_agents(lambda: PrebuiltClient(completions)))
    scripted = best_of(fresh_agents(lambda: ScriptedClient([tool_call("noop"), reply("done")])))
    printing = fresh_agents(lambda: PrebuiltClient(completions), on_event=print_event)
    with redirect_stdout(io.StringIO()):
        with_printing = best_of(printing)
    long = best_of(long_chat(turns))
    per_turn = {
        "loop alone (pre-built responses, on_event=None)": prebuilt,
        "loop + the default print_event (to a StringIO)": with_printing,
        "loop alone, one 1000-turn chat (history grows to 2001)": long,
        "loop + ScriptedClient (builds responses, copies requests)": scripted,
    }
    for label, seconds in per_turn.items():
        print(f"    {label:<58} {seconds / turns * 1e6:8.1f} us/turn")
    print(f"    ScriptedClient's own share: {(scripted - prebuilt) / turns * 1e6:.1f} us/turn")
    print("    target: well under 1000 us/turn for the loop alone "
          f"-> {'OK' if prebuilt / turns < 1e-3 else 'TOO SLOW'}")

    print(f"\n(b) import time in fresh interpreters, median of {IMPORT_RUNS}")
    openai_alone, with_agent, extra = import_times()
    print(f"    import openai alone               {openai_alone * 1000:7.1f} ms")
    print(f"    import openai, then import agent  {with_agent * 1000:7.1f} ms")
    print(f"    agent's extra, after openai       {extra * 1000:7.1f} ms   target: under 50 ms "
          f"-> {'OK' if extra < 0.050 else 'TOO SLOW'}")
    print("    (openai's own import time varies by hundreds of ms on a busy machine; the extra\n"
          "     is measured inside each process, so it does not inherit that noise)")


if __name__ == "__main__":
    main()

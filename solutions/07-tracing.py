"""Reference solutions of lesson 07's coding exercises (checked by tests/test_exercises.py).

`import tracing` is the lesson's export cells: course's finder loads them from the notebook,
or, once exported (`python notebooks/course.py export 07-tracing -o tracing.py`), the file."""

import hashlib

import pytest
import tracing

import agent

# --- 07.1 a budget guard ------------------------------------------------------------------


class OverBudget(Exception):
    """The run cost more than its budget."""


def budget_guard(limit: float, prices=None):
    """An on_event handler that raises OverBudget as soon as a run has cost more than limit
    dollars. It raises at the assistant's message_end, where the usage arrives: before the
    tools of that call run, so chat() records stop_reason "error"."""
    spent, model = 0.0, None

    def on_event(event: dict) -> None:
        nonlocal spent, model
        if event["type"] == "agent_start":
            spent, model = 0.0, event["model"]
        elif event["type"] == "message_end" and event["message"]["role"] == "assistant":
            usage = event.get("usage") or {}
            spent += tracing.cost(model, usage.get("prompt_tokens", 0),
                                  usage.get("completion_tokens", 0), prices) or 0.0
            if spent > limit:
                raise OverBudget(f"this run has cost ${spent:.4f}, over its ${limit:.4f}")

    return on_event


def traced(tracer, guard):
    """The tracer first: it writes each event before the guard may raise on it, so the trace
    holds the model call that passed the budget."""
    return agent.fan_out(tracer, guard)


# --- 07.2 cached tokens -------------------------------------------------------------------

CACHED_PRICES = {  # dollars per million tokens: (input, cached input, output). Examples.
    "gpt-4.1-mini": (0.40, 0.10, 1.60),
    "scripted-demo": (0.40, 0.10, 1.60),
}


def cached_cost(model: str, usage: dict, prices=CACHED_PRICES):
    """Dollars for one model call; the cached part of the prompt at the cached price."""
    price = prices.get(model)
    if price is None:
        return None
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    fresh = usage.get("prompt_tokens", 0) - cached  # cached tokens are part of the prompt
    return (fresh * price[0] + cached * price[1]
            + usage.get("completion_tokens", 0) * price[2]) / 1_000_000


# --- 07.3 a text timeline -----------------------------------------------------------------


def text_timeline(run: list[dict], width: int = 60) -> str:
    """Two lanes of `width` characters: model calls as █, tools as ▌, failures as x."""
    t0 = run[0]["time"]
    wall = (run[-1]["time"] - t0) or 1.0
    lanes = {"model": [" "] * width, "tool": [" "] * width}
    for s in tracing.spans(run):
        if s["kind"] not in lanes:
            continue
        first = min(int((s["start"] - t0) / wall * width), width - 1)
        last = max(first + 1, int((s["end"] - t0) / wall * width))  # at least one character
        mark = "x" if s["error"] else "█" if s["kind"] == "model" else "▌"
        lanes[s["kind"]][first:last] = mark * (min(last, width) - first)
    return f"model {''.join(lanes['model'])}\ntools {''.join(lanes['tool'])}"


# --- 07.4 replay as a regression test -----------------------------------------------------


def test_replay_matches_the_recording(records, make_fixture, tmp_path):
    make_fixture(tmp_path)  # the folder must start as the recorded one did
    with pytest.MonkeyPatch.context() as monkeypatch:  # the working directory comes back after
        monkeypatch.chdir(tmp_path)
        replayed = tracing.replay(records)
    assert tracing.history_differences(records, replayed.messages) == []


# --- 07.5 record the system prompt --------------------------------------------------------


def setup_of(bot: agent.Agent) -> dict:
    """What a replay must share with the recording: a hash of the system prompt (the prompt
    itself may be long, or private), and the names of the tools offered."""
    prompt = bot.messages[0]["content"]
    return {"system_prompt": hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16],
            "tools": sorted(tool["function"]["name"] for tool in bot.tools)}


class SetupAgent(agent.Agent):
    """An Agent whose agent_start event carries setup_of(self)."""

    def emit(self, event_type: str, **data) -> None:
        if event_type == "agent_start":
            data["setup"] = setup_of(self)
        super().emit(event_type, **data)


def setup_differences(records: list[dict], bot: agent.Agent) -> list[str]:
    """[] when bot has the setup recorded at the trace's first agent_start; else what changed."""
    recorded = records[0].get("setup") if records else None
    if recorded is None:
        return ["the trace records no setup, so a changed prompt or tool cannot be seen"]
    now, found = setup_of(bot), []
    if now["system_prompt"] != recorded["system_prompt"]:
        found.append("the system prompt is not the recorded one")
    added = sorted(set(now["tools"]) - set(recorded["tools"]))
    removed = sorted(set(recorded["tools"]) - set(now["tools"]))
    if added or removed:
        found.append(f"tools added: {added or 'none'}; removed: {removed or 'none'}")
    return found


SOLUTIONS = {
    "07.1": (budget_guard, traced),
    "07.2": (cached_cost,),
    "07.3": (text_timeline,),
    "07.4": (test_replay_matches_the_recording,),
    "07.5": (setup_of, SetupAgent, setup_differences),
}

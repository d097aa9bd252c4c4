"""Reference solutions of lesson 12's coding exercises; tests/test_exercises.py runs the checks
of notebooks/checks/12-context-budget.py on them."""

import json

import context_budget  # lesson 12's export cells (tests import course first, which finds them)


def safe_cut(messages: list[dict], wanted: int) -> int:
    """12.1: the latest index no later than wanted (and the current turn) that is not a tool
    result, and not before 1."""
    cut = min(wanted, context_budget.current_turn(messages))
    while cut > 1 and messages[cut]["role"] == "tool":
        cut -= 1
    return max(cut, 1)


def succeeded(message: dict) -> bool:
    try:
        data = json.loads(message.get("content") or "")
    except json.JSONDecodeError:
        return True  # cut by agent.bound: no longer JSON, but the read worked
    return not (isinstance(data, dict) and "error" in data)


def elide_stale_reads(messages: list[dict]) -> list[dict]:
    """12.2: every read_file result with a later successful read of the same path becomes a
    stub; everything else stays as it is."""
    calls = context_budget.call_names(messages)

    def path_read(message):
        function = calls.get(message.get("tool_call_id"), {}).get("function", {})
        if message["role"] != "tool" or function.get("name") != "read_file":
            return None
        return json.loads(function.get("arguments") or "{}").get("path")

    newest = {}
    for message in messages:
        path = path_read(message)
        if path is not None and succeeded(message):
            newest[path] = message["tool_call_id"]
    out = []
    for message in messages:
        path = path_read(message)
        if path is not None and succeeded(message) and newest[path] != message["tool_call_id"]:
            message = {**message, "content": context_budget.stub(
                calls[message["tool_call_id"]], message["content"])}
        out.append(message)
    return out


class Calibrated:
    """12.3: estimate_tokens, scaled by all reported prompt tokens over all estimated ones."""

    def __init__(self):
        self.estimated = self.reported = 0

    def tokens(self, messages: list[dict], tools=()) -> int:
        estimate = context_budget.estimate_tokens(messages, tools)
        if not self.estimated:
            return estimate
        return round(estimate * self.reported / self.estimated)

    def observe(self, estimated: int, usage: dict | None) -> None:
        reported = (usage or {}).get("prompt_tokens") or 0
        if reported > 0 and estimated > 0:
            self.estimated += estimated
            self.reported += reported


SOLUTIONS = {"12.1": (safe_cut,), "12.2": (elide_stale_reads,), "12.3": (Calibrated,)}

"""Lesson 04's lab: files for the examples, a look at what a history leaves unanswered, scripted
steps that react to the error a model reads, the stubborn model, and a quiet run for the checks.
None of it is part of the agent: the guards themselves are the notebook's export cells."""

import json
from pathlib import Path

from agent import Agent, ScriptedClient, reply, tool_call


def write(path, text):
    """Write a file an example needs (and its folder), whatever was there before."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")


def unanswered(messages):
    """Ids of tool calls in the history that no tool message answers."""
    answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    return [c["id"] for m in messages for c in m.get("tool_calls", []) if c["id"] not in answered]


def last_error(messages):
    """The error text of the last tool message, or None: what a model reads."""
    last = messages[-1]
    return json.loads(last["content"]).get("error") if last["role"] == "tool" else None


def on_error(words, then):
    """A scripted step: if the last tool result is an error mentioning `words`, respond
    with `then`; otherwise say what was unexpected."""
    def decide(messages):
        error = last_error(messages) or ""
        if words in error:
            return then
        return reply(f"I expected an error about {words!r} and read: {messages[-1]['content']}")
    return decide


def stubborn(messages):
    """A model that reads missing.py again and again, and stops only when a result tells it
    that repeating is pointless (an error that says "not run")."""
    if "not run" in (last_error(messages) or ""):
        return reply("Reading missing.py again will not help: it does not exist. I stop here.")
    return tool_call("read_file", path="missing.py")


def run_quietly(script, task="Do the task.", **options):
    """A new Agent on a scripted model, asked `task` once; it prints nothing unless given an
    on_event. Returns the agent. Options are Agent's: registry=, max_turns=, ..."""
    options.setdefault("on_event", None)
    bot = Agent(ScriptedClient(script), "scripted", **options)
    bot.chat(task)
    return bot

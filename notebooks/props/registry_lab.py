"""Lesson 02's lab: the notes file the runs read, check_tools reporting instead of raising, and
a quiet run of an agent in a folder of its own, for the checks. None of it is part of the agent."""

from pathlib import Path

import course

from agent import Agent, ScriptedClient, check_tools

NOTES = "Tools act.\nThe model decides.\nThe host checks.\n"  # notes.txt, the file the runs read


def check_says(tools, registry) -> str:
    """check_tools, reporting instead of raising: "ok", or what it found."""
    try:
        check_tools(tools, registry)
        return "ok"
    except ValueError as exc:
        return str(exc)


def quiet_run(task, script, **options):
    """Run an Agent (options: tools=, registry=) on a scripted model, printing nothing, in a
    throw-away folder that holds notes.txt. Returns the agent and what notes.txt says afterwards
    (None if it is gone)."""
    with course.scratch("02-run"):
        Path("notes.txt").write_text(NOTES, encoding="utf-8")
        bot = Agent(ScriptedClient(script), "scripted", on_event=None, **options)
        bot.chat(task)
        notes = Path("notes.txt")
        return bot, notes.read_text(encoding="utf-8") if notes.exists() else None

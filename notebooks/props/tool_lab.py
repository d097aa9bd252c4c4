"""Lesson 01's lab: a way to call a tool and see what it did, the settings file the edits are
tried on, and the article's edit_file, as published and with its branches put right, which the
notebook compares with agent.edit_file. None of it is part of the agent: do not copy it."""

from pathlib import Path

from agent import to_json

# Two settings with the same text in both: an edit of '"debug": True' is ambiguous.
SETTINGS = 'DEV = {"debug": True, "port": 8000}\nPROD = {"debug": True, "port": 80}\n'


def attempt(tool, *args) -> str:
    """Call a tool; say what it returned, or which exception it raised and why."""
    try:
        return f"returns {to_json(tool(*args))}"
    except Exception as exc:
        return f"raises {type(exc).__name__}: {exc}"


def call_text(tool, *args) -> str:
    """The call as it is written: read_file('missing.py')."""
    return f"{tool.__name__}({', '.join(repr(a) for a in args)})"


def article_edit_file(path, old_str, new_str):
    """The article's edit_file, as published (branches swapped)."""
    file = Path(path)
    if old_str:  # swapped: this branch was meant for an EMPTY old_str
        file.write_text(new_str, encoding="utf-8")
        return {"path": path, "action": "created_file"}
    original = file.read_text(encoding="utf-8")
    if old_str not in original:
        return {"path": path, "action": "old_str not found"}
    file.write_text(original.replace(old_str, new_str, 1), encoding="utf-8")
    return {"path": path, "action": "edited"}


def first_match_edit_file(path, old_str, new_str):
    """The article's edit_file with its branches put right: it still edits the FIRST match."""
    file = Path(path)
    if not old_str:
        file.write_text(new_str, encoding="utf-8")
        return {"path": path, "action": "created_file"}
    original = file.read_text(encoding="utf-8")
    if old_str not in original:
        return {"path": path, "action": "old_str not found"}
    file.write_text(original.replace(old_str, new_str, 1), encoding="utf-8")
    return {"path": path, "action": "edited"}

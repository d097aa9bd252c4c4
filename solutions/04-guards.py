"""Reference solutions for lesson 04's coding exercises (each written from its hint alone).

tests/test_exercises.py runs every check of notebooks/checks/04-guards.py on these. They build
on the lesson's own guards: `import guards` is the lesson's export cells (course's finder loads
them from the notebook, or, once exported with `python notebooks/course.py export 04-guards -o
guards.py`, the file)."""

import collections
import functools
import hashlib
import inspect
import json
from pathlib import Path

import guards

# --- exercise 1 --------------------------------------------------------------------------------


class StopAgent(BaseException):
    """Ends the agent's run: run_tool turns only an Exception into a tool result."""


def stop_after_refusals(registry, limit=3, refusals=2):
    inner = guards.repeat_guard(registry, limit)
    refused = {"in_a_row": 0}

    def wrap(func):
        @functools.wraps(func)
        def guarded(*args, **kwargs):
            try:
                result = func(*args, **kwargs)
            except guards.RepeatedCall as exc:
                refused["in_a_row"] += 1
                if refused["in_a_row"] >= refusals:
                    raise StopAgent(f"stopped: {refused['in_a_row']} refusals in a row") from exc
                raise
            except Exception:
                refused["in_a_row"] = 0  # it was not refused: it ran, and failed
                raise
            refused["in_a_row"] = 0
            return result
        return guarded

    return {name: wrap(func) for name, func in inner.items()}


# --- exercise 2 --------------------------------------------------------------------------------


def failure_budget(registry, limit=3):
    failures = {"count": 0}

    def wrap(func):
        @functools.wraps(func)
        def guarded(*args, **kwargs):
            if failures["count"] >= limit:
                raise RuntimeError(f"not run: too many failures ({failures['count']}); answer "
                                   "with what you know")
            try:
                return func(*args, **kwargs)
            except Exception:
                failures["count"] += 1
                raise
        return guarded

    return {name: wrap(func) for name, func in registry.items()}


# --- exercise 3 --------------------------------------------------------------------------------


class StaleEdit(Exception):
    """Raised instead of editing a file that changed since the agent last read it."""


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read_before_edit_fresh(registry):
    inner = guards.read_before_edit(registry)
    digests = {}  # resolved path -> digest of the text the agent last saw or wrote
    read, edit = inner["read_file"], inner["edit_file"]

    @functools.wraps(read)
    def read_file(path):
        result = read(path)
        digests[Path(path).resolve()] = digest(path)
        return result

    @functools.wraps(edit)
    def edit_file(path, old_str, new_str):
        known = digests.get(Path(path).resolve())
        if known is not None and Path(path).is_file() and digest(path) != known:
            raise StaleEdit(f"refused: {path} changed since you last read it; call read_file "
                            "again and edit what it says now")
        result = edit(path, old_str, new_str)
        digests[Path(path).resolve()] = digest(path)
        return result

    return {**inner, "read_file": read_file, "edit_file": edit_file}


# --- exercise 4 --------------------------------------------------------------------------------


def call_budget(registry, limit=20):
    calls = {"count": 0}

    def wrap(func):
        @functools.wraps(func)
        def guarded(*args, **kwargs):
            calls["count"] += 1
            if calls["count"] > limit:
                raise RuntimeError(f"not run: the tool-call budget of {limit} calls for this "
                                   "conversation is spent; answer with what you have")
            return func(*args, **kwargs)
        return guarded

    return {name: wrap(func) for name, func in registry.items()}


# --- exercise 5 --------------------------------------------------------------------------------


def total_repeat_guard(registry, limit=3):
    counts = collections.Counter()

    def wrap(name, func):
        @functools.wraps(func)
        def guarded(*args, **kwargs):
            bound = inspect.signature(func).bind(*args, **kwargs)
            bound.apply_defaults()
            call = (name, json.dumps(bound.arguments, sort_keys=True, default=str))
            counts[call] += 1
            if counts[call] > limit:
                raise RuntimeError(f"not run: this call was made {counts[call]} times in this "
                                   f"conversation (at most {limit} run); do something else or "
                                   "answer")
            return func(*args, **kwargs)
        return guarded

    return {name: wrap(name, func) for name, func in registry.items()}


SOLUTIONS = {
    "04.1": (stop_after_refusals, StopAgent),
    "04.2": (failure_budget,),
    "04.3": (read_before_edit_fresh,),
    "04.4": (call_budget,),
    "04.5": (total_repeat_guard,),
}

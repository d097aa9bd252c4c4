"""Tools whose timing a demonstration chooses (lesson 10): FinishOrder makes the calls of a batch
finish in a chosen order, whatever the threads would do; slow makes a tool wait before it works.
Real threads finish in whatever order the machine gives them, and a notebook must print the same
thing every time: these let it. And fresh_folder: a folder for one demonstration, made again
each time its cell runs; report_what_ran: the steering demonstration's scripted model, which
answers from the history."""

import functools
import json
import os
import threading
import time
from pathlib import Path

from agent import one_line, reply


class FinishOrder:
    """Makes the calls of a batch finish in a chosen order, whatever the threads would do.
    `names` gives a call its name from its tool's name and arguments; a call waits until the
    call named before it in `order` has ended (its tool_execution_end event, which on_event
    hears: give the agent this on_event too)."""

    def __init__(self, order: list[str], names):
        self.order, self.names = order, names
        self.ended = {name: threading.Event() for name in order}
        self.call_names = {}  # tool_call_id -> name

    def registry(self, registry: dict) -> dict:
        """The same tools, each waiting for its turn to finish."""
        return {tool: self.gated(tool, func) for tool, func in registry.items()}

    def gated(self, tool, func):
        @functools.wraps(func)  # the same signature, so call_tool still checks the arguments
        def wait_for_my_turn(**arguments):
            position = self.order.index(self.names(tool, arguments))
            if position and not self.ended[self.order[position - 1]].wait(timeout=10):
                raise TimeoutError("FinishOrder waited 10 s: do these calls run together?")
            return func(**arguments)
        return wait_for_my_turn

    def on_event(self, event: dict) -> None:
        if event["type"] == "tool_execution_start":
            name = self.names(event["name"], json.loads(event["arguments"]))
            self.call_names[event["tool_call_id"]] = name
        elif event["type"] == "tool_execution_end":
            self.ended[self.call_names[event["tool_call_id"]]].set()


def by_path(tool: str, arguments: dict) -> str:
    """A call's name for FinishOrder: the file it reads or writes."""
    return arguments["path"]


def slow(func, seconds: float):
    """func, waiting `seconds` first: a read from a slow disk or a network drive. The wrapper's
    `most_at_once` says how many calls of it were waiting at the same time, at most."""
    lock, running = threading.Lock(), [0]

    @functools.wraps(func)
    def waiting(**arguments):
        with lock:
            running[0] += 1
            waiting.most_at_once = max(waiting.most_at_once, running[0])
        try:
            time.sleep(seconds)
            return func(**arguments)
        finally:
            with lock:
                running[0] -= 1
    waiting.most_at_once = 0
    return waiting


def fresh_folder(folder: Path, files: dict[str, str]) -> Path:
    """`folder` holding exactly `files` (emptied again on every run); its real path."""
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    for file, text in files.items():
        (folder / file).write_text(text, encoding="utf-8")
    return Path(os.path.realpath(folder))


def report_what_ran(messages: list[dict]) -> dict:
    """A scripted model's answer to a steering message, made from the history as a real model's
    would be: the calls that ran and what they wrote, and the calls that were skipped (their
    result is an error that starts "skipped")."""
    calls = {c["id"]: c["function"] for m in messages for c in m.get("tool_calls", [])}
    results = [(calls[m["tool_call_id"]], json.loads(m["content"])) for m in messages
               if m["role"] == "tool"]
    skipped = [f"{f['name']}({one_line(f['arguments'], 40)})" for f, result in results
               if str(result.get("error", "")).startswith("skipped")]
    ran = [json.loads(f["arguments"]) for f, result in results if "error" not in result]
    wrote = ", ".join(f"{edit['path']} now says {edit['new_str']}" for edit in ran)
    undo = ", ".join(f"{edit['path']} back to {edit['old_str']}" for edit in ran)
    return reply(f"Stopped. Before your message arrived I had already edited a file: {wrote}, "
                 f"and it stays so until it is changed back. I did not run "
                 f"{' or '.join(skipped)}. Shall I put {undo}?")

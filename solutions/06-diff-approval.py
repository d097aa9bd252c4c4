"""Reference solutions of lesson 06's coding exercises (tests/test_exercises.py runs their
checks on them). They use the lesson's own module, diff_approval."""

import json
import os

from diff_approval import (
    APPROVE,
    Decision,
    StaleFile,
    approval_tools,
    as_decision,
    make_diff,
    reject,
    show_diff,
    visible,
)


def ask_or_edit(editor):
    """Exercise 1: ask_terminal, plus "e": the person edits the proposed text, then approves."""
    def policy(path, diff):
        show_diff(diff)
        try:
            answer = input("(y or yes applies it; e lets you edit it first; anything else is a "
                           "no, and what you type goes to the model as your reason)\n"
                           f"apply this change to {visible(path, keep='')}? "
                           "[y/N/e to edit, or say why not] ").strip()
        except EOFError:  # Ctrl-C (KeyboardInterrupt) is not caught: it stops the run
            print()
            return reject("no answer from the person (input closed)")
        if answer.lower() in ("y", "yes"):
            return APPROVE
        if answer.lower() == "e":
            return Decision(True, rewrite=editor)  # edit_file calls editor(new text)
        return reject("the person said no" if answer.lower() in ("", "n", "no") else answer)
    return policy


def remember(policy):
    """Exercise 2: ask once per path; an approval is remembered, a rejection is not."""
    approved = set()

    def remembering(path, diff):
        if path in approved:
            return APPROVE
        decision = as_decision(policy(path, diff))
        if decision.approved:
            approved.add(path)
        return decision
    return remembering


def conflict_tools(policy):
    """Exercise 3: a stale edit's error shows the diff from the text the model last saw (read,
    or written by itself) to the text now. Only then is the file read for it: a file never
    read stays refused, so no overwrite of a file the model has not seen goes through."""
    tools, registry = approval_tools(policy)
    read, edit = registry["read_file"], registry["edit_file"]
    last_seen = {}  # real path -> the text the model last saw

    def read_file(path):
        result = read(path)
        last_seen[os.path.realpath(path)] = result["content"]
        return result

    def edit_file(path, old_str, new_str):
        key = os.path.realpath(path)
        try:
            result = edit(path, old_str, new_str)
        except StaleFile as exc:
            before = last_seen.get(key)
            if "changed" not in str(exc) or before is None:
                raise  # never read, or what it saw is not known: nothing to show, nothing read
            now = read_file(path)  # also updates the fingerprint: the model now knows this text
            changes = make_diff(now["path"], before, now["content"])
            raise StaleFile(f"{exc}. What changed since you last saw it:\n{changes}") from None
        if "changed_by_person" in result:
            last_seen.pop(key, None)  # written as the person changed it: not known here
        elif old_str == "":
            last_seen[key] = new_str
        elif key in last_seen:  # written only if the file was the text we hold
            last_seen[key] = last_seen[key].replace(old_str, new_str, 1)
        return result

    return tools, {**registry, "read_file": read_file, "edit_file": edit_file}


def audit_log(log_path):
    """Exercise 5: one line per edit_file result: call id, path, outcome."""
    paths = {}  # tool_call_id -> the path the model asked for

    def on_event(event):
        if event.get("name") != "edit_file":
            return
        if event["type"] == "tool_execution_start":
            try:
                paths[event["tool_call_id"]] = json.loads(event["arguments"]).get("path", "?")
            except (ValueError, AttributeError):
                paths[event["tool_call_id"]] = "?"
        elif event["type"] == "tool_execution_end":
            outcome = "written"
            if event["is_error"]:
                error = json.loads(event["result"]).get("error", "")
                if "the person rejected this edit of " in error:
                    reason = error.split(": ", 2)[-1].removesuffix(". Nothing was written.")
                    outcome = f"rejected: {reason}"
                elif "read it" in error:
                    outcome = "stale"
                else:
                    outcome = "failed"
            path = paths.pop(event["tool_call_id"], "?")
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(f"{event['tool_call_id']}\t{visible(path, keep='')}\t"
                          f"{visible(outcome, keep='')}\n")
    return on_event


SOLUTIONS = {
    "06.1": (ask_or_edit,),
    "06.2": (remember,),
    "06.3": (conflict_tools,),
    "06.5": (audit_log,),
}

"""The scripted model of lesson 14: a good model fixing pages.py, and the note taker that
summarises for it.

`fixer(messages)` is every step of the script: a function of the request it is sent, like a
real model, not a list of answers. It lists the folder, reads every file it found in one
response, runs the tests (the command the system prompt names), reads pytest's failure, finds
that function's `return a // b` line in the file it read and proposes an edit; a rejection with a
reason makes it try its next idea and quote the reason, one without a reason (or no idea left)
makes it stop and say so; when the tests pass it answers with what it did. `happenings` turns
what the request shows into facts (lesson 13's `observations` of each tool call, plus the facts
a summary states), and the rules pick the next step from them.

`note_taker(messages)` is the summariser lesson 12's compaction asks: notes in the sections its
prompt asks for, one `note_of(fact)` line per fact, which `from_note` reads back, so `fixer` goes
on from a compacted request. A file whose text was summarised away is read again if needed.

It imports only agent.py and the lessons' modules (evaluation, context_budget), so
`python capstone.py --scripted pages_fixer.py` can load it beside the exported modules: MODEL
and SUMMARIZER are the two step functions that option looks for."""

import json
import re

import context_budget  # lesson 12: the summary's header
import evaluation  # lesson 13: observations, what each tool call returned

import agent
from agent import reply, step, tool_call

GENERIC_NO = ("no reason given", "the person said no", "no answer from the person")
EDIT_NOTE = re.compile(r'^- edit of (\S+) (approved|rejected|failed): ("(?:[^"\\]|\\.)*") -> '
                       r'("(?:[^"\\]|\\.)*")(?:; (?:the person said|error): (.*))?$')


def happenings(messages: list[dict]) -> list[dict]:
    """What the model can see happened, oldest first: what a summary says (the part of the
    history that was compacted away), then what each tool call since returned."""
    facts = []
    for m in messages:
        if m["role"] == "user" and m["content"].startswith(context_budget.SUMMARY_HEADER):
            facts += [fact for line in m["content"].split("\n") if (fact := from_note(line))]
    return facts + from_calls(evaluation.observations(messages))


def from_calls(seen: list) -> list[dict]:
    """Each tool call and its result (lesson 13's observations) as a fact."""
    facts = []
    for s in seen:
        if s.name == "list_files" and "files" in s.result:
            facts.append({"kind": "listed", "path": s.result["path"],
                          "files": [f["name"] for f in s.result["files"] if f["type"] == "file"]})
        elif s.name == "read_file" and "content" in s.result:
            facts.append({"kind": "read", "path": s.result["path"], "text": s.result["content"]})
        elif s.name == "run_command" and "exit_code" in s.result:
            facts.append({"kind": "tested", "command": s.arguments.get("command", ""),
                          "exit_code": s.result["exit_code"],
                          "failure": failure_of(s.result.get("output", ""))})
        elif s.name == "edit_file":
            error = s.result.get("error", "")
            said = re.search(r"rejected this edit of .+?: (.*)\. Nothing was written\.$", error)
            facts.append({"kind": "edit", "path": s.arguments.get("path", ""),
                          "old": s.arguments.get("old_str", ""),
                          "new": s.arguments.get("new_str", ""),
                          "outcome": "approved" if s.result.get("approved") else
                          "rejected" if said else "failed",
                          "reason": said[1] if said else error})
    return facts


def failure_of(output: str) -> str:
    """pytest's gist: the first failing test and its assert, and what the call gave."""
    failed = re.search(r"^FAILED (\S+) - (.*)$", output, re.M)
    where = re.search(r"where (.+ = \w+\(.*\))$", output, re.M)
    if not failed:
        return ""
    return f"{failed[1]}: {failed[2]}" + (f" (where {where[1]})" if where else "")


def note_of(fact: dict) -> str:
    """A fact as one line of a summary's notes (from_note reads it back)."""
    kind = fact["kind"]
    if kind == "listed":
        return f"- listed {fact['path']}: {', '.join(fact['files'])}"
    if kind == "read":
        return f"- read {fact['path']}"  # not its text: the model reads it again if need be
    if kind == "tested":
        failure = f"; {fact['failure']}" if fact["failure"] else ""
        return f"- ran `{fact['command']}`: exit code {fact['exit_code']}{failure}"
    said = "the person said" if fact["outcome"] == "rejected" else "error"
    reason = f"; {said}: {fact['reason']}" if fact["reason"] else ""
    return (f"- edit of {fact['path']} {fact['outcome']}: {json.dumps(fact['old'])} -> "
            f"{json.dumps(fact['new'])}{reason}")


def from_note(line: str) -> dict | None:
    """The fact a line of notes states (note_of's lines), or None for any other line."""
    if found := re.match(r"^- listed (\S+): (.*)$", line):
        return {"kind": "listed", "path": found[1], "files": found[2].split(", ")}
    if found := re.match(r"^- read (\S+)$", line):
        return {"kind": "read", "path": found[1], "text": None}
    if found := re.match(r"^- ran `(.*)`: exit code (-?\d+)(?:; (.*))?$", line):
        return {"kind": "tested", "command": found[1], "exit_code": int(found[2]),
                "failure": found[3] or ""}
    if found := EDIT_NOTE.match(line):
        return {"kind": "edit", "path": found[1], "outcome": found[2],
                "old": json.loads(found[3]), "new": json.loads(found[4]),
                "reason": found[5] or ""}
    return None


def latest(facts: list[dict], kind: str, path: str | None = None) -> dict | None:
    return next((f for f in reversed(facts)
                 if f["kind"] == kind and path in (None, f.get("path"))), None)


def gist(failure: str) -> tuple[str, str, str, str]:
    """(test, call, what it gave, what the test expects) of failure_of's text; "?" for what an
    assert of the form `a == b` does not say."""
    test = re.match(r"^(?:\S+::)?([^\s:]+)", failure)
    found = re.search(r": assert (.+?) == (.+?)(?: \(where .+? = (.+)\))?$", failure)
    name = test[1] if test else failure
    return (name, found[3] or "the call", found[1], found[2]) if found else \
        (name, "the call", "?", "?")


def fixer(messages: list[dict]):
    """A good model's next step: list, read everything (one response: the reads run in
    parallel), run the tests, read the failure, propose an edit, run the tests again, answer.
    A rejection with a reason makes it try its next idea; one without a reason, or no idea
    left, makes it stop and say why."""
    facts = happenings(messages)
    listed = latest(facts, "listed")
    if listed is None:
        return tool_call("list_files", path=".")
    if latest(facts, "read") is None:
        return [tool_call("read_file", path=name) for name in listed["files"]]
    cut_off = [name for name in cut_off_reads(messages) if latest(facts, "read", name) is None]
    if cut_off:  # after a resume: the reads that an interrupt or a crash left unanswered
        return [tool_call("read_file", path=name) for name in cut_off]
    runs = [i for i, fact in enumerate(facts) if fact["kind"] == "tested"]
    if not runs:
        return tool_call("run_command", command=test_command(messages))
    tested, after = facts[runs[-1]], facts[runs[-1] + 1:]
    if tested["exit_code"] == 0:
        return reply(report(facts))
    edit = latest(after, "edit")
    if edit and edit["outcome"] == "approved":
        return step(tool_call("run_command", command=test_command(messages)),
                    content="The edit is in; running the tests again.")
    if edit and edit["outcome"] == "rejected" and edit["reason"].startswith(GENERIC_NO):
        return reply(f"I stopped: the person rejected my edit of {edit['path']} without saying "
                     "why, and I would only be guessing. What would you like instead?")
    failed = [f for f in after if f["kind"] == "edit" and f["outcome"] == "failed"]
    if len(failed) > 1:  # the same trouble twice: say so rather than try forever
        return reply(f"I could not edit {failed[-1]['path']}: {failed[-1]['reason']}")
    if edit and edit["outcome"] == "failed" and latest(after, "read", edit["path"]) is None:
        return tool_call("read_file", path=edit["path"])  # e.g. it changed: look again
    return next_edit(facts, tested, edit)


def test_command(messages: list[dict]) -> str:
    """The command that runs the tests, as the request names it (the system prompt says "Run
    the tests with `...`", and so does the project's README)."""
    for m in messages:
        found = re.search(r"[Rr]un the tests with `([^`]+)`", m.get("content") or "")
        if found:
            return found[1]
    return "python -m pytest"


def cut_off_reads(messages: list[dict]) -> list[str]:
    """The files whose read_file call was answered as interrupted or not run (agent.py's
    INTERRUPTED and NOT_RUN: Ctrl-C, or lesson 09's repair after a crash), in call order."""
    paths = [s.arguments.get("path") for s in evaluation.observations(messages)
             if s.name == "read_file" and s.result.get("error") in (agent.INTERRUPTED,
                                                                    agent.NOT_RUN)]
    return list(dict.fromkeys(path for path in paths if isinstance(path, str)))


def next_edit(facts: list[dict], tested: dict, last: dict | None):
    """An edit for the failing test, from what the model has seen: the function the failure
    names, its `return a // b` line, and the ideas it has not tried yet."""
    test, call, got, want = gist(tested["failure"])
    function = call.split("(")[0]
    edits = [f for f in facts if f["kind"] == "edit" and f["outcome"] != "failed"]
    found = (edits[0]["path"], edits[0]["old"]) if edits else source_line(facts, function)
    code = [name for name in latest(facts, "listed")["files"]
            if name.endswith(".py") and not name.startswith("test_")]
    if found is None and code and not any(f["kind"] == "read" and f["text"] for f in facts):
        return [tool_call("read_file", path=name) for name in code]  # compacted away: again
    path, line = found or ("", "")  # the line as it was before any edit, and where
    parts = re.match(r"^(\s*)return (.+?) // (.+?)\n$", line)
    if not parts:
        what = f"{function}()" if "(" in call else "it"
        return reply(f"{test} fails ({tested['failure']}), and I do not see how to fix {what}.")
    indent, a, b = parts.groups()
    ideas = [f"{indent}return {a} // {b} + 1\n", f"{indent}return -(-{a} // {b})\n"]
    left = [idea for idea in ideas if idea not in {f["new"] for f in edits}]
    if not left:
        return reply("I could not make the test pass with the fixes I know. " + report(facts))
    approved = [f for f in edits if f["outcome"] == "approved"]
    now = current_line(facts, path, function) or (approved[-1]["new"] if approved else line)
    if last and last["outcome"] == "rejected":
        why = (f"The person said: {last['reason']}. I'll round up instead: -(-{a} // {b}) is "
               "ceiling division, in integers.")
    elif approved:
        why = f"The tests still fail ({tested['failure']}). Rounding up instead:"
    else:
        why = (f"{call} gives {got} where {test} expects {want}: {function}() rounds down, so "
               "a short last page is not counted. Adding that page:")
    return step(tool_call("edit_file", path=path, old_str=now, new_str=left[0]), content=why)


def source_line(facts: list[dict], function: str) -> tuple[str, str] | None:
    """(path, line) of the first `return ... // ...` in the function, in a file whose text the
    model still sees; None if there is none in view."""
    for fact in reversed(facts):
        body = fact["kind"] == "read" and fact["text"] and re.search(
            rf"^def {function}\(.*?(?=^\S|\Z)", fact["text"], re.M | re.S)
        line = body and re.search(r"^[ \t]*return .+ // .+\n", body[0], re.M)
        if line:
            return fact["path"], line[0]
    return None


def current_line(facts: list[dict], path: str, function: str) -> str | None:
    """The function's return line as the file says now: the latest text read of it, with the
    approved edits since applied; None if no text of it is in view."""
    text = None
    for fact in facts:
        if fact.get("path") != path:
            continue
        if fact["kind"] == "read":
            text = fact["text"]
        elif text and fact["kind"] == "edit" and fact["outcome"] == "approved":
            text = text.replace(fact["old"], fact["new"], 1)
    body = text and re.search(rf"^def {function}\(.*?(?=^\S|\Z)", text, re.M | re.S)
    line = body and re.search(r"^[ \t]*return .+\n", body[0], re.M)
    return line[0] if line else None


def report(facts: list[dict]) -> str:
    """The final answer: what was wrong, what changed, what the tests say, what was refused."""
    edits = [f for f in facts if f["kind"] == "edit"]
    approved = [f for f in edits if f["outcome"] == "approved"]
    tested = latest(facts, "tested")
    if not approved:
        return ("The tests pass, and I changed nothing." if tested["exit_code"] == 0 else
                f"The tests still fail ({tested['failure']}), and I changed nothing.")
    first = next(f["failure"] for f in facts if f["kind"] == "tested" and f["failure"])
    test, call, got, want = gist(first)
    outcome = "passes" if tested["exit_code"] == 0 else f"still fails: {tested['failure']}"
    text = (f"Fixed {call.split('(')[0]}() in {approved[-1]['path']}. {test} failed because "
            f"{call} gave {got}, not {want}: the count rounded down, so a short last page was "
            f"lost. The line is now `{approved[-1]['new'].strip()}`, which rounds up in integer "
            f"arithmetic, and `{tested['command']}` {outcome}.")
    for refused in (f for f in edits if f["outcome"] == "rejected"):
        text += f" You rejected `{refused['new'].strip()}`: {refused['reason']}."
    return text


def note_taker(messages: list[dict]):
    """The scripted summariser (lesson 12's summarizer=): notes in the sections the
    summarising prompt asks for, one line per fact - the earlier notes' and those of the part
    of the conversation being folded in - which from_note reads back."""
    body = messages[-1]["content"]
    earlier = re.search(r"<earlier-notes>\n(.*)\n</earlier-notes>", body, re.S)[1]
    conversation = re.search(r"<conversation>\n(.*)\n</conversation>", body, re.S)[1]
    calls = re.findall(r"^\[assistant calls (\S+)\] (\w+)\((.*)\)$", conversation, re.M)
    results = dict(re.findall(r"^\[tool result of (\S+) \(\w+\)\]\n(.*)$", conversation, re.M))
    seen = [evaluation.Seen(name, evaluation.parsed(arguments),
                            evaluation.parsed(results.get(call_id, "{}")))
            for call_id, name, arguments in calls]
    done = [line for line in earlier.split("\n") if from_note(line)]
    done += [note_of(fact) for fact in from_calls(seen)]
    failures = [f"- {fact['failure']}" for fact in map(from_note, done)
                if fact["kind"] == "tested" and fact["failure"]]
    return reply("\n".join([
        "## Goal", "Make the failing test pass (the task is in the user's message).", "",
        "## Done", *done, "", "## Still to do", "Fix what the failure shows; run the tests again.",
        "", "## Facts to keep", *(failures[-1:] or ["(none yet)"])]))



MODEL, SUMMARIZER = fixer, note_taker  # what capstone.py --scripted FILE.py looks for

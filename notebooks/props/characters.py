"""Lesson 13's scripted characters: models whose behaviour is known, to test the instrument.

Each character is a function (task, run) -> agent.ScriptedClient whose one step, repeated,
reacts to the history as a model would: it reads the tool results (evaluation.observations)
and decides the next call. They know each task's reference solution (a scripted model is an
actor, not a mind); what makes their characters is what they *send*.

  MODELS    the five of the lesson: competent, sloppy, looping, reckless, confabulating
  TROUBLE   four that go wrong as a run's process can: hanging, stubborn, crashing, raising
  on_stage  run_one's and run_suite's clock and agent for repeatable wall times (lesson 07's
            fake clock, with made-up latencies)

`python evaluation.py run --suite tasks.py --suite characters.py --model competent` loads
`MODELS` from this file. Nothing here is part of the runner."""

import difflib
import json
import os
import random
import shlex
import signal
import time
from pathlib import Path

from evaluation import observations

import agent
from agent import ScriptedClient, reply, tool_call

SCRIPT = 100  # steps in a scripted model's script: more than any max_turns will ask for


# --- what the careful ones send: exact edits -------------------------------------------------


def edits(before: str, after: str) -> list[tuple[str, str]]:
    """The edit_file calls (old_str, new_str) that turn before into after, one per changed
    block of lines, each old_str made unique with lines around it, in the order to send them.
    Bottom first: an edit never moves the lines of the ones still to come."""
    lines, target = before.splitlines(keepends=True), after.splitlines(keepends=True)
    blocks = [op for op in difflib.SequenceMatcher(None, lines, target, autojunk=False)
              .get_opcodes() if op[0] != "equal"]
    calls = []
    for _, start, end, new_start, new_end in reversed(blocks):
        above, below = 0, 0
        while True:
            old = "".join(lines[start - above:end + below])
            if old and agent.occurrences("".join(lines), old) == 1:
                break
            if start - above == 0 and end + below == len(lines):
                break  # the whole file, and still not unique: only an empty file gets here
            if start - above > 0 and (above <= below or end + below == len(lines)):
                above += 1
            else:
                below += 1
        new = lines[start - above:start] + target[new_start:new_end] + lines[end:end + below]
        calls.append((old, "".join(new)))
        lines[start - above:end + below] = new
    return calls


def change_calls(texts: dict, end_state: dict) -> list[dict]:
    """The tool calls that make end_state from the files as read (texts): exact edits of the
    files that exist, whole files for new ones, one rm for those to delete."""
    calls, doomed = [], []
    for path, text in end_state.items():
        if text is None:
            doomed.append(path)
        elif path in texts:
            calls += [tool_call("edit_file", path=path, old_str=old, new_str=new)
                      for old, new in edits(texts[path], text)]
        else:
            calls.append(tool_call("edit_file", path=path, old_str="", new_str=text))
    if doomed:
        calls.append(tool_call("run_command", command="rm -- " + " ".join(map(shlex.quote,
                                                                                doomed))))
    return calls


def what_failed(seen) -> str:
    if "error" in seen.result:
        return seen.result["error"]
    return f"{seen.name} exited with {seen.result['exit_code']}: {seen.result.get('output', '')}"


def follow(plan: list, seen: list):
    """The next call of a plan, given the calls already made (seen); None when it is done.
    A plan is a list of (call, fallback): the fallback is sent only if the call failed."""
    at = 0
    for call, fallback in plan:
        if at == len(seen):
            return call
        at += 1
        if fallback is not None and seen[at - 1].failed:
            if at == len(seen):
                return fallback
            at += 1
    return None


def looks(task) -> list[dict]:
    """What a careful agent does first: list the folder (and the folders the task is about),
    then read the files the task is about."""
    folders = {str(Path(path).parent) for path in (*task.reads, *task.reference()[0])}
    return ([tool_call("list_files", path=".")]
            + [tool_call("list_files", path=folder) for folder in sorted(folders - {"."})]
            + [tool_call("read_file", path=path) for path in task.reads])


def acting(task, plan_of, finish):
    """A step that reacts to the history: look first (looks), then work out the changes from
    the texts it has read (task.solve) and make them as plan_of(texts, end_state) says, then
    finish(answer, the change calls made and their results)."""
    looking = [(call, None) for call in looks(task)]

    def act(messages):
        seen = observations(messages)
        call = follow(looking, seen)
        if call:
            return call
        texts = {s.arguments["path"]: s.result["content"] for s in seen[:len(looking)]
                 if s.name == "read_file" and not s.failed}
        end_state, answer = task.solve(texts)
        made = seen[len(looking):]
        return follow(plan_of(texts, end_state), made) or finish(answer, made)
    return act


# --- the five --------------------------------------------------------------------------------


def competent(task, run: int = 1) -> ScriptedClient:
    """Looks, reads, makes exact edits from what it read, and says what it did; if a change
    failed, it says so."""
    def finish(answer, made):
        failed = [s for s in made if s.failed]
        return reply(f"I could not finish: {what_failed(failed[0])}" if failed else answer)
    act = acting(task, lambda texts, end: [(c, None) for c in change_calls(texts, end)], finish)
    return ScriptedClient([act] * SCRIPT)


def sloppy(task, run: int = 1, care: float = 1 / 4) -> ScriptedClient:
    """Edits without reading: it knows what it means to change, but sends old_str as it
    remembers it - the right words, with single spaces on one line - and when that is not
    in the file, overwrites the file with just its new lines. Then it says "Done." In a share
    `care` of its runs (one in four, by a coin seeded with the task and the run, so every run
    can be repeated) it reads first and works as the competent model does."""
    if random.Random(f"sloppy {task.name} {run}").random() < care:
        return competent(task, run)
    plan = []
    for call in change_calls(task.files, task.reference()[0]):
        args = json.loads(call["arguments"])
        if call["name"] != "edit_file" or not args["old_str"]:
            plan.append((call, None))
            continue
        path, new = args["path"], args["new_str"]
        plan.append((tool_call("edit_file", path=path, old_str=" ".join(args["old_str"].split()),
                               new_str=new),
                     tool_call("edit_file", path=path, old_str="", new_str=new)))

    def act(messages):
        return follow(plan, observations(messages)) or reply("Done.")
    return ScriptedClient([act] * SCRIPT)


def looping(task, run: int = 1) -> ScriptedClient:
    """Lists the folder, then reads the same file again and again, as if it had never seen
    it, until the turn limit stops it."""
    again = (tool_call("read_file", path=task.reads[0]) if task.reads
             else tool_call("list_files", path="."))

    def act(messages):
        return again if observations(messages) else tool_call("list_files", path=".")
    return ScriptedClient([act] * SCRIPT)


def reckless(task, run: int = 1) -> ScriptedClient:
    """Does the work as competent does, but deletes whole folders where it should delete
    files, and then notes its work in the neighbour project's changelog: with edit_file (which
    the jail refuses), then through the shell (which lesson 05's jail does not cover)."""
    def plan_of(texts, end_state):
        calls = [(c, None) for c in change_calls(texts, end_state)]
        doomed = sorted({str(Path(p).parent) for p, text in end_state.items() if text is None})
        if doomed:  # rm -rf the folders, not rm the files
            calls[-1] = (tool_call("run_command", command="rm -rf -- " + " ".join(doomed)), None)
        if calls:
            note = f"- {task.name}: done by the agent\n"
            calls.append((tool_call("edit_file", path="../neighbour/CHANGELOG.md", old_str="",
                                    new_str=note),
                          tool_call("run_command", command=f"printf %s {shlex.quote(note)} "
                                    ">> ../neighbour/CHANGELOG.md")))
        return calls
    return ScriptedClient([acting(task, plan_of, lambda answer, made: reply(answer))] * SCRIPT)


def confabulating(task, run: int = 1) -> ScriptedClient:
    """Says it is done, at once, without doing anything."""
    return ScriptedClient([reply("Done. I made the change and checked that everything works.")])


MODELS = {"competent": competent, "sloppy": sloppy, "looping": looping, "reckless": reckless,
          "confabulating": confabulating}


# --- four that go wrong the ways a run's process can -------------------------------------------


def hanging(task, run: int = 1) -> ScriptedClient:
    """Lists the folder, then waits for ever for a model server that never answers."""
    def stuck(messages):
        time.sleep(3600)
    return ScriptedClient([tool_call("list_files", path="."), stuck])


def stubborn(task, run: int = 1) -> ScriptedClient:
    """Hangs, and ignores the runner's request to stop (SIGTERM)."""
    def stuck(messages):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(3600)
    return ScriptedClient([stuck])


def crashing(task, run: int = 1) -> ScriptedClient:
    """Its process ends at once (os._exit): no result, no trace, nothing."""
    def die(messages):
        os._exit(13)
    return ScriptedClient([die])


def raising(task, run: int = 1) -> ScriptedClient:
    """Its model call raises, as a client does when the server refuses the connection."""
    def fail(messages):
        raise ConnectionError("the model server refused the connection")
    return ScriptedClient([fail])


TROUBLE = {"hanging": hanging, "stubborn": stubborn, "crashing": crashing, "raising": raising}


# --- the stage: time that is the same on every run -------------------------------------------


def on_stage(build) -> dict:
    """run_one's and run_suite's `clock` and `build` for wall times that are the same on every
    run: lesson 07's FakeClock, and build's agent, whose model calls and tools take made-up
    time on it (with_latency, with_tool_time). run_suite(..., **on_stage(build_agent))."""
    from props.clock import FakeClock, with_latency, with_tool_time  # here: this file also
    # runs beside an exported evaluation.py (--suite characters.py), where props is not found
    clock = FakeClock()

    def timed(client, world, settings, on_event):
        bot = build(with_latency(client, clock), world, settings, on_event)
        bot.registry = with_tool_time(bot.registry, clock)
        return bot
    return {"clock": clock, "build": timed}

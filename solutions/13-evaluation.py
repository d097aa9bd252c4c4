"""Reference solutions of lesson 13's coding exercises (checked by tests/test_exercises.py).

`import evaluation` is the lesson's export cells: course's finder loads them from the notebook,
or, once exported (`python notebooks/course.py export 13-evaluation -o evaluation.py`), the
file."""

import evaluation

import agent

# --- 13.1 a verifier of your own ------------------------------------------------------------


def is_debug_print(line: str) -> bool:
    return line.strip().startswith('print("DEBUG')


def debug_prints_removed(world) -> str:
    """"" when app.py is the set-up's app.py without its DEBUG print lines; else what is wrong.
    It reads the file as it is now, never the answer: an agent can say anything."""
    want = "\n".join(line for line in world.before["app.py"].split("\n")
                     if not is_debug_print(line))
    now = world.text("app.py")
    if now is None:
        return "app.py was deleted"
    if now == want:
        return ""
    if any(is_debug_print(line) for line in now.split("\n")):
        return "a DEBUG print is still in app.py"
    return "app.py changed in more than its DEBUG prints"


# --- 13.2 flaky tasks ---------------------------------------------------------------------


def flaky(runs: list[dict]) -> list[tuple]:
    """(model, task, "passed/total") of every task whose runs of one model disagree, in the
    order the runs first name them."""
    groups = {}
    for run in runs:
        groups.setdefault((run["model"], run["task"]), []).append(run["passed"])
    return [(model, task, f"{sum(passed)}/{len(passed)}")
            for (model, task), passed in groups.items() if any(passed) and not all(passed)]


# --- 13.3 a sixth character ---------------------------------------------------------------


def asking(task, run: int = 1) -> agent.ScriptedClient:
    """Lists the workspace, reads every file at its top level, and asks instead of acting."""
    def act(messages):
        seen = evaluation.observations(messages)
        if not seen:
            return agent.tool_call("list_files", path=".")
        read = {s.arguments.get("path") for s in seen if s.name == "read_file"}
        for entry in seen[0].result.get("files", []):
            if entry["type"] == "file" and entry["name"] not in read:
                return agent.tool_call("read_file", path=entry["name"])
        return agent.reply(f"I have read the {len(read)} file(s) here. Shall I go ahead?")
    return agent.ScriptedClient([act] * 30)


SOLUTIONS = {
    "13.1": (debug_prints_removed,),
    "13.2": (flaky,),
    "13.3": (asking,),
}

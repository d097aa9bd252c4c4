"""The flow a builder follows: export lessons 05, 06 and 07 with `course.py export --all`, put a
copy of agent.py beside them, and run one agent with the sandbox, diff approval and the tracer
together on the scripted model - in a fresh process that knows nothing of the course."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import course
import pytest

ROOT = Path(__file__).resolve().parent.parent

BUILDER = r'''
import importlib.util
import json
from pathlib import Path

assert importlib.util.find_spec("course") is None  # the course's helpers are not here

import agent
import diff_approval
import sandbox
import tracing
from agent import Agent, ScriptedClient, fan_out, reply, tool_call

work = Path("work")
(work / "notes").mkdir(parents=True)
(work / "notes" / "todo.md").write_text("- write the lesson\n")
Path("secret.txt").write_text("outside the workspace\n")

# the person approves the edit of todo.md and rejects anything else
person = diff_approval.scripted([True, diff_approval.reject("not that file")])
tools, registry = diff_approval.sandboxed_approval_tools(person, root=work)
tracer = tracing.Tracer("traces")
seen = []
bot = Agent(ScriptedClient([
    tool_call("read_file", path="notes/todo.md"),
    tool_call("edit_file", path="notes/todo.md", old_str="- write the lesson\n",
              new_str="- write the lesson\n- test it\n"),
    tool_call("read_file", path="../secret.txt"),               # the sandbox refuses
    tool_call("edit_file", path="notes/new.md", old_str="", new_str="x"),  # the person refuses
    reply("Added a line to the todo list."),
]), "scripted", tools=tools, registry=registry,
    on_event=fan_out(tracer, lambda event: seen.append(event["type"])))
answer = bot.chat("Add 'test it' to the todo list.")
results = [json.loads(m["content"]) for m in bot.messages if m["role"] == "tool"]
run = tracing.load_trace(sorted(Path("traces").iterdir())[0])
print(json.dumps({
    "answer": answer, "stop_reason": bot.stop_reason,
    "todo": (work / "notes" / "todo.md").read_text(),
    "new_md_exists": (work / "notes" / "new.md").exists(),
    "results": results, "problem": agent.pairing_problem(bot.messages),
    "trace_end": run[-1]["type"], "trace_problems": tracing.trace_problems(run),
    "events_seen": len(seen), "secret_in_trace": "outside the workspace" in json.dumps(run),
}))
'''


@pytest.mark.slow
def test_lessons_05_to_07_exported_run_as_one_agent_beside_agent_py(tmp_path):
    kit = tmp_path / "kit"
    assert course.main(["export", "--all", "-o", str(kit)]) == 0
    shutil.copy(ROOT / "agent.py", kit / "agent.py")
    (kit / "builder.py").write_text(BUILDER)
    # -E: no PYTHONPATH, so only the kit's own folder is on sys.path, not the course's
    done = subprocess.run([sys.executable, "-E", "builder.py"], cwd=kit, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["stop_reason"] == "done" and out["problem"] is None
    assert out["todo"] == "- write the lesson\n- test it\n"  # approved, written
    assert not out["new_md_exists"]  # rejected, not written
    errors = [r.get("error", "") for r in out["results"]]
    assert "escapes the workspace" in errors[2] and "not that file" in errors[3]
    assert out["trace_end"] == "agent_end" and out["trace_problems"] == []
    assert out["events_seen"] > 10 and not out["secret_in_trace"]

"""Lesson 03's lab: a table of what each request carried, and the five tasks (the article's four
and one of the course's) on an agent whose handler notes, for every tool call, whether the call
was already in the history when its tool started. None of it is part of the agent."""

from pathlib import Path

import course

import agent
from agent import ScriptedClient, reply, tool_call

TASKS = [*agent.DEMO_TASKS, "Show me greet.py, and tell me whether missing.py exists now."]
SEEN = ["call", "tool", "in the history when it ran (P4)", "result", "greet.py says after"]


def requests_table(requests):
    """Per request: how many messages it sent, whether the previous request's messages were all
    sent again, unchanged, at its start, which messages were new, and how many tool schemas."""
    rows, before = [], []
    for n, request in enumerate(requests, 1):
        sent = request["messages"]
        new = " ".join(m["role"] for m in sent[len(before):])
        again = "yes" if sent[:len(before)] == before else "NO"
        rows.append((n, len(sent), again, new, len(request["tools"])))
        before = sent
    return course.table(["request", "messages sent", "previous sent again", "new messages",
                         "tool schemas"], rows)


def five_task_script():
    """What a good model answers to TASKS: the article's four tasks, then ours."""
    return agent.demo_script() + [
        [tool_call("read_file", path="greet.py"), tool_call("read_file", path="missing.py")],
        reply("greet.py greets in Chinese now; missing.py still does not exist."),
    ]


def greeting_now():
    """What greet.py in the current folder greets with."""
    if not Path("greet.py").exists():
        return "(no greet.py)"
    return "Hello" if "Hello" in Path("greet.py").read_text(encoding="utf-8") else "你好"


def new_demo():
    """A new agent for TASKS, and the list `seen` that its event handler fills: one row per
    tool call (SEEN), noted when the tool starts and when it ends. It prints nothing."""
    seen = []

    def observe(event):
        if event["type"] == "tool_execution_start":  # is the call in the history already? (P4)
            ids = [c["id"] for m in demo.messages for c in m.get("tool_calls", [])]
            in_history = "yes" if event["tool_call_id"] in ids else "NO"
            seen.append([event["tool_call_id"], event["name"], in_history])
        if event["type"] == "tool_execution_end":
            seen[-1] += ["error" if event["is_error"] else "ok", greeting_now()]

    demo = agent.Agent(ScriptedClient(five_task_script()), "scripted-demo", on_event=observe)
    return demo, seen

"""Reference solutions of lesson 16's coding exercises; tests/test_exercises.py runs the checks
of notebooks/checks/16-subagents-and-plans.py on them."""

import os
import re
from pathlib import Path

import sandbox  # lesson 05's export cells (tests import course first, which finds them)
import subagents_and_plans as sp

import agent


def make_delegate(root, new_client):
    """16.1: a new read-only child for each task; only its answer and its size come back."""
    tools, registry = sandbox.sandbox_tools(root, ("read",))

    def delegate(task: str) -> str:
        child = agent.Agent(new_client(), "scripted", tools=tools, registry=registry,
                            system_prompt=sp.CHILD_PROMPT, max_turns=12, on_event=None)
        answer = child.chat(task)
        if child.stop_reason not in ("done", "length"):  # "length": an answer, cut off
            raise RuntimeError(f"the subagent stopped without an answer ({child.stop_reason})")
        return f"{answer}\n[{len(child.messages)} messages stay with the host]"
    return delegate


class BudgetedDelegate(sp.Delegate):
    """16.2: each child is stopped once its prompt tokens add up to more than the budget."""

    def __init__(self, *args, max_prompt_tokens: int, **options):
        super().__init__(*args, **options)
        self.max_prompt_tokens = max_prompt_tokens

    def forward(self, record):
        counting = super().forward(record)

        def on_event(event):
            counting(event)
            if record["prompt_tokens"] > self.max_prompt_tokens:
                record["agent"].abort()
        return on_event


CLAIM = re.compile(r"^(\S+):(\d+): (.*)$", re.MULTILINE)


def check_claims(answer: str, root) -> list[str]:
    """16.3: every path:line: text claim, checked against the file, read through the jail."""
    claims = CLAIM.findall(answer)
    if not claims:
        return ["the answer names no place (path:line: text)"]
    problems = []
    for path, number, text in claims:
        try:
            lines = sandbox.read_in(Path(os.path.realpath(root)), path)["content"].split("\n")
        except Exception as exc:
            problems.append(f"{path}: cannot be read in the workspace ({exc})")
            continue
        line = int(number)
        if not 1 <= line <= len(lines):
            problems.append(f"{path} has no line {line} (it has {len(lines)})")
        elif lines[line - 1].strip() != text.strip():
            problems.append(f"{path}:{line} is {lines[line - 1].strip()!r}, not {text.strip()!r}")
    return problems


SOLUTIONS = {"16.1": make_delegate, "16.2": BudgetedDelegate, "16.3": check_claims}

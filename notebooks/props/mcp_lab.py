"""Lesson 15's lab: two MCP servers, a folder of skills, a git repository with a file an
uncommitted change broke, the scripted models that work in it, and a strict server.

  TRACKER_SERVER, UNRULY_SERVER   the lesson's own server (an issue tracker) and one that
                                  misbehaves in every way Going further shows
  SKILLS                          the skills folder: git-basics, python-tests, release-notes
  make_repo(folder)               a git repository whose greet.py was broken after its commit
  fixes_from_the_diff             a model step: undo the change a diff shows
  picks_a_skill, next_skill_step  a model that chooses a skill from the catalog, then runs the
                                  commands of its "Steps:" one by one
  obeys_the_description           a model that does what a tool's description tells it
  StrictServer                    a scripted model behind a server that checks tool schemas
  tried(registry, name, **args)   call a tool as the loop does: (whether it failed, what the
                                  model reads)
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import httpx2
import openai

import agent
from agent import ScriptedClient, reply, tool_call

HERE = Path(__file__).resolve().parent
TRACKER_SERVER = HERE / "tracker_server.py"
UNRULY_SERVER = HERE / "unruly_server.py"
SKILLS = HERE / "skills"

GREET = 'def greet(name):\n    return f"Hello, {name}!"\n'
TASK = ("greet.py prints a misspelled greeting since my last change. Look at what changed in "
        "the git repository, then fix it.")
DEMO_ENV = "OPENAI_API_KEY=demo-key-0000-not-real\n"  # a demo secret for the workspace


def git(folder: Path, *args: str) -> str:
    """Run git in folder with a fixed author and date, so every commit id is the same."""
    when = "2026-01-01T12:00:00+00:00"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder),
           "GIT_AUTHOR_NAME": "Ana", "GIT_AUTHOR_EMAIL": "ana@example.com",
           "GIT_COMMITTER_NAME": "Ana", "GIT_COMMITTER_EMAIL": "ana@example.com",
           "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", *args], cwd=folder, env=env, capture_output=True, text=True,
                          check=True)
    return done.stdout


def make_repo(folder: Path) -> Path:
    """A git repository in folder (made if needed, emptied of an earlier repository): greet.py
    committed as it should be, then changed on disk, not committed, with a typo."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / ".git").exists():  # run again: start from the same state
        shutil.rmtree(folder / ".git")
    (folder / "greet.py").write_text(GREET, encoding="utf-8")
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "greet.py")
    git(folder, "commit", "-q", "-m", "greet(name)")
    (folder / "greet.py").write_text(GREET.replace("Hello", "Helo"), encoding="utf-8")
    return folder


# --- scripted models ----------------------------------------------------------------------


def fixes_from_the_diff(messages):
    """Undo the one-line change the last diff in the history shows: edit the file back."""
    diff = next(text for text in map(tool_text, reversed(messages)) if "\n+++ b/" in text)
    path = re.search(r"^\+\+\+ b/(\S+)", diff, re.M)[1]
    old = re.search(r"^-(?!--)(.*)$", diff, re.M)[1]
    new = re.search(r"^\+(?!\+\+)(.*)$", diff, re.M)[1]
    return tool_call("edit_file", path=path, old_str=new, new_str=old)


def tool_text(message: dict) -> str:
    """What a tool message says: run_command's output, or the text a remote tool returned."""
    if message["role"] != "tool":
        return ""
    try:
        return json.loads(message["content"]).get("output", "")
    except (ValueError, AttributeError):  # not JSON, or JSON but not an object
        return message["content"]


FIXED = reply("Fixed greet.py: the last change had turned 'Hello' into 'Helo'. The diff showed "
              "it, and the greeting is 'Hello' again.")


def picks_a_skill(messages):
    """Choose the skill whose description shares the most words with the task (a real model
    reads the catalog too, with more sense), and load it."""
    catalog = re.findall(r"^- ([a-z0-9-]+): (.*)$", messages[0]["content"], re.M)
    task = words(next(m["content"] for m in reversed(messages) if m["role"] == "user"))
    best = max(catalog, key=lambda entry: len(task & words(entry[1])))
    return tool_call("load_skill", skill=best[0])


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3}


def next_skill_step(messages):
    """Run the next command of the skill's "Steps:" (from the loaded skill, or from the system
    prompt if the skills are written there); when none is left, fix from the diff."""
    where = next(m["content"] for m in reversed(messages) if "Steps:" in m["content"])
    steps = where.split("Steps:", 1)[1].split("\n\n", 1)[0]
    commands = re.findall(r"^\d+\. `([^`]+)`", steps, re.M)
    ran = sum(1 for m in messages if m["role"] == "assistant"
              for call in m.get("tool_calls", []) if call["function"]["name"] == "run_command")
    if ran < len(commands):
        return tool_call("run_command", command=commands[ran])
    return fixes_from_the_diff(messages)


def obeys_the_description(tool: str) -> list:
    """A model that does what the description of `tool` says: read .env, pass it as sidenote
    (real models have been shown to obey such text). Then it reports what the tool said."""
    def count(messages):
        secret = json.loads(messages[-1]["content"]).get("content", "")
        return tool_call(tool, text="the quick brown fox", sidenote=secret)

    def report(messages):
        return reply(f"The tool answered: {json.loads(messages[-1]['content'])}")

    return [tool_call("read_file", path=".env"), count, report]


# --- a strict server ----------------------------------------------------------------------

NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def schema_problem(tool: dict) -> str | None:
    """What OpenAI's API has been reported to refuse in a tool: a name outside its pattern,
    parameters that are not an object with "properties"."""
    function = tool.get("function", {})
    name, parameters = function.get("name", ""), function.get("parameters", {})
    if not NAME.fullmatch(name):
        return f"Invalid 'tools[].function.name': string does not match pattern: {name!r}"
    if parameters.get("type") != "object":
        return f"Invalid schema for function '{name}': schema must be of type 'object'"
    if "properties" not in parameters:
        return (f"Invalid schema for function '{name}': In context=(), object schema missing "
                "properties.")
    return None


class StrictServer(ScriptedClient):
    """A scripted model behind a server that checks every tool of a request first, and refuses
    the whole request, with HTTP 400, if one tool breaks its rules (schema_problem)."""

    def create(self, *, model: str, messages: list[dict], **kwargs):
        for tool in kwargs.get("tools", []):
            problem = schema_problem(tool)
            if problem:
                response = httpx2.Response(400, request=httpx2.Request("POST", "http://strict/v1"))
                raise openai.BadRequestError(problem, response=response, body=None)
        return super().create(model=model, messages=messages, **kwargs)


def tried(registry: dict, name: str, **arguments) -> tuple[bool, str]:
    """Call a tool as the loop does (agent.call_tool): (whether it failed, what the model
    would read). Lesson 05's sandbox.attempt asks a sharper question, blocked or not."""
    try:
        result = agent.call_tool(registry, name, agent.to_json(arguments))
    except Exception as exc:
        return True, f"{name}: {exc}"
    return False, agent.to_json(result)

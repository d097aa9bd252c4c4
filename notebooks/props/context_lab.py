"""Lesson 12's props: the shop, the project the long task works on, with its verifier; the
careful scripted model that does the task; the note taker, a scripted summariser, and its
sloppy twin; and the lab's helpers (in_folder, run_task, asked, plot_prompts, and cached_tokens
with cached_cost, what a run would cost with a prefix cache).

The careful model acts only on the messages it is sent, as a real model does: it learns the files
to change from the test log, reads each file before it edits it, and reads again what is no longer
in view. So a compaction that leaves out what it needs really makes it fail, and the verifier, which
reads the files, says so. The note taker writes notes in the four sections SUMMARY_PROMPT asks
for, from the text it is shown. Both are regular expressions and string matching: how a real
model summarises is not in here, only what this task needs."""

import contextlib
import itertools
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from agent import ScriptedClient, reply, step, tool_call

# --- The shop: a project, a task on it, and a verifier that reads the files ------------------

OLD, NEW = "fetch_rows", "load_rows"
CALLERS = ["audit", "coupons", "customers", "inventory", "invoices", "orders", "payments",
           "reports", "returns", "search", "shipping"]
TO_CHANGE = ["src/db.py", *(f"src/{name}.py" for name in CALLERS), "docs/guide.md"]
LOG = "logs/test-run.log"
TASK = ("The test run in logs/test-run.log says that fetch_rows() is deprecated. Rename it to "
        "load_rows() in every file the log names, and add a line about it under a new "
        "'## Unreleased' heading at the top of the changelog.")
ENTRY = "# Changelog\n\n## Unreleased\n\n- Renamed `fetch_rows()` to `load_rows()`.\n"


def caller_source(name: str) -> str:
    """One module of the shop: a page of code with one call of fetch_rows."""
    rules = "\n".join(f"    if len(item) > {n * 8}:\n        return item[:{n * 8}]"
                      for n in range(1, 4))
    return (f'"""The {name} of the shop: its queries and the small rules around them."""\n\n'
            "from . import db\n\n"
            f"PAGE = {len(name) * 5}\n\n\n"
            f"def list_{name}(limit=PAGE):\n"
            f'    """The newest {name}, at most `limit` of them."""\n'
            f'    rows = db.{OLD}("SELECT * FROM {name} ORDER BY created DESC LIMIT ?", (limit,))\n'
            "    return [dict(row) for row in rows]\n\n\n"
            f"def count_{name}():\n"
            f'    """How many {name} there are."""\n'
            f'    return db.scalar("SELECT count(*) FROM {name}")\n\n\n'
            f"def remove_{name[:-1] if name.endswith('s') else name}(item_id):\n"
            f'    """Delete one of the {name}; a missing id is not an error."""\n'
            f'    db.execute("DELETE FROM {name} WHERE id = ?", (item_id,))\n\n\n'
            f"def pages_of_{name}(size=PAGE):\n"
            f'    """How many pages of `size` the {name} fill, the last one perhaps not full."""\n'
            f"    total = count_{name}()\n"
            "    return (total + size - 1) // size\n\n\n"
            f"def check_{name}_id(item_id):\n"
            '    """Refuse an id that cannot be one: ids are positive whole numbers."""\n'
            "    if not isinstance(item_id, int) or item_id < 1:\n"
            f'        raise ValueError(f"not an id of the {name}: {{item_id!r}}")\n'
            "    return item_id\n\n\n"
            "def short_label(item):\n"
            '    """A label short enough for a table cell."""\n'
            f"{rules}\n"
            "    return item\n")


DB = ('"""The shop\'s database helpers: one connection, a few small functions."""\n\n'
      "import sqlite3\n\nCONNECTION = sqlite3.connect(':memory:')\n\n\n"
      "def execute(query, params=()):\n"
      '    """Run a statement that changes rows."""\n'
      "    with CONNECTION:\n        CONNECTION.execute(query, params)\n\n\n"
      f"def {OLD}(query, params=()):\n"
      '    """Run a query and return all its rows."""\n'
      "    return CONNECTION.execute(query, params).fetchall()\n\n\n"
      "def scalar(query, params=()):\n"
      '    """Run a query that returns one value, and return it."""\n'
      "    return CONNECTION.execute(query, params).fetchone()[0]\n")


def guide() -> str:
    parts = ["# The shop's developer guide\n\n## Reading rows\n\n"
             f"Use `db.{OLD}(query, params)` to read rows: it returns a list of tuples.\n"]
    for n in range(1, 41):
        parts.append(f"\n## Topic {n}\n\n" + " ".join(
            f"Paragraph {n}.{k} explains one more convention of the code base in some detail."
            for k in range(1, 6)) + "\n")
    return "".join(parts)


def changelog() -> str:
    parts = ["# Changelog\n"]
    for n in range(40, 0, -1):
        parts.append(f"\n## 2.{n}.0\n\n" + "".join(
            f"- Change {k} of release 2.{n}.0, described in a line of its own.\n"
            for k in range(1, 5)))
    return "".join(parts)


def test_log() -> str:
    lines = []
    for n in range(900):
        name = CALLERS[n % len(CALLERS)]
        lines.append(f"test_{name}.py::test_case_{n:03d} PASSED [{n * 100 // 900:3d}%]")
        if n % 75 == 0:
            lines.append(f"src/{name}.py:9: D001 {OLD}() is deprecated: rename it to {NEW}()")
    lines.append(f"== 900 passed, 12 deprecation warnings: {OLD}() is deprecated; rename it "
                 f"to {NEW}() in: {', '.join(TO_CHANGE)} ==")
    return "\n".join(lines) + "\n"


def original_files() -> dict[str, str]:
    files = {"README.md": "# The shop\n\nA small shop, for the context budget lesson.\n",
             "src/__init__.py": "", "src/db.py": DB, "docs/guide.md": guide(),
             "CHANGELOG.md": changelog(), LOG: test_log()}
    files.update({f"src/{name}.py": caller_source(name) for name in CALLERS})
    return files


def expected_files() -> dict[str, str]:
    files = original_files()
    for path in TO_CHANGE:
        files[path] = files[path].replace(OLD, NEW)
    files["CHANGELOG.md"] = files["CHANGELOG.md"].replace("# Changelog\n", ENTRY, 1)
    return files


def make_project(folder: Path) -> Path:
    """The shop as it is before the task, made afresh: what an earlier run left is removed."""
    shutil.rmtree(folder, ignore_errors=True)
    for path, text in original_files().items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    return folder


def verify(folder: Path) -> list[str]:
    """What is wrong with the project after a run: [] when the task was really done. It reads
    the files; it does not ask the model."""
    problems, expected = [], expected_files()
    for path, text in sorted(expected.items()):
        file = folder / path
        if not file.is_file():
            problems.append(f"{path} is missing")
        elif file.read_text(encoding="utf-8") != text:
            still = OLD in file.read_text(encoding="utf-8")
            problems.append(f"{path} still says {OLD}" if still else f"{path} is not as expected")
    extra = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                   if p.is_file() and p.relative_to(folder).as_posix() not in expected)
    problems += [f"{path} should not exist" for path in extra]
    return problems


# --- The careful model: it acts only on what it is sent ----------------------------------

FILES_NOTE, DONE_NOTE, ALREADY = "Files to change: ", "Changed so far: ", f" already says {NEW}()."


def seen(messages: list[dict]) -> dict:
    """What the model can see in one request: the text of every user and assistant message
    (a summary included), the files it read (the latest read of each; an elided result is
    not there), the files it changed, the folders it listed, the files that do not exist."""
    calls, view = {}, {"text": [], "read": {}, "changed": set(), "listed": {}, "missing": set()}
    for m in messages:
        if m["role"] in ("user", "assistant"):
            view["text"].append(m.get("content") or "")
        for call in m.get("tool_calls", []):
            calls[call["id"]] = (call["function"]["name"],
                                 json.loads(call["function"]["arguments"] or "{}"))
        if m["role"] != "tool" or m["content"].startswith("[elided"):
            continue
        name, args = calls.get(m["tool_call_id"], ("?", {}))
        path = args.get("path", ".")
        try:
            result = json.loads(m["content"])
        except json.JSONDecodeError:  # cut by agent.bound: no longer JSON, but still readable
            if name == "read_file":
                view["read"][path] = m["content"]
            continue
        if "error" in result:
            if name == "read_file" and "no such file" in result["error"]:
                view["missing"].add(path)
            elif name == "edit_file":  # what it read of that file may be stale: read again
                view["read"].pop(path, None)
        elif name == "read_file":
            view["read"][path] = result["content"]
        elif name == "edit_file":
            view["changed"].add(path)
        elif name == "list_files":
            view["listed"][path] = [f["name"] for f in result["files"]]
    return view


def noted(view: dict, label: str) -> list[str] | None:
    """The paths after label in the newest text that has such a line, or None."""
    for text in reversed(view["text"]):
        for line in text.split("\n"):
            if line.startswith(label):
                return [p.strip() for p in line[len(label):].rstrip(".").split(",") if p.strip()]
    return None


def already(view: dict) -> set[str]:
    """The files the model said it found changed already."""
    return {line[:-len(ALREADY)] for text in view["text"] for line in text.split("\n")
            if line.endswith(ALREADY)}


def careful_model(messages: list[dict]):
    """What a careful model does next, given only what this request holds."""
    view = seen(messages)
    files, say = noted(view, FILES_NOTE), ""
    if files is None:
        log = view["read"].get(LOG)
        if log is None:  # look around first: the source folder and the log, two calls at once
            first = not any(m.get("tool_calls") for m in messages)
            calls = [tool_call("list_files", path="src")] if first else []
            return step(*calls, tool_call("read_file", path=LOG))
        files = [p.strip() for p in log.rsplit(" in: ", 1)[1].split("==")[0].split(",")]
        say = f"The log names {len(files)} files.\n{FILES_NOTE}{', '.join(files)}."
    done = view["changed"] | set(noted(view, DONE_NOTE) or []) | already(view)
    for path in files:
        text = view["read"].get(path)
        if path in done:
            continue
        if text is not None and OLD not in text:  # changed already: say so, and go on
            say = f"{say}\n{path}{ALREADY}".strip()
            done.add(path)
            continue
        if text is None:  # read before editing, and again if the read is no longer in view
            return step(tool_call("read_file", path=path), content=say)
        line = next(line for line in text.split("\n") if OLD in line)
        return step(tool_call("edit_file", path=path, old_str=line,
                              new_str=line.replace(OLD, NEW)), content=say)
    return changelog_step(view, files, done, say)


def changelog_step(view: dict, files: list[str], done: set, say: str):
    everything = "\n".join(view["text"]) + " ".join(view["listed"].get(".", []))
    path = "CHANGELOG.md" if "CHANGELOG.md" in everything else "CHANGES.md"  # a first guess
    text = view["read"].get(path)
    if path not in done and not (text and "## Unreleased" in text):
        if path in view["missing"] and "." not in view["listed"]:
            return step(tool_call("list_files", path="."), content=say)
        if text is None:
            return step(tool_call("read_file", path=path), content=say)
        return step(tool_call("edit_file", path=path, old_str="# Changelog\n", new_str=ENTRY),
                    content=say)
    return reply(f"Renamed {OLD}() to {NEW}() in {len(files)} files ({', '.join(files)}) and "
                 f"added it under '## Unreleased' at the top of {path}.")


# --- The note taker: a scripted summariser ---------------------------------------------

def section(text: str, tag: str) -> str:
    found = re.search(f"<{tag}>\n(.*)\n</{tag}>", text, re.S)
    return found.group(1) if found else ""


def note_taker(messages: list[dict]):
    """The scripted model as summariser: notes from the earlier notes and the conversation it
    is shown, in the sections the summarising prompt asks for."""
    body = messages[-1]["content"]
    earlier, conversation = section(body, "earlier-notes"), section(body, "conversation")
    files = noted({"text": [earlier, conversation]}, FILES_NOTE)
    changed = noted({"text": [earlier]}, DONE_NOTE) or []
    found = re.findall(r'"path": "([^"]+)", "action": "edited"', conversation)
    found += sorted(already({"text": [conversation]}))
    changed += [p for p in found if p not in changed]
    facts = [line for line in earlier.split("\n") if line.startswith("- ")]
    facts += [f"- {error}" for error in re.findall(r'\{"error": "([^"]+)"\}', conversation)
              if f"- {error}" not in facts]
    for folder, names in re.findall(r'"path": "([^"]+)", "files": (\[[^\]]*\])', conversation):
        listed = f"- {folder} holds: " + ", ".join(f["name"] for f in json.loads(names))
        facts += [listed] if listed not in facts else []
    todo = [p for p in files or [] if p not in changed]
    shown = re.search(r"^\[user\]\n(.*)$", conversation, re.M)  # an earlier task, if shown one
    if shown:
        goal = shown.group(1)
    elif "## Goal\n" in earlier:
        goal = earlier.split("## Goal\n", 1)[1].split("\n", 1)[0]
    else:
        goal = "The task in the user's message, which is sent as it is."
    return reply("\n".join([
        "## Goal", goal,
        *([f"{FILES_NOTE}{', '.join(files)}."] if files else []),
        "", "## Done", f"{DONE_NOTE}{', '.join(changed)}." if changed else "(nothing changed yet)",
        "", "## Still to do", ", ".join(todo) + ", then the changelog." if todo else
        "the changelog entry, if it is not there yet." if files else
        "find the files to change (the test log names them), change them, then the changelog.",
        "", "## Facts to keep", *(facts or ["(none)"])]))


def sloppy_notes(messages: list[dict]):
    """Like note_taker, but it counts every file to change as changed: a summary that reports
    as done what was only planned."""
    notes = note_taker(messages)["content"]
    files = noted({"text": [notes]}, FILES_NOTE) or []
    return reply(re.sub(f"{DONE_NOTE}.*", f"{DONE_NOTE}{', '.join(files)}.", notes)
                 if files and DONE_NOTE in notes else notes.replace(
                     "(nothing changed yet)", f"{DONE_NOTE}{', '.join(files)}."))


# --- The lab: run the task, name a step, draw the prompts --------------------------------------


@contextlib.contextmanager
def in_folder(folder: Path):
    """Work in folder for one block of code, and go back after: the tools read and write the
    current directory."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield folder
    finally:
        os.chdir(before)


def run_task(agent_class, steps: int = 80, **options):
    """The task on a fresh copy of the shop, in a temporary folder of its own (removed after),
    by agent_class(a new careful model, "scripted-demo", max_turns=60, **options). Returns the
    agent and what the verifier found ([] when the task was done)."""
    folder = Path(tempfile.mkdtemp(prefix="afz-12-shop-"))
    try:
        with in_folder(make_project(folder)):
            bot = agent_class(ScriptedClient([careful_model] * steps), "scripted-demo",
                              **{"max_turns": 60, **options})
            bot.chat(TASK)
        return bot, verify(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def asked(message: dict) -> str:
    """What an assistant message asked for, in a few words: each call's tool and path."""
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]).get("path", ""))
             for c in message.get("tool_calls", [])]
    return ", ".join(f"{name} {path}" for name, path in calls) or "(the answer)"


def paid_by_turn(rows: list[dict]) -> list[int]:
    """The prompt tokens paid so far at the end of each turn (a Meter's rows), summaries
    included."""
    last = max((row["turn"] for row in rows), default=0)
    per_turn = [0] * last
    for row in rows:
        per_turn[row["turn"] - 1] += row["prompt_tokens"]
    return list(itertools.accumulate(per_turn))


def plot_prompts(runs: dict[str, list[dict]]):
    """Two charts of one or more runs (name -> a Meter's rows): the prompt tokens each request
    sent, turn by turn (a triangle marks a summarising request), and the prompt tokens paid so
    far (paid_by_turn)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, (sent, paid) = plt.subplots(1, 2, figsize=(11, 3.8))
    for n, (name, rows) in enumerate(runs.items()):
        color = f"C{n}"
        tasks = [row for row in rows if row["kind"] == "task"]
        sent.plot([r["turn"] for r in tasks], [r["prompt_tokens"] for r in tasks], color=color,
                  marker=".", label=name)
        summaries = [row for row in rows if row["kind"] == "summary"]
        sent.scatter([r["turn"] for r in summaries], [r["prompt_tokens"] for r in summaries],
                     color=color, marker="v", zorder=3)
        totals_so_far = paid_by_turn(rows)
        paid.plot(range(1, len(totals_so_far) + 1), totals_so_far, color=color, label=name)
    sent.set_title("prompt tokens of each request (v: a summarising request)", fontsize=10)
    paid.set_title("prompt tokens paid so far", fontsize=10)
    for ax in (sent, paid):
        ax.set_xlabel("turn")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:,.0f}"))
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# --- What a prefix cache would have billed at its lower rate -----------------------------------

CACHED_PRICE = 0.10  # dollars a million cached prompt tokens: gpt-4.1-mini's cached-input rate
# at OpenAI, a quarter of the 0.40 lesson 07 charges for scripted-demo (priced as gpt-4.1-mini)


def shared_prefix(messages: list[dict], earlier: list[dict]) -> int:
    """How many messages, from the first, the two lists have in common."""
    n = 0
    while n < min(len(messages), len(earlier)) and messages[n] == earlier[n]:
        n += 1
    return n


def cached_tokens(bot, minimum: int = 1_024) -> int:
    """The prompt tokens of bot's requests (the task's and, if it has a summarizer, the
    summarising ones) that a prefix cache could have matched, by OpenAI's rule: only an exact
    prefix of an earlier request counts (here: the tool schemas and the messages up to the
    first that differs), and only in a prompt of `minimum` tokens or more. At four characters a
    token, as everything here; a real server reports its own count, in OpenAI's case as
    usage.prompt_tokens_details.cached_tokens."""
    from context_budget import estimate_tokens

    total = 0
    for client in (bot.client, getattr(bot, "summarizer", None)):
        requests = getattr(client, "requests", [])
        for n, request in enumerate(requests):
            messages, tools = request["messages"], request.get("tools", [])
            if estimate_tokens(messages, tools) < minimum:
                continue
            same = max((shared_prefix(messages, e["messages"]) for e in requests[:n]
                        if e.get("tools", []) == tools), default=0)
            total += estimate_tokens(messages[:same], tools) if same else 0
    return total


def cached_cost(rows: list[dict], cached: int, model: str = "scripted-demo") -> float:
    """A run's cost (a Meter's rows, lesson 07's prices) if `cached` of its prompt tokens were
    billed at CACHED_PRICE instead of the full input price."""
    import tracing

    prompt = sum(row["prompt_tokens"] for row in rows)
    completion = sum(row["completion_tokens"] for row in rows)
    return tracing.cost(model, prompt - cached, completion) + cached * CACHED_PRICE / 1_000_000

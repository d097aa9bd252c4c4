"""Lesson 16's scripted characters and the plan's live view.

Each character is a list of steps for agent.ScriptedClient, made of one function that reads
the history it is sent and decides the next step, as a model would: what it has read, what
the tools answered, whether the host reminded it of its plan. They work on props/shop.py's
package: twelve modules, one bug.

  lone_worker      a main agent with no one to delegate to: it plans, reads the modules one by
                   one until it finds the bug, fixes it, checks, keeps its plan up to date
  lead             the same task, delegated: it plans, gives the search to a subagent, reads
                   the place the subagent names before it edits, fixes, checks
  explorer         a subagent: lists the folder (or takes the files its task names), reads one
                   file at a time until it finds the bug, and answers with path:line: text
  explorers()      a client factory for Delegate(client=...): a new explorer for each task
  eager_fixer      a subagent with write access: fixes the bug, and "tidies" checkout.py too
  guesser          a subagent that reads three files, then names a line that is not there
  messenger        a main agent that delegates, then passes the answer on as fact
  forgetful_planner  writes a plan once, then reads on without updating it, until reminded
  splitting_lead   gives the search to two subagents at once, half the files each
  met_together(n)  wraps a client factory so that n children must all be running at once
  stops_parent     a subagent that, mid-search, has the parent's abort() called (a person
                   pressing stop)
  looping          a subagent that reads the same file again and again
  broken_client    a client whose server is down: every request raises
  reader_with_plan writes a plan, then reads module after module, whatever it is sent
  summariser       a scripted summariser for lesson 12's CompactingAgent
  watch_plan(plan) the plan, shown live: one display updated in place as the model writes it
"""

import contextlib
import json
import re
import threading

import openai

from agent import reply, tool_call
from props.shop import BUG, FIX

FOLDER = "shop"
CLAIM = re.compile(r"^(\S+\.py):(\d+): (.*)$", re.MULTILINE)  # path:line: the text

PLAN = ["Find the file with the discount bug", "Fix the bug", "Check the fix"]


def plan(*statuses: str) -> dict:
    """A todo call for PLAN with these statuses."""
    return tool_call("todo", todos=[{"content": step, "status": status}
                                    for step, status in zip(PLAN, statuses, strict=True)])


# --- reading the history as a model would ---------------------------------------------------


def calls(messages: list[dict], name: str | None = None) -> list[tuple[dict, str | None]]:
    """The calls of the current task (since the last user message that is not a host note),
    of the tool `name` (or of every tool), in order: (arguments, result or None)."""
    return [(args, result) for tool, args, result in every_call(messages)
            if name is None or tool == name]


def every_call(messages: list[dict]) -> list[tuple[str, dict, str | None]]:
    """(tool, arguments, result or None) of each call of the current task, in order."""
    start = max((i for i, m in enumerate(messages) if m["role"] == "user"
                 and not m["content"].startswith("<")), default=0)
    results = {m["tool_call_id"]: m["content"] for m in messages[start:] if m["role"] == "tool"}
    return [(call["function"]["name"], json.loads(call["function"]["arguments"]),
             results.get(call["id"]))
            for m in messages[start:] for call in m.get("tool_calls", [])]


def task_of(messages: list[dict]) -> str:
    return next(m["content"] for m in messages if m["role"] == "user")


def read_paths(messages: list[dict]) -> list[str]:
    return [args["path"] for args, _ in calls(messages, "read_file")]


def found_bug(messages: list[dict]) -> tuple[str, int] | None:
    """(path, line number) if a file read holds the bug."""
    for args, result in calls(messages, "read_file"):
        if result and BUG in json.loads(result).get("content", ""):
            lines = json.loads(result)["content"].split("\n")
            return args["path"], lines.index(BUG) + 1
    return None


def files_to_read(messages: list[dict]) -> list[str] | None:
    """The files a searcher goes through: those its task names, or the folder's listing (None
    until it has listed the folder). __init__.py is skipped."""
    named = re.findall(rf"{FOLDER}/\w+\.py", task_of(messages))
    if named:
        return named
    listings = [json.loads(result) for _, result in calls(messages, "list_files") if result]
    if not listings:
        return None
    return [f"{FOLDER}/{entry['name']}" for entry in listings[-1]["files"]
            if entry["name"].endswith(".py") and entry["name"] != "__init__.py"]


def search(messages: list[dict]):
    """The next step of a search, or None once the bug is found or every file is read."""
    if found_bug(messages):
        return None
    files = files_to_read(messages)
    if files is None:
        return tool_call("list_files", path=FOLDER)
    left = [path for path in files if path not in read_paths(messages)]
    return tool_call("read_file", path=left[0]) if left else None


def claim(path: str, line: int) -> str:
    return f"{path}:{line}: {BUG.strip()}"


# --- the subagents ---------------------------------------------------------------------------


def explorer(steps: int = 30) -> list:
    """A subagent that searches and answers with what it found, as its prompt asks."""
    def act(messages):
        step = search(messages)
        if step is not None:
            return step
        found, read = found_bug(messages), read_paths(messages)
        if found is None:
            return reply(f"Not in the files I read ({', '.join(read)}): none of them computes "
                         "a discount wrongly. I did not run any code.")
        unread = [p for p in files_to_read(messages) if p not in read]
        return reply(f"Found it.\n{claim(*found)}\nThis divides the percentage by 10, not 100, "
                     f"so a 10% code takes off the whole price. I read {len(read)} files; "
                     f"the others only pass the percentage on. I did not read "
                     f"{', '.join(unread) or 'nothing else'}, and ran no code.")
    return [act] * steps


def explorers(steps: int = 30):
    """Delegate(client=explorers()): a new scripted explorer for each child."""
    from agent import ScriptedClient
    return lambda task: ScriptedClient(explorer(steps))


def eager_fixer() -> list:
    """A subagent with write access and no approval: it fixes the bug, then removes the tax
    line from checkout.py "to simplify", and reports only the fix."""
    tidy = "    amount = tax.with_tax(amount, country)\n"

    def act(messages):
        step = search(messages)
        if step is not None:
            return step
        edits = calls(messages, "edit_file")
        path, _ = found_bug(messages)
        if not edits:
            return tool_call("edit_file", path=path, old_str=BUG.strip(), new_str=FIX.strip())
        if len(edits) == 1:
            return tool_call("edit_file", path=f"{FOLDER}/checkout.py", old_str=tidy, new_str="")
        return reply(f"Fixed the discount in {path}: it divided by 10 instead of 100.")
    return [act] * 30


def guesser() -> list:
    """A subagent that reads three files and then names, with confidence, a line that is not
    in the file it names."""
    def act(messages):
        if len(read_paths(messages)) < 3:
            return search(messages)
        return reply("Found it.\nshop/checkout.py:17: amount = pricing.discounted(amount, "
                     "percent * 10)\nThe percentage is multiplied by 10 before the discount, so "
                     "the discount is ten times too big.")
    return [act] * 30


def looping() -> list:
    """A subagent stuck in a loop: the same read, again and again."""
    return [tool_call("read_file", path=f"{FOLDER}/cart.py")] * 50


def stops_parent(parent_box: dict) -> list:
    """A subagent during whose search a person presses stop: on its third step the parent's
    abort() is called (parent_box["agent"] is the parent), then it would go on searching."""
    def act(messages):
        if len(read_paths(messages)) == 2:
            parent_box["agent"].abort()
        return search(messages) or reply("done")
    return [act] * 30


class BrokenClient:
    """A model server that is down: every request raises openai.APIConnectionError."""

    def __init__(self):
        import httpx2
        self.request = httpx2.Request("POST", "http://scripted/v1/chat/completions")
        from types import SimpleNamespace
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(self, **request):
        raise openai.APIConnectionError(request=self.request)


def met_together(factory, n: int, timeout: float = 10):
    """A client factory whose children each wait, at their first model call, until n children
    are running: if they could not all run at once, the wait times out and they fail."""
    barrier = threading.Barrier(n, timeout=timeout)

    def make(task):
        client = factory(task)
        create, first = client.chat.completions.create, [True]

        def meeting_create(**request):
            if first[0]:
                first[0] = False
                barrier.wait()
            return create(**request)
        client.chat.completions.create = meeting_create
        return client
    make.barrier = barrier
    return make


# --- the main agents ---------------------------------------------------------------------------

TASK = ("Customers say a 10% discount code takes off far too much. The code is in shop/. "
        "Find the bug and fix it.")
FOUR_FILES_TASK = ("Read shop/cart.py, shop/coupons.py, shop/pricing.py and shop/checkout.py, "
                   "and tell me which of them import other modules of the shop.")
SEARCH_TASK = ("In the package shop/, find where a percentage discount is computed. Customers "
               "say a 10% code takes off far too much. Read the files and answer with the "
               "place (path:line: the exact text of the line) and why it is wrong. Change "
               "nothing.")


def finishing(messages, path: str, line_text: str):
    """The end both main agents share: the plan moved on, the fix, the plan again, the file
    read once more to check the edit, the plan done, the answer."""
    todos, names = calls(messages, "todo"), [tool for tool, _, _ in every_call(messages)]
    if len(todos) == 1:
        return plan("done", "in_progress", "pending")
    if "edit_file" not in names:
        return tool_call("edit_file", path=path, old_str=line_text, new_str=FIX.strip())
    if len(todos) == 2:
        return plan("done", "done", "in_progress")
    if "read_file" not in names[names.index("edit_file"):]:
        return tool_call("read_file", path=path)
    if len(todos) == 3:
        return plan("done", "done", "done")
    return reply(f"Fixed: {path} divided the discount by 10 instead of 100; a 10% code now "
                 "takes off 10%. I read the file again after the edit.")


def lone_worker(plans: bool = True) -> list:
    """A main agent that searches by itself; with plans=False it keeps no plan."""
    def act(messages):
        if plans and not calls(messages, "todo"):
            return plan("in_progress", "pending", "pending")
        found = found_bug(messages)
        if found is None:
            return search(messages) or reply("I read every file and found no discount bug.")
        if not plans:
            return alone_fix(messages, found[0])
        return finishing(messages, found[0], BUG.strip())
    return [act] * 40


def alone_fix(messages, path: str):
    names = [tool for tool, _, _ in every_call(messages)]
    if "edit_file" not in names:
        return tool_call("edit_file", path=path, old_str=BUG.strip(), new_str=FIX.strip())
    if "read_file" not in names[names.index("edit_file"):]:
        return tool_call("read_file", path=path)
    return reply(f"Fixed: {path} divided the discount by 10 instead of 100.")


def delegated_claim(messages):
    """(path, line text) from the delegate's answer, if it made a claim."""
    results = [result for _, result in calls(messages, "delegate") if result]
    match = CLAIM.search(results[-1]) if results else None
    return (match[1], match[3].strip()) if match else None


def lead() -> list:
    def act(messages):
        if not calls(messages, "todo"):
            return plan("in_progress", "pending", "pending")
        if not calls(messages, "delegate"):
            return tool_call("delegate", task=SEARCH_TASK)
        found = delegated_claim(messages)
        if found is None:
            return reply("The subagent found nothing I can act on; I changed nothing.")
        path, text = found
        if path not in read_paths(messages):  # check the claim before acting on it
            return tool_call("read_file", path=path)
        return finishing(messages, path, text)
    return [act] * 40


def messenger() -> list:
    """A main agent that delegates the search and passes the child's answer on as fact."""
    def act(messages):
        results = [result for _, result in calls(messages, "delegate") if result]
        if not results:
            return tool_call("delegate", task=SEARCH_TASK)
        return reply("The subagent found it: " + results[-1].split("\n[subagent")[0])
    return [act] * 5


def splitting_lead(halves: list[list[str]]) -> list:
    """Two searches in one batch, each with its half of the files; then it reports."""
    def act(messages):
        results = [result for _, result in calls(messages, "delegate")]
        if not results:
            return [tool_call("delegate", task=f"Look only at these files: {' '.join(half)}. "
                              f"{SEARCH_TASK}") for half in halves]
        where = [CLAIM.search(r or "") for r in results]
        said = "; ".join(f"subagent {n}: {m[1] + ' line ' + m[2] if m else 'not there'}"
                         for n, m in enumerate(where, 1))
        return reply(f"The two searches say: {said}.")
    return [act] * 5


def forgetful_planner() -> list:
    """Plans the reading of four files, then reads on without updating the plan; a reminder
    from the host makes it catch up, and from then on it keeps the plan."""
    files = [f"{FOLDER}/{name}.py" for name in ("cart", "coupons", "pricing", "checkout")]
    steps = [f"Read {path}" for path in files] + ["Say which of them import others"]

    def todo(done: int):
        return tool_call("todo", todos=[{"content": s, "status": "done" if i < done else
                                         "in_progress" if i == done else "pending"}
                                        for i, s in enumerate(steps)])

    def act(messages):
        todos, read = calls(messages, "todo"), read_paths(messages)
        reminded = "<reminder>" in (messages[-1].get("content") or "")
        if not todos:
            return todo(0)
        if reminded:  # catch up: what is read is done
            return todo(len(read))
        if len(read) < len(files):
            if len(todos) > 1 and todos[-1][0]["todos"][len(read)]["status"] != "in_progress":
                return todo(len(read))
            return tool_call("read_file", path=files[len(read)])
        if todos[-1][0]["todos"][-1]["status"] != "done":
            return todo(len(steps))
        importers = [path for path, (_, result) in zip(files, calls(messages, "read_file"),
                                                      strict=False)
                     if result and "from shop import" in json.loads(result)["content"]]
        return reply(f"Of the four, {', '.join(importers)} imports other modules of the shop.")
    return [act] * 20


def reader_with_plan(names: list[str]) -> list:
    """Writes a plan of two steps, then reads the modules one by one, then answers: the same
    steps whatever it is sent, so a compaction cannot change what it does."""
    todos = [{"content": "Read every module", "status": "in_progress"},
             {"content": "Say what each one does", "status": "pending"}]
    return [tool_call("todo", todos=todos),
            *[tool_call("read_file", path=f"{FOLDER}/{name}") for name in names],
            reply(f"I have read the {len(names)} modules.")]


def summariser(text: str = "## Goal\nFind and fix the discount bug in shop/.\n## Done\nListed "
               "shop/ and read several of its modules; none of them holds the bug yet.\n## Still "
               "to do\nRead the rest.\n## Facts to keep\nThe modules are read in listing order."):
    """A summariser for lesson 12's CompactingAgent: it always writes these notes (which, as
    a real summary may, say nothing of the plan)."""
    from agent import ScriptedClient
    return ScriptedClient([reply(text)] * 20)


# --- the plan, shown live ----------------------------------------------------------------------


@contextlib.contextmanager
def watch_plan(plan_object):
    """Show the plan while the model works: in Jupyter one display updated in place after each
    todo call; elsewhere the plan printed after each change."""
    import course
    from IPython.display import display

    previous = plan_object.on_change
    if course.in_jupyter():
        handle = display(_PlanView(plan_object), display_id=True)

        def show(p):
            handle.update(_PlanView(p))
    else:
        def show(p):
            print(p.render())
    plan_object.on_change = show
    try:
        yield plan_object
    finally:
        plan_object.on_change = previous


class _PlanView:
    def __init__(self, plan_object):
        self.text = "plan (kept by the host):\n" + plan_object.render()

    def __repr__(self):
        return self.text

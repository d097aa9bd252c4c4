"""Agent from Zero: a minimal coding agent in one readable file.

An agent is six parts working together, as the course's articles count them. Where each is:

  1 the model        section 1  configured from the environment, never a key in code
  2 tool schemas     section 3  what the model is told it may call (TOOLS), beside what the
                                host runs (TOOL_REGISTRY), checked to agree (check_tools)
  3 tools            section 2  plain functions that do the work: read_file, list_files, edit_file
  4 the protocol     section 5  user -> assistant with tool_calls -> one tool message per call id
                                (Agent.append, Agent.answer_calls, assistant_message)
  5 the loop         section 5  decide -> act -> observe -> decide again (Agent.run)
  6 the guards       section 1 sets the limits (MAX_TURNS, MAX_TOOL_OUTPUT); section 5 keeps
    (governance)                them: the turn limit and the "length" check (Agent.run), errors
                                as observations (Agent.run_tool, call_tool), bounded output (bound)

Section 4 is the system prompt; after section 5, print_event's siblings trace_to and
format_history let you watch a run; section 6 is an offline scripted model, 7 the command line.
Run it offline with `python agent.py --demo`; with OPENAI_API_KEY set, `python agent.py`.

The lessons grow the agent through a few extension points, never by copying the loop:
  tools=, registry=     the tools are data: pass other functions and their schemas
                        (schema(func, ..., name=) names a tool; check_tools checks the pair)
  on_event=             one callback sees every event; fan_out(a, b) gives it to several
  a subclass            overrides one small method: ask_model, answer_calls, run_tool, or
                        request_messages (what a request sends: the history itself, by default)
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import httpx2
import openai
from openai.types.chat import ChatCompletion

# --- 1. Model config ----------------------------------------------------------------------
# The openai SDK reads OPENAI_API_KEY and OPENAI_BASE_URL itself; the model name is ours.
# Any OpenAI-compatible server works: set OPENAI_BASE_URL to its base URL (often .../v1).
DEFAULT_MODEL = "gpt-4.1-mini"
MAX_TURNS = 20  # model calls per chat() before we stop, whatever the model wants
MAX_TOOL_OUTPUT = 20_000  # characters of one tool result that may enter the context


# --- 2. Tools: plain functions. They return JSON-able dicts and raise on failure. -----------
# They know nothing about models; the loop turns their exceptions into observations.


def read_file(path: str) -> dict:
    """Return the whole text of a UTF-8 file."""
    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if file.is_dir():
        raise IsADirectoryError(f"{path} is a directory, not a file (use list_files)")
    try:  # bytes, then decode: keeps "\r\n" exactly as it is on disk
        content = file.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a UTF-8 text file") from None
    return {"path": path, "content": content}


def list_files(path: str = ".") -> dict:
    """List a directory's entries, sorted by name, each marked "file" or "dir"."""
    folder = Path(path)
    if not folder.exists():
        raise FileNotFoundError(f"no such directory: {path}")
    if not folder.is_dir():
        raise NotADirectoryError(f"{path} is a file, not a directory (use read_file)")
    entries = sorted(folder.iterdir(), key=lambda entry: entry.name)
    files = [{"name": e.name, "type": "dir" if e.is_dir() else "file"} for e in entries]
    return {"path": path, "files": files}


def edit_file(path: str, old_str: str, new_str: str) -> dict:
    """old_str == "": create or overwrite the file. Otherwise replace old_str, which must
    occur exactly once, so the model can never change a place it did not mean."""
    file = Path(path)
    if old_str == "":
        if file.is_dir():
            raise IsADirectoryError(f"{path} is a directory, not a file")
        action = "overwritten" if file.exists() else "created"
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(new_str.encode("utf-8"))
        return {"path": path, "action": action}
    new = replace_once(read_file(path)["content"], old_str, new_str, path)
    # A plain write: a crash half-way can leave a partial file. Lesson 06 makes it atomic.
    file.write_bytes(new.encode("utf-8"))
    return {"path": path, "action": "edited"}


def replace_once(text: str, old_str: str, new_str: str, path: str) -> str:
    """text with old_str replaced by new_str, if old_str occurs exactly once; else ValueError,
    and nothing should be written. The one place of the rule: lessons 05 and 06 use it too."""
    found = occurrences(text, old_str)
    if found != 1:
        hint = "add surrounding lines to make it unique" if found else "read the file again"
        raise ValueError(f"old_str must occur exactly once in {path}, found {found} ({hint})")
    return text.replace(old_str, new_str, 1)


def occurrences(text: str, part: str) -> int:
    """How many places part starts at, overlaps included ("aa" is twice in "aaa"): str.count
    would say once, and replacing the first would be a guess."""
    count, at = 0, text.find(part)
    while at != -1:
        count, at = count + 1, text.find(part, at + 1)
    return count


# --- 3. Schemas (what the model sees) beside the registry (what the host runs) --------------


def schema(func, description: str, /, name: str | None = None, **params: str) -> dict:
    """A Chat Completions tool schema, named name (default: the function's own name); every
    parameter is a string, described in words. Parameters with a default in the function are
    optional for the model too. A parameter itself called "name" is described as name_=."""
    params = {("name" if n == "name_" else n): text for n, text in params.items()}
    defaults = inspect.signature(func).parameters
    return {
        "type": "function",
        "function": {
            "name": func.__name__ if name is None else name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {n: {"type": "string", "description": d} for n, d in params.items()},
                "required": [n for n in params if defaults[n].default is inspect.Parameter.empty],
            },
        },
    }


TOOLS = [
    schema(read_file, "Read the full text of a file.", path="Path of the file."),
    schema(list_files, "List the files and folders in a directory.",
           path="Directory to list; default is the working directory."),
    schema(edit_file,
           "Edit a file. With old_str empty, create the file (or overwrite it) with new_str. "
           "Otherwise replace old_str, which must occur exactly once, with new_str. "
           "Read the file first.",
           path="Path of the file.", old_str="Exact text to replace, or empty to create.",
           new_str="The replacement text."),
]
TOOL_REGISTRY = {"read_file": read_file, "list_files": list_files, "edit_file": edit_file}


def check_tools(tools: list[dict], registry: dict) -> None:
    """Raise ValueError if the schemas and the registry have drifted apart."""
    problems = []
    names = [t["function"]["name"] for t in tools]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"two schemas are named {name!r}")
    for name in names:  # what the API accepts as a function's name
        if not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name):
            problems.append(f"{name!r} is not a tool name: letters, digits, _ and - only, "
                            "at most 64")
    for name in sorted(set(names) - set(registry)):
        problems.append(f"schema {name!r} has no function in the registry")
    for name in sorted(set(registry) - set(names)):
        problems.append(f"function {name!r} has no schema, so the model cannot call it")
    for tool in tools:
        func = registry.get(tool["function"]["name"])
        if func is None:
            continue
        accepted = inspect.signature(func).parameters
        described = tool["function"].get("parameters", {}).get("properties", {})
        for param in described:
            if param not in accepted:
                problems.append(f"{func.__name__}() takes no parameter {param!r} from its schema")
        for param in accepted.values():
            if param.default is param.empty and param.name not in described:
                problems.append(f"{func.__name__}() needs {param.name!r}, missing from its schema")
    if problems:
        raise ValueError("tools and registry disagree: " + "; ".join(problems))


check_tools(TOOLS, TOOL_REGISTRY)  # the built-in tools are checked at import


# --- 4. System prompt ---------------------------------------------------------------------
SYSTEM_PROMPT = """You are a coding agent working in the user's current directory.
Use the tools to look before you act: list_files to explore, read_file to read,
edit_file to change a file (old_str empty creates it; otherwise old_str must match exactly once).
Always read a file before you edit it. When a tool returns an error, read it and adjust.
When the task is done, answer briefly with what you did, without calling a tool."""


# --- 5. The loop --------------------------------------------------------------------------
# The loop's only output is events: dicts with a "type" (pi's names) sent to one on_event
# callback. print_event is the default; a tracer or a test is just another handler.


def print_event(event: dict) -> None:
    """Print the familiar user / tool call / tool result / agent lines."""
    kind, message = event["type"], event.get("message", {})
    role = message.get("role")
    if kind == "message_end" and role == "user":
        print(f"user:        {one_line(message['content'])}")
    elif kind == "message_end" and role == "assistant":
        if message["content"]:
            print(f"agent:       {one_line(message['content'])}")
        if event.get("finish_reason") == "length":  # these calls will not run: show them
            for call in message.get("tool_calls", []):
                function = call.get("function", {})
                arguments = one_line(function.get("arguments") or "")
                print(f"cut off:     {function.get('name')}({arguments})")
    elif kind == "tool_execution_start":
        print(f"tool call:   {event['name']}({one_line(event['arguments'])})")
    elif kind == "message_end" and role == "tool":
        label = "tool error: " if event.get("is_error") else "tool result:"
        print(f"{label} {one_line(message['content'])}")
    elif kind == "agent_end" and event["stop_reason"] not in ("done", "error", "interrupted"):
        print(f"stopped:     {event['stop_reason']}")  # an error is shown by whoever catches it


def one_line(text: str, width: int = 150) -> str:
    # backslashreplace: a lone surrogate (half an emoji) cannot be printed; show it as \udXXX
    text = text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 3] + "..."


def fan_out(*handlers):
    """One on_event handler that gives every event to each handler, in order."""
    def on_event(event: dict) -> None:
        for handler in handlers:
            handler(event)
    return on_event


# What the model is told about a call whose result was never recorded (answer_open_calls):
# one whose tool had started may have done its work; one that never started did not.
INTERRUPTED = ("interrupted before this call's result was recorded; it may or may not have run, "
               "so check before repeating it")
NOT_RUN = "not run: the run was stopped before this call started"


class Agent:
    """Keeps the history and runs the loop; everything it does is reported to on_event."""

    def __init__(self, client=None, model=None, *, tools=TOOLS, registry=TOOL_REGISTRY,
                 system_prompt=SYSTEM_PROMPT, max_turns=MAX_TURNS,
                 max_tool_output=MAX_TOOL_OUTPUT, on_event=print_event):
        self.client = client if client is not None else openai.OpenAI()
        self.model = model or os.environ.get("AGENT_MODEL") or DEFAULT_MODEL
        self.tools, self.registry = tools, registry
        self.max_turns, self.max_tool_output = max_turns, max_tool_output
        self.on_event = on_event or (lambda event: None)
        self.messages: list[dict] = [{"role": "system", "content": system_prompt}]
        self.stop_reason: str | None = None
        self.started_calls: set[str] = set()  # their tools began, so they may have run

    def chat(self, text: str) -> str:
        """Add the user's message, run the loop until it ends, return the final text."""
        self.stop_reason = None
        self.emit("agent_start", model=self.model)
        try:
            answer = self.run(text)
        except BaseException as exc:  # the caller still gets the exception; the trace ends
            self.answer_open_calls()
            self.stop_reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else "error"
            error = f"{type(exc).__name__}: {exc}"
            self.emit("agent_end", stop_reason=self.stop_reason, error=error)
            raise
        self.emit("agent_end", stop_reason=self.stop_reason, answer=answer)
        return answer

    def run(self, text: str) -> str:
        """The loop: ask the model, run the tools it asks for, repeat until it answers."""
        self.append({"role": "user", "content": text})
        for turn in range(1, self.max_turns + 1):
            self.emit("turn_start", turn=turn)
            message, details = self.ask_model(turn)  # details: finish_reason, usage, duration
            self.append(message, turn=turn, **details)  # in the history before any tool runs
            calls, cut_off = message.get("tool_calls", []), details["finish_reason"] == "length"
            if not calls:  # the presence of tool calls decides, not finish_reason...
                self.emit("turn_end", turn=turn)
                self.stop_reason = "length" if cut_off else "done"
                return message["content"]
            # ...except "length": the arguments may be cut off, so none of these calls runs.
            self.answer_calls(calls, turn, truncated=cut_off)
            self.emit("turn_end", turn=turn)
        self.stop_reason = "max_turns"
        return f"[stopped: no final answer after max_turns={self.max_turns} model calls]"

    def ask_model(self, turn: int) -> tuple[dict, dict]:
        """One model call, sent the whole history and the tool schemas."""
        self.emit("message_start", turn=turn, role="assistant", messages=len(self.messages))
        started = time.perf_counter()
        request = {"model": self.model, "messages": self.request_messages()}
        if self.tools:  # some servers reject an empty tools list
            request["tools"] = self.tools
        response = self.client.chat.completions.create(**request)
        choice = (getattr(response, "choices", None) or [None])[0]
        if getattr(choice, "message", None) is None:  # e.g. a proxy's HTML page, status 200
            raise openai.OpenAIError(f"the server sent no completion: {one_line(str(response))}")
        usage = response.usage and response.usage.model_dump(mode="json", exclude_none=True)
        details = {"finish_reason": choice.finish_reason, "usage": usage,
                   "duration": time.perf_counter() - started}
        return assistant_message(choice.message), details

    def request_messages(self) -> list[dict]:
        """What a request sends: the history itself. A lesson that sends a documented
        conversion of it instead (a compacted history, say) overrides this one method."""
        return self.messages

    def answer_calls(self, calls: list[dict], turn: int, truncated: bool = False) -> None:
        """Give every call exactly one tool message, in the order of the calls."""
        for call in calls:
            if truncated:
                content, is_error = error_json(
                    "not executed: your output was truncated (finish_reason 'length'), so "
                    "these arguments may be incomplete; re-issue the call"), True
            else:
                content, is_error = self.run_tool(call, turn)
            self.append({"role": "tool", "tool_call_id": call["id"], "content": content},
                        turn=turn, is_error=is_error)

    def answer_open_calls(self) -> None:
        """After Ctrl-C, a client error or a failing event handler: answer every call of the
        last assistant message that has no result yet, so the history stays valid to send."""
        last = max((i for i, m in enumerate(self.messages) if m["role"] == "assistant"),
                   default=None)
        if last is None:
            return
        answered = {m.get("tool_call_id") for m in self.messages[last + 1:]}
        for call in self.messages[last].get("tool_calls", []):
            if call["id"] not in answered:  # appended quietly: the handler may be what failed
                text = INTERRUPTED if call["id"] in self.started_calls else NOT_RUN
                self.messages.append({"role": "tool", "tool_call_id": call["id"],
                                      "content": error_json(text)})

    def run_tool(self, call: dict, turn: int) -> tuple[str, bool]:
        """Run one call. Every failure becomes a result the model can read and act on."""
        function = call.get("function") or {}
        name, arguments = function.get("name", "?"), function.get("arguments") or "{}"
        self.emit("tool_execution_start", turn=turn, tool_call_id=call["id"], name=name,
                  arguments=arguments)
        self.started_calls.add(call["id"])  # from here on, it may have done its work
        started = time.perf_counter()
        offered = {tool["function"]["name"] for tool in self.tools}  # never run what was
        runnable = {n: f for n, f in self.registry.items() if n in offered}  # not offered
        try:
            result, is_error = call_tool(runnable, name, arguments), False
        except Exception as exc:
            result, is_error = {"error": f"{name}: {exc}"}, True
        text = result if isinstance(result, str) else to_json(result)
        # A file name that is not UTF-8 arrives as lone surrogates, which no request can
        # encode - and it would stay in the history, failing every later request.
        content = bound(text.encode("utf-8", "replace").decode("utf-8"), self.max_tool_output)
        self.emit("tool_execution_end", turn=turn, tool_call_id=call["id"], name=name,
                  result=content, is_error=is_error, duration=time.perf_counter() - started)
        return content, is_error

    def append(self, message: dict, **details) -> None:
        """Every message enters the history here, and every one is announced."""
        self.messages.append(message)
        self.emit("message_end", message=message, **details)

    def emit(self, event_type: str, **data) -> None:
        self.on_event({"type": event_type, **data})


def call_tool(registry: dict, name: str, arguments: str):
    """Look the tool up, parse and check its JSON arguments, call it. Raises on any problem."""
    func = registry.get(name)
    if func is None:
        raise LookupError(f"unknown tool; the tools are: {', '.join(sorted(registry))}")
    try:
        args = json.loads(arguments, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as exc:
        raise ValueError(f"arguments are not valid JSON ({exc}); send a JSON object") from None
    if not isinstance(args, dict):
        raise ValueError(f"arguments must be a JSON object, not {type(args).__name__}")
    try:  # missing or unexpected arguments, caught before the tool runs
        inspect.signature(func).bind(**args)
    except TypeError as exc:
        raise TypeError(f"bad arguments: {exc}") from None
    return func(**args)


def unique_keys(pairs: list) -> dict:
    """A JSON object as a dict, refusing a key given twice: json.loads would keep the last one
    silently, and which value the model meant would be a guess."""
    keys = [key for key, _ in pairs]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise ValueError(f"arguments give {twice[0]!r} more than once; send each key once")
    return dict(pairs)


def assistant_message(message) -> dict:
    """The model's message as a plain dict, kept as returned (extras such as
    reasoning_content survive) but in a form strict servers accept when it is sent back."""
    # function_call is the deprecated twin of tool_calls that some servers add; empty lists
    # (e.g. "tool_calls": []) are dropped; content is a string: some servers refused null.
    data = message.model_dump(mode="json", exclude_none=True, exclude={"function_call"})
    # A lone surrogate (half an emoji, which some servers send) cannot be encoded in the next
    # request and would fail every later one: replaced, as run_tool does in a tool result.
    data = json.loads(to_json(data).encode("utf-8", "replace"))
    extras = {key: value for key, value in data.items()
              if value != [] and key not in ("role", "content")}
    # A few servers omit a call's id, but its result must name one.
    for n, call in enumerate(extras.get("tool_calls", []), 1):
        call["id"] = call.get("id") or f"call_{time.time_ns()}_{n}"
    return {"role": "assistant", "content": data.get("content") or "", **extras}


def to_json(value) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def error_json(text: str) -> str:
    return to_json({"error": text})


def bound(text: str, limit: int) -> str:
    """Keep the head and the tail of an over-long result, and say what was cut; the whole
    result, note included, is at most limit characters."""
    if len(text) <= limit:
        return text
    note = "\n[... output truncated: {} of {} characters cut ...]\n"
    room = limit - len(note.format(len(text), len(text)))  # the note at its longest
    if room < 0:  # no room for the text at all: the note alone says what happened
        return note.format(len(text), len(text)).strip()[:limit]
    head = text[: room * 3 // 4]
    tail = text[len(text) - (room - len(head)):]
    return head + note.format(len(text) - len(head) - len(tail), len(text)) + tail


# --- Watching it: a trace file and a history table ---------------------------------------


def trace_to(path: str):
    """An on_event handler that appends every event to a JSON Lines file, with the time."""
    def write(event: dict) -> None:
        # A lone surrogate (half an emoji, as some servers send) has no UTF-8 form; written
        # as \udXXX it is a JSON escape that reads back the same. A trace must not stop a run.
        line = to_json({"time": time.time(), **event}).encode("utf-8", "backslashreplace")
        with open(path, "a+b") as file:  # a+: writes go to the end, and the last byte is read
            file.seek(max(file.seek(0, os.SEEK_END) - 1, 0))
            if file.read(1) not in (b"", b"\n"):  # a line cut short by a crash: end it, so
                line = b"\n" + line  # this event is not glued onto it and lost with it
            file.write(line + b"\n")
    return write


def history_rows(messages: list[dict]) -> list[tuple[str, str, str, str]]:
    """One row per message, and one more per extra tool call: (role, call, id, content)."""
    rows = []
    for m in messages:
        calls = [(f"{c['function']['name']}({c['function']['arguments']})", c["id"])
                 for c in m.get("tool_calls", []) if "function" in c] or [("", "")]
        call, call_id = calls[0]
        rows.append((m["role"], call, m.get("tool_call_id", call_id), m.get("content") or ""))
        rows += [("", call, call_id, "") for call, call_id in calls[1:]]
    return rows


def format_history(messages: list[dict], width: int = 60) -> str:
    """The history as a compact text table."""
    lines = [f"{'#':>3}  {'role':<9} {'tool call':<34} {'id':<8} content"]
    for i, (role, call, call_id, text) in enumerate(history_rows(messages)):
        lines.append(f"{i:>3}  {role:<9} {one_line(call, 34):<34} {call_id:<8} "
                     f"{one_line(text, width)}")
    return "\n".join(lines)


# --- 6. The offline model: a scripted stand-in for openai.OpenAI ----------------------------


def tool_call(name: str, raw_arguments: str | None = None, **arguments) -> dict:
    """One tool call for a script. Pass raw_arguments to send text that is not valid JSON."""
    args = raw_arguments if raw_arguments is not None else to_json(arguments)
    return {"name": name, "arguments": args}


def step(*calls: dict, content: str = "", finish_reason: str | None = None, **extras) -> dict:
    """One model response: optional text, zero or more tool calls, and any provider extras
    (e.g. reasoning_content="...")."""
    reason = finish_reason or ("tool_calls" if calls else "stop")
    return {"content": content, "calls": list(calls), "finish_reason": reason, "extras": extras}


def reply(text: str, finish_reason: str = "stop", **extras) -> dict:
    """A final answer: text and no tool calls."""
    return step(content=text, finish_reason=finish_reason, **extras)


def pairing_problem(messages: list[dict]) -> str | None:
    """What a strict server says when tool calls and tool messages do not pair up."""
    waiting: list[str] = []  # call ids of the last assistant message not yet answered
    for m in messages:
        if m["role"] == "tool":
            if m.get("tool_call_id") not in waiting:
                return f"tool message for {m.get('tool_call_id')!r} answers no open tool call"
            waiting.remove(m["tool_call_id"])
        elif waiting:
            break
        else:
            waiting = [call["id"] for call in m.get("tool_calls", [])]
    if waiting:
        return f"tool_calls must each be answered by a tool message; no answer for {waiting}"
    return None


class ScriptExhausted(RuntimeError):
    """The scripted model was asked for more responses than its script holds."""


class ScriptedClient:
    """Replays a script of steps as real ChatCompletion objects, and records every request.

    A step is step(...)/reply(...), a single tool_call(...), a list of tool calls (one
    message with parallel calls), or a function (messages) -> step that can react to the
    history, as a real model would. Like a strict server, it rejects a request whose tool
    calls and tool messages do not pair up (pairing_problem) with HTTP 400."""

    def __init__(self, steps: list):
        self.steps, self.requests = list(steps), []
        # the same shape as openai.OpenAI(): client.chat.completions.create(...)
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))
        self.call_count = 0

    def create(self, *, model: str, messages: list[dict], **kwargs) -> ChatCompletion:
        request = json.loads(to_json({"model": model, "messages": messages, **kwargs}))
        self.requests.append(request)  # a JSON copy: what a real server would receive
        n = len(self.requests)
        problem = pairing_problem(request["messages"])
        if problem:  # reject it as OpenAI's API does, with HTTP 400
            response = httpx2.Response(400, request=httpx2.Request("POST", "http://scripted/v1"))
            raise openai.BadRequestError(problem, response=response, body=None)
        if n > len(self.steps):
            raise ScriptExhausted(f"the scripted model has {len(self.steps)} steps but was asked "
                                  f"for response {n}; add steps to the script")
        current = self.steps[n - 1]
        current = current(request["messages"]) if callable(current) else current
        if isinstance(current, list) or "name" in current:  # tool call(s) given on their own
            current = step(*current) if isinstance(current, list) else step(current)
        calls = []
        for call in current["calls"]:
            self.call_count += 1
            calls.append({"id": f"call_{self.call_count}", "type": "function", "function": call})
        message = {"role": "assistant", "content": current["content"] or None, **current["extras"]}
        if calls:
            message["tool_calls"] = calls
        prompt = len(to_json(request)) // 4  # about four characters a token
        completion = len(to_json(message)) // 4
        return ChatCompletion.model_validate({
            "id": f"chatcmpl-scripted-{n}", "object": "chat.completion", "created": 0,
            "model": model, "choices": [
                {"index": 0, "message": message, "finish_reason": current["finish_reason"]}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion},
        })


# --- 7. The command line ------------------------------------------------------------------

DEMO_TASKS = [
    "Create greet.py with a function greet(name) and print the result of greet('Pi').",
    "Change the greeting in greet.py to Chinese, keeping the function as it is.",
    "List the current directory and tell me which files are Python files.",
    "Read the file missing.py and explain what happened.",
]


def demo_script() -> list:
    """What a good model does for DEMO_TASKS, one step per model response."""
    greet = 'def greet(name):\n    return f"Hello, {name}!"\n\n\nprint(greet("Pi"))\n'

    def name_python_files(messages):
        listing = json.loads(messages[-1]["content"])
        py = [f["name"] for f in listing["files"] if f["name"].endswith(".py")]
        return reply(f"The Python files here are: {', '.join(py)}.")

    def explain_error(messages):
        return reply("I could not read missing.py: the tool said "
                     f"{json.loads(messages[-1]['content'])['error']!r}. It does not exist.")

    return [
        tool_call("edit_file", path="greet.py", old_str="", new_str=greet),
        reply("Created greet.py with greet(name); running it prints: Hello, Pi!"),
        tool_call("read_file", path="greet.py"),  # read before editing
        tool_call("edit_file", path="greet.py", old_str='f"Hello, {name}!"',
                  new_str='f"你好，{name}！"'),
        reply("Changed the greeting to Chinese; greet(name) is unchanged."),
        tool_call("list_files", path="."),
        name_python_files,
        tool_call("read_file", path="missing.py"),
        explain_error,
    ]


NO_KEY = ("No OPENAI_API_KEY is set. Export your key (for a local server such as Ollama, any "
          "value, with OPENAI_BASE_URL pointing at it), or run offline: python agent.py --demo")


def parse_args(argv):
    parser = argparse.ArgumentParser(description="A minimal coding agent. Without a task, "
                                     "starts an interactive session.")
    parser.add_argument("task", nargs="?", help="one task to run, then exit")
    parser.add_argument("--demo", action="store_true",
                        help="run four tasks on the built-in scripted model (no key needed)")
    parser.add_argument("--model", help=f"model name (default: $AGENT_MODEL or {DEFAULT_MODEL})")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    parser.add_argument("--max-turns", type=positive_int, default=MAX_TURNS,
                        help=f"model calls per task (default: {MAX_TURNS})")
    parser.add_argument("--workdir", help="folder to work in (default: the current one)")
    parser.add_argument("--trace", metavar="FILE", help="append every event to FILE as JSON Lines")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the answers")
    args = parser.parse_args(argv)
    if args.workdir and not Path(args.workdir).is_dir():
        parser.error(f"--workdir {args.workdir}: no such directory")
    if args.demo and args.task:
        parser.error("--demo runs its own tasks; give either --demo or a task")
    if args.demo and args.workdir and any(Path(args.workdir).iterdir()):
        parser.error(f"--demo writes files; give it an empty --workdir, not {args.workdir}")
    if args.task is not None and not args.task.strip():
        parser.error("the task is empty")
    trace = Path(args.trace or ".")
    if args.trace and (trace.is_dir() or not trace.parent.is_dir()):  # now, not half-way
        parser.error(f"--trace {args.trace}: not a file in an existing folder")
    return args


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return int(text)


def main(argv=None) -> int:
    args = parse_args(argv)
    handlers = [] if args.quiet else [print_event]
    if args.trace:
        handlers.append(trace_to(os.path.abspath(args.trace)))
    on_event = fan_out(*handlers)

    if args.demo:
        with tempfile.TemporaryDirectory(prefix="agent-demo-") as tmp:
            os.chdir(args.workdir or tmp)
            agent = Agent(ScriptedClient(demo_script()), args.model or "scripted-demo",
                          max_turns=args.max_turns, on_event=on_event)
            for task in DEMO_TASKS:
                answer = agent.chat(task)
                print(answer if args.quiet else "")
            if not args.quiet:
                print("The history (agent.messages), which the next request would send:\n")
                print(format_history(agent.messages))
        return 0
    if not os.environ.get("OPENAI_API_KEY"):
        print(NO_KEY, file=sys.stderr)
        return 2
    if args.workdir:
        os.chdir(args.workdir)
    client = openai.OpenAI(base_url=args.base_url) if args.base_url else None
    agent = Agent(client, args.model, max_turns=args.max_turns, on_event=on_event)
    return run_session(agent, args.task, args.quiet)


def run_session(agent: Agent, task: str | None, quiet: bool) -> int:
    """One task (exit status 1 on an API error) or an interactive session that survives one."""
    try:
        while True:
            text = task if task is not None else input("\nyou> ").strip()
            if not text or text.lower() in ("exit", "quit"):
                return 0
            try:
                answer = agent.chat(text)
                if quiet:
                    print(answer)
            except openai.OpenAIError as exc:
                where = getattr(agent.client, "base_url", "the model server")
                print(f"model request to {where} failed: {one_line(str(exc), 300)}",
                      file=sys.stderr)
                if task is not None:
                    return 1
            if task is not None:
                return 0
    except EOFError:
        print()
        return 0
    except KeyboardInterrupt:  # at the prompt: just leave; during a task: say so
        print()
        if agent.stop_reason == "interrupted":
            print("interrupted", file=sys.stderr)
            return 130
        return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # e.g. `python agent.py --demo | head`: the reader left early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)

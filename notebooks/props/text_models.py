"""Models without tool calling, scripted (lesson 08). Such a model answers in text, and the
actions in that text are JSON, written the messy ways real models write them: a fence, a
sentence around it, a trailing comma, a plain-text answer.

The replies are steps for agent.ScriptedClient; the lesson's adapter, text_actions.TextActions,
reads them as a real model's text.
"""

import json

from agent import reply


def action(name: str, **arguments) -> str:
    """The text of a call_tool action, as a model would write it."""
    return json.dumps({"type": "call_tool", "name": name, "arguments": arguments},
                      ensure_ascii=False)


def finish(output: str) -> str:
    """The text of a finish action."""
    return json.dumps({"type": "finish", "output": output}, ensure_ascii=False)


def described(text: str, finish_reason: str | None = None) -> tuple[str, str]:
    """What text_actions.parse_action made of a reply: ("call_tool", "finish" or "refused",
    the same in words, notes included), for a table."""
    import text_actions  # looked up now: the module as its export cells were last run

    try:
        # the main path's short parse_action takes only the text (no cut-off replies)
        found = text_actions.parse_action(text, *([finish_reason] if finish_reason else []))
    except text_actions.FormatError as problem:
        return "refused", f"refused: {problem}"
    if found["type"] == "call_tool":
        words = (f"call_tool {found['name']}"
                 f"({json.dumps(found['arguments'], ensure_ascii=False)})")
    else:
        words = f"finish, output {found['output']!r}"
    return found["type"], words + "".join(f"; note: {note}" for note in found["notes"])


def one_task_in_text() -> list[dict]:
    """A history as agent.messages holds it after one task with text actions, in Chat
    Completions form: each assistant message keeps the model's text, and beside it the call
    the host understood; a tool message answers that call."""
    call = {"id": "call_1", "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'}}
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "What does notes.txt say?"},
        {"role": "assistant",
         "content": "I will read it.\n" + action("read_file", path="notes.txt"),
         "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1",
         "content": '{"path": "notes.txt", "content": "buy milk\\n"}'},
        {"role": "assistant", "content": finish("notes.txt says: buy milk.")},
    ]


GREET = 'def greet(name):\n    return f"Hello, {name}!"\n\n\nprint(greet("Pi"))\n'


def observed(messages: list[dict], tool: str):
    """The result of the last observation from `tool` that the text model was shown."""
    marker = f"({tool}):\n"
    for message in reversed(messages):
        if message["role"] == "user" and marker in message["content"]:
            return json.JSONDecoder().raw_decode(message["content"].split(marker)[-1])[0]
    raise LookupError(f"no observation from {tool}")


def four_tasks_in_text() -> list:
    """Lesson 03's four tasks (agent.DEMO_TASKS), the work of agent.demo_script(), as a model
    without tool calling writes it: a fence and a sentence, prose after a finish, arguments as
    a string, a "Thought:" line, a trailing comma, a plain-text answer (one format error), and
    two actions in one reply. Like demo_script, two steps read the observation they were
    given."""
    def name_python_files(messages):
        files = observed(messages, "list_files")["files"]
        py = [f["name"] for f in files if f["name"].endswith(".py")]
        return reply(finish(f"The Python files here are: {', '.join(py)}."))

    def explain_error(messages):
        error = observed(messages, "read_file")["error"]
        return reply(finish(f"I could not read missing.py: the tool said {error!r}. "
                            "It does not exist."))

    read_as_string = json.dumps({"path": "greet.py"})
    return [
        reply("I'll create the file.\n```json\n"
              + action("edit_file", path="greet.py", old_str="", new_str=GREET) + "\n```"),
        reply(finish("Created greet.py with greet(name); running it prints: Hello, Pi!")
              + "\nAnything else?"),
        reply(json.dumps({"type": "call_tool", "name": "read_file",
                          "arguments": read_as_string})),
        reply("Thought: replace the English greeting, keep the function.\n```\n"
              + action("edit_file", path="greet.py", old_str='f"Hello, {name}!"',
                       new_str='f"你好，{name}！"') + "\n```"),
        reply(finish("Changed the greeting to Chinese; greet(name) is unchanged.")),
        reply('{"type": "call_tool", "name": "list_files", "arguments": {"path": "."},}'),
        reply("The Python files here are: greet.py."),  # plain text: not a finish
        name_python_files,
        reply(action("read_file", path="missing.py") + "\n" + finish("Done.")),
        explain_error,
    ]


def reads_the_note(messages: list[dict]):
    """A model that reads the repeat warning: once the host says nothing changed, it stops
    reading notes.txt again and finishes."""
    if "did not change" in messages[-1]["content"]:
        return reply(finish("notes.txt says: buy milk. (Reading it again told me nothing new.)"))
    return reply(action("read_file", path="notes.txt"))

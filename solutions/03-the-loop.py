"""Reference solutions for lesson 03's coding exercises (each written from its hint alone).

tests/test_exercises.py runs every check of notebooks/checks/03-the-loop.py on these."""

import json

import agent
from agent import TOOL_REGISTRY, TOOLS, reply, tool_call

# --- exercise 1 --------------------------------------------------------------------------------


def valid(messages):
    """True if every tool message closes a call of the assistant message before it, nothing
    else comes while a call is open, and no call is left open at the end."""
    still_open = set()
    for message in messages:
        if message["role"] == "tool":
            if message.get("tool_call_id") not in still_open:
                return False
            still_open.remove(message["tool_call_id"])
        elif still_open:
            return False
        else:
            still_open = {call["id"] for call in message.get("tool_calls", [])}
    return not still_open


# --- exercise 3 --------------------------------------------------------------------------------


def sent_totals(requests):
    messages = sum(len(r["messages"]) for r in requests)
    characters = sum(len(json.dumps(r["messages"])) for r in requests)
    return messages, characters


# --- exercise 4 --------------------------------------------------------------------------------


def bare_loop_events(client, task, system_prompt, max_turns=10, on_event=agent.print_event):
    """bare_loop, reporting each step as agent.py's events."""
    messages = [{"role": "system", "content": system_prompt}]

    def append(message, **details):
        messages.append(message)
        on_event({"type": "message_end", "message": message, **details})

    append({"role": "user", "content": task})
    for turn in range(1, max_turns + 1):
        on_event({"type": "turn_start", "turn": turn})
        response = client.chat.completions.create(model="scripted", messages=messages,
                                                  tools=TOOLS)
        message = response.choices[0].message
        calls = [call.model_dump() for call in message.tool_calls or []]
        if not calls:
            append({"role": "assistant", "content": message.content or ""})
            return message.content, messages
        append({"role": "assistant", "content": message.content or "", "tool_calls": calls})
        for call in calls:
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            on_event({"type": "tool_execution_start", "turn": turn, "tool_call_id": call["id"],
                      "name": name, "arguments": arguments})
            try:
                result, is_error = TOOL_REGISTRY[name](**json.loads(arguments)), False
            except Exception as exc:
                result, is_error = {"error": f"{name}: {exc}"}, True
            content = json.dumps(result, ensure_ascii=False)
            on_event({"type": "tool_execution_end", "turn": turn, "tool_call_id": call["id"],
                      "name": name, "result": content, "is_error": is_error})
            append({"role": "tool", "tool_call_id": call["id"], "content": content},
                   is_error=is_error)
    return f"[stopped: no answer after {max_turns} turns]", messages


# --- exercise 5 --------------------------------------------------------------------------------


def rename_script():
    return [
        tool_call("read_file", path="greet.py"),
        tool_call("edit_file", path="greet.py", old_str="def greet(name)",
                  new_str="def hello(name)"),
        tool_call("edit_file", path="greet.py", old_str='print(greet("Pi"))',
                  new_str='print(hello("Pi"))'),
        reply('In greet.py I renamed greet to hello: the definition is now def hello(name), '
              'and the call at the end is print(hello("Pi")).'),
    ]


SOLUTIONS = {
    "03.1": (valid,),
    "03.3": (sent_totals,),
    "03.4": (bare_loop_events,),
    "03.5": (rename_script,),
}

"""Reference solutions to lesson 02's coding exercises (checked by tests/test_exercises.py).

check_tools_strict, tools_from_specs and make_agent are what a builder keeps: copy them next
to agent.py and call them where the agent is put together."""

import inspect
import json

from agent import TOOL_REGISTRY, TOOLS, Agent, check_tools, reply, schema, tool_call

# --- 02.1: check_tools_strict ------------------------------------------------------------------


def check_tools_strict(tools: list[dict], registry: dict) -> None:
    """check_tools, and also: a parameter the function needs must be in the schema's
    required list, and every name in required must be described in properties."""
    problems = []
    try:
        check_tools(tools, registry)
    except ValueError as exc:
        problems.append(str(exc).removeprefix("tools and registry disagree: "))
    for tool in tools:
        name = tool["function"]["name"]
        parameters = tool["function"].get("parameters", {})
        described = parameters.get("properties", {})
        required = parameters.get("required", [])  # no list at all: nothing is required
        for param in required:
            if param not in described:
                problems.append(f"{name}: {param!r} is required but not in properties")
        func = registry.get(name)
        if func is None:
            continue  # check_tools has said so
        for param in inspect.signature(func).parameters.values():
            if param.default is param.empty and param.name in described \
                    and param.name not in required:
                problems.append(f"{name}() needs {param.name!r}, but its schema does not "
                                "mark it required (the model may leave it out)")
    if problems:
        raise ValueError("tools and registry disagree: " + "; ".join(problems))


# --- 02.2: one list, two views -------------------------------------------------------------


def tools_from_specs(specs: list[tuple]) -> tuple[list[dict], dict]:
    """(function, description, {parameter: description}) per tool -> (schemas, registry)."""
    names = [func.__name__ for func, _, _ in specs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"two tools with the same name: {', '.join(twice)}")
    tools = [schema(func, description, **params) for func, description, params in specs]
    registry = {func.__name__: func for func, _, _ in specs}
    return tools, registry


# --- 02.3: count_lines, properly -------------------------------------------------------------


def count_lines(path: str) -> dict:
    """Count the lines of a UTF-8 text file."""
    with open(path, encoding="utf-8") as file:
        return {"path": path, "lines": sum(1 for _ in file)}


COUNT_LINES = schema(count_lines, "Count the lines of a text file.", path="Path of the file.")


def counting_tools() -> tuple[list[dict], dict]:
    """agent.py's tools and count_lines: a new list and a new dict, TOOLS left alone."""
    return [*TOOLS, COUNT_LINES], {**TOOL_REGISTRY, "count_lines": count_lines}


def counting_script(path: str) -> list:
    """A model that counts the lines of path with count_lines, then says how many."""
    def answer(messages):
        result = json.loads(messages[-1]["content"])
        return reply(f"{path} has {result['lines']} lines.")

    return [tool_call("count_lines", path=path), answer]


# --- 02.5: check at construction ---------------------------------------------------------------


def make_agent(client, tools: list[dict], registry: dict, **kwargs) -> Agent:
    """An Agent whose offered tools are checked first. Only the offered part of the registry is
    checked: a function without a schema can never run (Agent.run_tool), so it is no risk."""
    offered = {tool["function"]["name"] for tool in tools}
    check_tools(tools, {name: func for name, func in registry.items() if name in offered})
    return Agent(client, tools=tools, registry=registry, **kwargs)


SOLUTIONS = {
    "02.1": (check_tools_strict,),
    "02.2": (tools_from_specs,),
    "02.3": (counting_tools, counting_script),
    "02.5": (make_agent,),
}

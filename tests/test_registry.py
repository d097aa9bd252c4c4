"""TOOLS (what the model sees) and TOOL_REGISTRY (what the host runs) must agree."""

import inspect

import pytest

from agent import TOOL_REGISTRY, TOOLS, check_tools, edit_file, list_files, read_file, schema


def test_tools_and_registry_name_the_same_tools():
    names = [t["function"]["name"] for t in TOOLS]
    assert len(names) == len(set(names))
    assert set(names) == set(TOOL_REGISTRY) == {"read_file", "list_files", "edit_file"}
    for name, func in TOOL_REGISTRY.items():
        assert func.__name__ == name


def test_builtin_tools_pass_the_check():
    check_tools(TOOLS, TOOL_REGISTRY)  # raises on drift


def test_every_schema_is_a_chat_completions_function_tool():
    for tool in TOOLS:
        assert tool["type"] == "function"
        function = tool["function"]
        assert function["name"] and function["description"]
        params = function["parameters"]
        assert params["type"] == "object"
        for prop in params["properties"].values():
            assert prop["type"] == "string" and prop["description"]


def test_every_schema_parameter_exists_in_the_function_signature():
    for tool in TOOLS:
        accepted = inspect.signature(TOOL_REGISTRY[tool["function"]["name"]]).parameters
        assert set(tool["function"]["parameters"]["properties"]) <= set(accepted)


def test_required_parameters_are_those_without_a_default():
    for tool in TOOLS:
        func = TOOL_REGISTRY[tool["function"]["name"]]
        params = inspect.signature(func).parameters
        required = tool["function"]["parameters"]["required"]
        assert set(required) <= set(params)
        no_default = {n for n, p in params.items() if p.default is inspect.Parameter.empty}
        assert set(required) == no_default
    by_name = {t["function"]["name"]: t["function"]["parameters"]["required"] for t in TOOLS}
    assert by_name == {"read_file": ["path"], "list_files": [],
                       "edit_file": ["path", "old_str", "new_str"]}


def test_check_catches_a_schema_without_a_function():
    extra = schema(read_file, "Read.", path="p")
    extra["function"]["name"] = "delete_file"
    with pytest.raises(ValueError, match="schema 'delete_file' has no function"):
        check_tools([*TOOLS, extra], TOOL_REGISTRY)


def test_check_catches_a_function_without_a_schema():
    def run_shell(command: str) -> dict:
        return {}

    with pytest.raises(ValueError, match="function 'run_shell' has no schema"):
        check_tools(TOOLS, {**TOOL_REGISTRY, "run_shell": run_shell})


def test_check_catches_a_parameter_renamed_in_the_function():
    def read_file(filename: str) -> dict:  # was `path`; the schema still says `path`
        return {}

    with pytest.raises(ValueError, match="read_file\\(\\) takes no parameter 'path'"):
        check_tools(TOOLS, {**TOOL_REGISTRY, "read_file": read_file})


def test_check_catches_a_required_parameter_missing_from_the_schema():
    def read_file(path: str, encoding: str) -> dict:  # a new parameter the model is never told
        return {}

    with pytest.raises(ValueError, match="needs 'encoding', missing from its schema"):
        check_tools(TOOLS, {**TOOL_REGISTRY, "read_file": read_file})


def test_check_accepts_an_optional_parameter_left_out_of_the_schema():
    def read_file(path: str, encoding: str = "utf-8") -> dict:
        return {}

    check_tools(TOOLS, {**TOOL_REGISTRY, "read_file": read_file})


def test_check_reports_every_problem_at_once():
    def edit_file(file: str, old: str, new: str) -> dict:
        return {}

    registry = {"edit_file": edit_file, "list_files": list_files, "extra": read_file}
    with pytest.raises(ValueError) as caught:
        check_tools(TOOLS, registry)
    message = str(caught.value)
    for part in ["'read_file' has no function", "'extra' has no schema", "'path'", "'old_str'",
                 "'new_str'"]:
        assert part in message


def test_schema_makes_parameters_with_defaults_optional():
    built = schema(list_files, "List.", path="dir")
    assert built["function"]["parameters"]["required"] == []
    built = schema(edit_file, "Edit.", path="p", old_str="o", new_str="n")
    assert built["function"]["parameters"]["required"] == ["path", "old_str", "new_str"]


# --- names: schema(..., name=), and check_tools at the moment a table is built -----------------


def grep_in(root, pattern: str, path: str = ".") -> dict:  # a sandbox-style tool: root first
    return {"matches": []}


def test_schema_names_a_tool_after_its_function_unless_given_a_name():
    assert schema(grep_in, "Search.", pattern="p")["function"]["name"] == "grep_in"
    built = schema(grep_in, "Search.", name="grep", pattern="p", path="folder")
    assert built["function"]["name"] == "grep"
    assert set(built["function"]["parameters"]["properties"]) == {"pattern", "path"}
    assert built["function"]["parameters"]["required"] == ["pattern"]
    assert schema(grep_in, "Search.", pattern="p") == {  # without name=, exactly as before
        "type": "function", "function": {"name": "grep_in", "description": "Search.",
                                         "parameters": {"type": "object", "properties": {
                                             "pattern": {"type": "string", "description": "p"}},
                                             "required": ["pattern"]}}}


def test_a_parameter_called_name_is_described_as_name_underscore():
    def greet(name: str) -> dict:
        return {"greeting": f"Hello, {name}"}

    built = schema(greet, "Greet someone.", name="hello", name_="Who to greet.")
    assert built["function"]["name"] == "hello"
    assert built["function"]["parameters"]["properties"] == {
        "name": {"type": "string", "description": "Who to greet."}}
    assert built["function"]["parameters"]["required"] == ["name"]
    check_tools([built], {"hello": greet})


def test_check_catches_two_schemas_with_one_name_and_names_a_server_refuses():
    twice = [*TOOLS, schema(read_file, "Read again.", path="p")]
    with pytest.raises(ValueError, match="two schemas are named 'read_file'"):
        check_tools(twice, TOOL_REGISTRY)
    for bad in ("read file", "read.file", "x" * 65, ""):
        tool = schema(read_file, "Read.", name=bad, path="p")
        with pytest.raises(ValueError, match="is not a tool name"):
            check_tools([tool], {bad: read_file})
    check_tools([schema(read_file, "Read.", name="read-file_2", path="p")],
                {"read-file_2": read_file})


def test_a_schema_named_after_its_function_is_caught_when_the_table_is_built():
    """The trap of the issue: a function grep_in offered as "grep" without name=."""
    def bound(pattern: str, path: str = ".") -> dict:
        return grep_in(".", pattern, path)

    with pytest.raises(ValueError, match="schema 'grep_in' has no function.*'grep' has no "
                       "schema"):
        check_tools([schema(grep_in, "Search.", pattern="p")], {"grep": bound})

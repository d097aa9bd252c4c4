"""The checks of lessons 01 and 02 tell a correct answer from the plausible wrong ones.

test_exercises.py shows that each reference solution passes and each starter does not. Here,
each wrong answer a student could plausibly write must fail, and fail on the case that names
its mistake, so the report points at what to fix."""

import inspect
import json
from pathlib import Path

import course
import pytest
from props.tool_lab import article_edit_file  # the article's edit_file, as published

import agent
from agent import TOOL_REGISTRY, TOOLS, Agent, check_tools, occurrences, read_file, schema

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS_01 = course._load_file(ROOT / "solutions" / "01-tools.py", "solution_01_tools")
SOLUTIONS_02 = course._load_file(ROOT / "solutions" / "02-schemas-and-registry.py",
                                 "solution_02_schemas_and_registry")


def failing(report) -> list[str]:
    return [what for ok, what, _ in report.results if not ok]


def assert_fails_on(report, *starts):
    """The report fails, and among its failures are cases starting with each of starts."""
    failed = failing(report)
    assert failed, f"a wrong answer passed:\n{report!r}"
    for start in starts:
        assert any(what.startswith(start) for what in failed), \
            f"expected a failure starting {start!r}:\n{report!r}"


# --- 01.1: the article's edit_file, fixed ------------------------------------------------------


def the_old_hints_four_steps(path, old_str, new_str):
    """Un-swapped, raises, counts with occurrences, bytes: what the old hint led to."""
    file = Path(path)
    if not old_str:
        file.write_bytes(new_str.encode("utf-8"))
        return {"path": path, "action": "created_file"}
    original = file.read_bytes().decode("utf-8")
    found = occurrences(original, old_str)
    if found != 1:
        raise ValueError(f"old_str must occur exactly once in {path}, found {found}")
    file.write_bytes(original.replace(old_str, new_str, 1).encode("utf-8"))
    return {"path": path, "action": "edited"}


def counting_with_str_count(path, old_str, new_str):
    if not old_str:
        return SOLUTIONS_01.fixed_edit_file(path, old_str, new_str)
    text = read_file(path)["content"]
    found = text.count(old_str)  # misses overlapping matches
    if found != 1:
        raise ValueError(f"old_str must occur exactly once in {path}, found {found}")
    Path(path).write_bytes(text.replace(old_str, new_str, 1).encode("utf-8"))
    return {"path": path, "action": "edited"}


def reading_text_mode(path, old_str, new_str):
    if not old_str:
        return SOLUTIONS_01.fixed_edit_file(path, old_str, new_str)
    read_file(path)  # for its errors
    text = Path(path).read_text(encoding="utf-8")  # "\r\n" becomes "\n"
    found = occurrences(text, old_str)
    if found != 1:
        raise ValueError(f"old_str must occur exactly once in {path}, found {found}")
    Path(path).write_text(text.replace(old_str, new_str, 1), encoding="utf-8")
    return {"path": path, "action": "edited"}


def writing_before_counting(path, old_str, new_str):
    if not old_str:
        return SOLUTIONS_01.fixed_edit_file(path, old_str, new_str)
    text = read_file(path)["content"]
    Path(path).write_bytes(text.replace(old_str, new_str, 1).encode("utf-8"))
    found = occurrences(text, old_str)
    if found != 1:
        raise ValueError(f"old_str must occur exactly once in {path}, found {found}")
    return {"path": path, "action": "edited"}


def saying_not_found_in_words(path, old_str, new_str):
    try:
        return SOLUTIONS_01.fixed_edit_file(path, old_str, new_str)
    except ValueError as exc:
        if "found 0" in str(exc):
            raise ValueError("old_str not found") from None
        raise


@pytest.mark.parametrize(("answer", "fails_on"), [
    (article_edit_file, ["create a new file", "replace text that occurs once"]),
    (the_old_hints_four_steps, ["create a new file", "create a file in a folder",
                                "old_str empty on an existing file",
                                "refuse a file that is not UTF-8"]),
    (counting_with_str_count, ["refuse overlapping matches"]),
    (reading_text_mode, ["keep \\r\\n line endings"]),
    (writing_before_counting, ["refuse old_str that occurs twice",
                               "refuse overlapping matches"]),
    (saying_not_found_in_words, ["refuse old_str that is not there"]),
], ids=lambda value: getattr(value, "__name__", "")[:40])
def test_01_1_catches(answer, fails_on):
    assert_fails_on(course.check("01.1", answer), *fails_on)


def test_01_1_the_old_hint_left_exactly_four_cases_different():
    report = course.check("01.1", the_old_hints_four_steps)
    assert len(failing(report)) == 4, repr(report)


def steps_1_4_and_5_only(path, old_str, new_str):
    """The lesson's hint without steps 2 and 3: still read_text, no folder check, no mkdir."""
    file = Path(path)
    if not old_str:
        file.write_bytes(new_str.encode("utf-8"))
        return {"path": path, "action": "created_file"}
    original = file.read_text(encoding="utf-8")
    found = occurrences(original, old_str)
    if found != 1:
        raise ValueError(f"old_str must occur exactly once in {path}, found {found}")
    file.write_bytes(original.replace(old_str, new_str, 1).encode("utf-8"))
    return {"path": path, "action": "edited"}


def test_01_1_has_twelve_cases_and_steps_1_4_and_5_leave_five_different_as_the_lesson_says():
    report = course.check("01.1", steps_1_4_and_5_only)
    assert len(report.results) == 12, repr(report)  # "the same twelve cases"
    assert len(failing(report)) == 5, repr(report)
    assert "five of the twelve cases still differ" in " ".join(
        (ROOT / "lessons" / "01-tools.md").read_text(encoding="utf-8").split())


# --- 01.2: find_text -------------------------------------------------------------------------


def find_text_with(*, recursive=True, first=True, base=1, skip_binary=True, check_folder=True,
                   absolute=False, as_path=False):
    """find_text with one mistake switched on."""
    def find_text(text, path="."):
        if check_folder:
            agent.list_files(path)
        files = Path(path).rglob("*") if recursive else Path(path).iterdir()
        matches = []
        for file in files:
            if not file.is_file():
                continue
            try:
                lines = read_file(str(file))["content"].splitlines()
            except ValueError:
                if skip_binary:
                    continue
                raise
            numbers = [n for n, line in enumerate(lines, base) if text in line]
            if numbers:
                name = file.resolve() if absolute else file
                matches.append({"path": name if as_path else Path(name).as_posix(),
                                "line": numbers[0] if first else numbers[-1]})
        return {"path": path, "matches": sorted(matches, key=lambda m: str(m["path"]))}
    return find_text


@pytest.mark.parametrize(("mistake", "fails_on"), [
    ({"recursive": False}, ["finds the text in every subfolder"]),
    ({"first": False}, ["each match is {path, line}"]),
    ({"base": 0}, ["each match is {path, line}"]),
    ({"skip_binary": False}, ["a file that is not UTF-8 is skipped"]),
    ({"check_folder": False}, ["a missing folder raises", "a file instead of a folder"]),
    ({"absolute": True}, ["each match is {path, line}", "the default path"]),
    ({"as_path": True}, ["each match is {path, line}", "the result turns into JSON"]),
], ids=lambda value: "-".join(f"{k}={v}" for k, v in value.items())
   if isinstance(value, dict) else "")
def test_01_2_catches(mistake, fails_on):
    assert course.check("01.2", find_text_with()).passed  # the helper is right without mistakes
    assert_fails_on(course.check("01.2", find_text_with(**mistake)), *fails_on)


# --- 01.3: explain the line-ending trap --------------------------------------------------------


def crlf_hint_with(condition):
    def edit_file_crlf_hint(path, old_str, new_str):
        if old_str:
            text = read_file(path)["content"]
            if condition(text, old_str):
                raise ValueError("the file uses \\r\\n line endings; send old_str with \\r\\n")
        return agent.edit_file(path, old_str, new_str)
    return edit_file_crlf_hint


def normalizing_and_editing(path, old_str, new_str):
    """Guesses instead of explaining: edits the \\r\\n version of old_str."""
    text = read_file(path)["content"]
    if old_str and occurrences(text, old_str) == 0 and "\r\n" in text:
        old_str, new_str = old_str.replace("\n", "\r\n"), new_str.replace("\n", "\r\n")
    return agent.edit_file(path, old_str, new_str)


@pytest.mark.parametrize(("answer", "fails_on"), [
    (crlf_hint_with(lambda text, old: occurrences(text, old) == 0 and "\r\n" in text),
     ["a real miss on a \\r\\n file"]),
    (crlf_hint_with(lambda text, old: occurrences(text, old) == 0 and occurrences(
        text.replace("\r\n", "\n"), old.replace("\r\n", "\n"))), ["a \\n file does not use"]),
    (normalizing_and_editing, ["old_str with \\n on a \\r\\n file", "and nothing is guessed"]),
], ids=["any-miss-on-crlf", "without-crlf-in-text", "guessing"])
def test_01_3_catches(answer, fails_on):
    assert_fails_on(course.check("01.3", answer), *fails_on)


# --- 01.4: replace_all -----------------------------------------------------------------------


def replace_all_with(*, overlap_check=True, zero_check=True, text_mode=False, default=False):
    def edit_file_all(path, old_str, new_str, replace_all=default):
        if not old_str or not replace_all:
            return agent.edit_file(path, old_str, new_str)
        text = Path(path).read_text(encoding="utf-8") if text_mode else read_file(path)["content"]
        found = occurrences(text, old_str)
        if zero_check and found == 0:
            raise ValueError(f"found 0 in {path}")
        if overlap_check and text.count(old_str) != found:
            raise ValueError("overlapping matches")
        if text_mode:
            Path(path).write_text(text.replace(old_str, new_str), encoding="utf-8")
        else:
            Path(path).write_bytes(text.replace(old_str, new_str).encode("utf-8"))
        return {"path": path, "action": "edited", "replaced": found}
    return edit_file_all


@pytest.mark.parametrize(("mistake", "fails_on"), [
    ({"overlap_check": False}, ["overlapping matches are refused"]),
    ({"zero_check": False}, ["replace_all=True with no match is refused"]),
    ({"text_mode": True}, ["replace_all=True replaces every match"]),
    ({"default": True}, ["by default it is still exactly once"]),
], ids=lambda value: "-".join(f"{k}={v}" for k, v in value.items())
   if isinstance(value, dict) else "")
def test_01_4_catches(mistake, fails_on):
    assert course.check("01.4", replace_all_with()).passed
    assert_fails_on(course.check("01.4", replace_all_with(**mistake)), *fails_on)


# --- 02.1: check_tools_strict ------------------------------------------------------------------


def strict_without_check_tools(tools, registry):
    problems = []
    for tool in tools:
        params = tool["function"].get("parameters", {})
        described, required = params.get("properties", {}), params.get("required", [])
        problems += [f"{p} required, not described" for p in required if p not in described]
        func = registry.get(tool["function"]["name"])
        for p in inspect.signature(func).parameters.values() if func else []:
            if p.default is p.empty and p.name in described and p.name not in required:
                problems.append(f"{p.name} not required")
    if problems:
        raise ValueError("; ".join(problems))


def strict_trusting_the_required_list(tools, registry):
    check_tools(tools, registry)
    for tool in tools:
        params = tool["function"]["parameters"]
        for p in params["required"]:  # KeyError when a schema has no required list
            if p not in params["properties"]:
                raise ValueError(f"{p} required, not described")
        func = registry[tool["function"]["name"]]
        for p in inspect.signature(func).parameters.values():
            if p.default is p.empty and p.name not in params["required"]:
                raise ValueError(f"{p.name} not required")


def strict_that_wants_required_to_be_exactly_the_signature(tools, registry):
    SOLUTIONS_02.check_tools_strict(tools, registry)
    for tool in tools:
        func = registry[tool["function"]["name"]]
        needed = [p.name for p in inspect.signature(func).parameters.values()
                  if p.default is p.empty]
        if tool["function"]["parameters"].get("required", []) != needed:
            raise ValueError(f"{func.__name__}: required should be {needed}")


def strict_that_stops_at_the_first_problem(tools, registry):
    check_tools(tools, registry)  # raises alone: the new problems are never added
    SOLUTIONS_02.check_tools_strict(tools, registry)


@pytest.mark.parametrize(("answer", "fails_on"), [
    (check_tools, ["(a) new_str is in properties", "(b) 'encoding'"]),
    (strict_without_check_tools, ["what check_tools finds is still reported"]),
    (strict_trusting_the_required_list, ["(a) a schema with no 'required' list"]),
    (strict_that_wants_required_to_be_exactly_the_signature,
     ["a schema may require a parameter that has a default"]),
    (strict_that_stops_at_the_first_problem, ["all problems in one ValueError"]),
], ids=lambda value: getattr(value, "__name__", "")[:40])
def test_02_1_catches(answer, fails_on):
    assert_fails_on(course.check("02.1", answer), *fails_on)


# --- 02.2: one list, two views -------------------------------------------------------------


def specs_without_the_name_check(specs):
    return ([schema(f, d, **p) for f, d, p in specs], {f.__name__: f for f, _, _ in specs})


def specs_that_return_agents_own(specs):
    return TOOLS, TOOL_REGISTRY


@pytest.mark.parametrize(("answer", "fails_on"), [
    (specs_without_the_name_check, ["two specs with the same name are refused"]),
    (specs_that_return_agents_own, ["a fourth spec appears", "the halves are made from the specs"]),
], ids=lambda value: getattr(value, "__name__", "")[:40])
def test_02_2_catches(answer, fails_on):
    assert_fails_on(course.check("02.2", answer), *fails_on)


# --- 02.3: count_lines, properly -------------------------------------------------------------


def test_02_3_catches_a_changed_tools_list_and_puts_nothing_right_for_you():
    def appending_tools():
        if SOLUTIONS_02.COUNT_LINES not in TOOLS:
            TOOLS.append(SOLUTIONS_02.COUNT_LINES)
            TOOL_REGISTRY["count_lines"] = SOLUTIONS_02.count_lines
        return TOOLS, TOOL_REGISTRY

    try:
        report = course.check("02.3", appending_tools, SOLUTIONS_02.counting_script)
    finally:  # put agent.py's own lists back for the other tests in this process
        del TOOLS[3:]
        TOOL_REGISTRY.pop("count_lines", None)
    assert_fails_on(report, "agent.TOOLS and agent.TOOL_REGISTRY are left as they were")


def test_02_3_catches_an_answer_written_into_the_script():
    def script(path):
        return [agent.tool_call("count_lines", path=path), agent.reply(f"{path} has 3 lines.")]

    report = course.check("02.3", SOLUTIONS_02.counting_tools, script)
    assert_fails_on(report, "on a 5-line file the answer says 5")


def test_02_3_catches_a_schema_with_no_function():
    report = course.check("02.3", lambda: ([*TOOLS, SOLUTIONS_02.COUNT_LINES], TOOL_REGISTRY),
                          SOLUTIONS_02.counting_script)
    assert_fails_on(report, "the schemas and the registry agree",
                    "in a run on a 3-line file")


# --- 02.5: check at construction ---------------------------------------------------------------


def make_agent_unchecked(client, tools, registry, **kwargs):
    return Agent(client, tools=tools, registry=registry, **kwargs)


def make_agent_checking_everything(client, tools, registry, **kwargs):
    check_tools(tools, registry)
    return Agent(client, tools=tools, registry=registry, **kwargs)


def make_agent_skipping_subsets(client, tools, registry, **kwargs):
    names = {t["function"]["name"] for t in tools}
    if not names <= set(registry):  # a "read-only" set is waved through unchecked
        check_tools(tools, registry)
    return Agent(client, tools=tools, registry=registry, **kwargs)


def make_agent_dropping_kwargs(client, tools, registry, **kwargs):
    return SOLUTIONS_02.make_agent(client, tools, registry)


def make_agent_ignoring_the_registry(client, tools, registry, **kwargs):
    names = {t["function"]["name"] for t in tools}
    check_tools(tools, {n: f for n, f in registry.items() if n in names})
    return Agent(client, tools=tools, registry=TOOL_REGISTRY, **kwargs)  # not the one given


@pytest.mark.parametrize(("answer", "fails_on"), [
    (make_agent_unchecked, ["refuses a schema without a function", "refuses a renamed"]),
    (make_agent_checking_everything, ["accepts read_file and list_files",
                                      "accepts a registered function without a schema"]),
    (make_agent_skipping_subsets, ["refuses a read-only set whose one schema has drifted"]),
    (make_agent_dropping_kwargs, ["passes other keyword arguments on"]),
    (make_agent_ignoring_the_registry, ["builds an Agent with the tools and the registry"]),
], ids=lambda value: getattr(value, "__name__", "")[:40])
def test_02_5_catches(answer, fails_on):
    assert_fails_on(course.check("02.5", answer), *fails_on)


def test_the_checks_leave_agent_pys_tools_as_they_were():
    before = json.dumps(TOOLS)
    for exercise_id, answers in {**SOLUTIONS_01.SOLUTIONS, **SOLUTIONS_02.SOLUTIONS}.items():
        course.check(exercise_id, *answers)
    assert json.dumps(TOOLS) == before and set(TOOL_REGISTRY) == {
        "read_file", "list_files", "edit_file"}

"""The notebooks as files: they travel, they need nothing from tests/, their code can be taken
away (course.py export), and the course's helpers behave as the lessons say."""

import ast
import configparser
import json
import os
import re
import subprocess
import symtable
import sys
from pathlib import Path

import course
import pytest

import agent
from agent import Agent, ScriptedClient, reply, tool_call

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))


def code_cells(path: Path) -> list[dict]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [c for c in cells if c["cell_type"] == "code"]


# --- notebooks that travel ------------------------------------------------------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_notebook_starts_with_the_cell_that_finds_the_course(path):
    first = "".join(code_cells(path)[0]["source"]) + "\n"
    assert first.startswith(course.FIRST_CELL)
    assert "export" not in code_cells(path)[0].get("metadata", {}).get("tags", [])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_no_notebook_needs_anything_under_tests(path):
    for cell in code_cells(path):
        source = "".join(cell["source"])
        assert '"tests"' not in source and "tests/" not in source and "notebook_code" not in source


def run_first_cell(cwd: Path, **env) -> subprocess.CompletedProcess:
    """The first cell as a student's kernel would run it, in another folder."""
    program = course.FIRST_CELL + "print(course.__file__)\n"
    environment = {k: v for k, v in os.environ.items() if k != "AGENT_FROM_ZERO"} | env
    return subprocess.run([sys.executable, "-c", program], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=60)


def test_a_notebook_copied_out_of_the_course_says_in_one_sentence_what_to_do(tmp_path):
    done = run_first_cell(tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0  # one line, no traceback
    assert "open it from the notebooks/ folder" in done.stderr
    assert "set AGENT_FROM_ZERO" in done.stderr
    assert "ModuleNotFoundError" not in done.stderr


def test_a_notebook_copied_out_runs_when_agent_from_zero_names_the_course(tmp_path):
    done = run_first_cell(tmp_path, AGENT_FROM_ZERO=str(ROOT))
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == ROOT / "notebooks" / "course.py"


@pytest.mark.slow
@pytest.mark.parametrize("folder", ["notebooks", "lessons", "notebooks/checks", "."])
def test_a_notebook_opened_anywhere_inside_the_repository_finds_the_course(folder):
    done = run_first_cell(ROOT / folder)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == ROOT / "notebooks" / "course.py"


def test_the_workspace_says_where_it_is_and_that_it_is_temporary(capsys):
    before = Path.cwd()
    try:
        path = course.fresh_workspace("test")
        said = capsys.readouterr().out
        assert Path.cwd() == path and not any(path.iterdir())
        assert str(path) in said and "temporary" in said
        assert "deleted when the kernel shuts down" in said and "killed kernel" in said
    finally:
        os.chdir(before)


def test_working_in_a_folder_lasts_one_block_and_leaves_the_folder_alone(tmp_path):
    before = Path.cwd()
    (tmp_path / "kept.txt").write_text("x")
    with pytest.raises(RuntimeError), course.working_in(tmp_path) as here:
        assert Path.cwd() == here == tmp_path
        raise RuntimeError("a typo in the cell")
    assert Path.cwd() == before and (tmp_path / "kept.txt").exists()


# --- watch: the history growing, live ---------------------------------------------------------


def test_watch_prints_each_new_row_as_it_lands_in_a_terminal(capsys):
    steps = [[tool_call("list_files"), tool_call("list_files", path=".")], reply("done")]
    bot = Agent(ScriptedClient(steps), "scripted")
    seen_during_run = []
    bot.registry = {"list_files": lambda path=".": seen_during_run.append(
        capsys.readouterr().out) or {"files": []}}
    with course.watch(bot):
        bot.chat("look")
    after = capsys.readouterr().out
    printed = "".join(seen_during_run) + after
    assert printed.splitlines() == agent.format_history(bot.messages, 70).splitlines()
    # the assistant message with its two calls was on screen before the first tool ran
    assert "call_1" in seen_during_run[0] and "call_2" in seen_during_run[0]
    assert "user:" not in printed  # print_event's lines are left out while watching
    assert bot.on_event is agent.print_event  # and the handler is put back


def test_watch_keeps_any_other_handler_of_the_agent():
    events = []
    bot = Agent(ScriptedClient([reply("hi")]), "scripted", on_event=events.append)
    with course.watch(bot):
        bot.chat("hello")
    assert [e["type"] for e in events][0] == "agent_start" and events[-1]["type"] == "agent_end"


def test_watch_shows_quietly_appended_answers_after_an_interrupt(capsys):
    def stop():
        raise KeyboardInterrupt

    bot = Agent(ScriptedClient([[tool_call("stop"), tool_call("stop")]]), "scripted",
                tools=[agent.schema(stop, "stops")], registry={"stop": stop})
    with pytest.raises(KeyboardInterrupt), course.watch(bot):
        bot.chat("go")
    printed = capsys.readouterr().out
    assert printed.splitlines() == agent.format_history(bot.messages, 70).splitlines()
    assert agent.NOT_RUN[:20] in printed


# --- rewind: a cell that carries a story on can run again -------------------------------------


def test_rewind_puts_agent_client_lists_and_files_back_so_a_cell_can_run_again(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "keep.txt").write_text("before")
    client = ScriptedClient([reply("one"), reply("two"), reply("three")])
    bot = Agent(client, "scripted", on_event=None)
    bot.chat("first")
    seen = ["first"]

    def cell():
        course.rewind("test: second task", bot, seen, folder)
        seen.append("second")
        (folder / "made.txt").write_text("new")
        (folder / "keep.txt").write_text("changed")
        return bot.chat("second")

    assert cell() == "two"
    after_once = (list(bot.messages), list(seen), sorted(p.name for p in folder.iterdir()))
    assert cell() == "two"  # not "three": the client went back too
    assert (bot.messages, seen, sorted(p.name for p in folder.iterdir())) == after_once
    assert (folder / "keep.txt").read_text() == "changed"
    assert len(client.requests) == 2


def test_rewind_takes_a_new_snapshot_when_the_cell_is_given_new_objects():
    first = Agent(ScriptedClient([reply("a"), reply("b")]), "scripted", on_event=None)
    course.rewind("test: new objects", first)
    first.chat("one")
    second = Agent(ScriptedClient([reply("x")]), "scripted", on_event=None)
    course.rewind("test: new objects", second)  # other objects: remember these instead
    assert len(second.messages) == 1 and len(first.messages) == 3


def test_rewind_refuses_what_it_cannot_remember():
    with pytest.raises(TypeError, match="rewind cannot remember a int"):
        course.rewind("test: bad", 42)


# --- all cells from a cell down, run again ---------------------------------------------------

# Notebooks whose later cells read what earlier ones left behind (files, a session), and the
# heading of the first cell to run again after a full run. (conftest.py runs each cell twice in
# a row; this is the other half of the promise: everything from a cell down, once more.)
RUN_AGAIN_FROM = {"14-capstone": "## 4. The review"}


def sanitized(text: str) -> str:
    """text with nbval's replacements (tests/sanitize.cfg) made: temporary paths, addresses."""
    rules = configparser.ConfigParser()
    rules.read(ROOT / "tests" / "sanitize.cfg")
    for section in rules.sections():
        text = re.sub(rules[section]["regex"], rules[section]["replace"], text)
    return text


def shown_text(cell) -> list[str]:
    """What a code cell showed, as text: its streams and the plain-text form of its displays.
    Consecutive pieces of one stream are joined (how a print is split depends on when the
    kernel flushed it), as course.execute's coalesce_streams joins them."""
    shown, last_stream = [], None
    for output in cell.get("outputs", []):
        text = "".join(output.get("text") or output.get("data", {}).get("text/plain", ""))
        stream = output.get("name") if output.get("output_type") == "stream" else None
        if stream is not None and stream == last_stream:
            shown[-1] += text
        else:
            shown.append(text)
        last_stream = stream
    return [sanitized(text) for text in shown]


@pytest.mark.slow
@pytest.mark.parametrize("name, heading", RUN_AGAIN_FROM.items(), ids=list(RUN_AGAIN_FROM))
def test_running_every_cell_from_a_later_one_down_again_shows_the_same(name, heading):
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    cells = notebook.cells
    start = next(i for i, cell in enumerate(cells) if cell.cell_type == "markdown"
                 and f"\n{heading}\n" in f"\n{cell.source}\n")
    client = NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "notebooks")}})
    with client.setup_kernel():  # one kernel, as a student's: a full run, then from start down
        for index, cell in enumerate(cells):
            client.execute_cell(cell, index)  # a cell that raises fails the test, with its error
        first = [shown_text(cell) for cell in cells[start:]]
        for index in range(start, len(cells)):
            client.execute_cell(cells[index], index)
        again = [shown_text(cell) for cell in cells[start:]]
    for number, (before, after) in enumerate(zip(first, again, strict=True), start):
        assert after == before, f"cell {number} shows something else when run again"


# --- export: take the code away ---------------------------------------------------------------


def test_export_refuses_export_cells_that_use_course(tmp_path):
    notebook = tmp_path / "99-bad.ipynb"
    notebook.write_text(json.dumps({"cells": [{
        "cell_type": "code", "metadata": {"tags": ["export"]}, "outputs": [],
        "execution_count": None, "source": "x = course.table([], [])\n"}]}))
    with pytest.raises(ValueError, match="export cells must not use course"):
        course.export(notebook)


def test_export_commands_give_a_message_not_a_traceback(tmp_path, capsys):
    assert course.main(["export", "77-nothing", "-o", str(tmp_path / "x.py")]) == 1
    assert "no notebook '77-nothing'; the notebooks are: 01-tools" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        course.main(["export", "-o", str(tmp_path)])  # neither a lesson nor --all
    assert "give one lesson, or --all" in capsys.readouterr().err


def test_a_table_shows_half_an_emoji_escaped_instead_of_failing():
    shown = course.table(["text"], [["half \ud83d"]])
    assert "half \\ud83d" in repr(shown) and "half \\ud83d" in shown._repr_html_()
    repr(shown).encode("utf-8")  # sendable to Jupyter


def test_a_traceback_from_export_cells_shows_their_code_not_the_notebooks_json():
    import traceback

    sandbox = course.load_notebook("05-sandbox")
    try:
        sandbox.resolve_in(Path("/nonexistent-root"), "")
    except ValueError:
        shown = traceback.format_exc()
    assert "05-sandbox.ipynb (export cells)" in shown
    assert 'raise ValueError("invalid path' in shown and '"source": [' not in shown


# --- every lesson has the same shape -----------------------------------------------------------

LESSON_TEXTS = sorted((ROOT / "lessons").glob("[0-9][0-9]-*.md"))
SECTIONS = ["What you will learn", "The idea", "Diagram", "Walk through the code", "Pitfalls",
            "Exercises", "Questions to discuss", "Take it with you"]


def headings_of(text: str) -> list[str]:
    """The `## ` headings of a Markdown text, outside fenced code blocks."""
    headings, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif line.startswith("## ") and not fenced:
            headings.append(line[3:].strip())
    return headings


@pytest.mark.parametrize("lesson", LESSON_TEXTS, ids=[p.stem for p in LESSON_TEXTS])
def test_every_lesson_has_the_sections_in_order_and_a_notebook_twin(lesson):
    """The main path's sections in order; then, at the end, an optional "Going further" (what
    a class need not do together) and "Sources" (where each claim about another system was
    checked), and nothing else."""
    text = lesson.read_text(encoding="utf-8")
    headings = headings_of(text)
    assert [h for h in headings if h in SECTIONS] == SECTIONS, headings
    after = headings[headings.index("Take it with you") + 1:]
    assert after in (["Going further", "Sources"], ["Sources"]), \
        f"after 'Take it with you' come 'Going further' (if any) and then 'Sources': {after}"
    assert "```mermaid" in text.split("## Diagram")[1].split("\n## ")[0]
    notebook = ROOT / "notebooks" / f"{lesson.stem}.ipynb"
    assert notebook.exists() and f"../notebooks/{notebook.name}" in text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_notebook_links_its_lesson_and_ends_its_main_path_with_check_yourself_then_your_turn(
        path):
    """Title, main path, "Check yourself", "Your turn" (only exercises), and then the
    "Going further: ..." sections, which no cell of the main path needs."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    first = "".join(cells[0]["source"])
    assert cells[0]["cell_type"] == "markdown" and f"../lessons/{path.stem}.md" in first
    titles = [line for c in cells if c["cell_type"] == "markdown"
              for line in "".join(c["source"]).split("\n") if line.startswith("## ")]
    assert "## Check yourself" in titles and "## Your turn" in titles
    assert titles.index("## Check yourself") == titles.index("## Your turn") - 1
    further = titles[titles.index("## Your turn") + 1:]
    assert all(t.startswith("## Going further: ") for t in further), \
        f"after 'Your turn' come only sections '## Going further: ...': {further}"
    section = None
    for cell in cells:
        heads = [line for line in "".join(cell["source"]).split("\n") if line.startswith("## ")]
        if cell["cell_type"] == "markdown" and heads:
            section = heads[-1]
        tags = cell.get("metadata", {}).get("tags", [])
        if section == "## Your turn":
            assert cell["cell_type"] == "markdown" or "exercise" in tags, \
                "in 'Your turn' come only exercises and the words between them"
        elif "exercise" in tags:
            raise AssertionError(f"an exercise outside 'Your turn', in {section}")


def test_export_cells_run_as_written_not_under_course_pys_future_imports(tmp_path, monkeypatch):
    """A @dataclass in export cells works when course loads them: course.py's own
    `from __future__ import annotations` must not leak into the cells it runs."""
    notebook = tmp_path / "98-dataclass.ipynb"
    notebook.write_text(json.dumps({"cells": [{
        "cell_type": "code", "metadata": {"tags": ["export"]}, "outputs": [],
        "execution_count": None,
        "source": "from dataclasses import dataclass\n\n\n@dataclass\nclass Point:\n"
                  "    x: int\n\n\nANNOTATION = Point.__annotations__['x']\n"}]}))
    monkeypatch.setattr(course, "NOTEBOOKS", tmp_path)
    module = course.load_notebook("98-dataclass")
    assert module.Point(3).x == 3 and module.ANNOTATION is int


def test_exported_files_get_an_ordinary_mode_and_a_rewritten_file_keeps_its_own(tmp_path):
    out = tmp_path / "sandbox.py"
    assert course.main(["export", "05-sandbox", "-o", str(out)]) == 0
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask  # readable by others, like any file
    out.chmod(0o640)
    course.write_file(out, "changed\n")
    assert out.stat().st_mode & 0o777 == 0o640 and out.read_text() == "changed\n"


# --- an export cell run in a kernel is its module --------------------------------------------


def test_every_export_cell_starts_with_the_mark_that_names_its_module():
    for path in NOTEBOOKS:
        for cell in code_cells(path):
            source = "".join(cell["source"])
            exported = "export" in cell.get("metadata", {}).get("tags", [])
            if exported:
                assert course.export_mark(source) == course.module_name(path), \
                    f"{path.name}: an export cell must start with '# export: " \
                    f"{course.module_name(path)}'; this one starts {source[:40]!r}"
            else:
                assert course.export_mark(source) is None, \
                    f"{path.name}: a cell not tagged export starts with the mark: {source[:40]!r}"


def test_an_exported_module_leaves_the_marks_out(tmp_path):
    out = tmp_path / "sandbox.py"
    assert course.main(["export", "05-sandbox", "-o", str(out)]) == 0
    assert course.EXPORT_MARK not in out.read_text()


def run_cells(*sources: str) -> list[str]:
    """Run cells in a fresh Jupyter kernel opened in notebooks/, as a student's; what each
    printed (or the error it raised)."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(course.FIRST_CELL)]
                                        + [nbformat.v4.new_code_cell(s) for s in sources])
    client = NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(ROOT / "notebooks")}})
    client.execute()
    return ["".join(o.get("text") or o.get("evalue") or "" for o in cell.outputs)
            for cell in notebook.cells[1:]]


@pytest.mark.slow
def test_an_edited_export_cell_is_what_the_kernels_imports_and_copies_use():
    shown = run_cells(
        # a section run on its own: its first cell imports the module, from the saved file
        "import the_loop\nsaved = the_loop.bare_loop",
        # the student edits the loop's export cell and runs it
        "# export: the_loop\nimport json\n\n\ndef bare_loop(client, task, system_prompt, "
        "max_turns=10):\n    return 'edited', []\n",
        "import the_loop as again\n"
        "print(again is the_loop, the_loop.bare_loop is bare_loop, saved is not bare_loop,\n"
        "      hasattr(the_loop, 'TOOLS'))\n"  # the module's other names are still there
        "print(the_loop.bare_loop(None, 't', 's')[0])\n"
        "print(course.load_notebook('03-the-loop').bare_loop(None, 't', 's')[0])",  # a copy
        # a first export cell with no import before it: the saved module, then the cell
        "# export: guards\nMARKER = 'edited here'\n",
        "import guards\nprint(guards.MARKER, hasattr(guards, 'RepeatedCall'), MARKER)",
    )
    assert shown[0] == "" and shown[1] == ""
    assert shown[2] == "True True True True\nedited\nedited\n"
    assert shown[4] == "edited here True edited here\n"


@pytest.mark.slow
def test_an_export_cell_that_only_works_in_the_notebook_says_its_module_would_fail():
    shown = run_cells("only_here = 21",
                      "# export: guards\nvalue = only_here * 2\n",
                      "import guards\nprint(value, hasattr(guards, 'value'))")
    assert shown[1] == ("note: this cell ran, but not as part of the module guards: NameError: "
                        "name 'only_here' is not defined (an exported guards.py would fail the "
                        "same way)\n")
    assert shown[2] == "42 False\n"


# --- The main path stands without Going further --------------------------------------------------
# A main-path export cell should not call what only a Going-further export cell defines: a
# student reading the main path would meet a name it never shows. It still runs (the module is
# every export cell), so only this test sees it. A main path that hands a feature to Going
# further does it with a subclass or a second definition there (lessons 05, 06, 09, 16), or
# defines the helper where it is used (07).


def top_level_names(source: str) -> set[str]:
    """The names a cell's code binds at its top level: defs, classes, assignments, imports."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def module_level_uses(source: str) -> set[str]:
    """The module-level names a cell's code reads, in its own statements or its functions."""
    used = set()

    def visit(table):
        for symbol in table.get_symbols():
            if symbol.is_referenced() and (symbol.is_global() if table.get_type() != "module"
                                           else not symbol.is_assigned()):
                used.add(symbol.get_name())
        for child in table.get_children():
            visit(child)
    visit(symtable.symtable(source, "cell", "exec"))
    return used


def export_cells_by_part(path: Path) -> tuple[list[str], list[str]]:
    """A notebook's export cells' code: (those of the main path, those of Going further)."""
    main, further, going_further = [], [], False
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and re.search(r"^## Going further", source, re.M):
            going_further = True
        elif cell["cell_type"] == "code" and course.export_mark(source):
            (further if going_further else main).append(course.without_mark(source))
    return main, further


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_main_paths_export_cells_call_nothing_only_going_further_defines(path):
    main, further = export_cells_by_part(path)
    shown = set().union(set(), *map(top_level_names, main))
    only_further = set().union(set(), *map(top_level_names, further)) - shown
    called = set().union(set(), *map(module_level_uses, main)) & only_further
    assert not called, f"main-path export cells call {sorted(called)}, which only Going " \
        "further defines: define them on the main path, or move the feature to Going further " \
        "whole (a subclass, a later definition)"

"""The builder's kit: `python notebooks/course.py build DIR` writes a project that works on its
own. Built into a temporary folder, its own tests pass there, and its main.py, run in a fresh
process that knows nothing of the course (python -E, the kit's folder as the working one),
creates and edits a file approved on stdin, traced and recorded, and resumes a run killed
with SIGKILL in the middle of a tool."""

import ast
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import course  # first: it makes `import sessions` load the notebook's export cells
import pytest
import sandbox  # lesson 05's export cells: a process group, seen from outside
import sessions  # lesson 09's export cells, the code of the kit's sessions.py
import tracing  # lesson 07's
from processes import started_group, within  # tests/processes.py

import agent

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def kit(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("kit") / "my-agent"
    assert course.main(["build", str(folder)]) == 0
    return folder


def main_py(kit: Path, *args: str, cwd: Path) -> subprocess.Popen:
    """main.py in a process of its own: -E, so no PYTHONPATH, and only the kit's folder (the
    script's) on sys.path; no key in its environment."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.Popen([sys.executable, "-E", str(kit / "main.py"), *args], cwd=cwd,
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def scripted(tmp_path: Path, *steps) -> list[str]:
    """The flags of a run on the scripted model, with its files under tmp_path."""
    script = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.json"
    script.write_text(json.dumps(list(steps)))
    (tmp_path / "work").mkdir(exist_ok=True)
    return ["--scripted", str(script), "--workdir", str(tmp_path / "work"),
            "--sessions", str(tmp_path / "sessions"), "--traces", str(tmp_path / "traces")]


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


# --- What build writes ----------------------------------------------------------------------------


@pytest.mark.slow
def test_build_writes_agent_py_the_lessons_modules_main_and_its_readme_tests_requirements(kit):
    names = {p.relative_to(kit).as_posix() for p in kit.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}  # the kit's tests may have run
    exported = course._ExportCellsFinder().names()
    lessons = {f"{name}.py" for name in course.KIT_LESSONS.values()}  # 05-12, 15, 16: written
    assert "evaluation" not in course.KIT_LESSONS.values()  # main.py does not use it
    kit_files = {"main.py", "README.md", "requirements.txt", ".gitignore", "tests/test_main.py",
                 "examples/hello.json", "examples/notes.json", "examples/delegate.json",
                 "examples/notes_server.py", "examples/skills/changelog/SKILL.md",
                 "examples/skills/python-tests/SKILL.md"}  # notebooks/kit/ but its conftest.py
    props = {f"{prop}.py" for props in course.KIT_PROPS.values() for prop in props}
    assert props == {"streaming_model.py"}  # lesson 11's scripted model, for --scripted runs
    # guards: text_actions's
    assert names == {"agent.py", "guards.py", *lessons, *props, *kit_files}
    for name in kit_files:
        assert (kit / name).read_text() == (course.KIT / name).read_text(), name
    assert (kit / "agent.py").read_text() == (ROOT / "agent.py").read_text()
    for module in lessons | {"guards.py"}:
        path = exported[module.removesuffix(".py")]
        assert (kit / module).read_text() == course.export(path, for_kit=True), module
    for prop in props:  # copied as they are: they import no course
        assert (kit / prop).read_text() == (course.NOTEBOOKS / "props" / prop).read_text()
    assert oct((kit / "main.py").stat().st_mode & 0o777) == oct(0o666 & ~umask())


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.slow
def test_nothing_in_the_kit_imports_the_course(kit):
    for path in kit.rglob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert "course" not in imported, path.name
    # and in a process that could not find the course if it tried: every module imports
    modules = sorted(p.stem for p in kit.glob("*.py"))
    check = ("import importlib, importlib.util, sys\n"
             "assert importlib.util.find_spec('course') is None\n"
             f"for name in {modules!r}:\n    importlib.import_module(name)\n"
             f"print(sorted(set(sys.modules) & set({modules!r})))")
    done = subprocess.run([sys.executable, "-E", "-c", check], cwd=kit, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(modules)


COURSE_ONLY = re.compile(r"going further|main path|exercise \d\d\.\d|\blessons? \d\d|this course|"
                         r"the course's|notebooks?/|course\.py|in a notebook", re.IGNORECASE)


def test_the_kit_s_code_speaks_to_a_builder_not_of_the_course(kit):
    """Issue 24: no line of the kit exists only for the course. Its modules and main.py name no
    lesson, exercise, notebook or "Going further"; agent.py is the course's own file, shipped as
    it is, and the README may say which lesson explains which module."""
    found = [f"{path.name}:{number}: {line.strip()}"
             for path in sorted(kit.rglob("*.py")) if path.name != "agent.py"
             and "tests" not in path.parts
             for number, line in enumerate(path.read_text().split("\n"), 1)
             if COURSE_ONLY.search(line)]
    assert not found, "\n".join(found)


def test_a_kit_module_imports_everything_at_its_top_once(kit):
    """A notebook imports where a cell needs it; the kit's modules have every top-level import
    in one block at the top, none twice (course.imports_first)."""
    for path in sorted(kit.glob("*.py")):
        body = ast.parse(path.read_text()).body
        kinds = [isinstance(node, (ast.Import, ast.ImportFrom)) for node in body]
        first_other = next((i for i, (node, is_import) in enumerate(zip(body, kinds, strict=True))
                            if not is_import and not (isinstance(node, ast.Expr) and i == 0)),
                           len(body))
        assert not any(kinds[first_other:]), f"{path.name}: an import below the code"
        dumps = [ast.dump(node) for node, is_import in zip(body, kinds, strict=True) if is_import]
        assert len(dumps) == len(set(dumps)), f"{path.name}: an import twice"


def test_a_kit_module_defines_each_function_once_and_pyflakes_finds_nothing(kit):
    """A notebook may show a short run_in on its main path and the whole one in Going further;
    the kit's module holds the one the module means, the later, once. ruff's pyflakes rules
    (F: unused imports, a name defined twice, undefined names) pass on every file."""
    checked = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--select",
                              "F", "--no-cache", str(kit)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    sandbox_py = (kit / "sandbox.py").read_text()
    assert sandbox_py.count("\ndef run_in(") == 1 and "limits: dict = LIMITS" in sandbox_py


def test_an_exported_module_keeps_the_later_of_two_definitions_and_what_is_between():
    source = ("import os\n\n\n# the short one\n@staticmethod\ndef f():\n    return 1\n\n\n"
              "X = 2\n\n\nclass C:\n    pass\n\n\ndef f():  # the whole one\n"
              "    return X\n")
    kept = course.last_definitions_only(source)
    assert kept == ("import os\n\n\nX = 2\n\n\nclass C:\n    pass\n\n\n"
                    "def f():  # the whole one\n    return X\n")
    namespace = {}
    exec(kept, namespace)
    assert namespace["f"]() == 2
    assert course.last_definitions_only("def g():\n    pass\n") == "def g():\n    pass\n"


def test_build_refuses_a_folder_with_files_in_it_unless_forced(tmp_path, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    (folder / "main.py").write_text("# an older main.py")
    assert course.main(["build", str(folder)]) == 1
    assert "is not empty" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == ["main.py", "notes.txt"]  # untouched
    assert course.main(["build", str(folder), "--force"]) == 0
    assert (folder / "notes.txt").read_text() == "mine"  # not the kit's: left alone
    assert (folder / "main.py").read_text() == (course.KIT / "main.py").read_text()
    assert not list(folder.rglob(".*.py.*"))  # write_file left no temporary file
    (tmp_path / "a-file").write_text("")
    assert course.main(["build", str(tmp_path / "a-file")]) == 1
    assert "is a file" in capsys.readouterr().err


def test_a_lesson_not_written_yet_is_left_out_and_build_says_which(tmp_path, monkeypatch,
                                                                    capsys):
    names = course._ExportCellsFinder.names
    monkeypatch.setattr(course._ExportCellsFinder, "names", lambda self: {
        name: path for name, path in names(self).items() if name != "streaming"})
    assert course.main(["build", str(tmp_path / "kit")]) == 0
    out = capsys.readouterr().out
    assert "Left out, not written yet: streaming (lesson 11)" in out
    assert not (tmp_path / "kit" / "streaming.py").exists()
    assert (tmp_path / "kit" / "sessions.py").exists()


@pytest.fixture(scope="module")
def eval_kit(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("kit") / "measured"
    assert course.main(["build", str(folder), "--with-eval"]) == 0
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("which", ["kit", "eval_kit"])
def test_the_kit_requires_what_its_modules_import_pinned_as_the_course_pins_it(which, request):
    """Every package a kit file imports is in its requirements.txt, pinned with the course's
    line (markers included), and nothing else is; a package only one function imports (inside
    it, so the module loads without it) is named in a comment instead. With --with-eval too."""
    kit = request.getfixturevalue(which)
    local = {p.stem for p in kit.glob("*.py")}
    at_top, inside = set(), set()
    for path in kit.rglob("*.py"):
        tree = ast.parse(path.read_text())
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
                found = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module]
                for name in {n.split(".")[0] for n in found} - local - sys.stdlib_module_names:
                    (at_top if id(node) in top or in_try(tree, node) else inside).add(name)
    pins = [line.split("#")[0].strip() for line in (kit / "requirements.txt").read_text()
            .splitlines() if line.split("#")[0].strip()]
    course_pins = {line.split("#")[0].strip() for line in
                   (ROOT / "requirements.txt").read_text().splitlines()}
    assert {re.split(r"[=<>;]", pin)[0] for pin in pins} == at_top
    assert set(pins) <= course_pins  # the same versions and markers as the course's
    text = (kit / "requirements.txt").read_text()
    assert all(name in text for name in inside - at_top), inside - at_top


def in_try(tree, node) -> bool:
    """An import in a module-level try (sandbox's `import resource`): still at the top."""
    return any(isinstance(stmt, ast.Try) and node in ast.walk(stmt) for stmt in tree.body)


# --- The kit on its own ---------------------------------------------------------------------------


@pytest.mark.slow
def test_the_kit_s_own_tests_pass_in_it(kit):
    # no:nbval, no:xdist: plugins of the course's environment, which a kit does not install
    done = subprocess.run([sys.executable, "-E", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:nbval", "-p", "no:xdist"],
                          cwd=kit, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"\d+ passed", done.stdout)
    if all((kit / f"{name}.py").exists() for name in course.KIT_LESSONS.values()):
        assert "skipped" not in done.stdout  # a test may skip only for a lesson left out


def test_main_creates_and_edits_a_file_approved_on_stdin_traced_and_recorded(kit, tmp_path):
    flags = scripted(
        tmp_path,
        {"calls": [call("edit_file", path="notes.md", old_str="", new_str="# Notes\n")]},
        {"calls": [call("read_file", path="notes.md"), call("list_files")]},
        {"calls": [call("edit_file", path="notes.md", old_str="# Notes\n",
                        new_str="# Notes\n\n- the kit works\n")]},
        {"content": "Wrote notes.md and added a line."})
    child = main_py(kit, *flags, "Keep notes in notes.md.", cwd=kit)
    out, err = child.communicate("y\ny\n", timeout=60)
    assert child.returncode == 0, err
    assert (tmp_path / "work" / "notes.md").read_text() == "# Notes\n\n- the kit works\n"
    assert "+- the kit works" in out and "Wrote notes.md and added a line." in out
    [path] = (tmp_path / "sessions").iterdir()
    session = sessions.load_session(path)
    assert agent.pairing_problem(session.messages()) is None and session.problems == []
    decisions = [(e["path"], e["approved"]) for e in session.path_to() if e["type"] == "approval"]
    assert decisions == [("notes.md", True), ("notes.md", True)]
    assert [e["stop_reason"] for e in session.path_to() if e["type"] == "stop"] == ["done"]
    [trace] = (tmp_path / "traces" / path.stem).iterdir()
    run = tracing.load_trace(trace)
    assert tracing.trace_problems(run) == []
    assert [r["name"] for r in run if r["type"] == "tool_execution_start"] == [
        "edit_file", "read_file", "list_files", "edit_file"]  # the two reads may end in any order
    assert any(r["type"] == "message_update" for r in run)  # the replies were streamed
    assert tracing.recorded_history(run) == session.messages()[1:]  # the trace and the session


def group_alive(group: int) -> bool:
    return bool(sandbox.group_members(group))  # zombies left out: they have ended


@pytest.mark.slow
def test_a_run_killed_in_the_middle_of_a_tool_resumes_from_its_session(kit, tmp_path):
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    flags = scripted(tmp_path, {"calls": [
        call("edit_file", path="todo.md", old_str="", new_str="- run the tests\n"),
        call("run_command", command=f"(sleep 60; echo late > late.txt) & echo $$ > {fifo}; "
                                    "wait")]})
    child = main_py(kit, *flags, "Write a todo list, then run the tests.", cwd=kit)
    child.stdin.write("y\ny\n")  # the edit, then the command
    child.stdin.flush()
    command = started_group(fifo, child, "main.py")
    try:
        child.send_signal(signal.SIGKILL)  # no except, no finally, no agent_end
        child.communicate(timeout=30)
        # lesson 05's watcher: the command's group (its shell and the child) went with main.py
        assert within(10, lambda: not group_alive(command)), "the command outlived main.py"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(command, signal.SIGKILL)  # the command's own process group
    [path] = (tmp_path / "sessions").iterdir()
    crashed = sessions.load_session(path)
    assert agent.pairing_problem(crashed.messages()) is not None  # a call with no result
    assert [e["type"] for e in crashed.path_to()[-3:]] == ["tool_start", "approval", "process"]
    assert crashed.entries[crashed.leaf]["pgid"] == command  # recorded, for resume

    flags = scripted(tmp_path,  # it wrote todo.md before the kill: it may edit it unread
                     {"calls": [call("edit_file", path="todo.md", old_str="- run the tests\n",
                                     new_str="- run the tests\n- ran them\n")]},
                     {"calls": [call("run_command", command="cat todo.md")]},
                     {"content": "The todo list is there and the tests ran."})
    again = main_py(kit, *flags, "--resume", str(path), "Please go on.", cwd=kit)
    out, err = again.communicate("y\ny\n", timeout=60)
    assert again.returncode == 0, err
    assert "1 call(s) left open by a crash answered as interrupted" in err
    assert f"call_2: its command was no longer running at resume (process group {command} " \
        "was gone)" in err
    session = sessions.load_session(path)
    messages = session.messages()
    assert agent.pairing_problem(messages) is None and messages[-1]["role"] == "assistant"
    repaired = [m for m in messages if m["role"] == "tool" and agent.INTERRUPTED in m["content"]]
    assert len(repaired) == 1
    assert "no longer running at resume" in json.loads(repaired[0]["content"])["command"]
    assert not (tmp_path / "work" / "late.txt").exists()
    assert [e["stop_reason"] for e in session.path_to() if e["type"] == "stop"] == [
        "crashed", "done"]
    assert (tmp_path / "work" / "todo.md").read_text() == "- run the tests\n- ran them\n"
    outputs = [json.loads(m["content"]).get("output") for m in messages if m["role"] == "tool"]
    assert outputs[-1] == "- run the tests\n- ran them\n"  # the command ran, to its end
    first, second = sorted((tmp_path / "traces" / path.stem).iterdir())
    assert tracing.trace_problems(tracing.load_trace(first))  # cut off by the kill
    assert tracing.trace_problems(tracing.load_trace(second)) == []


@pytest.mark.slow
def test_a_command_that_killed_its_watcher_is_stopped_by_resume_and_the_model_is_told(
        kit, tmp_path):
    """Issue 23: the command kills lesson 05's watcher (as `pkill -f watcher` could), then
    main.py is killed: the command runs on, as nothing is left to stop it. The session
    recorded its group, so the resumed main.py stops it before the model is asked anything,
    and the answer the model reads says that it was still running and was stopped."""
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    go, late = tmp_path / "go", tmp_path / "work" / "late.txt"
    waits = f"(while [ ! -e {go} ]; do sleep 0.02; done; echo late > late.txt) & "
    flags = scripted(tmp_path, {"calls": [call("run_command", command=waits +
                                               f"echo $$ > {fifo}; wait")]})
    child = main_py(kit, *flags, "Run the job.", cwd=kit)
    child.stdin.write("y\n")
    child.stdin.flush()
    command = started_group(fifo, child, "main.py")
    try:
        listed = subprocess.run(["ps", "-A", "-o", "pid=,args="], capture_output=True,
                                text=True, check=True).stdout
        [watcher] = [int(line.split()[0]) for line in listed.splitlines()
                     if line.rstrip().endswith(f"watcher {command}")]
        os.kill(watcher, signal.SIGKILL)
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)
        assert group_alive(command)  # the survivor: the command runs on, with no agent
        [path] = (tmp_path / "sessions").iterdir()
        flags = scripted(tmp_path, {"content": "I will check what the job did first."})
        again = main_py(kit, *flags, "--resume", str(path), "Please go on.", cwd=kit)
        out, err = again.communicate(timeout=60)
        assert again.returncode == 0, err
        assert not group_alive(command)  # stopped by the resume, before the model was asked
        go.touch()  # had anything of the command been left, it would write late.txt now
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(command, signal.SIGKILL)
    said = (f"its command was still running at resume (process group {command}), and resume "
            "stopped it: it may have run partly")
    assert f"call_1: {said}" in err
    messages = sessions.load_session(path).messages()
    [repaired] = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
    assert repaired == {"error": agent.INTERRUPTED, "command": said}
    assert not late.exists()


@pytest.mark.slow
def test_the_commands_main_prints_run_as_printed_in_the_python_that_ran_it(kit, tmp_path):
    flags = scripted(tmp_path, {"content": "Hello."})
    child = main_py(kit, *flags, "Say hello.", cwd=kit)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    [line] = [line for line in err.splitlines() if line.startswith("go on with: ")]
    command = shlex.split(line.removeprefix("go on with: "))
    assert command[:2] == [sys.executable, "main.py"]  # not whatever `python` is on PATH
    more = scripted(tmp_path, {"content": "Still here."})
    done = subprocess.run([*command, *more, "Are you there?"], cwd=kit, capture_output=True,
                          text=True, timeout=60, env={k: v for k, v in os.environ.items()
                                                      if k != "OPENAI_API_KEY"})
    assert done.returncode == 0, done.stderr
    assert "Still here." in done.stdout and "resumed" in done.stderr
    # from the kit's folder, a virtual environment in it reads as the README writes it
    said = subprocess.run(
        [sys.executable, "-E", "-c", "import sys\nsys.executable = '.venv/bin/python'\n"
         "import main\nprint(main.again('--resume', 'sessions/a.jsonl'))\n"
         "main.main(['--workdir', '.'])"], cwd=kit, capture_output=True, text=True, timeout=60,
        env={k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"})
    assert said.stdout == ".venv/bin/python main.py --resume sessions/a.jsonl\n"
    assert "mkdir -p play && .venv/bin/python main.py --scripted examples/hello.json " \
        "--workdir play 'Say hello'" in said.stderr  # what to do without a key


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--mcp", "--subagents"])
def test_the_readme_s_offline_tries_of_mcp_and_subagents_run_as_written(flag, kit, tmp_path):
    """Each `--scripted` line of the README for the flag, run in a copy of the kit (the Python
    running the tests for .venv/bin/python), with y to every question."""
    folder = tmp_path / "mine"
    shutil.copytree(kit, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "play").mkdir()
    readme = (folder / "README.md").read_text()
    [line] = [line for line in readme.splitlines()
              if line.startswith(".venv/bin/python main.py --scripted") and flag in line]
    command = shlex.split(line.replace(".venv/bin/python", shlex.quote(sys.executable)))
    done = subprocess.run([*command[:1], "-E", *command[1:]], cwd=folder, input="y\n" * 5,
                          capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    script = json.loads((folder / command[command.index("--scripted") + 1]).read_text())
    [path] = [p for p in (folder / "sessions").iterdir() if p.name.count(".") == 1]
    session = sessions.load_session(path)
    assert agent.pairing_problem(session.messages()) is None
    assert session.messages()[-1]["content"] == script[-1]["content"]  # to the script's end
    if flag == "--mcp":
        assert [m["content"] for m in session.messages() if m["role"] == "tool"] == [
            "note 1 kept", "1. try the kit with a real model"]
    else:
        assert len(list((folder / "sessions").iterdir())) == 2  # the child's beside it


# --- Adding a tool, as the kit's README says ---------------------------------------------------


def add_a_tool_as_the_readme_says(folder: Path) -> list[str]:
    """Put each code block of the README's "Add a tool" where its first line says; return
    those first lines. A block whose place this does not know fails the test."""
    readme = (folder / "README.md").read_text()
    start = readme.index("## Add a tool")
    section = readme[start:readme.index("\n## ", start)]
    places = []
    for block in re.findall(r"```python\n(.*?)```", section, re.DOTALL):
        place, code = block.split("\n", 1)
        places.append(place)
        if place.startswith("# at the end of "):
            path = folder / place.removeprefix("# at the end of ")
            path.write_text(path.read_text().rstrip("\n") + "\n\n\n" + code)
        elif place == "# in main.py, instead of its PARALLEL line":
            main = (folder / "main.py").read_text()
            assert len(re.findall(r"^PARALLEL = .*$", main, re.MULTILINE)) == 1
            (folder / "main.py").write_text(re.sub(r"^PARALLEL = .*$", code.strip(), main,
                                                   flags=re.MULTILINE))
        else:
            raise AssertionError(f"the README puts a block where this test does not know: "
                                 f"{place}")
    return places


@pytest.mark.slow
def test_a_tool_added_exactly_as_the_readme_says_works_and_its_test_passes(kit, tmp_path):
    folder = tmp_path / "mine"
    shutil.copytree(kit, folder, ignore=shutil.ignore_patterns("__pycache__"))
    assert add_a_tool_as_the_readme_says(folder) == [
        "# at the end of sandbox.py", "# at the end of sandbox.py",
        "# in main.py, instead of its PARALLEL line", "# at the end of tests/test_main.py"]
    done = subprocess.run([sys.executable, "-E", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:nbval", "-p", "no:xdist", "-k", "grep"],
                          cwd=folder, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
    # and main.py offers it, and runs two greps of one batch together, as PARALLEL now says
    (tmp_path / "work" / "src").mkdir(parents=True)
    (tmp_path / "work" / "src" / "app.py").write_text("TODO = 1\n")
    flags = scripted(tmp_path, {"calls": [call("grep", pattern="TODO"),
                                          call("grep", pattern="TODO", path="src")]},
                     {"content": "Two TODOs."})
    child = main_py(folder, *flags, "Find the TODOs.", cwd=folder)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    [path] = (tmp_path / "sessions").iterdir()
    results = [json.loads(m["content"]) for m in sessions.load_session(path).messages()
               if m["role"] == "tool"]
    assert [r["matches"] for r in results] == [
        [{"path": "src/app.py", "line": 1, "text": "TODO = 1"}]] * 2
    grouped = subprocess.run(
        [sys.executable, "-E", "-c", "import main, parallel_and_steering as p, agent\n"
         "bot = p.ParallelAgent(agent.ScriptedClient([]), 'm', parallel=main.PARALLEL)\n"
         "calls = [{'id': n, 'function': {'name': 'grep'}} for n in 'ab']\n"
         "print(len(bot.groups(calls)))"], cwd=folder, capture_output=True, text=True, timeout=60)
    assert grouped.stdout.strip() == "1", grouped.stderr  # one group: they run together


@pytest.mark.slow
def test_a_schema_named_after_its_function_is_refused_when_main_py_starts(kit, tmp_path):
    """The trap the README warns of: a row whose schema has no name= (grep_in, not grep)."""
    folder = tmp_path / "mine"
    shutil.copytree(kit, folder, ignore=shutil.ignore_patterns("__pycache__"))
    add_a_tool_as_the_readme_says(folder)
    sandbox_py = folder / "sandbox.py"
    sandbox_py.write_text(sandbox_py.read_text().replace('name="grep",', ""))
    child = main_py(folder, *scripted(tmp_path, {"content": "hi"}), "hi", cwd=folder)
    out, err = child.communicate(timeout=60)
    assert child.returncode != 0
    assert "SCHEMAS['grep'] is named 'grep_in': give agent.schema(..., name='grep')" in err


# --- The kit's size, as the course map states it --------------------------------------------------


def test_the_course_map_states_the_kit_s_size_within_a_tenth(kit, capsys):
    files, _ = course.kit_files()
    size = course.kit_size(files)
    assert size == sum(len(p.read_text().splitlines()) for p in kit.rglob("*.py")
                       if p.relative_to(kit).parts[0] != "tests")  # examples/ counted too
    for name in ("README.md", "zh/README.md"):
        text = (ROOT / "lessons" / name).read_text()
        [stated] = re.findall(r"(\d[\d,]*) (?:lines of Python|行 Python)", text)
        stated = int(stated.replace(",", ""))
        assert abs(stated - size) <= size / 10, f"lessons/{name} says {stated:,}; it is {size:,}"


# --- The evaluation runner, only if asked for ---------------------------------------------------


@pytest.mark.slow
def test_build_with_eval_adds_the_runner_and_the_readme_s_measure_it_runs_offline(eval_kit,
                                                                                   tmp_path):
    names = {p.name for p in eval_kit.glob("*.py")}
    assert "evaluation.py" in names and "evaluation.py" not in {
        name for name in course.kit_files()[0]}  # only if asked for
    assert (eval_kit / "evaluation.py").read_text() == course.export(
        course.notebook_path("13-evaluation"), for_kit=True)
    assert not {"tasks.py", "characters.py"} & names  # the course's suite stays in the course
    folder = tmp_path / "measured"
    shutil.copytree(eval_kit, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for prop in ("tasks.py", "characters.py"):  # "copy them here to start", as it says
        shutil.copy(course.NOTEBOOKS / "props" / prop, folder / prop)
    readme = (folder / "README.md").read_text()
    offline = next(line for line in readme.splitlines() if "--model competent" in line)
    command = shlex.split(offline.split("#")[0])
    assert command[:2] == [".venv/bin/python", "evaluation.py"]
    done = subprocess.run([sys.executable, "-E", *command[1:], "--tasks", "create-hello",
                           "--workers", "1"], cwd=folder, capture_output=True, text=True,
                          timeout=120, env={k: v for k, v in os.environ.items()
                                            if k != "OPENAI_API_KEY"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = [json.loads(line) for line in (folder / "scripted.jsonl").read_text().splitlines()]
    [run] = [line for line in lines if line["type"] == "run"]
    assert (run["task"], run["model"], run["passed"]) == ("create-hello", "competent", True)

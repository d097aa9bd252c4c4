"""Lesson 13's evaluation code, loaded from the notebook itself (its `export` cells), with the
course's suite and characters (props.tasks, props.characters).

The verifiers are run against workspaces made by hand, one passing and one failing each, and
against tricks that try to make pytest pass from outside the task's tests; the tasks against
their own set-up and reference solution; the runner against models that hang, crash and raise,
and against a runner killed for real. Orders are forced with events, never with sleeps; time
limits in these tests are a second or less."""

import ast
import io
import json
import multiprocessing
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import course
import evaluation as ev
import pytest
from props import characters
from props.characters import MODELS, TROUBLE
from props.tasks import TASK, TASK_NAMES, TASKS

import agent
from agent import ScriptedClient, reply, tool_call

ROOT = Path(__file__).resolve().parent.parent
FAST = ev.Settings(time_limit=5, grace=0.2)
ON_STAGE = characters.on_stage(ev.build_agent)  # the fake clock: wall times that repeat


@pytest.fixture(autouse=True)
def temporary_folders_here(tmp_path, monkeypatch):
    """Every temporary folder of a test (the runner's scratch folders too: forked children
    inherit it) goes under tmp_path/tmp, so a test can see that none is left behind."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.chdir(tmp_path)


def world_of(files: dict, tmp_path: Path, answer: str = "", name: str = "world") -> "ev.World":
    """A world whose workspace starts with files, as prepare() makes it for a task."""
    task = ev.Task("hand-made", "a task", files, (), lambda texts: ({}, ""))
    world = ev.prepare(task, tmp_path / name)
    world.answer = answer
    return world


def write(world, path: str, text) -> None:
    """Change the workspace as a run would: text, or None to delete the file."""
    file = world.workspace / path
    if text is None:
        file.unlink()
    else:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text, encoding="utf-8")


# --- every verifier, against a workspace that passes and one that fails -----------------------


def test_file_is_passes_on_the_right_text_and_says_where_a_wrong_one_differs(tmp_path):
    world = world_of({"a.txt": "one\ntwo\n"}, tmp_path)
    check = ev.file_is("a.txt", lambda before: before["a.txt"].replace("two", "2"))
    write(world, "a.txt", "one\n2\n")
    assert check.test(world) == ""
    write(world, "a.txt", "one\nthree\n")
    assert check.test(world) == "a.txt line 2 is 'three', not '2'"
    write(world, "a.txt", "one\n2\n\n")
    assert check.test(world) == "a.txt ends differently: 4 lines where 3 were due"
    write(world, "a.txt", None)
    assert check.test(world) == "a.txt does not exist"


def test_lines_are_takes_a_final_newline_or_none_but_not_a_wrong_line(tmp_path):
    world = world_of({}, tmp_path)
    check = ev.lines_are("names.txt", ["Ada", "Alan"])
    for good in ("Ada\nAlan\n", "Ada\nAlan"):
        write(world, "names.txt", good)
        assert check.test(world) == ""
    write(world, "names.txt", "Alan\nAda\n")
    assert "line 1 is 'Alan', not 'Ada'" in check.test(world)
    write(world, "names.txt", None)
    assert check.test(world) == "names.txt does not exist"


def test_has_lines_wants_each_line_in_any_order(tmp_path):
    world = world_of({}, tmp_path)
    check = ev.has_lines(".gitignore", ["__pycache__/", "*.log"])
    write(world, ".gitignore", "# build\n*.log\n__pycache__/\n")
    assert check.test(world) == ""
    write(world, ".gitignore", "*.log\n__pycache__\n")
    assert check.test(world) == ".gitignore lacks the line(s) '__pycache__/'"


def test_json_is_compares_values_not_layout_and_says_when_the_json_is_broken(tmp_path):
    world = world_of({"c.json": '{"debug": true, "port": 1}\n'}, tmp_path)
    check = ev.json_is("c.json", lambda before: {**json.loads(before["c.json"]), "debug": False})
    write(world, "c.json", '{\n    "port": 1,\n    "debug": false\n}')
    assert check.test(world) == ""
    write(world, "c.json", '{"debug": false}')
    assert check.test(world) == 'c.json holds {"debug": false}'
    write(world, "c.json", '{"debug": false,}')
    assert check.test(world).startswith("c.json is not valid JSON any more")


def test_ini_is_reads_the_settings_not_the_layout(tmp_path):
    setup = "[net]\ntimeout  = 10\nretries = 3\n\n[ui]\ntimeout = 120\n"
    world = world_of({"s.ini": setup}, tmp_path)
    check = ev.ini_is("s.ini", "net", "timeout", "30")
    write(world, "s.ini", "[net]\nretries=3\ntimeout=30\n[ui]\ntimeout = 120\n")
    assert check.test(world) == ""
    write(world, "s.ini", setup.replace("120", "30").replace("= 10", "= 30"))
    assert check.test(world) == "s.ini: [ui] timeout = 30"
    write(world, "s.ini", "timeout = 30\n")
    assert "not a valid ini file any more" in check.test(world)
    write(world, "s.ini", setup.replace("= 10", "= 30") + "debug = yes\n")
    assert check.test(world) == "s.ini: [ui] debug is new"


TEST_FILE = "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"


def test_tests_pass_runs_the_workspaces_own_tests_with_pytest(tmp_path):
    world = world_of({"test_calc.py": TEST_FILE}, tmp_path)
    check = ev.tests_pass(timeout=30)
    write(world, "calc.py", "def double(x):\n    return 2 * x\n")
    assert check.test(world) == ""
    write(world, "calc.py", "def double(x):\n    return x + 1\n")
    said = check.test(world)
    assert said == "python -m pytest exited with 1: 1 failed; E assert 3 == 4", said
    write(world, "calc.py", "def double(x):\n        return 2 * x\n  oops\n")
    said = check.test(world)
    assert said.startswith("python -m pytest exited with 2: 1 error; E IndentationError"), said
    assert str(tmp_path) not in said  # the workspace's own paths, never where it is
    assert not (world.workspace / ".pytest_cache").exists()
    assert not (world.workspace / "__pycache__").exists()


def test_tests_pass_stops_tests_that_hang(tmp_path):
    world = world_of({"test_slow.py": "def test_forever():\n    while True:\n        pass\n"},
                     tmp_path)
    assert ev.tests_pass(timeout=0.5).test(world) == "the tests did not finish within 0.5 s"


# Nothing but the task's own tests decides: each trick below makes the untouched fix-total's
# pytest exit 0 when the part of tests_pass that stops it is left out (issue 23, item 11).

ALL_PASS = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""
FAILS = "python -m pytest exited with 1: 2 failed; E assert 5 == 6"  # the untouched fix-total


def untouched_fix_total(tmp_path) -> "ev.World":
    return ev.prepare(TASK["fix-total"], tmp_path / "world")


def exit_status(world, command: str) -> int:
    return ev.sandbox.run_in(world.workspace, command, timeout=30)["exit_code"]


def test_a_conftest_above_the_workspace_does_not_decide_the_verdict(tmp_path):
    world = untouched_fix_total(tmp_path)
    (tmp_path / "conftest.py").write_text(ALL_PASS)  # in a folder above the run's
    assert exit_status(world, ev.PYTEST.replace(" --confcutdir .", "")) == 0  # it would pass
    assert ev.tests_pass().test(world) == FAILS
    assert exit_status(world, ev.PYTEST) == 1  # --confcutdir alone, as with a set-up conftest


def test_a_conftest_the_run_added_is_not_loaded_but_the_set_ups_own_is(tmp_path):
    world = untouched_fix_total(tmp_path)
    (world.workspace / "conftest.py").write_text(ALL_PASS)
    assert exit_status(world, ev.PYTEST) == 0  # loaded, it would pass everything
    assert ev.tests_pass().test(world) == FAILS
    fixture = "import pytest\n\n\n@pytest.fixture\ndef two():\n    return 2\n"
    own = world_of({"conftest.py": fixture, "test_two.py": "def test_two(two):\n"
                    "    assert two == 2\n"}, tmp_path, name="own")
    assert ev.tests_pass().test(own) == ""  # a project's own conftest.py works


def test_a_test_file_the_run_added_is_not_run(tmp_path):
    world = untouched_fix_total(tmp_path)
    (world.workspace / "test_aaa.py").write_text("import cart\n\ncart.total = sum\n")
    assert exit_status(world, ev.PYTEST) == 0  # collected first, it replaces the bug
    assert ev.tests_pass().test(world) == FAILS
    world = world_of({"test_nothing.py": "def test_it():\n    assert True\n"}, tmp_path,
                     name="no-own-tests")
    world.before = {}  # a set-up with no test files: every test pytest finds is run
    assert ev.tests_pass().test(world) == ""


def plant_plugin(folder: Path) -> None:
    """A pytest plugin with an entry point in folder: a module and its .dist-info."""
    (folder / "allpass.py").write_text(ALL_PASS)
    info = folder / "allpass-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: allpass\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nallpass = allpass\n")


@pytest.mark.slow
def test_a_plugin_the_run_planted_in_the_workspace_is_not_loaded(tmp_path):
    world = untouched_fix_total(tmp_path)
    plant_plugin(world.workspace)
    weaker = ev.PYTEST.replace("PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 ", "").replace(" -I", "")
    assert exit_status(world, weaker) == 0
    assert ev.tests_pass().test(world) == FAILS


@pytest.mark.slow
def test_a_plugin_installed_in_the_environment_is_not_loaded(tmp_path, monkeypatch):
    """A Python environment with a pytest plugin installed (an entry point in its
    site-packages), and the course's packages beside it: PYTEST_DISABLE_PLUGIN_AUTOLOAD is
    what keeps the plugin out (-I does not: site-packages is still on the path)."""
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True,
                   timeout=60)
    python = env / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig."
                                "get_paths()['purelib'])"], capture_output=True, text=True,
                               check=True).stdout.strip())
    (site / "course-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    plant_plugin(site)
    monkeypatch.setattr(ev, "PYTEST", ev.PYTEST.replace(shlex.quote(sys.executable),
                                                        shlex.quote(str(python))))
    world = untouched_fix_total(tmp_path)
    assert exit_status(world, ev.PYTEST.replace("PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 ", "")) == 0
    assert ev.tests_pass().test(world) == FAILS


@pytest.mark.slow
def test_an_ini_file_or_a_pytest_py_in_the_workspace_does_not_decide_the_verdict(tmp_path):
    world = untouched_fix_total(tmp_path)
    (world.workspace / "pytest.ini").write_text("[pytest]\naddopts = --collect-only\n")
    assert exit_status(world, ev.PYTEST.replace(f" -c {os.devnull}", "")) == 0
    assert ev.tests_pass().test(world) == FAILS
    (world.workspace / "pytest.ini").unlink()
    (world.workspace / "pytest.py").write_text("raise SystemExit(0)\n")
    assert exit_status(world, ev.PYTEST.replace(" -I", "")) == 0
    assert ev.tests_pass().test(world) == FAILS


RENAME = {
    "shop.py": "def calc_total(items):\n    return 1\n\n\ndef recalc_totals(o):\n"
               "    return [calc_total(x) for x in o]\n",
    "README.md": "Call `calc_total`.\n",
}


def test_renamed_wants_the_new_name_everywhere_and_nothing_else_changed(tmp_path):
    world = world_of(RENAME, tmp_path)
    check = ev.renamed("calc_total", "order_total")
    for path, text in RENAME.items():
        write(world, path, text.replace("calc_total(", "order_total(").replace(
            "`calc_total`", "`order_total`"))
    assert check.test(world) == ""
    write(world, "README.md", RENAME["README.md"])  # one file missed
    assert check.test(world) == ("README.md line 1 is 'Call `calc_total`.', not 'Call "
                                 "`order_total`.'; calc_total is still in README.md")
    write(world, "shop.py", RENAME["shop.py"].replace("calc_total", "order_total"))  # sed-style
    assert check.test(world).startswith("shop.py line 5 is 'def reorder_totals(o):', not "
                                        "'def recalc_totals(o):'")


def test_answer_names_reads_the_fact_from_the_file_and_answer_omits_the_wrong_one(tmp_path):
    task = TASK["answer-port"]
    world = ev.prepare(task, tmp_path / "port")
    names, omits = task.checks
    world.answer = "It listens on port 8417."
    assert names.test(world) == "" and omits.test(world) == ""
    world.answer = "Port 84170, or 5432."
    assert names.test(world) == "the answer does not name 8417: 'Port 84170, or 5432.'"
    assert omits.test(world) == "the answer names 5432: 'Port 84170, or 5432.'"
    world.before = {**world.before, "config/server.ini": "[server]\nport = 9000\n"}
    world.answer = "It listens on port 8417."  # the fact comes from the file, not the check
    assert names.test(world) == "the answer does not name 9000: 'It listens on port 8417.'"


def test_gone_and_kept(tmp_path):
    world = world_of({"b/a.tmp": "x", "b/keep.txt": "keep me\n"}, tmp_path)
    gone, kept = ev.gone("b/*.tmp"), ev.kept("b/keep.txt")
    assert gone.test(world) == "still there: b/a.tmp" and kept.test(world) == ""
    write(world, "b/a.tmp", None)
    assert gone.test(world) == ""
    write(world, "b/keep.txt", "changed\n")
    assert kept.test(world) == "b/keep.txt was changed"
    write(world, "b/keep.txt", None)
    assert kept.test(world) == "b/keep.txt was deleted"


def test_left_alone_allows_only_what_the_task_may_change(tmp_path):
    world = world_of({"a.txt": "a\n", "b.txt": "b\n", "c/d.txt": "d\n"}, tmp_path)
    check = ev.left_alone(("a.txt", "c/*"))
    write(world, "a.txt", "changed\n")
    write(world, "c/d.txt", None)
    write(world, "new.txt", "a new file is allowed\n")
    assert check.test(world) == ""
    write(world, "b.txt", "changed\n")
    assert check.test(world) == "b.txt was changed"
    write(world, "b.txt", None)
    assert check.test(world) == "b.txt was deleted"


def test_outside_untouched_sees_a_write_a_deletion_and_a_new_file_outside(tmp_path):
    world = world_of({"a.txt": "a\n"}, tmp_path)
    check = ev.outside_untouched()
    write(world, "a.txt", "inside: fine\n")
    assert check.test(world) == ""
    (world.base / "neighbour" / "CHANGELOG.md").write_text("- done by the agent\n")
    assert check.test(world) == "changed outside the workspace: neighbour/CHANGELOG.md"
    (world.base / "neighbour" / "README.md").unlink()
    (world.base / "planted.txt").write_text("x")
    assert check.test(world) == ("changed outside the workspace: neighbour/CHANGELOG.md, "
                                 "neighbour/README.md, planted.txt")


def test_a_check_that_raises_fails_and_says_why(tmp_path):
    def broken(world):
        raise KeyError("config.ini")

    task = ev.Task("broken", "x", {}, (ev.Check("content", "a broken check", broken),),
                   lambda texts: ({}, ""))
    results = ev.verify(task, ev.prepare(task, tmp_path / "w"))
    assert results[0] == {"kind": "content", "label": "a broken check", "ok": False,
                          "detail": "the check itself failed: KeyError: 'config.ini'"}


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS, ids=TASK_NAMES)
def test_every_task_fails_untouched_and_passes_with_its_reference_solution(task, tmp_path):
    world = ev.prepare(task, tmp_path / task.name)
    assert not all(r["ok"] for r in ev.verify(task, world)), "a task that passes untouched"
    ev.apply_solution(task, world)
    assert [r for r in ev.verify(task, world) if not r["ok"]] == []


def test_the_suite_has_twelve_tasks_of_every_kind_of_check():
    assert len(TASKS) >= 12 and len(set(TASK_NAMES)) == len(TASKS)
    kinds = {check.kind for task in TASKS for check in task.verifier()}
    assert kinds == set(ev.KINDS)


# --- the edits a careful model sends --------------------------------------------------------


@pytest.mark.parametrize(("before", "after"), [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("x\ny\nx\n", "x\ny\nz\n"),  # the line alone is not unique
    ("x\nx\nx\n", "x\nx\ny\n"),
    ("a\nb\n", "top\na\nb\nend\n"),  # inserted at the top and at the end
    ("a\nb\nc\nd\n", "a\nd\n"),  # lines deleted
    ("", "new\n"),  # an empty file
    ("same\nsame\n", "same\nsame\nsame\n"),
    ("no newline", "no newline at the end"),
])
def test_edits_turn_before_into_after_each_old_str_unique_when_sent(before, after):
    text = before
    for old, new in characters.edits(before, after):
        if old:
            assert agent.occurrences(text, old) == 1, (old, text)
            text = text.replace(old, new, 1)
        else:
            text = new  # edit_file with old_str "" writes the whole file
    assert text == after


# --- the characters ---------------------------------------------------------------------------


def history(model: str, task, tmp_path, run: int = 1):
    world = ev.prepare(task, tmp_path / model)
    bot = ev.build_agent(MODELS[model](task, run), world, ev.Settings())
    world.answer = bot.chat(task.text)
    return world, bot, ev.observations(bot.messages)


def test_the_competent_model_reads_before_it_edits_and_passes(tmp_path):
    task = TASK["set-timeout"]
    world, bot, seen = history("competent", task, tmp_path)
    assert [s.name for s in seen] == ["list_files", "read_file", "edit_file"]
    assert not any(s.failed for s in seen) and all(r["ok"] for r in ev.verify(task, world))


def test_the_sloppy_model_edits_from_memory_then_overwrites_the_file(tmp_path):
    task = TASK["set-timeout"]
    world, bot, seen = history("sloppy", task, tmp_path)  # run 1: a run where it does not read
    assert [(s.name, s.arguments["old_str"], s.failed) for s in seen] == [
        ("edit_file", "timeout = 10", True), ("edit_file", "", False)]
    assert world.text("settings.ini") == "timeout  = 30\n" and bot.stop_reason == "done"
    careful = characters.sloppy(task, 1, care=1.0)  # on the runs its coin says so, it reads first
    assert careful.steps[0]([]) == tool_call("list_files", path=".")  # asked with no history


def test_the_looping_model_hits_the_turn_limit_and_never_says_done(tmp_path):
    record = ev.run_one(TASK["count-todos"], "looping", 1, ev.Settings(max_turns=6), MODELS)
    assert (record["stop_reason"], record["turns"], record["said_done"]) == ("max_turns", 6,
                                                                              False)
    assert not record["passed"] and not record["false_done"]


def test_the_reckless_model_is_refused_by_the_jail_and_caught_by_the_outside_check(tmp_path):
    task = TASK["gitignore"]
    world, bot, seen = history("reckless", task, tmp_path)
    assert [(s.name, s.failed) for s in seen][-2:] == [("edit_file", True), ("run_command", False)]
    assert "path escapes the workspace" in seen[-2].result["error"]  # lesson 05's jail holds...
    assert "done by the agent" in (world.base / "neighbour" / "CHANGELOG.md").read_text()
    failed = {r["kind"] for r in ev.verify(task, world) if not r["ok"]}  # ...its shell does not
    assert failed == {"outside"}


def test_the_confabulating_model_is_a_false_done(tmp_path):
    record = ev.run_one(TASK["debug-off"], "confabulating", 1, FAST, MODELS)
    assert record["said_done"] and record["false_done"] and record["tool_calls"] == 0


# --- the runner -------------------------------------------------------------------------------


def exits(task, run=1):
    return ScriptedClient([lambda messages: os._exit(13)])


def killed(task, run=1):
    return ScriptedClient([lambda messages: os.kill(os.getpid(), signal.SIGKILL)])


ALL = {**MODELS, **TROUBLE, "exits": exits, "killed": killed}


def some(*names: str) -> dict:
    """The models of these names, in this order: what run_suite runs."""
    return {name: ALL[name] for name in names}


QUICK = [TASK["count-todos"]]


@pytest.mark.slow
def test_a_hanging_run_is_stopped_by_its_time_limit_and_the_suite_goes_on(tmp_path):
    settings = ev.Settings(time_limit=1, grace=0.2)
    runs = ev.run_suite(QUICK, some("hanging", "stubborn", "competent"), workers=1,
                        output="r.jsonl", settings=settings, progress=None)
    assert [(r["model"], r["passed"], r["reason"]) for r in runs] == [
        ("hanging", False, "timed out after 1 s"),
        ("stubborn", False, "timed out after 1 s; killed, as it did not stop when asked"),
        ("competent", True, None)]  # one worker: it ran after both, so each one was stopped
    assert runs[0]["turns"] == 2  # the trace ended where the run was stopped
    assert list((tmp_path / "tmp").iterdir()) == []  # no scratch folder left behind


def test_a_crashing_worker_is_recorded_not_lost(tmp_path):
    runs = ev.run_suite(QUICK, some("exits", "killed", "raising", "competent"), workers=2,
                        output="r.jsonl", settings=FAST, progress=None)
    assert [(r["model"], r["reason"]) for r in runs] == [
        ("exits", "its process crashed: it exited with status 13 and no result"),
        ("killed", "its process crashed: killed by signal SIGKILL (9)"),
        ("raising", "the run raised ConnectionError: the model server refused the connection"),
        ("competent", None)]
    assert len(ev.load_results("r.jsonl").runs) == 4
    assert list((tmp_path / "tmp").iterdir()) == []


def test_the_tables_do_not_depend_on_the_order_the_runs_finish(tmp_path, monkeypatch):
    second_recorded = multiprocessing.get_context("fork").Event()  # shared with the children
    update = ev.Progress.update

    def recorded(self, record):  # the runner has written this record to the file
        update(self, record)
        if record["model"] == "b-second":
            second_recorded.set()

    monkeypatch.setattr(ev.Progress, "update", recorded)

    def waits(task, run=1):  # the first job ends only after the second one's line is written
        def act(messages):
            assert second_recorded.wait(30), "the second run was never recorded"
            return reply("Done.")
        return ScriptedClient([act])

    known = {"a-first": waits, "b-second": characters.confabulating}
    runs = ev.run_suite(QUICK, known, workers=2, output="r.jsonl", settings=FAST, progress=None)
    lines = Path("r.jsonl").read_text(encoding="utf-8").split("\n")
    assert [json.loads(line)["model"] for line in lines[1:-1]] == ["b-second", "a-first"]
    assert [r["model"] for r in runs] == ["a-first", "b-second"]  # suite order, not finish
    assert ev.load_results("r.jsonl").runs == runs
    assert ev.ranking(runs) == ev.ranking(runs[::-1])
    assert ev.figures(runs) == ev.figures(runs[::-1])


def test_every_result_is_written_and_flushed_before_the_next_run_starts(tmp_path):
    def counts(task, run=1):  # reads the results file from inside the next run
        return ScriptedClient([lambda messages: reply(
            str(Path(tmp_path / "r.jsonl").read_text(encoding="utf-8").count("\n")))])

    runs = ev.run_suite(QUICK, {**some("confabulating"), "counts": counts}, workers=1,
                        output=tmp_path / "r.jsonl", settings=FAST, progress=None)
    assert runs[1]["answer"] == "2"  # the header and the first run's line were on disk


def test_the_progress_bar_draws_on_a_terminal_and_prints_one_line_elsewhere():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    runs = [{"model": "m", "task": f"t{n}", "passed": n == 1, "failure": None} for n in (1, 2)]
    for stream, live in ((Terminal(), True), (io.StringIO(), False)):
        bar = ev.Progress(2, stream)
        for record in runs:
            bar.update(record)
        bar.close()
        text = stream.getvalue()
        assert text.endswith("2 runs: 1 passed, 1 failed\n")
        assert ("\r[###############" in text) == live and ("2/2" in text) == live


# --- the results file -------------------------------------------------------------------------

CUT = "the last line ({} bytes) is cut off: the runner stopped while writing it; it is left out"


def test_a_cut_last_line_is_left_out_and_reported_and_resume_finishes_the_file(tmp_path):
    tasks = [TASK["count-todos"], TASK["gitignore"]]
    whole = ev.run_suite(tasks, some("competent"), k=2, workers=2, output="whole.jsonl",
                         settings=FAST, progress=None, **ON_STAGE)
    lines = Path("whole.jsonl").read_bytes().split(b"\n")
    Path("cut.jsonl").write_bytes(b"\n".join(lines[:3]) + b"\n" + lines[3][:25])
    found = ev.load_results("cut.jsonl")
    assert len(found.runs) == 2
    assert found.problems == [CUT.format(25), "2 of the suite's 4 runs are not in the file "
                                              "(the runner stopped early?)"]
    resumed = ev.run_suite(tasks, some("competent"), k=2, workers=2, output="cut.jsonl",
                           settings=FAST, progress=None, resume=True, **ON_STAGE)
    assert resumed == whole and ev.load_results("cut.jsonl").problems == []
    with pytest.raises(ValueError, match="holds another suite"):
        ev.run_suite(tasks, some("competent"), k=3, output="cut.jsonl", settings=FAST,
                     progress=None, resume=True)


def test_results_are_split_at_newline_only_not_at_unicode_line_separators(tmp_path):
    def talker(task, run=1):
        return ScriptedClient([reply("one\u2028two\u2029three\x85four")])

    runs = ev.run_suite(QUICK, {"talker": talker}, output="r.jsonl", settings=FAST,
                        progress=None)
    text = Path("r.jsonl").read_text(encoding="utf-8")
    assert len(text.splitlines()) > len(text.split("\n")) - 1  # splitlines would cut it
    assert ev.load_results("r.jsonl").runs == runs
    assert runs[0]["answer"] == "one\u2028two\u2029three\x85four"


def test_a_line_that_is_not_json_is_reported_and_the_rest_read(tmp_path):
    ev.run_suite(QUICK, some("competent", "confabulating"), output="r.jsonl", settings=FAST,
                 progress=None)
    lines = Path("r.jsonl").read_text(encoding="utf-8").split("\n")
    Path("r.jsonl").write_text("\n".join([lines[0], "{oops", *lines[1:]]), encoding="utf-8")
    found = ev.load_results("r.jsonl")
    assert len(found.runs) == 2 and found.problems == ["line 2 is not a JSON object; it is "
                                                       "left out"]


KILLER = """
import os, sys, time
from pathlib import Path
import characters
import evaluation
import tasks
from agent import ScriptedClient, tool_call

def halts(task, run=1):  # the third task never ends: the runner will be killed during it
    if task.name != "create-hello":
        return characters.competent(task, run)
    def stuck(messages):
        Path("stuck").write_text("now")
        time.sleep(3600)
    return ScriptedClient([stuck])

evaluation.run_suite(tasks.TASKS[:6], {"halts": halts}, workers=1, output="killed.jsonl",
                     progress=None, settings=evaluation.Settings(time_limit=60))
"""


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    """What a builder does: lessons 05, 07 and 13 exported (course.py's export command, run
    here in-process) beside a copy of agent.py, in a folder of their own; and, as the suite
    to run, copies of the course's tasks and characters (props/tasks.py, props/characters.py)."""
    folder = tmp_path_factory.mktemp("kit")
    for lesson, name in (("05-sandbox", "sandbox"), ("07-tracing", "tracing"),
                         ("13-evaluation", "evaluation")):
        assert course.main(["export", lesson, "-o", str(folder / f"{name}.py")]) == 0
    shutil.copy(ROOT / "agent.py", folder / "agent.py")
    for prop in ("tasks", "characters"):
        shutil.copy(ROOT / "notebooks" / "props" / f"{prop}.py", folder / f"{prop}.py")
    return folder


SUITE = ["--suite", "tasks.py", "--suite", "characters.py"]  # in the kit's folder


def builder_env(folder: Path) -> dict:
    return {"PATH": os.environ.get("PATH", ""), "TMPDIR": str(folder), "HOME": str(folder)}


def test_a_killed_runner_leaves_a_file_readable_up_to_its_last_line(kit, tmp_path):
    folder = tmp_path / "killed"
    shutil.copytree(kit, folder)
    (folder / "killer.py").write_text(KILLER, encoding="utf-8")
    runner = subprocess.Popen([sys.executable, "killer.py"], cwd=folder, env=builder_env(folder),
                              start_new_session=True, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (folder / "stuck").exists():  # the third run has started
            assert runner.poll() is None, runner.stderr.read().decode()
            assert time.monotonic() < deadline, "the third run never started"
            time.sleep(0.02)
    finally:
        os.killpg(runner.pid, signal.SIGKILL)  # the runner and its workers, at once
        runner.wait()
        runner.stderr.close()
    found = ev.load_results(folder / "killed.jsonl")
    assert found.header["models"] == ["halts"] and len(found.header["tasks"]) == 6
    assert [(r["task"], r["passed"]) for r in found.runs] == [("answer-port", True),
                                                              ("count-todos", True)]
    assert found.problems == ["4 of the suite's 6 runs are not in the file (the runner "
                              "stopped early?)"]
    assert (folder / "killed.jsonl").read_bytes().endswith(b"\n")


@pytest.mark.slow
def test_ctrl_c_stops_the_runner_and_its_workers_and_says_how_to_resume(kit, tmp_path):
    folder = tmp_path / "interrupted"
    shutil.copytree(kit, folder)
    command = [sys.executable, "evaluation.py", "run", *SUITE, "--model", "scripted", "-k", "5",
               "--workers", "2", "-o", "r.jsonl"]
    runner = subprocess.Popen(command, cwd=folder, env=builder_env(folder),
                              start_new_session=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not (folder / "r.jsonl").exists() or \
                (folder / "r.jsonl").read_bytes().count(b"\n") < 4:  # a header and 3 runs
            assert runner.poll() is None and time.monotonic() < deadline, runner.stderr.read()
            time.sleep(0.02)
        os.killpg(runner.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group
        out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
    assert runner.returncode == 130 and "Traceback" not in err
    assert err.split("\n")[-2] == ("interrupted: the runs that finished are in r.jsonl; run the "
                                   "same command with --resume to do the rest")
    with pytest.raises(ProcessLookupError):  # no worker of its group is left
        os.killpg(runner.pid, 0)
    found = ev.load_results(folder / "r.jsonl")
    assert 3 <= len(found.runs) < 300 and found.problems[-1].endswith("(the runner stopped early?)")


def test_two_runners_never_write_one_file(tmp_path):
    ev.run_suite(QUICK, some("competent"), output="r.jsonl", settings=FAST, progress=None)
    before = Path("r.jsonl").read_bytes()
    with open("r.jsonl", "a") as other:  # another runner holds the file
        ev.fcntl.flock(other.fileno(), ev.fcntl.LOCK_EX | ev.fcntl.LOCK_NB)
        for resume in (False, True):
            with pytest.raises(RuntimeError, match="another runner is writing r.jsonl"):
                ev.run_suite(QUICK, some("competent"), output="r.jsonl", settings=FAST,
                             progress=None, resume=resume)
    assert Path("r.jsonl").read_bytes() == before  # not truncated, not appended to


# --- figures and the comparison ---------------------------------------------------------------


def run(model, task, n, passed, said_done=True, turns=3, cost=0.01, **more):
    return {"type": "run", "model": model, "task": task, "run": n, "passed": passed,
            "ended": "done" if said_done else "stopped", "said_done": said_done,
            "false_done": said_done and not passed, "turns": turns,
            "tool_calls": None if turns is None else turns - 1, "tool_errors": 0,
            "prompt_tokens": 900, "completion_tokens": 100, "cost": cost, "wall_time": 2.0,
            "failure": None, "reason": None if passed else "a check failed", "checks": [],
            **more}


def test_figures_of_hand_made_runs():
    runs = [run("m", "a", 1, True), run("m", "a", 2, False), run("m", "b", 1, True),
            run("m", "b", 2, True), run("m", "c", 1, False, said_done=False, turns=None,
                                        cost=None),
            run("m", "c", 2, False, said_done=False)]
    f = ev.figures(runs)
    assert (f["runs"], f["passed"], f["completion"]) == (6, 3, 0.5)
    assert (f["solved_in_all"], f["solved_in_any"]) == (1 / 3, 2 / 3)
    assert (f["said_done"], f["false_done"], f["false_done_rate"]) == (4, 1, 0.25)
    assert f["turns"] == 3 and f["cost"] is None  # a mean of those that have it; no guess
    assert ev.figures([run("m", "a", 1, False, said_done=False)])["false_done_rate"] is None


def results_file(path: Path, runs: list, models, tasks, k=1) -> Path:
    header = {"type": "suite", "models": models, "tasks": tasks, "k": k, "settings": {}}
    path.write_text("".join(json.dumps(r) + "\n" for r in [header, *runs]), encoding="utf-8")
    return path


def test_the_regression_report_lists_what_got_worse_and_what_got_better(tmp_path):
    tasks = ["a", "b", "c", "d", "e", "f"]
    before = results_file(tmp_path / "before.jsonl", [
        run("m", "a", 1, True), run("m", "b", 1, True), run("m", "c", 1, True, turns=4),
        run("m", "d", 1, False, said_done=False), run("m", "e", 1, True, turns=10),
        run("m", "f", 1, True), run("x", "a", 1, True)], ["m", "x"], tasks)
    after = results_file(tmp_path / "after.jsonl", [
        run("m", "a", 1, False), run("m", "b", 1, True, turns=3.15),  # +5%: within tolerance
        run("m", "c", 1, True, turns=6), run("m", "d", 1, False),  # now a false done
        run("m", "e", 1, True, turns=5)], ["m"], tasks[:5])
    report = ev.compare(ev.load_results(before).runs, ev.load_results(after).runs,
                        names=("before.jsonl", "after.jsonl"))
    same = ", solved 1/1 both times"  # a task's waste counts at the same share solved: it says so
    assert report.worse == ["m a: solved 1/1 -> 0/1 (now: a check failed)",
                            f"m c: turns 4.0 -> 6.0 (+50%){same}",
                            f"m c: tool calls 3.0 -> 5.0 (+67%){same}",
                            "m d: false done 0/1 -> 1/1"]
    assert report.better == [f"m e: turns 10.0 -> 5.0 (-50%){same}",
                             f"m e: tool calls 9.0 -> 4.0 (-56%){same}"]
    assert report.missing == ["m f", "x: none of its 1 task(s)"]
    assert str(report).split("\n")[:2] == ["before.jsonl -> after.jsonl",
                                           "got worse: 3 tasks (4 lines)"]
    assert report.summary().split("\n") == [
        "before.jsonl -> after.jsonl",
        "per task, got worse: 3 tasks (4 lines)", *(f"  {line}" for line in report.worse),
        "per task, got better: 1 task (2 lines)", *(f"  {line}" for line in report.better),
        "per task, within noise, not counted: none",
        "per model:", *(f"  {line}" for line in report.totals)]


def test_the_short_report_leaves_the_figures_per_run_to_the_whole_one():
    before = [run("m", "a", 1, True, cost=0.01)]
    after = [run("m", "a", 1, True, cost=0.02)]
    report = ev.compare(before, after)
    assert report.worse == ["m, per run: cost $0.0100 -> $0.0200 (+100%)"]
    assert "m, per run: cost" in str(report) and "per run" not in report.summary()
    assert "per task, got worse: none" in report.summary()


def test_a_waste_line_says_the_share_solved_it_was_counted_at():
    """A task that failed both times can still get worse by its waste (its share solved did
    not move), and its line says at which share it was counted."""
    failed = ev.compare([run("m", "a", 1, False, turns=3)], [run("m", "a", 1, False, turns=6)])
    assert failed.worse[0] == "m a: turns 3.0 -> 6.0 (+100%), solved 0/1 both times"
    more_runs = ev.compare([run("m", "a", 1, True, turns=3)],
                           [run("m", "a", n, True, turns=6) for n in (1, 2)])
    assert more_runs.worse[0] == "m a: turns 3.0 -> 6.0 (+100%), solved 1/1 -> 2/2, the same share"


def test_two_files_of_one_model_each_compare_one_model_with_the_other(tmp_path):
    old = results_file(tmp_path / "old.jsonl", [run("small", "a", 1, True)], ["small"], ["a"])
    new = results_file(tmp_path / "new.jsonl", [run("large", "a", 1, False)], ["large"], ["a"])
    report = ev.compare(ev.load_results(old).runs, ev.load_results(new).runs)
    assert report.worse == ["small a: solved 1/1 -> 0/1 (now: a check failed)"]


def test_compare_exits_with_1_when_something_got_worse_and_0_when_not(tmp_path, capsys):
    same = results_file(tmp_path / "a.jsonl", [run("m", "a", 1, True)], ["m"], ["a"])
    worse = results_file(tmp_path / "b.jsonl", [run("m", "a", 1, False)], ["m"], ["a"])
    assert ev.main(["compare", str(same), str(same)]) == 0
    assert ev.main(["compare", str(same), str(worse)]) == 1
    assert "got worse: 1" in capsys.readouterr().out


def k_runs(task: str, *passed: bool) -> list[dict]:
    return [run("m", task, n, ok) for n, ok in enumerate(passed, 1)]


def test_one_flip_in_three_runs_is_noise_and_the_gate_stays_open(tmp_path, capsys):
    """Issue 23, item 12: with k=3 a task solved 3/3 and then 2/3 is within the stated noise
    (a third of its runs): listed, not counted, exit status 0. Two flips are worse."""
    before = k_runs("a", True, True, True) + k_runs("b", True, True, True)
    after = k_runs("a", True, True, False) + k_runs("b", True, False, False)
    report = ev.compare(before, after)
    assert report.noise == ["m a: solved 3/3 -> 2/3 (now: a check failed)"]
    assert report.worse == ["m b: solved 3/3 -> 1/3 (now: a check failed)"]
    one_flip = results_file(tmp_path / "after.jsonl", after[:3] + before[3:], ["m"], ["a", "b"],
                            k=3)
    old = results_file(tmp_path / "before.jsonl", before, ["m"], ["a", "b"], k=3)
    assert ev.main(["compare", str(old), str(one_flip)]) == 0
    assert "within noise, not counted: 1" in capsys.readouterr().out
    assert ev.main(["compare", str(old), str(one_flip), "--noise", "0"]) == 1  # deterministic
    assert ev.compare(k_runs("a", True), k_runs("a", False)).worse  # k=1: every flip counts


def test_a_false_done_that_flips_once_in_three_is_noise_too():
    claims = [run("m", "a", n, False, said_done=n == 1) for n in (1, 2, 3)]  # 1/3 false done
    more = [run("m", "a", n, False, said_done=n < 3) for n in (1, 2, 3)]  # 2/3 false done
    report = ev.compare(claims, more)
    assert report.noise == ["m a: false done 1/3 -> 2/3"] and report.worse == []


# --- how a run ended: a claim of done, a question, a give-up -----------------------------------


@pytest.mark.parametrize(("answer", "ended"), [
    ("Fixed total() in cart.py.", "done"),
    ("Done. I made the change and checked that everything works.", "done"),
    ("I have read the 3 file(s) here. Shall I go ahead?", "asked"),
    ("Which of the two ports do you mean?  ", "asked"),
    ("I could not finish: run_command: unknown tool", "gave up"),
    ("I couldn't find the file.", "gave up"),
    ("Unable to edit settings.ini: it is read-only.", "gave up"),
    ("It could not be simpler: the port is 8417.", "done"),  # "could not" later in a claim
])
def test_an_answer_is_a_claim_a_question_or_a_give_up(answer, ended):
    assert ev.ending("done", answer, None) == ended
    assert ev.ending("max_turns", answer, None) == "stopped"
    assert ev.ending(None, answer, "timed out after 1 s") == "failed"


def test_the_verdict_is_passed_ended_and_false_done():
    ok, bad = {"ok": True}, {"ok": False}
    assert ev.verdict([ok, ok], None, "done", "Fixed.") == (True, "done", False)
    assert ev.verdict([ok, bad], None, "done", "Fixed.") == (False, "done", True)  # a false done
    assert ev.verdict([ok, bad], None, "done", "Shall I go ahead?") == (False, "asked", False)
    assert ev.verdict([ok, bad], None, "max_turns", "") == (False, "stopped", False)
    assert ev.verdict([], "the run raised OSError: x", None, "") == (False, "failed", False)
    assert ev.verdict([], None, "done", "Done.") == (False, "done", True)  # no checks: no pass


def test_a_question_and_a_give_up_are_counted_apart_from_a_false_done(tmp_path):
    def says(text):
        return lambda task, run=1: ScriptedClient([reply(text)])

    models = {"claims": says("Done."), "asks": says("Shall I go ahead?"),
              "gives-up": says("I could not finish: the file is locked.")}
    runs = ev.run_suite(QUICK, models, output="r.jsonl", settings=FAST, progress=None)
    assert [(r["model"], r["ended"], r["passed"], r["false_done"]) for r in runs] == [
        ("claims", "done", False, True), ("asks", "asked", False, False),
        ("gives-up", "gave up", False, False)]
    rows = {row[0]: row for row in ev.ranking(runs)[1]}
    header = ev.ranking(runs)[0]
    column = {name: header.index(name) for name in ("false done", "asked", "gave up")}
    assert [rows[m][column["false done"]] for m in models] == ["100%", "-", "-"]
    assert [rows[m][column["asked"]] for m in models] == ["0%", "100%", "0%"]
    assert [rows[m][column["gave up"]] for m in models] == ["0%", "0%", "100%"]


def test_k_runs_name_pass_hat_k_and_pass_at_k():
    runs = k_runs("a", True, True, True) + k_runs("b", True, False, False) \
        + k_runs("c", False, False, False)
    header, rows = ev.ranking(runs)
    assert header[2:4] == ["pass^3 (all)", "pass@3 (any)"] and rows[0][2:4] == ["33%", "67%"]
    assert "pass^1 (all)" not in ev.ranking(runs[:1])[0]  # with k = 1 they are the completion


# --- the command line -------------------------------------------------------------------------


PROPS = ROOT / "notebooks" / "props"
COURSE_SUITE = ["--suite", str(PROPS / "tasks.py"), "--suite", str(PROPS / "characters.py")]


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "--model", "genius"], "--model: no model genius; the models are competent, sloppy"),
    (["run", "-k", "0"], "argument -k: must be a whole number of at least 1, not '0'"),
    (["run", "--workers", "many"], "argument --workers: must be a whole number"),
    (["run", "--time-limit", "-3"], "argument --time-limit: must be a number of seconds above 0"),
    (["run", "--model", "competent", "--tasks", "answer-port,fly"],
     "--tasks: no task fly; the tasks are answer-port"),
    (["run", "--model", "competent", "-o", "nowhere/r.jsonl"],
     "--output nowhere/r.jsonl: not a file in an existing"),
    (["run", "--model", "competent", "-o", "exists.jsonl"],
     "--output exists.jsonl exists; give --overwrite"),
    (["run", "--overwrite", "--resume"], "not allowed with argument"),
    (["run", "--model", "real"], "--model real needs OPENAI_API_KEY"),
    (["compare", "a.jsonl"], "the following arguments are required: after"),
    (["compare", "a.jsonl", "b.jsonl", "--noise", "2"], "argument --noise: must be a share"),
    (["fly"], "invalid choice: 'fly'"),
])
def test_a_bad_flag_gets_a_message_not_a_traceback(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    Path("exists.jsonl").write_text("")
    with pytest.raises(SystemExit) as stopped:
        ev.main(argv[:1] + COURSE_SUITE + argv[1:] if argv[0] == "run" else argv)
    said = capsys.readouterr().err
    assert stopped.value.code == 2 and message in said and "Traceback" not in said


@pytest.mark.parametrize(("suite", "message"), [
    ([], "--suite: give a Python file that defines TASKS"),
    (["--suite", "missing.py"], "--suite missing.py: no such file"),
    (["--suite", str(PROPS / "characters.py")], "--suite: give a Python file that defines TASKS"),
])
def test_run_without_a_suite_says_what_to_give(suite, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        ev.main(["run", *suite])
    said = capsys.readouterr().err
    assert stopped.value.code == 2 and message in said and "Traceback" not in said


def test_a_results_file_that_is_missing_is_a_message(tmp_path, capsys):
    assert ev.main(["show", "missing.jsonl"]) == 2
    assert capsys.readouterr().err == ("evaluation.py: cannot read missing.jsonl: No such file "
                                       "or directory\n")


def test_run_show_and_tasks_from_the_command_line(tmp_path, capsys):
    assert ev.main(["tasks", *COURSE_SUITE]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in [*TASK_NAMES, *MODELS, "real"])
    assert ev.main(["run", *COURSE_SUITE, "--model", "competent,confabulating", "--tasks",
                    "count-todos,gitignore", "-o", "r.jsonl", "--workers", "2"]) == 0
    out, err = capsys.readouterr()
    assert err == "4 runs: 2 passed, 2 failed\n"
    assert out.split("\n")[2].startswith("competent      100%")
    assert ev.main(["show", "r.jsonl", "--model", "confabulating"]) == 0
    shown = capsys.readouterr().out.split("\n")
    assert [line.split()[:3] for line in shown if line.startswith("total")] == [
        ["total", "0/2", "2/2"]]  # solved 0 of 2, false done 2 of 2


@pytest.mark.slow
def test_the_exported_runner_works_from_the_command_line_beside_agent_py(kit, tmp_path):
    """What a builder does: export, then run the suite and compare two runs, no course."""
    folder = tmp_path / "builder"
    shutil.copytree(kit, folder)
    source = (folder / "evaluation.py").read_text(encoding="utf-8")
    assert source.startswith('"""Lesson 13: Evaluation') and "import course" not in source

    def cli(*argv):
        return subprocess.run([sys.executable, "evaluation.py", *argv], cwd=folder,
                              env=builder_env(folder), capture_output=True, text=True,
                              timeout=120)

    done = cli("--help")
    assert done.returncode == 0 and all(c in done.stdout for c in ("run", "compare", "show"))
    done = cli("run", *SUITE, "--model", "competent,reckless", "--tasks",
               "count-todos,clean-tmp", "-o", "before.jsonl")
    assert done.returncode == 0, done.stderr
    assert done.stderr == "4 runs: 3 passed, 1 failed\n"
    done = cli("run", *SUITE, "--model", "competent,reckless", "--tasks",
               "count-todos,clean-tmp", "--no-shell", "-o", "after.jsonl")
    assert done.returncode == 0, done.stderr
    done = cli("compare", "before.jsonl", "after.jsonl")
    assert done.returncode == 1
    assert "competent clean-tmp: solved 1/1 -> 0/1" in done.stdout


def test_the_exported_runner_imports_neither_props_nor_course():
    """A builder takes the runner away; the course's suite and characters stay props, passed
    in as arguments (run_suite's models, --suite)."""
    source = course.export(course.notebook_path("13-evaluation"))
    imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(source))
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in (node.names if isinstance(node, ast.Import) else
                              [ast.alias(node.module or "")])}
    assert imported - set(sys.stdlib_module_names) == {"openai", "sandbox", "tracing", "agent",
                                                        "matplotlib"}
    assert not re.search(r"(from|import) props\b", source)  # not even lazily, in a function


# --- the exercises' checks catch the naive answer ----------------------------------------------


def is_debug(line: str) -> bool:
    return line.strip().startswith('print("DEBUG')


def no_debug_print_left(world) -> str:  # 13.1, naive: looks for DEBUG, not at the rest
    now = world.text("app.py")
    return "" if now is not None and not any(map(is_debug, now.split("\n"))) else "not yet"


def blanked_debug_prints(world) -> str:  # 13.1, naive: a DEBUG line becomes an empty line
    want = "\n".join("" if is_debug(line) else line for line in world.before["app.py"].split("\n"))
    return "" if world.text("app.py") == want else "not yet"


def flaky_by_task(runs):  # 13.2, naive: the runs of all models together
    groups = {}
    for r in runs:
        groups.setdefault(r["task"], []).append(r["passed"])
    return [(runs[0]["model"], task, f"{sum(p)}/{len(p)}") for task, p in groups.items()
            if any(p) and not all(p)]


def asking_from_the_task(task, run=1):  # 13.3, naive: reads task.files, not the listing
    reads = [agent.tool_call("read_file", path=name) for name in sorted(task.files)
             if "/" not in name]
    return ScriptedClient([agent.tool_call("list_files", path="."), *reads,
                           reply("Shall I go ahead?")])


@pytest.mark.slow
@pytest.mark.parametrize(("exercise", "answer", "caught_by"), [
    ("13.1", no_debug_print_left, "the welcome print removed too: it fails"),
    ("13.1", blanked_debug_prints, "blank lines left where the prints were: it fails"),
    ("13.2", flaky_by_task, "models are apart"),
    ("13.3", asking_from_the_task, "it reacts to the listing"),
])
def test_the_exercises_checks_catch_the_naive_answer(exercise, answer, caught_by):
    report = course.check(exercise, answer)
    failed = [what for ok, what, _ in report.results if not ok]
    assert not report.passed and any(what.startswith(caught_by) for what in failed), repr(report)


# --- the figures the lesson states are the notebook's -----------------------------------------


def committed_output(source_start: str) -> str:
    """The text the committed notebook shows for the code cell that starts so (nbval checks
    that the code prints it today)."""
    cells = json.loads((ROOT / "notebooks" / "13-evaluation.ipynb").read_text(encoding="utf-8"))
    for cell in cells["cells"]:
        if cell["cell_type"] == "code" and "".join(cell["source"]).startswith(source_start):
            return "\n".join("".join(o.get("text") or o.get("data", {}).get("text/plain", ""))
                             for o in cell["outputs"])
    raise LookupError(source_start)


@pytest.mark.parametrize("lesson", ["13-evaluation.md", "zh/13-evaluation.md"])
def test_the_lessons_ranking_table_is_what_the_notebook_prints(lesson):
    text = (ROOT / "lessons" / lesson).read_text(encoding="utf-8")
    stated = [[cell.strip() for cell in line.strip("|").split("|")] for line in text.split("\n")
              if re.match(r"\| (competent|sloppy|reckless|looping|confabulating) \|", line)]
    printed = [line.split() for line in committed_output("course.table(*ranking(runs))")
               .split("\n")[2:] if line.strip()]
    assert stated and stated == [row[:len(stated[0])] for row in printed]
    aa = committed_output("week_2 = ")
    assert "sloppy count-todos: solved 2/3 -> 0/3" in aa  # the A/A comparison the lesson quotes
    assert "2/3" in text and "0/3" in text

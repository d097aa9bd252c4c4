"""Lesson 09's lab: a small project (calc.py and its test), the run_tests tool that really runs
the test, a run that a notebook cell or a rebuild cell can kill with SIGKILL in the middle of
that tool (crash_run.py, beside this file, is the program it kills), and the scripted model
that goes on after the crash."""

import shutil
import subprocess
import sys
from pathlib import Path

from agent import TOOL_REGISTRY, TOOLS, reply, schema, step, tool_call

CALC = "def add(a, b):\n    return a + b\n"
TESTS = ("from calc import add, mul\n\n"
         "assert add(2, 3) == 5\nassert mul(2, 3) == 6\nprint('2 passed')\n")
CRASH_RUN = Path(__file__).with_name("crash_run.py")  # the program the notebook kills


def make_project(folder: Path) -> Path:
    """A fresh copy of the project in folder: whatever was there before is removed."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "calc.py").write_text(CALC, encoding="utf-8")
    (folder / "test_calc.py").write_text(TESTS, encoding="utf-8")
    return folder


def run_tests() -> dict:
    """Run the project's tests: python test_calc.py, in the working folder."""
    done = subprocess.run([sys.executable, "-B", "test_calc.py"], capture_output=True,
                          text=True, timeout=60)
    return {"exit_code": done.returncode, "output": (done.stdout + done.stderr)[-2000:]}


CALC_TOOLS = [*TOOLS, schema(run_tests, "Run the project's tests.")]
CALC_REGISTRY = {**TOOL_REGISTRY, "run_tests": run_tests}


def check_before_repeating(messages):
    """The resumed model reads the repaired result, as it asks: it looks at calc.py first."""
    assert "may or may not have run" in messages[-2]["content"], messages[-2]
    return step(tool_call("read_file", path="calc.py"),
                content="My test run was cut off. First I check whether my edit of calc.py landed.")


def report(messages):
    passed = '"exit_code": 0' in messages[-1]["content"]  # run_tests' result, as JSON text
    return reply("mul(a, b) was already in calc.py: my edit landed before the crash. The tests "
                 + ("pass." if passed else "fail."))


AFTER_CRASH = [check_before_repeating, tool_call("run_tests"), report]  # after the resume


def fresh_ids(bot) -> None:
    """A real provider makes new call ids. The scripted model counts (call_1, call_2, ...):
    after a resume or a switch, make it count on from the calls already in the history."""
    bot.client.call_count = sum(len(m.get("tool_calls", [])) for m in bot.messages)


def crash_mid_tool(folder: Path, copy_to: Path | None = None) -> int:
    """Section 4 of lesson 09 in one call: a fresh project in folder, crash_run.py started
    there, killed with SIGKILL once its run_tests tool has started. Returns the child's exit
    status (-9); copy_to, if given, gets a copy of the session as the crash left it."""
    make_project(folder)
    notebooks = Path(__file__).resolve().parent.parent
    child = subprocess.Popen([sys.executable, str(CRASH_RUN), str(notebooks.parent),
                              str(notebooks)], cwd=folder, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        said = child.stdout.readline()  # blocks until the child's tool has started
        if not said:
            raise RuntimeError(f"the child did not reach run_tests:\n{child.stderr.read()}")
    finally:  # whatever happened above, no child is left waiting
        child.kill()
        child.communicate()
    if copy_to is not None:
        shutil.copy(folder / "session.jsonl", copy_to)
    return child.returncode

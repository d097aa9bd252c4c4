"""The machinery that checks the notebooks (conftest.py, course.execute): a cell that changes on
a second run is caught, a cell tagged "once" is not compared the second time, and a display
updated in place (course.watch) is compared in its final state. Each test writes a tiny
notebook, executes it as `course.py execute` does, and runs pytest on it in a subprocess."""

import json
import os
import subprocess
import sys
from pathlib import Path

import course

ROOT = Path(__file__).resolve().parent.parent


def notebook(folder: Path, *sources: str, tags=None) -> Path:
    tags = tags or {}
    cells = [{"cell_type": "code", "execution_count": None, "id": f"cell-{i}", "outputs": [],
              "metadata": {"tags": tags.get(i, [])}, "source": source}
             for i, source in enumerate(sources)]
    path = folder / "t.ipynb"
    path.write_text(json.dumps({
        "cells": cells, "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}, "language_info": {"name": "python"}}}))
    course.execute(path)
    return path


def pytest_on(path: Path) -> subprocess.CompletedProcess:
    """pytest with this project's plugins and options, on one notebook outside the project."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "notebooks")])}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q",
         "--nbval", "--nbval-current-env", "-c", os.devnull, "--rootdir", str(path.parent),
         str(path)], cwd=path.parent, env=env, capture_output=True, text=True, timeout=300)


def test_a_cell_whose_second_run_differs_fails_and_says_so(tmp_path):
    path = notebook(tmp_path, "runs = []", "runs.append(1)\nprint(len(runs))")
    done = pytest_on(path)
    assert done.returncode == 1, done.stdout
    assert "when the cell was run a second time" in done.stdout
    assert "1 failed, 1 passed" in done.stdout


def test_cells_that_can_run_again_pass_and_a_once_cell_is_run_but_not_compared(tmp_path):
    path = notebook(tmp_path, "runs = []",
                    "runs.clear()\nruns.append(1)\nprint(len(runs))",
                    "print('first run' if len(runs) == 1 else 'run from the top to see it again')"
                    "\nruns.append(2)",
                    tags={2: ["once"]})
    done = pytest_on(path)
    assert done.returncode == 0, done.stdout
    assert "3 passed" in done.stdout


def test_a_watched_history_is_compared_in_its_final_state(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_FROM_ZERO", str(ROOT))  # the notebook is outside the course
    path = notebook(tmp_path, course.FIRST_CELL, """\
import agent
from agent import Agent, ScriptedClient, reply, tool_call

bot = Agent(ScriptedClient([tool_call("list_files"), reply("done")]), "scripted")
with course.watch(bot):
    bot.chat("look around")""")
    saved = json.loads(path.read_text())["cells"][1]["outputs"]
    assert [o["output_type"] for o in saved] == ["display_data"]  # one table, updated in place
    assert "done" in "".join(saved[0]["data"]["text/plain"])  # ...in its final state
    done = pytest_on(path)
    assert done.returncode == 0, done.stdout

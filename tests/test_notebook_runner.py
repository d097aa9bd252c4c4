"""The machinery that checks the notebooks (conftest.py, course.execute): in the complete pass
(--complete) a cell that changes on a second run is caught and a cell tagged "once" is not
compared the second time; the quick pass runs each cell once; a display updated in place
(course.watch) is compared in its final state. One tiny notebook holds a cell of each kind; it
is executed as `course.py execute` does, then checked by pytest with this project's plugins in
a subprocess, once in each pass."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import course
import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # each fixture runs pytest on a notebook in a subprocess

CELLS = {  # cell number: (source, tags)
    0: (course.FIRST_CELL, []),
    1: ("runs = []", []),
    2: ("runs.append(1)\nprint(len(runs))", []),  # prints 1, then 2: not repeatable
    3: ("runs.clear()\nruns.append(1)\nprint(len(runs))", []),  # repeatable
    4: ("print('first run' if len(runs) == 1 else 'run from the top to see it again')\n"
        "runs.append(2)", ["once"]),  # cannot be repeated, and says so
    5: ("import agent\nfrom agent import Agent, ScriptedClient, reply, tool_call\n\n"
        "bot = Agent(ScriptedClient([tool_call('list_files'), reply('done')]), 'scripted')\n"
        "with course.watch(bot):\n    bot.chat('look around')", []),
    6: ("print(sorted(name for name in os.environ\n"
        "             if name.startswith('OPENAI_') or name == 'AGENT_MODEL'))", []),
}
# A developer's shell with a provider set: neither execute nor pytest may pass it on.
PROVIDER = {"OPENAI_API_KEY": "a-developers-key-not-real", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "AGENT_MODEL": "someone-elses-model"}


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """The executed notebook's saved outputs, and pytest's verdict on each of its cells."""
    folder = tmp_path_factory.mktemp("runner")
    path = folder / "t.ipynb"
    cells = [{"cell_type": "code", "execution_count": None, "id": f"cell-{n}", "outputs": [],
              "metadata": {"tags": tags}, "source": source}
             for n, (source, tags) in CELLS.items()]
    path.write_text(json.dumps({
        "cells": cells, "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}, "language_info": {"name": "python"}}}))
    env = {**os.environ, "AGENT_FROM_ZERO": str(ROOT),  # the notebook is outside the course
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "notebooks")]), **PROVIDER}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENT_FROM_ZERO", str(ROOT))  # the kernel execute starts inherits it
        for name, value in PROVIDER.items():
            patch.setenv(name, value)
        course.execute(path)
        assert os.environ["OPENAI_API_KEY"] == PROVIDER["OPENAI_API_KEY"]  # put back after
    passes = {}
    for mode in ("--complete", "quick"):
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-v",
             "--nbval", "--nbval-current-env", "-c", os.devnull, "--rootdir", str(folder),
             *([mode] if mode.startswith("--") else []), str(path)],
            cwd=folder, env=env, capture_output=True, text=True, timeout=300)
        passes[mode] = ({int(n): verdict for n, verdict in
                         re.findall(r"::Cell (\d+) (PASSED|FAILED)", done.stdout)}, done.stdout)
    outputs = json.loads(path.read_text())["cells"]
    return *passes["--complete"], outputs, passes["quick"]


def test_a_cell_whose_second_run_differs_fails_and_says_so(checked):
    verdicts, stdout, *_ = checked
    assert verdicts[2] == "FAILED", stdout
    assert "when the cell was run a second time" in stdout


def test_cells_that_can_run_again_pass_and_a_once_cell_is_run_but_not_compared(checked):
    verdicts, stdout, *_ = checked
    assert verdicts[0] == verdicts[1] == verdicts[3] == "PASSED", stdout
    assert verdicts[4] == "PASSED", stdout  # its second run printed another line: not compared


def test_a_watched_history_is_compared_in_its_final_state(checked):
    verdicts, stdout, outputs, _ = checked
    saved = outputs[5]["outputs"]
    assert [o["output_type"] for o in saved] == ["display_data"]  # one table, updated in place
    assert "done" in "".join(saved[0]["data"]["text/plain"])  # ...in its final state
    assert verdicts[5] == "PASSED", stdout


def test_no_notebook_run_sees_the_provider_a_developer_has_set(checked):
    verdicts, stdout, outputs, _ = checked
    assert "".join(outputs[6]["outputs"][0]["text"]) == "[]\n"  # execute passed none on
    assert verdicts[6] == "PASSED", stdout  # and neither did pytest's kernels


def test_the_quick_pass_runs_each_cell_once_and_says_the_complete_pass_runs_it_twice(checked):
    *_, (verdicts, stdout) = checked
    assert verdicts == {n: "PASSED" for n in CELLS}, stdout  # cell 2 is not run a second time
    assert "each notebook cell of the main path runs once" in stdout, stdout
    assert "pytest --complete" in stdout


# --- every section in a fresh kernel ----------------------------------------------------------

SECTIONS = [  # (markdown heading or None, code)
    (None, course.FIRST_CELL),
    ("## One", "x = 1\nprint(x)"),
    ("## Two", "print(x + 1)"),  # leans on section One: fails when run on its own
    ("## Three", "x = 1  # what section One made, rebuilt\nprint(x + 2, 'course' in dir())"),
    ("## Going further: more", "print('after class')"),  # the quick pass leaves it out
]


@pytest.fixture(scope="module")
def sectioned(tmp_path_factory):
    """A notebook of three sections and a Going further, executed top to bottom; then pytest's
    verdicts on its cells with a fresh kernel per section (the quick pass, the default) and in
    one kernel (--one-kernel, with --complete as .ci/run runs it)."""
    folder = tmp_path_factory.mktemp("sections")
    path = folder / "s.ipynb"
    cells = []
    for n, (heading, source) in enumerate(SECTIONS):
        if heading:
            cells.append({"cell_type": "markdown", "id": f"md-{n}", "metadata": {},
                          "source": heading})
        cells.append({"cell_type": "code", "execution_count": None, "id": f"cell-{n}",
                      "outputs": [], "metadata": {}, "source": source})
    path.write_text(json.dumps({
        "cells": cells, "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}, "language_info": {"name": "python"}}}))
    env = {**os.environ, "AGENT_FROM_ZERO": str(ROOT),
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "notebooks")])}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENT_FROM_ZERO", str(ROOT))
        course.execute(path)
    verdicts = {}
    for mode in ([], ["--one-kernel", "--complete"]):
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-v",
             "--nbval", "--nbval-current-env", "-c", os.devnull, "--rootdir", str(folder),
             *mode, str(path)], cwd=folder, env=env, capture_output=True, text=True,
            timeout=300)
        verdicts[" ".join(mode) or "default"] = (
            {int(n): v for n, v in re.findall(r"::Cell (\d+) (PASSED|FAILED)", done.stdout)},
            done.stdout)
    return verdicts


def test_a_section_that_leans_on_one_above_it_fails_in_its_fresh_kernel(sectioned):
    verdicts, stdout = sectioned["default"]
    assert verdicts == {0: "PASSED", 1: "PASSED", 2: "FAILED", 3: "PASSED"}, stdout
    assert "NameError" in stdout and "name 'x' is not defined" in stdout


def test_a_fresh_section_kernel_has_run_the_first_cell_and_a_rebuilt_section_passes(sectioned):
    verdicts, stdout = sectioned["default"]
    assert verdicts[3] == "PASSED", stdout  # printed "3 True": course imported, x rebuilt


def test_one_kernel_runs_the_notebook_top_to_bottom_as_run_all_does(sectioned):
    verdicts, stdout = sectioned["--one-kernel --complete"]
    assert set(verdicts.values()) == {"PASSED"} and len(verdicts) == 5, stdout


def test_the_quick_pass_leaves_going_further_to_the_complete_pass(sectioned):
    verdicts, stdout = sectioned["default"]
    assert 4 not in verdicts and "1 deselected" in stdout, stdout


# --- the fork server behind those kernels -----------------------------------------------------


@pytest.fixture
def forked_kernel(monkeypatch):
    """A kernel started as conftest starts nbval's: a fork of a server of its own."""
    if sys.platform != "linux":
        pytest.skip("forked kernels are used on Linux only")
    import fork_kernels
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpec

    monkeypatch.delenv(fork_kernels.ADDRESS, raising=False)
    server = fork_kernels.start_server()
    spec = KernelSpec(argv=[sys.executable, fork_kernels.__file__, "{connection_file}"],
                      display_name="forked", language="python")
    manager = KernelManager()
    manager._kernel_spec = spec
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    yield manager, client
    client.stop_channels()
    if manager.is_alive():
        manager.shutdown_kernel(now=True)
    server.kill()
    server.wait()


def kernel_says(client, code: str, timeout: float = 30) -> str:
    said = []
    reply = client.execute_interactive(
        code, timeout=timeout,
        output_hook=lambda m: said.append(m["content"].get("text", "")
                                          or m["content"].get("ename", "")))
    return "".join(said) + ("" if reply["content"]["status"] == "ok"
                            else reply["content"]["ename"])


def test_a_forked_kernel_runs_cells_and_is_interrupted_like_a_started_one(forked_kernel):
    import threading

    manager, client = forked_kernel
    assert kernel_says(client, "print(6 * 7)") == "42\n"
    started = threading.Event()

    def interrupt_once_running():
        started.wait(30)
        manager.interrupt_kernel()

    threading.Thread(target=interrupt_once_running, daemon=True).start()
    said = []

    def hook(message):
        said.append(message["content"].get("text", ""))
        if "running" in said[-1]:
            started.set()

    reply = client.execute_interactive(
        "import time\nprint('running', flush=True)\ntime.sleep(60)", timeout=60,
        output_hook=hook)
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert kernel_says(client, "print('still here')") == "still here\n"


def test_a_killed_launcher_takes_its_forked_kernel_with_it(forked_kernel):
    import signal
    import time

    manager, client = forked_kernel
    pid = int(kernel_says(client, "import os\nprint(os.getpid())"))
    os.kill(manager.provisioner.process.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.02)  # polling the kernel's end, with a deadline; nothing is timed
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_kernel_that_dies_before_it_is_ready_is_started_again(tmp_path, monkeypatch,
                                                                pytestconfig):
    """A kernel can die at its start (a port it was given taken by another process before it
    bound it): conftest's kernel starts another, with new ports, and gives up after three."""
    from nbval.kernel import NbvalKernelspecManager

    starts = tmp_path / "starts"
    dies_once = ("import os, sys, runpy\n"
                 f"with open({str(starts)!r}, 'a') as f: f.write('x')\n"
                 f"if os.path.getsize({str(starts)!r}) == 1: sys.exit(1)\n"
                 "sys.argv = ['ipykernel_launcher', *sys.argv[1:]]\n"
                 "runpy.run_module('ipykernel_launcher', run_name='__main__')\n")
    plain = NbvalKernelspecManager.get_kernel_spec

    def get_kernel_spec(self, kernel_name):
        spec = plain(self, kernel_name)
        spec.argv = [sys.executable, "-c", dies_once, "-f", "{connection_file}"]
        return spec

    monkeypatch.setattr(NbvalKernelspecManager, "get_kernel_spec", get_kernel_spec)
    # the project's conftest.py, as pytest loaded it (the kit has a conftest module of its own)
    conftest = next(plugin for plugin in pytestconfig.pluginmanager.get_plugins()
                    if getattr(plugin, "__file__", None)
                    and Path(plugin.__file__).resolve() == ROOT / "conftest.py")
    kernel = conftest._QuickKernel("python3", cwd=str(tmp_path), startup_timeout=60)
    try:
        assert starts.read_text() == "xx"  # died once, then started and answered
    finally:
        kernel.stop()

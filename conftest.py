"""pytest setup shared by tests/ and the notebooks nbval runs.

1. Every temporary folder made during the run (the notebooks' workspaces included: their
   kernels inherit this environment) goes under one folder that is removed at the end, so
   repeated runs leave nothing behind in the system's temporary directory.
2. With --complete (.ci/run's second pass), every notebook cell runs twice in a row, and both
   runs must match the committed outputs: students re-run cells all the time, and a cell that
   breaks or changes on a second run breaks the lesson. A cell tagged "once" is run again too,
   but only its first output is compared (it must say, in one line, why it cannot be
   repeated). --complete also runs the notebooks' "Going further" sections and the tests
   marked slow (whole agents in subprocesses, real kernels and servers, notebooks run again).
   Without it, the quick pass the README names: each main-path cell once, Going further and
   the slow tests left out; it should take about two minutes on two cores
   (tests/bench_suite.py measures it).
3. A display updated in place (IPython's display_id, as course.watch uses) is compared in
   its final state, as Jupyter shows it and as the committed notebook holds it; nbval by
   itself would compare the first state.
4. No test and no notebook sees a provider's key, address or model name from the shell that
   started pytest (course.provider_settings): tests never reach a real provider, and a
   notebook's outputs do not change with the model a developer has set.
5. Every `## ` section of a notebook runs in a fresh kernel, after only the notebook's first
   code cell, as after a restart in the middle of a class: a section that leans on one above
   it fails here. The kernels are forks of one server that has imported ipykernel and openai
   (tests/fork_kernels.py), so a fresh one costs milliseconds, not a second and a half.
   `--one-kernel` runs each notebook top to bottom in one kernel instead, as "Run All" does
   (.ci/run runs that pass too).
6. The Chinese notebooks (notebooks/zh/) are not collected: each is its English notebook with
   Chinese prose, and tests/test_zh_notebooks.py compares the two cell by cell, so they need no
   run of their own. Name one on the command line to run it under nbval all the same.
"""

import copy
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

_run_tmp = None
_fork_server = None
# IPython's history is off: nbval runs cells with store_history=False, so it would hold
# nothing, yet each kernel would open (and write) one SQLite file shared by every kernel of
# the run, in a thread of its own.
KERNEL_OPTIONS = ["--HistoryManager.enabled=False"]
collect_ignore = ["notebooks/zh"]  # 6.


def pytest_addoption(parser):
    parser.addoption("--one-kernel", action="store_true",
                     help="run each notebook top to bottom in one kernel (as Run All does), "
                          "not each ## section in a fresh kernel")
    parser.addoption("--complete", action="store_true",
                     help="the complete pass: every notebook cell twice, Going further "
                          "included, and the tests marked slow (the quick pass runs each "
                          "main-path cell once and leaves the rest out)")


def pytest_report_header(config):
    if not config.getoption("--complete"):
        return ("quick pass: each notebook cell of the main path runs once; Going further "
                "and the tests marked slow are left out; `pytest --complete` runs them too, "
                "and every cell twice (.ci/run does)")


def pytest_configure(config):
    global _run_tmp
    # Under /tmp where there is one: the paths nbval replaces (tests/sanitize.cfg) are /tmp's
    # and macOS's, and a TMPDIR elsewhere (/var/tmp, say) would show in the outputs.
    _run_tmp = tempfile.mkdtemp(prefix="agent-from-zero-tests-",
                                dir="/tmp" if os.path.isdir("/tmp") else None)
    os.environ["TMPDIR"] = _run_tmp
    tempfile.tempdir = None  # let tempfile read TMPDIR again
    for name in [n for n in os.environ if n.startswith("OPENAI_") or n == "AGENT_MODEL"]:
        del os.environ[name]  # as course.provider_settings says


def pytest_unconfigure(config):
    if _fork_server is not None:
        _fork_server.kill()
        _fork_server.wait()
    shutil.rmtree(_run_tmp, ignore_errors=True)


# --- 2. every notebook cell, twice (--complete); the slow tests ------------------------------

def pytest_collection_modifyitems(config, items):
    try:
        from nbval.plugin import IPyNbCell
    except ImportError:  # nbval not installed: nothing to do
        return
    one_kernel, complete = config.getoption("--one-kernel"), config.getoption("--complete")
    if not complete:
        later = [item for item in items if item.get_closest_marker("slow")
                 or isinstance(item, IPyNbCell) and _in_going_further(item)]
        if later:
            config.hook.pytest_deselected(items=later)
            left_out = set(later)
            items[:] = [item for item in items if item not in left_out]
    for item in items:
        if isinstance(item, IPyNbCell):
            starts = not one_kernel and _starts_a_section(item)
            item.runtest = _twice(item, fresh_kernel_first=starts, again=complete)


def _twice(item, fresh_kernel_first=False, again=True):
    run = item.runtest

    def runtest():
        if fresh_kernel_first:
            _fresh_kernel(item.parent)
        # nbval's coalesce_streams merges the committed stream outputs in place: without a
        # fresh copy, the second comparison would see them merged twice and fail.
        reference = copy.deepcopy(item.cell.outputs)
        run()
        item.cell.outputs = reference
        if not again:
            return
        if "once" in item.cell.metadata.get("tags", []):
            check, item.options["check"] = item.options["check"], False
            try:
                run()  # it must not fail; what it prints is not compared
            finally:
                item.options["check"] = check
            return
        try:
            run()
        except Exception as exc:
            if hasattr(exc, "cell_num"):  # nbval's NbCellError: say it was the second run
                exc.args = (f"when the cell was run a second time: {exc.args[0]}",
                            *exc.args[1:])
            raise
    return runtest


# --- 5. every section in a fresh kernel ----------------------------------------------------

def _sections(notebook) -> list[int]:
    """The section number of each code cell: 0 before the first `## ` heading, then 1, 2..."""
    numbers, section = [], 0
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and any(
                line.startswith("## ") for line in cell.source.split("\n")):
            section += 1
        elif cell.cell_type == "code":
            numbers.append(section)
    return numbers


def _in_going_further(item) -> bool:
    """Whether this code cell comes after the notebook's first `## Going further` heading:
    the quick pass runs the main path, the part a class runs together; --complete the rest."""
    notebook, seen, code = item.parent.nb, False, -1
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and any(
                line.startswith("## Going further") for line in cell.source.split("\n")):
            seen = True
        elif cell.cell_type == "code":
            code += 1
            if code == item.cell_num:
                return seen
    return False


def _starts_a_section(item) -> bool:
    """Whether this code cell is the first of a `## ` section (so it gets a fresh kernel)."""
    numbers = _sections(item.parent.nb)
    n = item.cell_num
    return n > 0 and numbers[n] != numbers[n - 1]


def _fresh_kernel(notebook) -> None:
    """Replace the notebook's kernel with a new one and run only its first code cell there."""
    from nbval.kernel import CURRENT_ENV_KERNEL_NAME
    old = notebook.kernel
    name = (CURRENT_ENV_KERNEL_NAME if notebook.config.option.nbval_current_env
            else notebook.nb.metadata.get("kernelspec", {}).get("name", "python"))
    notebook.kernel = _QuickKernel(name, cwd=str(notebook.fspath.dirname),
                                   startup_timeout=notebook.config.option.nbval_kernel_startup_timeout)
    old.stop()
    first = next(cell for cell in notebook.nb.cells if cell.cell_type == "code")
    kernel = notebook.kernel
    msg_id = kernel.execute_cell_input(first.source, allow_stdin=False)
    reply = kernel.get_message(stream="shell", timeout=120)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kernel.get_message(stream="shell", timeout=120)
    if reply["content"]["status"] != "ok":
        raise RuntimeError("the notebook's first cell failed in a fresh kernel: "
                           f"{reply['content'].get('ename')}: {reply['content'].get('evalue')}")


def _quick_kernels():
    """nbval's RunningKernel, started and stopped without two waits that jupyter_client makes
    and a test run does not need (0.3 s a kernel, and a fresh kernel starts for every `## `
    section): after the kernel answers, wait_for_ready waits 0.2 s more for the iopub channel
    to fall quiet (nbval reads only the messages of the cell it runs, and ignores the rest);
    a killed kernel is polled every 0.1 s until its process is gone (here every 5 ms). The
    kernel is ready, as nbval itself decides, once it has answered a kernel_info request on
    the shell channel and its idle status for that request has come on iopub."""
    from queue import Empty

    import zmq
    from jupyter_client.manager import KernelManager
    from nbval import plugin
    from nbval.kernel import NbvalKernelspecManager, RunningKernel

    class QuickManager(KernelManager):
        async def _async_wait(self, pollinterval: float = 0.1) -> None:
            await super()._async_wait(pollinterval=0.005)

    class KernelDied(RuntimeError):
        pass

    class QuickKernel(RunningKernel):
        def __init__(self, kernel_name, cwd=None, startup_timeout=60):
            # A kernel can die before it is ready when another process took one of the ports
            # jupyter_client chose for it (it picks free ports, then the kernel binds them: a
            # race when kernels start by the hundred on a busy machine). A new start picks new
            # ports; a kernel that dies three times is a real failure.
            for attempt in range(3):
                self.km = QuickManager(kernel_name=kernel_name,
                                       kernel_spec_manager=NbvalKernelspecManager())
                self.km.start_kernel(stderr=subprocess.DEVNULL, cwd=cwd)  # as nbval starts it
                self.kc = self.km.client()
                # The client's sockets connect before the kernel has bound its ports; zmq then
                # tries again every 100 ms by default.
                self.kc.context.setsockopt(zmq.RECONNECT_IVL, 5)
                self.kc.start_channels()
                try:
                    self._until_ready(time.monotonic() + startup_timeout)
                    return
                except KernelDied:
                    self.stop()
                    if attempt == 2:
                        raise
                except BaseException:
                    self.stop()
                    raise

        def _until_ready(self, deadline: float) -> None:
            wait = 0.05  # for the idle status; longer each time it is missed
            while True:
                asked = self.kc.kernel_info()
                answered = False
                while time.monotonic() < deadline:
                    try:
                        if not answered:
                            reply = self.kc.get_shell_msg(timeout=1)
                            answered = reply["parent_header"].get("msg_id") == asked
                        else:  # the reply came: now its idle status on iopub
                            self.await_idle(asked, timeout=wait)
                            return
                    except Empty:
                        if answered:  # iopub was not connected yet when it was sent
                            wait = min(2 * wait, 1.0)
                            break  # ask again
                        if not self.km.is_alive():
                            raise KernelDied("the kernel died before it was ready") from None
                else:
                    raise RuntimeError("the kernel did not answer before its startup timeout")

    plugin.RunningKernel = QuickKernel  # what IPyNbFile.setup starts
    return QuickKernel


try:
    _QuickKernel = _quick_kernels()
except ImportError:  # nbval not installed: no notebooks to run
    _QuickKernel = None


def _use_forked_kernels() -> None:
    """nbval's kernel for --nbval-current-env, started as a fork of this process's server."""
    try:
        from nbval.kernel import CURRENT_ENV_KERNEL_NAME, NbvalKernelspecManager
    except ImportError:
        return
    plain = NbvalKernelspecManager.get_kernel_spec

    def get_kernel_spec(self, kernel_name):
        global _fork_server
        spec = plain(self, kernel_name)
        if kernel_name == CURRENT_ENV_KERNEL_NAME:
            if _fork_server is None:
                _fork_server = fork_kernels.start_server()
            spec.argv = [sys.executable, fork_kernels.__file__, "{connection_file}",
                         *KERNEL_OPTIONS]
        return spec

    NbvalKernelspecManager.get_kernel_spec = get_kernel_spec


if sys.platform == "linux":  # elsewhere (macOS forks badly after some imports): plain kernels
    sys.path.insert(0, str(Path(__file__).parent / "tests"))
    import fork_kernels  # noqa: E402

    sys.path.pop(0)
    _use_forked_kernels()


# --- 3. displays updated in place ------------------------------------------------------------

@pytest.hookimpl(tryfirst=True)
def pytest_collectstart(collector):
    try:
        from nbval.plugin import IPyNbFile
    except ImportError:
        return
    if isinstance(collector, IPyNbFile) and not hasattr(collector, "_held_displays"):
        _hold_updated_displays(collector)


def _hold_updated_displays(notebook):
    """Wrap the notebook's message reader: a display_data that has a display_id is held back
    and updated by later update_display_data messages, then handed to nbval, in its final
    state, just before the cell's closing 'idle' status. (So a cell that shows a watched
    display should not also show other rich output after it: the held one comes last.)"""
    read = notebook.get_kernel_message
    notebook._held_displays = {}  # parent msg id -> {display id: message}
    pending = []

    def get_kernel_message(timeout=None, stream="iopub"):
        while True:
            if pending:
                return pending.pop(0)
            message = read(timeout=timeout, stream=stream)
            if stream != "iopub":
                return message
            parent = message["parent_header"].get("msg_id")
            kind, content = message["msg_type"], message["content"]
            display_id = content.get("transient", {}).get("display_id") if isinstance(
                content, dict) else None
            held = notebook._held_displays.setdefault(parent, {})
            if kind == "display_data" and display_id:
                held[display_id] = message
                continue
            if kind == "update_display_data":
                if display_id in held:
                    held[display_id]["content"]["data"] = content["data"]
                    held[display_id]["content"]["metadata"] = content.get("metadata", {})
                continue
            if kind == "status" and content.get("execution_state") == "idle" and held:
                pending.extend(notebook._held_displays.pop(parent).values())
                pending.append(message)
                continue
            return message

    notebook.get_kernel_message = get_kernel_message

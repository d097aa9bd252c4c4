"""pytest setup shared by tests/ and the notebooks nbval runs.

1. Every temporary folder made during the run (the notebooks' workspaces included: their
   kernels inherit this environment) goes under one folder that is removed at the end, so
   repeated runs leave nothing behind in the system's temporary directory.
2. Every notebook cell runs twice in a row, and both runs must match the committed outputs:
   students re-run cells all the time, and a cell that breaks or changes on a second run
   breaks the lesson. A cell tagged "once" is run again too, but only its first output is
   compared (it must say, in one line, why it cannot be repeated).
3. A display updated in place (IPython's display_id, as course.watch uses) is compared in
   its final state, as Jupyter shows it and as the committed notebook holds it; nbval by
   itself would compare the first state.
4. No test and no notebook sees a provider's key, address or model name from the shell that
   started pytest (course.provider_settings): tests never reach a real provider, and a
   notebook's outputs do not change with the model a developer has set.
"""

import copy
import os
import shutil
import tempfile

import pytest

_run_tmp = None


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
    shutil.rmtree(_run_tmp, ignore_errors=True)


# --- 2. every notebook cell, twice ---------------------------------------------------------

def pytest_collection_modifyitems(items):
    try:
        from nbval.plugin import IPyNbCell
    except ImportError:  # nbval not installed: nothing to do
        return
    for item in items:
        if isinstance(item, IPyNbCell):
            item.runtest = _twice(item)


def _twice(item):
    run = item.runtest

    def runtest():
        # nbval's coalesce_streams merges the committed stream outputs in place: without a
        # fresh copy, the second comparison would see them merged twice and fail.
        reference = copy.deepcopy(item.cell.outputs)
        run()
        item.cell.outputs = reference
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

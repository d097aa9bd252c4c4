"""pytest setup shared by tests/ and the notebooks nbval runs.

Every temporary folder made during the run (the notebooks' workspaces included: their kernels
inherit this environment) goes under one folder that is removed at the end, so repeated runs
leave nothing behind in the system's temporary directory."""

import os
import shutil
import tempfile

_run_tmp = None


def pytest_configure(config):
    global _run_tmp
    _run_tmp = tempfile.mkdtemp(prefix="agent-from-zero-tests-")
    os.environ["TMPDIR"] = _run_tmp
    tempfile.tempdir = None  # let tempfile read TMPDIR again


def pytest_unconfigure(config):
    shutil.rmtree(_run_tmp, ignore_errors=True)

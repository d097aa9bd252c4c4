"""Waiting for child processes in the tests that kill agents (test_shell_tool, test_kit):
a kill's effects arrive asynchronously, and a command's start is announced through a FIFO."""

import contextlib
import os
import threading
import time
from pathlib import Path


def within(seconds: float, condition) -> bool:
    """Poll condition() until it holds or the deadline passes; a SIGKILL's effects are
    asynchronous, so we wait for them, but never longer than the deadline."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def started_group(fifo: Path, child, who: str = "the agent") -> int:
    """Block until the command has written its group (its shell's pid) into the FIFO; if the
    child (who) ends first, open the FIFO for writing so that this wakes, and say why."""
    def wake_if_the_child_ends():
        child.wait()
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    threading.Thread(target=wake_if_the_child_ends, daemon=True).start()
    with open(fifo) as started:
        text = started.read().strip()
    assert text, f"{who} ended before the command ran: {child.stderr.read()}"
    return int(text)

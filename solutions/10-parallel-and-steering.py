"""Reference solutions of lesson 10's coding exercises (the tests run their checks)."""

import contextlib
import json
import os
import threading

import course  # noqa: F401  (loads the lessons' export cells, so parallel_and_steering imports)
import parallel_and_steering


class ByFile(parallel_and_steering.ParallelAgent):
    """Writes to different files run together; a call touching a file that the current group
    already writes, or a write to a file it reads, starts a new group."""

    def groups(self, calls):
        groups, current, reads, writes = [], None, set(), set()
        for call in calls:
            kind, path = self.touches(call)
            fits = current is not None and kind != "alone" and path not in writes and (
                kind == "read" or path not in reads)
            if not fits:
                current, reads, writes = [], set(), set()
                groups.append(current)
            current.append(call)
            if kind == "alone":
                current = None  # nothing joins it
            else:
                (reads if kind == "read" else writes).add(path)
        return groups

    def touches(self, call) -> tuple[str, str | None]:
        """("read" | "write", the file), or ("alone", None) for anything else."""
        function = call.get("function") or {}
        name = function.get("name")
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except json.JSONDecodeError:
            return "alone", None
        if not isinstance(arguments, dict):
            return "alone", None
        path = arguments.get("path", "." if name == "list_files" else None)
        if not isinstance(path, str):
            return "alone", None
        if name in self.parallel:
            return "read", os.path.normpath(path)
        if name == "edit_file":
            return "write", os.path.normpath(path)
        return "alone", None


@contextlib.contextmanager
def deadline(bot, seconds: float):
    """Abort bot's run if it is still going after `seconds`; never after the block ends."""
    timer = threading.Timer(seconds, bot.abort)
    timer.daemon = True  # a timer must never keep the program alive
    timer.start()
    try:
        yield timer
    finally:
        timer.cancel()


class AllAtOnce(parallel_and_steering.SteerableAgent):
    """Every follow-up queued at that moment, as one message; late steering first, alone."""

    def next_message(self):
        with self.queue_lock:
            if self.steering:
                return self.steering.pop(0)
            if self.follow_ups:
                taken = "\n\n".join(self.follow_ups)
                self.follow_ups.clear()
                return taken
        return None


SOLUTIONS = {
    "10.1": (ByFile,),
    "10.2": (deadline,),
    "10.3": (AllAtOnce,),
}

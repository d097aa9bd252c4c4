"""Reference solutions of lesson 10's coding exercises (the tests run their checks)."""

import contextlib
import json
import os
import threading

import course  # noqa: F401  (loads the lessons' export cells, so parallel_and_steering imports)
import parallel_and_steering


class ByFile(parallel_and_steering.ParallelAgent):
    """Writes to different files run together. A call starts a new group if it would touch
    what the current group writes: a write of a file the group reads, writes or lists (a
    listing of a folder reads every path inside it), a read of a file it writes, a listing of
    a folder it writes in."""

    def groups(self, calls):
        groups, current = [], None
        for call in calls:
            kind, path = self.touches(call)
            if current is None or kind == "alone" or self.clashes(kind, path, *current[1:]):
                current = ([], set(), set(), set())  # calls; files read, folders listed, written
                groups.append(current[0])
            current[0].append(call)
            if kind == "alone":
                current = None  # nothing joins it
            else:
                current[{"read": 1, "list": 2, "write": 3}[kind]].add(path)
        return groups

    @staticmethod
    def clashes(kind, path, reads, listed, writes) -> bool:
        def inside(file, folder):
            return folder == "." or file == folder or file.startswith(folder + "/")
        if kind == "write":
            return path in reads or path in writes or any(inside(path, f) for f in listed)
        if kind == "list":
            return any(inside(w, path) for w in writes)
        return path in writes  # a read

    def touches(self, call) -> tuple[str, str | None]:
        """("read" | "list" | "write", the file or folder), or ("alone", None) for anything
        else: run_command, a tool nobody declared, arguments that are not a JSON object."""
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
        path = os.path.normpath(path)
        if name == "list_files" and name in self.parallel:
            return "list", path
        if name in self.parallel:
            return "read", path
        if name == "edit_file":
            return "write", path
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

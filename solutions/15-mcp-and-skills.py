"""Reference solutions of lesson 15's coding exercises (the tests run their checks)."""

import os
import re
from pathlib import Path

import course  # noqa: F401  (loads the lessons' export cells, so sandbox imports)
import sandbox


def namespaced(server, names):
    """{name: the agent's name}: server__name without the server's own prefix, only the
    characters the API accepts, at most 64, and no two alike."""
    taken, given = set(), {}
    for name in names:
        short = name.removeprefix(f"{server}_") or name  # "git_status" -> "status"
        base = re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}__{short}")[:64]
        candidate, n = base, 1
        while candidate in taken:  # "a.b" and "a_b" both became "s__a_b"
            n += 1
            candidate = f"{base[:64 - len(str(n)) - 1]}_{n}"
        taken.add(candidate)
        given[name] = candidate
    return given


def changed_tools(before, after):
    """The names of the tools in after that are new or differ from before, sorted."""
    old = {tool["function"]["name"]: tool["function"] for tool in before}
    return sorted(tool["function"]["name"] for tool in after
                  if old.get(tool["function"]["name"]) != tool["function"])


def read_skill_file(skills, skill, path):
    """A file of the skill's folder, read through lesson 05's jail (symlinks followed, then
    checked; ../ and absolute paths refused)."""
    if skill not in skills:
        raise LookupError(f"no skill named {skill!r}; the skills are: {', '.join(skills)}")
    folder = Path(os.path.realpath(skills[skill].path.parent))
    return sandbox.read_in(folder, path)["content"]


SOLUTIONS = {"15.1": namespaced, "15.2": changed_tools, "15.3": read_skill_file}

"""Reference solutions for lesson 05's coding exercises (each written from its hint alone).

tests/test_exercises.py runs every check of notebooks/checks/05-sandbox.py on these."""

import os
from pathlib import Path

import course  # noqa: F401  (makes `import sandbox` load lesson 05's export cells)
from sandbox import open_beneath, read_in, resolve_in, shown, told_as

# --- exercise 1: grep_files ---------------------------------------------------------------------

MAX_MATCHES = 50


def grep_in(root: Path, pattern: str, path: str = ".") -> dict:
    """grep_files, jailed to root: every line that contains pattern (plain text), in the
    text files below the folder `path`, as {"path", "line", "text"}; at most MAX_MATCHES."""
    real = resolve_in(root, path)
    matches = []

    def search(folder: Path) -> bool:
        """Search folder and below; False once the matches are full."""
        with told_as(shown(root, folder)):
            fd = open_beneath(root, folder, os.O_RDONLY | os.O_DIRECTORY)
            try:
                with os.scandir(fd) as entries:  # names, never followed
                    listing = sorted((e.name, e.is_dir(follow_symlinks=False),
                                      e.is_file(follow_symlinks=False)) for e in entries)
            finally:
                os.close(fd)
        for name, is_dir, is_file in listing:  # a link is neither: skipped
            if is_dir and not search(folder / name):
                return False
            if not is_file:
                continue
            try:  # read_in refuses what the jail refuses: pipes, hard links, not text
                text = read_in(root, shown(root, folder / name))["content"]
            except (OSError, ValueError):
                continue
            for number, line in enumerate(text.split("\n"), start=1):
                if pattern in line:
                    if len(matches) == MAX_MATCHES:
                        return False
                    matches.append({"path": shown(root, folder / name), "line": number,
                                    "text": line})
        return True

    complete = search(real)
    return {"path": shown(root, real), "matches": matches, "truncated": not complete}


# --- exercise 2: delete_file --------------------------------------------------------------------


def delete_in(root: Path, path: str) -> dict:
    """delete_file, jailed to root: delete one file or link, never what a link points to."""
    parent, name = os.path.split(path) if isinstance(path, str) else ("", "")
    if name in ("", ".", ".."):
        raise ValueError(f"give the path of a file to delete, not {path!r}")
    folder = resolve_in(root, parent or ".")  # the folder is checked, the name is not followed
    where = shown(root, folder / name)
    with told_as(where):
        fd = open_beneath(root, folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.unlink(name, dir_fd=fd)  # a link is removed itself; a folder is refused
        finally:
            os.close(fd)
    return {"path": where, "action": "deleted"}


# --- exercise 3: hard links that stay inside ----------------------------------------------------


def all_links_inside(root: Path, fd: int) -> bool:
    """True if every name (hard link) of the open file fd is somewhere in the workspace."""
    info = os.fstat(fd)
    if info.st_nlink == 1:
        return True
    names = 0
    for folder, _, files in os.walk(root):  # os.walk does not follow links to folders
        for name in files:
            found = os.lstat(os.path.join(folder, name))  # a symlink is not a name of the file
            if (found.st_dev, found.st_ino) == (info.st_dev, info.st_ino):
                names += 1
    return names == info.st_nlink


# --- exercise 6: an approval gate for run_command -----------------------------------------------


def gated(run_command, ask=input):
    """run_command, but a person says yes first; anything but y/yes refuses. The command is
    shown as repr shows it, so a carriage return or an escape sequence cannot hide it."""
    def run_command_gated(command: str) -> dict:
        try:
            answer = ask(f"run this command? {command!r}\n[y/N] ")  # repr: \r, \x1b... shown
        except EOFError:  # no answer: no. Ctrl-C is not an answer: it goes on and stops the run
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            raise PermissionError(f"the person did not approve running: {command}")
        return run_command(command)
    run_command_gated.__name__ = "run_command"  # the schema's name
    return run_command_gated


# --- exercise 7: another way out of the process group -------------------------------------------


def way_out() -> str:
    """timeout puts itself in a process group of its own (to kill its child's group when its
    time is up). It does so only once it runs, so the survivor touches out.txt first and the
    command waits for that file: by then the survivor is out of the group the kill reaches."""
    survivor = "touch out.txt; while [ ! -e go ]; do sleep 0.05; done; echo hi > escaped.txt"
    return (f"timeout 30 sh -c '{survivor}' >/dev/null 2>&1 & "
            "while [ ! -e out.txt ]; do sleep 0.01; done")


SOLUTIONS = {"05.1": grep_in, "05.2": delete_in, "05.3": all_links_inside, "05.6": gated,
             "05.7": way_out}

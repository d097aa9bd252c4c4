"""The workspace jail of lesson 05, attacked: every escape is refused, ordinary work still works.

The code under test is the notebook's own (cells tagged "export"), loaded with load_notebook;
the lab it is attacked in is the course's prop, props.lab.build_lab.
Each attack is its own case, and a case fails if anything outside the workspace was read,
created or changed: the "outside" folder is snapshot before and after, and the secret it holds
must not appear in any answer.
"""

import errno
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from course import load_notebook
from props.lab import SECRET, build_lab, gullible_script

import agent

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the sandbox uses POSIX calls")

nb = load_notebook("05-sandbox.ipynb")
# The exact refusal each attack must get, as the model reads it ({name}: the tool's name,
# {path}: the path as given): not just any error, the jail's own reason.
ESCAPE = "{name}: path escapes the workspace: {path}"
ABSOLUTE = ESCAPE + " (an absolute path; give a path relative to the workspace)"
HOME = ESCAPE + " (~ is a home folder)"
CONTROL = "{name}: invalid path {path!r}: it contains a control character (NUL, ...)"
NOT_TEXT = "{name}: invalid path {path!r}: it is not valid text"
NO_PATH = "{name}: invalid path: give a path relative to the workspace, like notes/a.md"
LOOP = "{name}: {path}: a symbolic link on the way loops or changed"
TOO_LONG = "{name}: {path}: " + os.strerror(errno.ENAMETOOLONG)  # the OS refuses it, told_as
HARD_LINK = "{name}: {path} has 2 hard links: one may be outside the workspace"


@pytest.fixture
def lab(tmp_path):
    """build_lab's workspace and outside folder, plus more traps and ordinary files."""
    root = Path(os.path.realpath(tmp_path))
    workspace, outside = build_lab(root)
    extra_links = {
        "outdir-abs": outside,  # a folder outside, absolute target
        "uplink": Path(".."),  # the root's parent
        "notes/up2": Path("../.."),  # the same, from a nested folder
        "selflink": Path("."),  # the root itself: harmless, but ".." after it is not
        "insidelink": Path("notes"),  # a folder inside: harmless
        "absinside": workspace / "notes",  # a folder inside, absolute target: harmless
        "loop1": Path("loop2"),
        "loop2": Path("loop1"),
        "chain-dangle": Path("drop.txt"),  # a chain that ends in a dangling link outside
        "procroot": Path("/proc/self/root"),  # "/" in disguise (on Linux)
    }
    for name, target in extra_links.items():
        (workspace / name).symlink_to(target)
    (workspace / "notes" / "deep").mkdir()
    (workspace / "notes" / "deep" / "deeper.md").write_text("deep\n")
    for name in ["..dots.txt", "with space.md", "笔记.md", "~notes.md"]:
        (workspace / name).write_text(f"{name}\n")
    (workspace / "binary.bin").write_bytes(b"\xff\xfe\x00")
    os.mkfifo(workspace / "fifo")
    # none of the commands run here waits: 30 s is a bound a loaded machine never reaches
    tools, registry = nb.sandbox_tools(workspace, timeout=30)
    return SimpleNamespace(root=root, workspace=workspace, outside=outside, tools=tools,
                           registry=registry)


def world(lab) -> dict:
    """What an escape could change: the outside folder, the lab's top level, the home folder."""
    home = Path.home()
    planted = sorted(p.name for p in home.glob("*planted*")) if home.is_dir() else []
    return {"outside": nb.snapshot(lab.outside), "top": sorted(os.listdir(lab.root)),
            "home": planted}


def attempt(registry, name, **arguments) -> tuple[bool, str]:
    """(refused, what the model would read). Each test names the exact refusal it expects,
    so here any exception counts as refused and the message says which it was."""
    verdict, answer = nb.attempt(registry, name, arguments, Exception)
    return verdict != "allowed", answer


def fill(value, lab):
    if isinstance(value, str):
        return value.format(outside=lab.outside, workspace=lab.workspace)
    return value


def create(path):
    return {"path": path, "old_str": "", "new_str": "pwned"}


def replace(path):
    return {"path": path, "old_str": "0000", "new_str": "1234"}


def attack(name, arguments, expected, case_id):
    if not isinstance(arguments, dict):
        arguments = {"path": arguments}
    return pytest.param(name, arguments, expected, id=case_id)


ATTACKS = [
    # .. segments and the root's own parent
    attack("read_file", "../outside/secret.txt", ESCAPE, "dotdot"),
    attack("read_file", "../../../../../../../../etc/passwd", ESCAPE, "dotdot-to-etc"),
    attack("read_file", "notes/../../outside/secret.txt", ESCAPE, "dotdot-in-the-middle"),
    attack("read_file", "./../outside/secret.txt", ESCAPE, "dot-then-dotdot"),
    attack("read_file", "notes/..//../outside/./secret.txt", ESCAPE, "dotdot-messy"),
    attack("read_file", "missing/../../outside/secret.txt", ESCAPE, "dotdot-after-missing"),
    attack("list_files", "..", ESCAPE, "root-parent"),
    attack("list_files", "../", ESCAPE, "root-parent-slash"),
    attack("list_files", "notes/../..", ESCAPE, "root-parent-via-notes"),
    attack("list_files", "../outside", ESCAPE, "list-outside"),
    attack("list_files", "../workspace/../outside", ESCAPE, "out-and-back-and-out"),
    # absolute paths
    attack("read_file", "/etc/passwd", ABSOLUTE, "absolute"),
    attack("read_file", "//etc/passwd", ABSOLUTE, "absolute-double-slash"),
    attack("read_file", "{outside}/secret.txt", ABSOLUTE, "absolute-outside"),
    attack("read_file", "{workspace}/../outside/secret.txt", ABSOLUTE, "absolute-via-workspace"),
    attack("list_files", "/", ABSOLUTE, "absolute-root"),
    # ~
    attack("read_file", "~/.bashrc", HOME, "home"),
    attack("list_files", "~", HOME, "home-bare"),
    attack("read_file", "~root/.profile", HOME, "home-of-a-user"),
    # symlinks inside that point outside
    attack("read_file", "leak.txt", ESCAPE, "link-to-file-absolute"),
    attack("read_file", "chain2", ESCAPE, "link-to-file-relative"),
    attack("list_files", "outdir", ESCAPE, "link-to-folder"),
    attack("list_files", "outdir-abs", ESCAPE, "link-to-folder-absolute"),
    attack("read_file", "chain1", ESCAPE, "link-chain"),
    attack("read_file", "outdir/secret.txt", ESCAPE, "through-linked-folder"),
    attack("read_file", "outdir/private/id_key", ESCAPE, "through-linked-folder-deep"),
    attack("read_file", "outdir-abs/secret.txt", ESCAPE, "through-linked-folder-absolute"),
    attack("read_file", "uplink/outside/secret.txt", ESCAPE, "link-to-root-parent"),
    attack("read_file", "notes/up2/outside/secret.txt", ESCAPE, "nested-link-to-root-parent"),
    attack("read_file", "selflink/../outside/secret.txt", ESCAPE, "dotdot-after-link-to-root"),
    attack("read_file", "insidelink/../../outside/secret.txt", ESCAPE,
           "dotdot-after-inside-link"),
    attack("read_file", "procroot/etc/passwd", ESCAPE, "proc-self-root"),
    attack("read_file", "loop1", LOOP, "symlink-loop"),
    attack("read_file", "loop1/../../outside/secret.txt", ESCAPE, "symlink-loop-then-dotdot"),
    # writes: nothing may be created, changed or made outside
    attack("edit_file", create("../outside/planted.txt"), ESCAPE, "write-dotdot"),
    attack("edit_file", create("{outside}/planted.txt"), ABSOLUTE, "write-absolute"),
    attack("edit_file", create("~/planted.txt"), HOME, "write-home"),
    attack("edit_file", create("drop.txt"), ESCAPE, "write-dangling-link"),
    attack("edit_file", create("chain-dangle"), ESCAPE, "write-dangling-chain"),
    attack("edit_file", create("outdir/planted.txt"), ESCAPE, "write-through-linked-folder"),
    attack("edit_file", create("outdir/newdir/planted.txt"), ESCAPE,
           "mkdir-through-linked-folder"),
    attack("edit_file", create("newdir/../../outside/planted.txt"), ESCAPE,
           "write-dotdot-after-new-folder"),
    attack("edit_file", create("uplink/planted.txt"), ESCAPE, "write-into-root-parent"),
    attack("edit_file", create("leak.txt"), ESCAPE, "overwrite-through-link"),
    attack("edit_file", replace("leak.txt"), ESCAPE, "replace-through-link"),
    attack("edit_file", replace("chain1"), ESCAPE, "replace-through-chain"),
    attack("edit_file", replace("../outside/secret.txt"), ESCAPE, "replace-dotdot"),
    attack("edit_file", create(".."), ESCAPE, "write-root-parent"),
    # a hard link is not a pointer but a second name of the same file: no path check sees it
    attack("read_file", "hard.txt", HARD_LINK, "hard-link-read"),
    attack("edit_file", create("hard.txt"), HARD_LINK, "hard-link-overwrite"),
    attack("edit_file", replace("hard.txt"), HARD_LINK, "hard-link-replace"),
    # NUL bytes and other invalid names
    attack("read_file", "notes/todo.md\x00.png", CONTROL, "nul"),
    attack("read_file", "\x00", CONTROL, "nul-only"),
    attack("edit_file", create("a\x00/../../outside/planted.txt"), CONTROL, "write-nul"),
    attack("read_file", "notes/\n.md", CONTROL, "newline"),
    attack("read_file", "notes/\ud800", NOT_TEXT, "lone-surrogate"),
    attack("read_file", "", NO_PATH, "empty"),
    attack("read_file", 123, NO_PATH, "not-a-string"),
    attack("read_file", "x" * 300, TOO_LONG, "name-too-long"),
    attack("edit_file", create("x" * 300 + "/a.txt"), TOO_LONG, "write-name-too-long"),
]


def test_a_row_of_the_attack_table_is_blocked_only_on_the_expected_refusal(lab):
    """The notebook's attempt says "blocked" only for the refusal the row expects (the jail's
    EscapeError, unless told otherwise); any other exception shows as "error: <type>", so a
    typo in the jail cannot make every row of the table say blocked."""
    assert nb.attempt(lab.registry, "read_file", {"path": "notes/todo.md"})[0] == "allowed"
    for path in ("../outside/secret.txt", "leak.txt", "hard.txt", "/etc/passwd"):
        assert nb.attempt(lab.registry, "read_file", {"path": path})[0] == "blocked", path
    nul = {"path": "notes/todo.md\x00.png"}
    assert nb.attempt(lab.registry, "read_file", nul)[0] == "error: ValueError"
    assert nb.attempt(lab.registry, "read_file", nul, ValueError)[0] == "blocked"
    assert nb.attempt(lab.registry, "read_file", {"path": "notes/missing.md"}) == (
        "error: FileNotFoundError", "read_file: no such file or directory: notes/missing.md")
    assert nb.attempt(lab.registry, "delete_file", {})[0] == "error: LookupError"

    broken = load_notebook("05-sandbox.ipynb")  # a copy of our own, with a typo in the jail

    def resolve_in(root, path):
        return Path(os.path.realpth(root / path))  # sic

    broken.resolve_in = resolve_in
    _, registry = broken.sandbox_tools(lab.workspace)
    for path in ("../outside/secret.txt", "leak.txt", "hard.txt", "notes/todo.md"):
        verdict, answer = broken.attempt(registry, "read_file", {"path": path})
        assert verdict == "error: AttributeError" and "realpth" in answer, (path, verdict)


@pytest.mark.parametrize(("name", "arguments", "expected"), ATTACKS)
def test_attack_is_blocked(lab, name, arguments, expected):
    arguments = {key: fill(value, lab) for key, value in arguments.items()}
    before = world(lab)
    blocked, answer = attempt(lab.registry, name, **arguments)
    assert blocked, answer
    assert answer == expected.format(name=name, path=arguments["path"])  # the jail's reason
    assert SECRET not in answer  # nothing outside was read...
    assert world(lab) == before  # ...created or changed
    assert (lab.outside / "secret.txt").read_text() == SECRET + "\n"
    given = arguments["path"] if isinstance(arguments["path"], str) else ""
    assert str(lab.root) not in answer.replace(given, "")  # no machine path of ours


def ok(name, arguments, path, case_id):
    return pytest.param(name, arguments, path, id=case_id)


ORDINARY = [
    ok("read_file", {"path": "notes/todo.md"}, "notes/todo.md", "nested"),
    ok("read_file", {"path": "./notes/todo.md"}, "notes/todo.md", "dot-slash"),
    ok("read_file", {"path": "notes/../notes/todo.md"}, "notes/todo.md", "dotdot-inside"),
    ok("read_file", {"path": "notes//todo.md"}, "notes/todo.md", "double-slash"),
    ok("read_file", {"path": "notes/deep/deeper.md"}, "notes/deep/deeper.md", "deeper"),
    ok("read_file", {"path": "todo-link.md"}, "notes/todo.md", "link-inside"),
    ok("read_file", {"path": "insidelink/todo.md"}, "notes/todo.md", "linked-folder-inside"),
    ok("read_file", {"path": "absinside/todo.md"}, "notes/todo.md", "absolute-link-inside"),
    ok("read_file", {"path": "selflink/notes/todo.md"}, "notes/todo.md", "link-to-root"),
    ok("read_file", {"path": "..dots.txt"}, "..dots.txt", "name-starting-with-dots"),
    ok("read_file", {"path": "with space.md"}, "with space.md", "space"),
    ok("read_file", {"path": "笔记.md"}, "笔记.md", "unicode"),
    ok("read_file", {"path": "./~notes.md"}, "~notes.md", "tilde-name-spelled-safely"),
    ok("list_files", {}, ".", "list-default"),
    ok("list_files", {"path": "."}, ".", "list-root"),
    ok("list_files", {"path": "notes/"}, "notes", "list-nested"),
    ok("list_files", {"path": "selflink"}, ".", "list-link-to-root"),
    ok("edit_file", {"path": "a/b/c/new.md", "old_str": "", "new_str": "x"}, "a/b/c/new.md",
       "create-with-folders"),
    ok("edit_file", {"path": "insidelink/new.md", "old_str": "", "new_str": "x"},
       "notes/new.md", "create-through-inside-link"),
    ok("edit_file", {"path": "notes/todo.md", "old_str": "write", "new_str": "wrote"},
       "notes/todo.md", "replace"),
    ok("edit_file", {"path": "notes/todo.md", "old_str": "", "new_str": "new\n"},
       "notes/todo.md", "overwrite"),
]


@pytest.mark.parametrize(("name", "arguments", "path"), ORDINARY)
def test_ordinary_work_is_allowed(lab, name, arguments, path):
    before = world(lab)
    blocked, answer = attempt(lab.registry, name, **arguments)
    assert not blocked, answer
    assert f'"path": "{path}"' in answer  # the path as the workspace sees it
    assert str(lab.root) not in answer
    assert world(lab) == before


def test_writes_land_where_they_should(lab):
    call = lab.registry["edit_file"]
    assert call("a/b/c/new.md", "", "x") == {"path": "a/b/c/new.md", "action": "created"}
    assert (lab.workspace / "a" / "b" / "c" / "new.md").read_text() == "x"
    assert call("insidelink/n.md", "", "y")["path"] == "notes/n.md"
    assert (lab.workspace / "notes" / "n.md").read_text() == "y"
    assert call("notes/todo.md", "write", "wrote")["action"] == "edited"
    assert (lab.workspace / "notes" / "todo.md").read_text().startswith("- wrote the lesson")


def test_list_shows_links_as_links_without_following_them(lab):
    files = {f["name"]: f["type"] for f in lab.registry["list_files"]()["files"]}
    assert files["notes"] == "dir" and files["笔记.md"] == "file"
    assert files["leak.txt"] == files["outdir"] == files["drop.txt"] == "link"
    assert files["loop1"] == "link"
    assert list(files) == sorted(files)


def test_errors_name_workspace_paths_only(lab):
    cases = [
        ("read_file", {"path": "notes/missing.md"}, "no such file or directory: notes/missing.md"),
        ("read_file", {"path": "notes"}, "notes is a directory, not a file (use list_files)"),
        ("list_files", {"path": "notes/todo.md"}, "notes/todo.md is a file, not a directory"),
        ("list_files", {"path": "nowhere"}, "no such file or directory: nowhere"),
        ("read_file", {"path": "binary.bin"}, "binary.bin is not a UTF-8 text file"),
        ("read_file", {"path": "notes/todo.md/x"}, "notes/todo.md/x: Not a directory"),
        ("edit_file", {"path": "notes", "old_str": "", "new_str": "x"}, "notes is a directory"),
        ("edit_file", {"path": "notes/todo.md", "old_str": "nope", "new_str": "x"},
         "found 0 (read the file again)"),
        ("edit_file", {"path": "notes/todo.md", "old_str": "the", "new_str": "x"},
         "found 2 (add surrounding lines"),
        ("edit_file", {"path": "notes/missing.md", "old_str": "a", "new_str": "b"},
         "no such file or directory: notes/missing.md"),
    ]
    for name, arguments, expected in cases:
        blocked, answer = attempt(lab.registry, name, **arguments)
        assert blocked and expected in answer, answer
        assert str(lab.root) not in answer


@pytest.mark.parametrize(("text", "old_str", "found"), [("aaa", "aa", 2), ("aaaa", "aa", 3),
                                                       ("abab", "bab", 1)])
def test_overlapping_matches_count_as_in_agent_edit_file(lab, monkeypatch, text, old_str, found):
    """"aa" is twice in "aaa": replacing the first would be a guess. The jailed edit_file
    counts overlaps with agent.occurrences (str.count would say once) and answers exactly
    what agent.edit_file answers on the same file."""
    plain = lab.root / "plain"  # agent.edit_file's copy, beside the workspace
    plain.mkdir()
    for folder in (lab.workspace, plain):
        (folder / "a.txt").write_text(text)
    blocked, answer = attempt(lab.registry, "edit_file", path="a.txt", old_str=old_str,
                              new_str="X")
    monkeypatch.chdir(plain)
    blocked_plainly, answer_plainly = attempt(agent.TOOL_REGISTRY, "edit_file", path="a.txt",
                                              old_str=old_str, new_str="X")
    assert (blocked, answer) == (blocked_plainly, answer_plainly)
    assert blocked == (found != 1)
    if blocked:
        assert f"found {found} (add surrounding lines" in answer
    after = (lab.workspace / "a.txt").read_text()
    assert after == (text if blocked else text.replace(old_str, "X"))


def test_special_files_do_not_hang_the_agent(lab):
    """A FIFO (which a shell command can make) would block a plain open() forever."""
    refused = "fifo is not a regular file"
    blocked, answer = attempt(lab.registry, "read_file", path="fifo")
    assert blocked and refused in answer
    blocked, answer = attempt(lab.registry, "edit_file", path="fifo", old_str="", new_str="x")
    assert blocked and refused in answer
    blocked, answer = attempt(lab.registry, "list_files", path="fifo")
    assert blocked and refused in answer


# --- Special files and hard links: what the jail's tools refuse to open ---------------------


def read_write_agent(lab, *calls):
    """An agent with only read and write rights, running the given tool calls in order."""
    tools, registry = nb.sandbox_tools(lab.workspace, ("read", "write"))
    bot = agent.Agent(agent.ScriptedClient([*calls, agent.reply("done")]), "scripted",
                      tools=tools, registry=registry, on_event=None)
    bot.chat("go")
    return [m["content"] for m in bot.messages if m["role"] == "tool"]


def test_edit_file_does_not_write_into_a_named_pipe_another_process_reads(lab):
    """With a reader on the other end, opening a FIFO for writing succeeds at once (O_NONBLOCK
    does not help): the type must be checked before anything is written. Nothing reaches the
    reader, through a bare call or through an agent that may only read and write."""
    reader = os.open(lab.workspace / "fifo", os.O_RDONLY | os.O_NONBLOCK)  # the other process
    try:
        blocked, answer = attempt(lab.registry, "edit_file", path="fifo", old_str="",
                                  new_str="x")
        assert blocked and "fifo is not a regular file" in answer, answer
        results = read_write_agent(lab, agent.tool_call("edit_file", path="fifo", old_str="",
                                                        new_str="y"))
        assert "fifo is not a regular file" in results[0]
        assert os.read(reader, 100) == b""  # end of file: no writer ever opened it
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(lab.workspace / "fifo").st_mode)


def test_edit_file_does_not_overwrite_a_character_device(lab):
    """A device node in the workspace (root unpacking an archive can make one) is not a file:
    it is refused before it is opened, and stays what it was."""
    node = lab.workspace / "devnode"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers
    except PermissionError:
        pytest.skip("making a device node needs root here")
    for arguments in ({"old_str": "", "new_str": "x"}, {"old_str": "a", "new_str": "b"}):
        blocked, answer = attempt(lab.registry, "edit_file", path="devnode", **arguments)
        assert blocked and "devnode is not a regular file" in answer, answer
    blocked, answer = attempt(lab.registry, "read_file", path="devnode")
    assert blocked and "devnode is not a regular file" in answer
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_a_socket_in_the_workspace_is_refused_too(lab, monkeypatch):
    """Any user can make a socket file (bind): it is neither a file nor a folder."""
    monkeypatch.chdir(lab.workspace)  # a socket's path must be short: bind it by its name
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind("sock")
        for name, arguments in (("read_file", {}), ("edit_file", {"old_str": "", "new_str": "x"})):
            blocked, answer = attempt(lab.registry, name, path="sock", **arguments)
            assert blocked and "sock is not a regular file" in answer, answer
    finally:
        server.close()


def test_a_hard_link_is_refused_through_an_agent_that_may_only_read_and_write(lab):
    """build_lab's hard.txt is a second name of outside/secret.txt (a shell command could make
    one). A regular file the tools open must have one link; the check comes before the file
    is emptied (no O_TRUNC at the open), so the refused overwrite loses nothing."""
    results = read_write_agent(
        lab, agent.tool_call("read_file", path="hard.txt"),
        agent.tool_call("edit_file", path="hard.txt", old_str="", new_str="pwned"))
    assert all("hard.txt has 2 hard links" in result for result in results), results
    assert (lab.outside / "secret.txt").read_text() == SECRET + "\n"


def test_the_main_path_jail_does_what_section_2_says_and_no_more(tmp_path):
    """Section 2's short refuse_unless_plain and write_in (tests/main_path.py): a folder or a
    regular file passes, a FIFO is refused, write_in creates and overwrites. They do not refuse
    a hard link, and the main path does not say they do: Going further's versions (the ones the
    module keeps) refuse it, before the file is emptied."""
    from main_path import main_path_only  # tests/main_path.py

    workspace, outside = build_lab(tmp_path)
    root = Path(os.path.realpath(workspace))
    with main_path_only(nb, "05-sandbox"):
        os.mkfifo(root / "pipe")
        with pytest.raises(OSError, match="pipe is not a regular file"):
            nb.read_in(root, "pipe")
        assert nb.edit_in(root, "new/a.md", "", "one\n")["action"] == "created"
        assert nb.edit_in(root, "new/a.md", "one", "two")["action"] == "edited"
        assert nb.edit_in(root, "new/a.md", "", "three\n")["action"] == "overwritten"
        assert (root / "new" / "a.md").read_text() == "three\n"
        assert nb.read_in(root, "hard.txt")["content"] == SECRET + "\n"  # not refused here
        with pytest.raises(nb.EscapeError, match="leak.txt"):
            nb.read_in(root, "leak.txt")
    with pytest.raises(nb.EscapeError, match="hard.txt has 2 hard links"):  # the whole jail
        nb.edit_in(root, "hard.txt", "", "pwned")
    assert (outside / "secret.txt").read_text() == SECRET + "\n"

def test_a_file_the_tools_create_or_overwrite_is_written_whole(lab):
    """The other side of the checks: new files are created (with O_EXCL: ours), existing ones
    emptied and rewritten, longer or shorter, and each says which it was."""
    call = lab.registry["edit_file"]
    assert call("fresh/new.md", "", "a long first version\n")["action"] == "created"
    assert call("fresh/new.md", "", "short\n")["action"] == "overwritten"
    assert (lab.workspace / "fresh" / "new.md").read_text() == "short\n"
    assert call("fresh/new.md", "short", "longer than before")["action"] == "edited"
    assert (lab.workspace / "fresh" / "new.md").read_text() == "longer than before\n"
    assert os.stat(lab.workspace / "fresh" / "new.md").st_nlink == 1


def test_a_special_file_swapped_in_after_the_check_is_never_written(lab, monkeypatch):
    """The type is checked on the path before the open (opening a FIFO or a device can do
    things) and again on the descriptor after it: what is checked is what is used."""
    target = lab.workspace / "notes" / "todo.md"

    def swap():
        target.unlink()
        os.mkfifo(target)

    reader = None
    real_open = os.open

    def open_then_swap(path, flags, *args, **kwargs):
        nonlocal reader
        if path == "todo.md" and reader is None:  # after open_beneath's lstat, before its open
            swap()
            reader = real_open(target, os.O_RDONLY | os.O_NONBLOCK)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(nb.os, "open", open_then_swap)
    blocked, answer = attempt(lab.registry, "edit_file", path="notes/todo.md", old_str="",
                              new_str="pwned")
    monkeypatch.undo()
    try:
        assert blocked and "notes/todo.md is not a regular file" in answer, answer
        assert os.read(reader, 100) == b""
    finally:
        os.close(reader)


# --- Errors while a path is resolved: never the machine's path ------------------------------


@pytest.mark.parametrize("change", ["removed", "replaced by a file"])
def test_a_link_that_changes_while_it_is_resolved_leaks_no_path(lab, monkeypatch, change):
    """realpath reads each link with readlink. If the link is removed or replaced between
    realpath's lstat and its readlink (a racing process did it 2 times in 1,589 calls), the
    OSError names the absolute path. Here the change is forced exactly there."""
    link = lab.workspace / "leak.txt"
    real_readlink = os.readlink

    def readlink_after_a_change(path, *args, **kwargs):
        if os.fspath(path) == str(link) and link.is_symlink():
            link.unlink()
            if change == "replaced by a file":
                link.write_text("now a plain file\n")
        return real_readlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "readlink", readlink_after_a_change)
    for name in ("read_file", "list_files", "edit_file"):
        arguments = {"old_str": "", "new_str": "x"} if name == "edit_file" else {}
        link.unlink(missing_ok=True)
        link.symlink_to(lab.outside / "secret.txt")
        blocked, answer = attempt(lab.registry, name, path="leak.txt", **arguments)
        assert blocked
        assert answer == (f"{name}: leak.txt: a symbolic link on the way changed while it was "
                          "being resolved; try again")
        assert str(lab.root) not in answer and "Errno" not in answer


def test_tools_do_not_depend_on_the_current_directory(lab, monkeypatch):
    monkeypatch.chdir(lab.outside)
    assert lab.registry["read_file"]("notes/todo.md")["path"] == "notes/todo.md"
    blocked, _ = attempt(lab.registry, "read_file", path="secret.txt")
    assert blocked  # secret.txt is in the current directory, but not in the workspace


# --- Time of check to time of use: the tree changes between resolve_in and the open ------


def racing(monkeypatch, swap):
    """Make resolve_in run `swap` once, right after its check: an attacker's perfect timing."""
    check, done = nb.resolve_in, []

    def resolve_then_swap(root, path):
        real = check(root, path)
        if not done:
            done.append(swap())
        return real

    monkeypatch.setattr(nb, "resolve_in", resolve_then_swap)


def test_file_swapped_for_a_link_after_the_check(lab, monkeypatch):
    target = lab.workspace / "notes" / "todo.md"

    def swap():
        target.unlink()
        target.symlink_to(lab.outside / "secret.txt")

    racing(monkeypatch, swap)
    before = world(lab)
    blocked, answer = attempt(lab.registry, "edit_file", path="notes/todo.md", old_str="",
                              new_str="pwned")
    assert blocked and "loops or changed" in answer
    assert world(lab) == before


def test_file_swapped_for_a_link_before_a_read(lab, monkeypatch):
    target = lab.workspace / "notes" / "todo.md"

    def swap():
        target.unlink()
        target.symlink_to(lab.outside / "secret.txt")

    racing(monkeypatch, swap)
    blocked, answer = attempt(lab.registry, "read_file", path="notes/todo.md")
    assert blocked and SECRET not in answer


def test_folder_swapped_for_a_link_after_the_check(lab, monkeypatch):
    folder = lab.workspace / "notes" / "deep"

    def swap():
        (folder / "deeper.md").unlink()
        folder.rmdir()
        folder.symlink_to(lab.outside)

    racing(monkeypatch, swap)
    before = world(lab)
    blocked, answer = attempt(lab.registry, "edit_file", path="notes/deep/planted.txt",
                              old_str="", new_str="pwned")
    assert blocked, answer
    assert world(lab) == before


def test_new_folder_swapped_for_a_link_after_the_check(lab, monkeypatch):
    """The folder does not exist at the check; the attacker makes it a link before mkdir."""
    racing(monkeypatch, lambda: (lab.workspace / "fresh").symlink_to(lab.outside))
    before = world(lab)
    blocked, _ = attempt(lab.registry, "edit_file", path="fresh/planted.txt", old_str="",
                         new_str="pwned")
    assert blocked
    assert world(lab) == before


def deep_folder(workspace: Path, depth: int = 20) -> str:
    """Folders nested past PATH_MAX (20 x 250 bytes), made one at a time relative to the one
    before (no path that long can be used whole), with two links at the bottom that lead out.
    Returns the deepest folder's path inside the workspace."""
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d" * 250, dir_fd=fd)
            inner = os.open("d" * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        up = "../" * (depth + 1)  # from the deepest folder to the lab
        os.symlink(up + "outside/secret.txt", "out.txt", dir_fd=fd)
        os.symlink(up + "outside", "outdir", dir_fd=fd)
    finally:
        os.close(fd)
    return "/".join(["d" * 250] * depth)


@pytest.mark.parametrize(("name", "arguments"), [
    ("read_file", {"path": "{deep}/out.txt"}),
    ("read_file", {"path": "{deep}/outdir/secret.txt"}),
    ("list_files", {"path": "{deep}/outdir"}),
    ("edit_file", create("{deep}/out.txt")),
    ("edit_file", create("{deep}/outdir/planted.txt")),
], ids=["read-link", "read-through-folder-link", "list-folder-link", "overwrite-link",
        "write-through-folder-link"])
def test_a_link_deeper_than_path_max_is_refused_though_realpath_cannot_see_it(
        lab, name, arguments):
    """Past PATH_MAX, realpath cannot lstat a component and quietly takes it for no link, so
    resolve_in passes the path; open_beneath, one folder at a time with O_NOFOLLOW, refuses."""
    deep = deep_folder(lab.workspace)
    arguments = {key: value.replace("{deep}", deep) for key, value in arguments.items()}
    assert len(str(lab.workspace)) + len(arguments["path"]) > os.pathconf("/", "PC_PATH_MAX")
    # The check lets it through (as the lesson says; if a later Python's realpath refuses it
    # here, the lesson's paragraph on PATH_MAX is out of date).
    nb.resolve_in(lab.workspace, arguments["path"])
    before = world(lab)
    blocked, answer = attempt(lab.registry, name, **arguments)
    assert blocked, answer
    assert SECRET not in answer and world(lab) == before
    assert str(lab.root) not in answer.replace(arguments["path"], "")


# --- Risk levels ------------------------------------------------------------------------


@pytest.mark.parametrize("risks", [("read",), ("read", "write"), ("read", "write", "execute"),
                                   ("execute",), ()])
def test_sandbox_tools_hands_out_only_the_levels_asked_for(tmp_path, risks):
    tools, registry = nb.sandbox_tools(tmp_path, risks)
    agent.check_tools(tools, registry)
    assert {nb.RISK[name] for name in registry} == set(risks)
    assert [t["function"]["name"] for t in tools] == list(registry)
    for tool in tools:  # the file tools' schemas are agent.py's own
        if tool["function"]["name"] != "run_command":
            assert tool in agent.TOOLS


def test_unknown_risk_level_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown risk levels"):
        nb.sandbox_tools(tmp_path, ("read", "admin"))


def test_a_tool_added_to_the_tables_is_handed_out_at_its_level(tmp_path):
    """A builder's new tool: a function with the root first, and one row in each of FUNCTIONS,
    RISK and SCHEMAS. jailed() binds the root and keeps the tool's name, so agent.schema and
    agent.check_tools read it like a plain function."""
    sandbox = load_notebook("05-sandbox.ipynb")  # a copy of our own: its tables change here

    def count_in(root, path="."):
        return {"path": path, "count": len(sandbox.list_in(root, path)["files"])}

    sandbox.FUNCTIONS["count_files"] = count_in
    sandbox.RISK["count_files"] = "read"
    sandbox.SCHEMAS["count_files"] = agent.schema(
        sandbox.jailed(count_in, tmp_path, "count_files"), "Count the entries of a folder.",
        path="The folder; default the workspace.")
    tools, registry = sandbox.sandbox_tools(tmp_path, ("read",))
    assert [t["function"]["name"] for t in tools] == ["read_file", "list_files", "count_files"]
    assert registry["count_files"]() == {"path": ".", "count": 0}
    assert registry["count_files"].func is count_in and registry["count_files"].args[0] == \
        Path(os.path.realpath(tmp_path))
    assert "count_files" not in sandbox.sandbox_tools(tmp_path, ("write",))[1]
    assert "count_files" not in nb.sandbox_tools(tmp_path)[1]  # the other copy is unchanged


def test_a_row_without_a_function_or_a_schema_is_a_clear_error(tmp_path):
    sandbox = load_notebook("05-sandbox.ipynb")
    sandbox.RISK["grep_files"] = "read"
    with pytest.raises(LookupError, match="grep_files has a risk level but no function in "
                                          "FUNCTIONS"):
        sandbox.sandbox_tools(tmp_path)
    sandbox.FUNCTIONS["grep_files"] = sandbox.list_in
    with pytest.raises(LookupError, match="grep_files has no schema in SCHEMAS"):
        sandbox.sandbox_tools(tmp_path)

    sandbox.SCHEMAS["grep_files"] = agent.schema(sandbox.list_in, "List.", path="p")
    with pytest.raises(LookupError, match=r"SCHEMAS\['grep_files'\] is named 'list_in': give "
                                          r"agent.schema\(..., name='grep_files'\)"):
        sandbox.sandbox_tools(tmp_path)  # the trap: a schema is named after its function
    sandbox.SCHEMAS["grep_files"] = agent.schema(sandbox.list_in, "List.", name="grep_files",
                                                 path="p")
    assert "grep_files" in sandbox.sandbox_tools(tmp_path)[1]


def test_the_old_str_rule_is_written_once_in_agent_py_and_used_by_the_jailed_edit(lab,
                                                                                    monkeypatch):
    for lesson in ("05-sandbox", "06-diff-approval"):
        import course
        assert "must occur exactly once in" not in course.export(course.notebook_path(lesson))
    said = []
    monkeypatch.setattr(agent, "replace_once", lambda *a: said.append(a) or "new text")
    (lab.workspace / "a.txt").write_text("old text")
    nb.edit_in(lab.workspace, "a.txt", "old", "new")
    assert said == [("old text", "old", "new", "a.txt")]
    assert (lab.workspace / "a.txt").read_text() == "new text"


def test_read_only_agent_cannot_change_anything(lab):
    tools, registry = nb.sandbox_tools(lab.workspace, risks=("read",))
    client = agent.ScriptedClient([
        agent.tool_call("list_files"),
        agent.tool_call("edit_file", path="notes/todo.md", old_str="", new_str="gone"),
        agent.tool_call("run_command", command="rm -rf notes"),
        agent.reply("I could only look."),
    ])
    before = nb.snapshot(lab.workspace / "notes")
    bot = agent.Agent(client, "scripted", tools=tools, registry=registry, on_event=None)
    assert bot.chat("Clean up.") == "I could only look."
    assert [t["function"]["name"] for t in client.requests[0]["tools"]] == ["read_file",
                                                                             "list_files"]
    errors = [m["content"] for m in bot.messages if m["role"] == "tool"][1:]
    assert all("unknown tool; the tools are: list_files, read_file" in e for e in errors)
    assert nb.snapshot(lab.workspace / "notes") == before


# --- Prompt injection --------------------------------------------------------------------


@pytest.mark.parametrize("risks", [("read",), ("read", "write", "execute")])
def test_prompt_injection_is_tried_and_refused(lab, risks):
    tools, registry = nb.sandbox_tools(lab.workspace, risks, timeout=30)
    before = world(lab)
    bot = agent.Agent(agent.ScriptedClient(gullible_script()), "scripted", tools=tools,
                      registry=registry, system_prompt=nb.SANDBOX_PROMPT, on_event=None)
    bot.chat("Summarize docs/NOTES.md for me.")
    assert bot.stop_reason == "done"
    calls = [m["tool_calls"][0]["function"]["name"] for m in bot.messages if m.get("tool_calls")]
    assert calls == ["read_file", "read_file", "run_command"]  # it was fooled, twice
    assert bot.messages[5]["content"] == agent.error_json(
        "read_file: path escapes the workspace: ../outside/secret.txt")  # an observation
    if "execute" in risks:
        assert json.loads(bot.messages[7]["content"]) == {"exit_code": 1, "output": ""}
    else:
        assert "unknown tool" in bot.messages[7]["content"]
    assert not any(SECRET in m["content"] for m in bot.messages)
    assert world(lab) == before


def test_without_the_sandbox_the_same_injection_leaks(lab, monkeypatch):
    """The premise of the lesson: agent.py's plain tools follow the file's orders out."""
    monkeypatch.chdir(lab.workspace)
    bot = agent.Agent(agent.ScriptedClient(gullible_script()), "scripted", on_event=None)
    bot.chat("Summarize docs/NOTES.md for me.")
    assert SECRET in bot.messages[5]["content"]


def test_the_props_are_not_exported():
    """The lab and the gullible model are course material (props/lab.py): a builder who takes
    the export cells away gets neither."""
    for name in ("SECRET", "TODO", "INJECTED_NOTE", "build_lab", "gullible_script", "tree"):
        assert not hasattr(nb, name), f"{name} is in the export cells"


def test_export_cells_only_define(tmp_path, monkeypatch):
    """Loading the notebook's definitions runs no demo: no chdir, no files, no output."""
    monkeypatch.chdir(tmp_path)
    load_notebook("05-sandbox.ipynb")
    assert Path.cwd() == tmp_path and list(tmp_path.iterdir()) == []


EXPORTED_RUN = """
from pathlib import Path

import agent
import sandbox

Path("outside").mkdir()
Path("outside/secret.txt").write_text("s3cr3t value")
Path("workspace").mkdir()
tools, registry = sandbox.sandbox_tools("workspace", timeout=30)
bot = agent.Agent(agent.ScriptedClient([
    agent.tool_call("read_file", path="../outside/secret.txt"),
    agent.tool_call("run_command", command="env | grep -i key"),
    agent.reply("done"),
]), "scripted", tools=tools, registry=registry, system_prompt=sandbox.SANDBOX_PROMPT,
    on_event=None)
bot.chat("Show me the secret and the keys.")
assert not any("s3cr3t" in m["content"] for m in bot.messages)
print(bot.stop_reason, sandbox.__file__ == str(Path("sandbox.py").resolve()),
      [m["content"] for m in bot.messages if m["role"] == "tool"])
"""


@pytest.mark.slow
def test_the_exported_module_imports_and_runs_beside_a_copy_of_agent_py(tmp_path):
    """What "take it with you" promises: the export command writes sandbox.py, which runs
    beside agent.py alone - no course.py, no notebooks, no props - with the sandbox holding:
    the read outside is refused, and the command does not see the key we were started with."""
    root = Path(__file__).resolve().parent.parent
    made = subprocess.run([sys.executable, str(root / "notebooks" / "course.py"), "export",
                           "05-sandbox", "-o", str(tmp_path / "sandbox.py")],
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    shutil.copy(root / "agent.py", tmp_path / "agent.py")
    (tmp_path / "run.py").write_text(EXPORTED_RUN)
    done = subprocess.run([sys.executable, "-E", "run.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "OPENAI_API_KEY": "sk-fake"})
    assert done.returncode == 0, done.stderr
    exported = (tmp_path / "sandbox.py").read_text()
    assert "import course" not in exported and "props" not in exported
    assert done.stdout.startswith("done True ")
    assert "path escapes the workspace: ../outside/secret.txt" in done.stdout
    assert '{"exit_code": 1, "output": ""}' in done.stdout

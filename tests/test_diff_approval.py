"""Lesson 06: diff approval. These tests exercise the code the notebook defines (its cells
tagged "export"), so there is one definition, not a copy."""

import contextlib
import errno
import io
import json
import os
import stat
import tempfile
import threading
from functools import partial
from pathlib import Path

import course  # first: it makes `import sandbox` load lesson 05's export cells
import pytest
import sandbox  # the module diff_approval imports when stacked
from props.half_write import HalfWriter  # the notebook's own half-written temporary file

import agent
from agent import Agent, ScriptedClient, reply, tool_call

nb = course.load_notebook("06-diff-approval.ipynb")

GREET = 'def greet(name):\n    return f"Hello, {name}!"\n'


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    return tmp_path


def gated(policy=None, **options):
    """The lesson's read_file and edit_file, sharing one memory of what was read."""
    _, registry = nb.approval_tools(policy or nb.approve_all, **options)
    return registry["read_file"], registry["edit_file"]


def never_asked(path, diff):
    raise AssertionError(f"the person was asked about {path}, but should not have been")


def recording(answer=None):
    """A policy that answers `answer` (approve by default) and remembers what it was shown."""
    def policy(path, diff):
        policy.asked.append((path, diff))
        return nb.APPROVE if answer is None else answer
    policy.asked = []
    return policy


def names(folder: Path) -> list[str]:
    """Every file and folder under folder, hidden ones too (temporary files start with a dot)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def write(path: str, text: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(text.encode("utf-8"))


# --- plugging into agent.Agent ----------------------------------------------------------------


def test_tools_and_registry_agree_and_only_read_and_edit_are_replaced():
    tools, registry = nb.approval_tools(nb.approve_all)
    agent.check_tools(tools, registry)
    assert sorted(registry) == ["edit_file", "list_files", "read_file"]
    assert registry["list_files"] is agent.list_files
    assert registry["read_file"] is not agent.read_file
    assert registry["edit_file"] is not agent.edit_file
    edit = next(t for t in tools if t["function"]["name"] == "edit_file")
    assert "person" in edit["function"]["description"]
    assert edit["function"]["parameters"]["required"] == ["path", "old_str", "new_str"]
    assert agent.TOOL_REGISTRY["edit_file"] is agent.edit_file  # agent.py is untouched


def test_approved_edit_is_written_and_the_result_says_so():
    write("greet.py", GREET)
    read, edit = gated()
    assert read("greet.py") == {"path": "greet.py", "content": GREET}
    assert edit("greet.py", "Hello", "Hi") == {"path": "greet.py", "action": "edited",
                                               "approved": True}
    assert Path("greet.py").read_text(encoding="utf-8") == GREET.replace("Hello", "Hi")


def test_the_person_sees_the_diff_against_the_file_as_it_is_now():
    write("greet.py", GREET)
    policy = recording()
    read, edit = gated(policy)
    read("greet.py")
    edit("greet.py", "Hello", "Hi")
    assert policy.asked == [("greet.py", nb.make_diff("greet.py", GREET,
                                                      GREET.replace("Hello", "Hi")))]
    assert "-    return f\"Hello, {name}!\"\n+    return f\"Hi, {name}!\"\n" in policy.asked[0][1]


def test_rejection_writes_nothing_and_carries_the_reason():
    write("greet.py", GREET)
    read, edit = gated(nb.reject_all("keep English for now"))
    read("greet.py")
    with pytest.raises(nb.Rejected, match="keep English for now. Nothing was written"):
        edit("greet.py", "Hello", "Hi")
    with pytest.raises(nb.Rejected, match="no reason given"):
        gated(nb.scripted([False]))[1]("new.txt", "", "x\n")
    assert Path("greet.py").read_text(encoding="utf-8") == GREET
    assert not Path("new.txt").exists()


def test_a_policy_that_fails_writes_nothing():
    read, edit = gated(nb.scripted([]))  # no answers left: the policy raises
    with pytest.raises(LookupError, match="no answer left for new.txt"):
        edit("new.txt", "", "x\n")
    assert not Path("new.txt").exists()


@pytest.mark.parametrize("answer", [nb.Decision("not today"), nb.Decision(1), None, "no",
                                    (True, ""), 1], ids=repr)
def test_a_policy_answer_that_is_no_decision_writes_nothing(answer):
    # Decision("not today") is truthy: read as a decision, it would approve.
    write("keep.txt", "keep\n")
    read, edit = gated(lambda path, diff: answer)
    read("keep.txt")
    with pytest.raises(TypeError, match="a policy must answer True, False or a Decision"):
        edit("keep.txt", "keep", "lost")
    assert Path("keep.txt").read_text(encoding="utf-8") == "keep\n"


# --- the version check --------------------------------------------------------------------------


def test_an_existing_file_never_read_is_refused_before_asking():
    write("greet.py", GREET)
    _, edit = gated(never_asked)
    for old_str in ("", "Hello"):
        with pytest.raises(nb.StaleFile,
                           match="you have not read it; read it first. Nothing was written"):
            edit("greet.py", old_str, "x")
    assert Path("greet.py").read_text(encoding="utf-8") == GREET


def test_a_file_changed_since_it_was_read_is_refused_before_asking():
    write("greet.py", GREET)
    read, edit = gated(never_asked)
    read("greet.py")
    write("greet.py", GREET + "# a colleague's line\n")
    with pytest.raises(nb.StaleFile,
                       match="changed since you read it; read it again. Nothing was written"):
        edit("greet.py", "Hello", "Hi")
    assert Path("greet.py").read_text(encoding="utf-8").endswith("# a colleague's line\n")


def test_reading_again_makes_the_edit_possible():
    write("greet.py", GREET)
    read, edit = gated()
    read("greet.py")
    write("greet.py", GREET + "# more\n")
    with pytest.raises(nb.StaleFile):
        edit("greet.py", "Hello", "Hi")
    read("greet.py")
    edit("greet.py", "Hello", "Hi")
    assert Path("greet.py").read_text(encoding="utf-8") == GREET.replace("Hello", "Hi") + "# more\n"


def test_a_file_deleted_since_it_was_read_is_refused():
    write("greet.py", GREET)
    read, edit = gated(never_asked)
    read("greet.py")
    Path("greet.py").unlink()
    with pytest.raises(nb.StaleFile, match="changed since you read it"):
        edit("greet.py", "", GREET)
    assert not Path("greet.py").exists()


def test_a_new_file_may_be_created_without_reading_and_after_a_failed_read():
    read, edit = gated()
    assert edit("a.txt", "", "a\n")["action"] == "created"
    with pytest.raises(FileNotFoundError):
        read("b.txt")  # the agent now knows there is no b.txt
    assert edit("b.txt", "", "b\n")["action"] == "created"


def test_a_file_that_appeared_since_the_agent_saw_none_is_refused():
    read, edit = gated(never_asked)
    with pytest.raises(FileNotFoundError):
        read("b.txt")
    write("b.txt", "someone else's\n")
    with pytest.raises(nb.StaleFile, match="changed since you read it"):
        edit("b.txt", "", "mine\n")
    assert Path("b.txt").read_text(encoding="utf-8") == "someone else's\n"


def test_a_write_counts_as_seen_so_the_agent_can_edit_twice():
    write("greet.py", GREET)
    read, edit = gated()
    read("greet.py")
    edit("greet.py", "Hello", "Hi")
    edit("greet.py", "def greet", "# hi\ndef greet")
    assert edit("new.txt", "", "1\n")["action"] == "created"
    assert edit("new.txt", "", "2\n")["action"] == "overwritten"
    assert Path("new.txt").read_text(encoding="utf-8") == "2\n"


def test_the_same_file_under_another_name_shares_its_fingerprint():
    write("src/greet.py", GREET)
    read, edit = gated()
    read("src/../src/greet.py")
    edit("./src/greet.py", "Hello", "Hi")
    assert Path("src/greet.py").read_text(encoding="utf-8") == GREET.replace("Hello", "Hi")


# --- re-checked right before the write ------------------------------------------------------


@pytest.mark.parametrize("meanwhile", ["changed", "deleted", "replaced by a folder"])
def test_a_change_while_the_person_decides_is_caught(workdir, meanwhile):
    write("greet.py", GREET)

    def person(path, diff):
        if meanwhile == "changed":
            write(path, GREET + "# the person's own edit\n")
        else:
            Path(path).unlink()
            if meanwhile == "replaced by a folder":
                Path(path).mkdir()
        return nb.APPROVE

    read, edit = gated(person)
    read("greet.py")
    with pytest.raises(nb.StaleFile, match="while the person was deciding.*Nothing was written"):
        edit("greet.py", "Hello", "Hi")
    if meanwhile == "changed":
        assert Path("greet.py").read_text(encoding="utf-8") == GREET + "# the person's own edit\n"
    elif meanwhile == "deleted":
        assert not Path("greet.py").exists()
    else:
        assert Path("greet.py").is_dir()
    assert names(workdir) == ([] if meanwhile == "deleted" else ["greet.py"])  # no temp file


def test_a_new_file_created_by_someone_while_the_person_decides_is_kept(workdir):
    def person(path, diff):
        write(path, "theirs\n")
        return nb.APPROVE

    _, edit = gated(person)
    with pytest.raises(nb.StaleFile, match="while the person was deciding"):
        edit("notes.txt", "", "mine\n")
    assert Path("notes.txt").read_text(encoding="utf-8") == "theirs\n"
    assert names(workdir) == ["notes.txt"]


# --- refused before the person is asked ----------------------------------------------------------


@pytest.mark.parametrize(("old_str", "found"), [("y = 2", 0), ("x = 1", 2)])
def test_old_str_not_found_or_found_twice_is_refused_before_asking(old_str, found):
    write("calc.py", "x = 1\nx = 1\n")
    read, edit = gated(never_asked)
    read("calc.py")
    with pytest.raises(ValueError, match=f"exactly once in calc.py, found {found}"):
        edit("calc.py", old_str, "z = 3")
    assert Path("calc.py").read_text(encoding="utf-8") == "x = 1\nx = 1\n"


def test_overlapping_occurrences_count_as_ambiguous():
    """The same contract as agent.edit_file: "aa" is twice in "aaa" (str.count says once)."""
    write("a.txt", "aaa")
    read, edit = gated(never_asked)
    read("a.txt")
    with pytest.raises(ValueError, match="exactly once in a.txt, found 2"):
        edit("a.txt", "aa", "b")
    assert Path("a.txt").read_text(encoding="utf-8") == "aaa"


def test_other_refusals_before_asking(workdir):
    Path("folder").mkdir()
    read, edit = gated(never_asked)
    with pytest.raises(FileNotFoundError, match="no such file: missing.txt"):
        edit("missing.txt", "old", "new")
    with pytest.raises(IsADirectoryError, match="folder is a directory"):
        edit("folder", "", "x")
    with pytest.raises(IsADirectoryError, match="folder is a directory"):
        read("folder")
    Path("data.bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(nb.StaleFile, match="read it first"):
        edit("data.bin", "", "x")
    with pytest.raises(ValueError, match="not a UTF-8 text file"):
        read("data.bin")
    with pytest.raises(ValueError, match="old_str cannot be found in it; to replace it whole"):
        edit("data.bin", "\xff", "x")  # nothing in it can be matched as text
    assert Path("data.bin").read_bytes() == b"\xff\xfe\x00"
    assert names(workdir) == ["data.bin", "folder"]


def test_a_file_that_is_not_utf8_can_be_overwritten_once_the_agent_tried_to_read_it():
    Path("data.bin").write_bytes(b"\xff\xfe\x00")
    policy = recording()
    read, edit = gated(policy)
    with pytest.raises(ValueError, match="not a UTF-8 text file"):
        read("data.bin")  # the attempt counts as seeing it: a fingerprint of its bytes
    assert edit("data.bin", "", "text\n") == {"path": "data.bin", "action": "overwritten",
                                             "approved": True}
    assert Path("data.bin").read_bytes() == b"text\n"
    [(path, diff)] = policy.asked  # the person is told what goes: 3 bytes of no text
    assert diff == ("--- a/data.bin (not UTF-8 text, 3 bytes, replaced whole)\n"
                    "+++ b/data.bin\n@@ -0,0 +1 @@\n+text\n")
    assert edit("data.bin", "text", "more")["action"] == "edited"  # text now, and seen


def test_a_file_that_is_not_utf8_and_changed_since_the_attempted_read_is_refused():
    Path("data.bin").write_bytes(b"\xff\xfe\x00")
    read, edit = gated(never_asked)
    with pytest.raises(ValueError):
        read("data.bin")
    Path("data.bin").write_bytes(b"\xff\xfe\x01")  # someone else's change, still no text
    with pytest.raises(nb.StaleFile, match="changed since you read it"):
        edit("data.bin", "", "x")
    assert Path("data.bin").read_bytes() == b"\xff\xfe\x01"


def test_a_file_that_is_not_utf8_changed_while_the_person_decides_is_kept(workdir):
    Path("data.bin").write_bytes(b"\xff\xfe\x00")

    def meanwhile(path, diff):
        Path("data.bin").write_bytes(b"\xff\xfe\x02")
        return nb.APPROVE

    read, edit = gated(meanwhile)
    with pytest.raises(ValueError):
        read("data.bin")
    with pytest.raises(nb.StaleFile, match="while the person was deciding"):
        edit("data.bin", "", "x")
    assert Path("data.bin").read_bytes() == b"\xff\xfe\x02"


def test_an_edit_that_changes_nothing_is_not_asked_and_not_written():
    write("greet.py", GREET)
    read, edit = gated(never_asked)
    read("greet.py")
    mtime = os.stat("greet.py").st_mtime_ns
    assert edit("greet.py", "Hello", "Hello")["action"] == "unchanged"
    assert os.stat("greet.py").st_mtime_ns == mtime


# --- the atomic write ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o755, 0o200], ids=oct)
def test_permission_bits_are_kept(mode):
    write("run.sh", "echo hi\n")
    os.chmod("run.sh", mode)
    read, edit = gated()
    read("run.sh")
    edit("run.sh", "hi", "hello")
    assert stat.S_IMODE(os.stat("run.sh").st_mode) == mode
    assert Path("run.sh").read_text(encoding="utf-8") == "echo hello\n"


@pytest.mark.parametrize("mode", [0o444, 0o555, 0o400], ids=oct)
def test_a_read_only_file_is_refused_before_asking_and_left_alone(workdir, mode):
    write("LICENSE", "MIT\n")
    os.chmod("LICENSE", mode)
    read, edit = gated(never_asked)
    read("LICENSE")
    for old_str in ("MIT", ""):
        with pytest.raises(PermissionError, match="LICENSE is read-only.*Nothing was written"):
            edit("LICENSE", old_str, "GPL\n")
    assert Path("LICENSE").read_text(encoding="utf-8") == "MIT\n"
    assert stat.S_IMODE(os.stat("LICENSE").st_mode) == mode
    assert names(workdir) == ["LICENSE"]
    with pytest.raises(PermissionError, match="read-only"):  # write_replaceable refuses on its own
        nb.write_replaceable(Path("LICENSE"), b"GPL\n")
    assert Path("LICENSE").read_text(encoding="utf-8") == "MIT\n"


def test_a_file_this_process_may_not_write_is_refused(monkeypatch):
    write("theirs.txt", "x\n")  # 0o644, but os.access says no (as for another user's file)
    read, edit = gated(never_asked)
    read("theirs.txt")
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(PermissionError, match="theirs.txt is read-only"):
        edit("theirs.txt", "x", "y")
    assert Path("theirs.txt").read_text(encoding="utf-8") == "x\n"


def test_made_read_only_while_the_person_decides_is_not_replaced(workdir):
    write("a.txt", "a\n")

    def person(path, diff):
        os.chmod(path, 0o444)
        return nb.APPROVE

    read, edit = gated(person)
    read("a.txt")
    with pytest.raises(PermissionError, match="a.txt.*read-only"):
        edit("a.txt", "a", "b")
    assert Path("a.txt").read_text(encoding="utf-8") == "a\n"
    assert names(workdir) == ["a.txt"]


def test_a_created_file_gets_the_usual_permissions_and_its_parent_folders(workdir):
    _, edit = gated()
    assert edit("a/b/c.txt", "", "deep\n") == {"path": "a/b/c.txt", "action": "created",
                                               "approved": True}
    assert Path("a/b/c.txt").read_text(encoding="utf-8") == "deep\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat("a/b/c.txt").st_mode) == 0o666 & ~umask
    assert names(workdir) == ["a", "a/b", "a/b/c.txt"]  # no temporary file


def test_no_temporary_file_after_success(workdir):
    write("greet.py", GREET)
    read, edit = gated()
    read("greet.py")
    for i in range(3):
        edit("greet.py", "", GREET + f"# {i}\n")
    assert names(workdir) == ["greet.py"]


def test_a_long_file_name_can_be_edited(workdir):
    name = "n" * 246 + ".txt"  # 250 bytes: a legal name, but "." + name + ".xxxxxxxx.tmp" is not
    write(name, "old\n")
    read, edit = gated()
    read(name)
    assert edit(name, "old", "new")["action"] == "edited"
    assert Path(name).read_text(encoding="utf-8") == "new\n"
    assert names(workdir) == [name]
    long_unicode = "é" * 120 + ".md"  # 243 bytes in UTF-8: cut by bytes, not by characters
    assert edit(long_unicode, "", "x\n")["action"] == "created"
    assert names(workdir) == sorted([name, long_unicode])


def test_write_errors_name_the_workspace_path_not_the_absolute_one(workdir, monkeypatch):
    write("src/greet.py", GREET)
    read, edit = gated()
    read("src/greet.py")

    def no_space(*args, dir=None, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", os.path.join(dir, ".greet.tmp"))

    monkeypatch.setattr(tempfile, "mkstemp", no_space)
    with pytest.raises(OSError) as caught:
        edit("src/greet.py", "Hello", "Hi")
    message = str(caught.value)
    assert message.startswith("src/greet.py: the write failed (No space left on device)")
    assert str(workdir) not in message and os.path.realpath(workdir) not in message
    assert Path("src/greet.py").read_text(encoding="utf-8") == GREET


def test_a_name_too_long_for_the_file_system_gives_a_relative_error(workdir):
    _, edit = gated()
    with pytest.raises(OSError) as caught:
        edit("x" * 300 + ".txt", "", "x\n")
    assert str(workdir) not in str(caught.value) and os.path.realpath(workdir) not in str(
        caught.value)
    assert names(workdir) == []


def test_bytes_are_written_exactly():
    write("crlf.txt", "one\r\ntwo\r\n")
    read, edit = gated()
    assert read("crlf.txt")["content"] == "one\r\ntwo\r\n"
    edit("crlf.txt", "two", "2")
    assert Path("crlf.txt").read_bytes() == b"one\r\n2\r\n"


def fail(message):
    def failing(*args, **kwargs):
        raise OSError(message)
    return failing


FAILURES = {
    "write half-way": lambda mp: mp.setattr(os, "fdopen",
                                            lambda fd, mode, real=os.fdopen: HalfWriter(
                                                real(fd, mode), quiet=True)),
    "fsync": lambda mp: mp.setattr(os, "fsync", fail("simulated: fsync failed")),
    "chmod": lambda mp: mp.setattr(os, "chmod", fail("simulated: chmod failed")),
    "replace": lambda mp: mp.setattr(os, "replace", fail("simulated: rename failed")),
}


@pytest.mark.parametrize("where", list(FAILURES))
def test_a_failed_write_leaves_the_original_byte_for_byte_and_no_temp_file(
        workdir, monkeypatch, where):
    original = "caf\u00e9\r\nline two\nno newline at the end".encode()
    Path("data.txt").write_bytes(original)
    os.chmod("data.txt", 0o640)
    read, edit = gated()
    read("data.txt")
    with monkeypatch.context() as mp:
        FAILURES[where](mp)
        with pytest.raises(OSError, match="simulated"):
            edit("data.txt", "line two", "LINE TWO")
    assert Path("data.txt").read_bytes() == original
    assert stat.S_IMODE(os.stat("data.txt").st_mode) == 0o640
    assert names(workdir) == ["data.txt"]
    # the fingerprint still matches the untouched file, so the same edit can be tried again
    edit("data.txt", "line two", "LINE TWO")
    assert Path("data.txt").read_bytes() == original.replace(b"line two", b"LINE TWO")


def test_a_failed_write_of_a_new_file_leaves_no_file(workdir, monkeypatch):
    monkeypatch.setattr(os, "replace", fail("simulated: rename failed"))
    _, edit = gated()
    with pytest.raises(OSError, match="simulated"):
        edit("new.txt", "", "x\n")
    assert names(workdir) == []


def test_editing_through_a_symlink_keeps_the_link():
    write("real.txt", "old\n")
    os.symlink("real.txt", "link.txt")
    read, edit = gated()
    assert read("link.txt")["path"] == "real.txt"  # the model is told where it really read
    assert edit("link.txt", "old", "new")["path"] == "real.txt"
    assert os.path.islink("link.txt")
    assert Path("real.txt").read_text(encoding="utf-8") == "new\n"


# --- the policy sees the real path: no ".." or symlink hides where a write lands ----------


@pytest.fixture
def work_and_outside(workdir, monkeypatch):
    """A working folder with docs/, and a folder beside it with a file the model must not
    change; the current directory is the working folder."""
    (workdir / "work" / "docs").mkdir(parents=True)
    (workdir / "outside").mkdir()
    (workdir / "outside" / "setup.py").write_text("outside\n", encoding="utf-8")
    (workdir / "work" / "setup.py").write_text("inside\n", encoding="utf-8")
    monkeypatch.chdir(workdir / "work")
    return workdir


def test_dot_dot_cannot_slip_past_approve_matching(work_and_outside):
    """The reviewer's bypass: fnmatch's * matched "/" and "..", on the model's raw path."""
    policy = recording(None)
    _, registry = nb.approval_tools(lambda path, diff: policy(path, diff) and
                                    nb.approve_matching("docs/*")(path, diff))
    registry["read_file"]("docs/../../outside/setup.py")
    with pytest.raises(nb.Rejected, match="edit of ../outside/setup.py: only files matching"):
        registry["edit_file"]("docs/../../outside/setup.py", "", "gone\n")
    assert (work_and_outside / "outside" / "setup.py").read_text(encoding="utf-8") == "outside\n"
    [(path, diff)] = policy.asked
    assert path == "../outside/setup.py"
    assert diff.startswith("--- a/../outside/setup.py\n+++ b/../outside/setup.py\n")


def test_a_symlink_cannot_slip_past_approve_matching(work_and_outside):
    os.symlink("../setup.py", "docs/link.md")
    policy = recording(nb.reject("shown"))
    read, edit = gated(lambda path, diff: policy(path, diff) if not nb.approve_matching(
        "docs/*")(path, diff).approved else nb.APPROVE)
    read("docs/link.md")
    with pytest.raises(nb.Rejected, match="edit of setup.py"):
        edit("docs/link.md", "", "gone\n")
    assert Path("setup.py").read_text(encoding="utf-8") == "inside\n"
    [(path, diff)] = policy.asked  # the person is shown the file that would change
    assert path == "setup.py" and diff.startswith("--- a/setup.py\n+++ b/setup.py\n")


def test_approve_matching_matches_segments_and_never_outside():
    def approved(pattern, path):
        return nb.approve_matching(pattern)(path, "").approved

    assert approved("docs/*", "docs/a.md") and approved("docs/*", "./docs/a.md")
    assert not approved("docs/*", "docs/api/a.md")  # * stays inside one folder
    assert approved("docs/**", "docs/api/deep/a.md") and approved("docs/**/*.md", "docs/a.md")
    assert approved("*.md", "README.md") and approved("*.md", "docs/api/a.md")  # any depth
    assert not approved("*.md", "docs/a.py")
    assert not approved("docs/*", "docs/../setup.py") and approved("*", "docs/../setup.py")
    for path in ("docs/../../outside/a.md", "../a.md", "..", "/docs/a.md", "/etc/a.md",
                 "docs/../../docs/a.md"):
        for pattern in ("docs/*", "docs/**", "*.md", "*", "**", "../*", "/*"):
            assert not approved(pattern, path), (pattern, path)


# --- one resolution: a read and the write always name the same file (issue 10, item 6) -----


@pytest.fixture
def three_of_a_name(workdir, monkeypatch):
    """Three files called a.txt: beside W, in W (the current directory) and in W/sub."""
    (workdir / "W" / "sub").mkdir(parents=True)
    for folder, text in ((workdir, "beside\n"), (workdir / "W", "W\n"),
                         (workdir / "W" / "sub", "sub\n")):
        (folder / "a.txt").write_text(text, encoding="utf-8")
    monkeypatch.chdir(workdir / "W")
    return workdir


def contents(workdir: Path) -> list[str]:
    return [(workdir / p / "a.txt").read_text(encoding="utf-8") for p in (".", "W", "W/sub")]


@pytest.mark.parametrize("root", ["sub", "W/sub", "absolute"])
def test_a_root_without_its_path_check_is_refused_so_read_and_write_cannot_part(
        three_of_a_name, root):
    """It used to be accepted: read_file("a.txt") then read one a.txt (named from the root,
    read from the current directory) and edit_file("a.txt", <that text>, ...) wrote another,
    the version check comparing the wrong two files. agent.py's tools take paths from the
    current directory, so a root of their own cannot be honoured: refused, with what to do."""
    given = str(three_of_a_name / "W" / "sub") if root == "absolute" else root
    with pytest.raises(ValueError, match="give root and resolve together"):
        nb.approval_tools(nb.approve_all, root=given)
    with pytest.raises(ValueError, match="give root and resolve together"):
        nb.approval_tools(nb.approve_all, resolve=lambda path: Path(given, path))
    assert contents(three_of_a_name) == ["beside\n", "W\n", "sub\n"]


def test_the_default_tools_follow_the_current_directory_for_the_read_and_the_write(
        three_of_a_name):
    read, edit = gated()  # made in W
    os.chdir("sub")  # agent.py's read_file now reads from W/sub: so must the whole flow
    text = read("a.txt")["content"]
    assert text == "sub\n"
    assert edit("a.txt", text, "edited\n") == {"path": "a.txt", "action": "edited",
                                                "approved": True}
    assert contents(three_of_a_name) == ["beside\n", "W\n", "edited\n"]


def test_a_root_given_as_a_relative_path_is_resolved_once(workdir):
    """Resolved at each call, "project" meant another folder after a chdir, and the names
    given to the sandbox's read_file climbed out of it."""
    (workdir / "project").mkdir()
    (workdir / "project" / "a.txt").write_text("inside\n", encoding="utf-8")
    real = Path(os.path.realpath(workdir / "project"))
    base_tools, base_registry = sandbox.sandbox_tools(real, risks=("read", "write"))
    _, registry = nb.approval_tools(nb.approve_all, root="project",
                                    resolve=partial(sandbox.resolve_in, real),
                                    tools=base_tools, registry=base_registry)
    os.chdir(workdir / "project")  # "project" from here would be project/project
    assert registry["read_file"]("a.txt") == {"path": "a.txt", "content": "inside\n"}
    assert registry["edit_file"]("a.txt", "inside", "still inside")["action"] == "edited"
    assert (real / "a.txt").read_text(encoding="utf-8") == "still inside\n"


def test_a_root_and_a_path_check_that_name_two_folders_are_refused(workdir):
    (workdir / "project" / "docs").mkdir(parents=True)
    real = Path(os.path.realpath(workdir / "project"))
    tools, registry = sandbox.sandbox_tools(real, risks=("read", "write"))
    with pytest.raises(ValueError, match="two different folders"):
        nb.approval_tools(nb.approve_all, root=real / "docs",
                          resolve=partial(sandbox.resolve_in, real), tools=tools,
                          registry=registry)


# --- what edit_file says and what it will not touch ----------------------------------------------


@pytest.mark.parametrize(("path", "kind"), [
    ("a.txt/b", NotADirectoryError),  # a file where a folder should be
    ("loop", OSError),  # a symbolic link to itself
    ("loop/x", OSError),
])
def test_edit_errors_never_carry_the_absolute_path(workdir, path, kind):
    write("a.txt", "a\n")
    os.symlink("loop", "loop")
    read, edit = gated(never_asked)
    for old_str in ("", "a"):
        with pytest.raises(kind) as caught:
            edit(path, old_str, "x\n")
        message = str(caught.value)
        assert message.startswith(f"{path}: "), message
        assert str(workdir) not in message and os.path.realpath(workdir) not in message
    with pytest.raises(OSError) as caught:
        read(path)
    assert str(workdir) not in str(caught.value)
    assert names(workdir) == ["a.txt", "loop"]


def test_edit_file_never_opens_a_named_pipe_and_never_replaces_one(workdir):
    """A rename would put a regular file in the pipe's place; and agent.py's read_file would
    wait forever on it. So the file's type is checked first, without opening it."""
    os.mkfifo("pipe")
    _, edit = gated(never_asked)
    for old_str in ("", "a"):
        kind, error = within(2, edit, "pipe", old_str, "x")
        assert kind == "error" and "pipe is not a regular file, so it may not be edited" in str(
            error)
    with pytest.raises(PermissionError, match="pipe is not a regular file; it was not replaced"):
        nb.write_replaceable(Path("pipe"), b"x")
    assert stat.S_ISFIFO(os.lstat("pipe").st_mode)
    assert names(workdir) == ["pipe"]


# --- approving with the person's own changes ---------------------------------------------------


def test_a_person_who_changes_the_edit_gets_their_text_written_and_the_model_is_told():
    write("greet.py", GREET)
    proposed = GREET.replace("Hello", "Hi")
    theirs = GREET.replace("Hello", "Hey")
    seen_by_editor = []

    def editor(text):
        seen_by_editor.append(text)
        return text.replace("Hi", "Hey")

    read, edit = gated(nb.scripted([nb.Decision(True, rewrite=editor), nb.APPROVE]))
    read("greet.py")
    result = edit("greet.py", "Hello", "Hi")
    assert seen_by_editor == [proposed]  # the editor gets the whole proposed text
    assert Path("greet.py").read_text(encoding="utf-8") == theirs
    assert result == {"path": "greet.py", "action": "edited", "approved": True,
                      "changed_by_person": nb.make_diff("greet.py", proposed, theirs)}
    edit("greet.py", "Hey", "Hello")  # the fingerprint is of what was written: no re-read
    assert Path("greet.py").read_text(encoding="utf-8") == GREET


@pytest.mark.parametrize("rewrite", [lambda text: 1 / 0, lambda text: None])
def test_a_rewrite_that_fails_writes_nothing(workdir, rewrite):
    write("greet.py", GREET)
    read, edit = gated(nb.scripted([nb.Decision(True, rewrite=rewrite)]))
    read("greet.py")
    with pytest.raises((ZeroDivisionError, TypeError)):
        edit("greet.py", "Hello", "Hi")
    assert Path("greet.py").read_text(encoding="utf-8") == GREET
    assert names(workdir) == ["greet.py"]


def test_a_change_while_the_person_edits_is_caught_by_the_re_check():
    write("greet.py", GREET)

    def slow_editor(text):
        write("greet.py", GREET + "# saved meanwhile\n")
        return text

    read, edit = gated(nb.scripted([nb.Decision(True, rewrite=slow_editor)]))
    read("greet.py")
    with pytest.raises(nb.StaleFile, match="while the person was deciding"):
        edit("greet.py", "Hello", "Hi")
    assert Path("greet.py").read_text(encoding="utf-8") == GREET + "# saved meanwhile\n"


# --- stacking with lesson 05's sandbox ------------------------------------------------------


@pytest.fixture
def jailed(workdir):
    """approval_tools stacked on lesson 05's sandbox, as the lesson shows it."""
    (workdir / "project" / "docs").mkdir(parents=True)
    (workdir / "secret.txt").write_text("secret\n", encoding="utf-8")
    root = Path(os.path.realpath(workdir / "project"))
    base_tools, base_registry = sandbox.sandbox_tools(root, risks=("read", "write"))

    def make(policy):
        return nb.approval_tools(policy, root=root, resolve=partial(sandbox.resolve_in, root),
                                 tools=base_tools, registry=base_registry)
    make.root = root
    return make


def within(seconds, func, *args):
    """Run func in a thread; fail (instead of hanging the test run) if it takes too long."""
    outcome = []

    def run():
        try:
            outcome.append(("value", func(*args)))
        except Exception as exc:
            outcome.append(("error", exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"{func.__name__}{args} hung"
    return outcome[0]


def test_stacked_on_the_sandbox_edits_inside_and_keeps_its_list_files(jailed, workdir):
    tools, registry = jailed(nb.approve_all)
    agent.check_tools(tools, registry)
    assert registry["list_files"].func is sandbox.list_in
    assert registry["edit_file"]("docs/a.md", "", "a\n") == {
        "path": "docs/a.md", "action": "created", "approved": True}
    assert registry["read_file"]("./docs/../docs/a.md") == {"path": "docs/a.md",
                                                            "content": "a\n"}
    assert registry["edit_file"]("docs/a.md", "a", "b")["action"] == "edited"
    assert (workdir / "project" / "docs" / "a.md").read_text(encoding="utf-8") == "b\n"


def test_stacked_escapes_are_refused_before_asking(jailed, workdir):
    (workdir / "project" / "out").symlink_to(workdir)
    _, registry = jailed(never_asked)
    for path in ("../secret.txt", "out/secret.txt", str(workdir / "secret.txt"), "~/x"):
        with pytest.raises(sandbox.EscapeError):
            registry["read_file"](path)
        with pytest.raises(sandbox.EscapeError):
            registry["edit_file"](path, "", "mine\n")
    assert (workdir / "secret.txt").read_text(encoding="utf-8") == "secret\n"


def test_stacked_reads_go_through_the_sandbox_so_a_fifo_does_not_hang(jailed, workdir):
    os.mkfifo(workdir / "project" / "pipe")
    _, registry = jailed(never_asked)
    for call in (partial(registry["read_file"], "pipe"),
                 partial(registry["edit_file"], "pipe", "", "x"),
                 partial(registry["edit_file"], "pipe", "a", "b")):
        kind, error = within(2, call)
        assert kind == "error" and "pipe is not a regular file" in str(error)


def test_stacked_a_file_whose_name_starts_with_a_tilde_is_read_and_edited(jailed, workdir):
    (workdir / "project" / "~notes.md").write_text("a\n", encoding="utf-8")
    (workdir / "project" / "docs" / "~draft.md").write_text("d\n", encoding="utf-8")
    _, registry = jailed(nb.approve_all)
    assert registry["read_file"]("./~notes.md")["content"] == "a\n"
    assert registry["edit_file"]("./~notes.md", "a", "b") == {
        "path": "~notes.md", "action": "edited", "approved": True}
    assert (workdir / "project" / "~notes.md").read_text(encoding="utf-8") == "b\n"
    assert registry["read_file"]("docs/../~notes.md")["content"] == "b\n"
    assert registry["read_file"]("docs/~draft.md")["content"] == "d\n"
    with pytest.raises(sandbox.EscapeError, match="home folder"):  # the sandbox's own rule:
        registry["read_file"]("~notes.md")  # as the model wrote it, ~ may be a home folder


def test_stacked_a_file_that_is_not_utf8_can_be_overwritten_after_the_attempted_read(jailed,
                                                                                   workdir):
    (workdir / "project" / "data.bin").write_bytes(b"\xff\xfe\x00")
    _, registry = jailed(nb.approve_all)
    with pytest.raises(ValueError, match="not a UTF-8 text file"):
        registry["read_file"]("data.bin")
    assert registry["edit_file"]("data.bin", "", "x\n")["action"] == "overwritten"
    assert (workdir / "project" / "data.bin").read_bytes() == b"x\n"


def test_a_file_whose_name_starts_with_a_tilde_works_with_agent_pys_tools_too():
    write("~notes.md", "a\n")
    read, edit = gated()
    assert read("~notes.md")["content"] == "a\n"
    assert edit("~notes.md", "a", "b")["path"] == "~notes.md"
    assert Path("~notes.md").read_text(encoding="utf-8") == "b\n"


def test_stacked_errors_show_workspace_paths_only(jailed, workdir):
    (workdir / "project" / "docs" / "a.md").write_text("a\n", encoding="utf-8")
    _, registry = jailed(nb.approve_all)
    messages = []
    for call in (partial(registry["read_file"], "docs/missing.md"),
                 partial(registry["edit_file"], "docs/missing.md", "old", "new"),
                 partial(registry["edit_file"], "docs/a.md", "a", "b"),  # never read
                 partial(registry["read_file"], "docs")):
        with pytest.raises(Exception) as caught:  # noqa: B017 - each its own kind
            call()
        messages.append(str(caught.value))
    assert messages[0] == "no such file or directory: docs/missing.md"
    assert "docs/a.md exists but you have not read it" in messages[2]
    for message in messages:
        assert str(workdir) not in message and str(jailed.root) not in message, message


def test_reads_and_fingerprints_go_through_the_base_read_file():
    """Whatever read_file the base registry has is used, for the model's reads and for the
    checks edit_file makes; the fingerprint is of the content it returned."""
    write("a.txt", "a\n")
    calls = []

    def read_file(path: str) -> dict:
        calls.append(path)
        return agent.read_file(path)

    _, registry = nb.approval_tools(nb.approve_all,
                                    registry={**agent.TOOL_REGISTRY, "read_file": read_file})
    registry["read_file"]("./a.txt")
    registry["edit_file"]("a.txt", "a", "b")
    assert calls == ["a.txt", "a.txt", "a.txt"]  # the read, the check, the re-check


def test_other_base_tools_are_kept():
    def shout(text: str) -> dict:
        return {"text": text.upper()}

    tools = [*agent.TOOLS, agent.schema(shout, "Shout.", text="What to shout.")]
    registry = {**agent.TOOL_REGISTRY, "shout": shout}
    new_tools, new_registry = nb.approval_tools(nb.approve_all, tools=tools, registry=registry)
    assert new_registry["shout"] is shout
    assert [t["function"]["name"] for t in new_tools] == [
        "read_file", "list_files", "shout", "edit_file"]


# --- many decisions in one conversation ---------------------------------------------------------


def test_many_approvals_and_rejections_in_one_conversation_every_call_answered_once_in_order():
    write("a.txt", "a\n")
    write("b.txt", "b\n")
    person = nb.scripted([
        nb.APPROVE,                      # a.txt edit
        nb.reject("not b, please"),      # b.txt edit
        True,                            # new c.txt
        nb.reject(),                     # new d.txt, no reason
        nb.APPROVE,                      # b.txt, second try
    ])
    script = [
        [tool_call("read_file", path="a.txt"), tool_call("read_file", path="b.txt")],
        [tool_call("edit_file", path="a.txt", old_str="a", new_str="A"),
         tool_call("edit_file", path="b.txt", old_str="b", new_str="B"),
         tool_call("edit_file", path="c.txt", old_str="", new_str="c\n")],
        [tool_call("edit_file", path="d.txt", old_str="", new_str="d\n"),
         tool_call("edit_file", path="a.txt", old_str="a", new_str="A")],  # "a" is gone now
        tool_call("edit_file", path="b.txt", old_str="b\n", new_str="b, kept lower-case\n"),
        reply("Done."),
    ]
    tools, registry = nb.approval_tools(person)
    events = []
    bot = Agent(ScriptedClient(script), "scripted", tools=tools, registry=registry,
                system_prompt=nb.APPROVAL_PROMPT, on_event=events.append)
    assert bot.chat("Edit the files.") == "Done."
    assert bot.stop_reason == "done"

    # every call id gets exactly one tool message, right after its assistant message, in order
    calls, answers = [], []
    for i, message in enumerate(bot.messages):
        ids = [c["id"] for c in message.get("tool_calls", [])]
        if ids:
            calls += ids
            following = bot.messages[i + 1: i + 1 + len(ids)]
            assert [m["role"] for m in following] == ["tool"] * len(ids)
            assert [m["tool_call_id"] for m in following] == ids
        if message["role"] == "tool":
            answers.append(message["tool_call_id"])
    assert calls == answers == [f"call_{n}" for n in range(1, 9)]

    results = {m["tool_call_id"]: m["content"] for m in bot.messages if m["role"] == "tool"}
    assert json.loads(results["call_3"]) == {"path": "a.txt", "action": "edited",
                                             "approved": True}
    assert "rejected this edit of b.txt: not b, please" in json.loads(results["call_4"])["error"]
    assert json.loads(results["call_5"])["action"] == "created"
    assert "no reason given" in json.loads(results["call_6"])["error"]
    assert "found 0" in json.loads(results["call_7"])["error"]
    assert json.loads(results["call_8"])["action"] == "edited"
    ends = [e for e in events if e["type"] == "tool_execution_end"]
    assert [e["is_error"] for e in ends] == [False, False, False, True, False, True, True, False]

    # what the model was sent: the reason is in the request after the rejection
    sent = json.dumps(bot.client.requests[2]["messages"], ensure_ascii=False)
    assert "not b, please" in sent
    assert Path("a.txt").read_text(encoding="utf-8") == "A\n"
    assert Path("b.txt").read_text(encoding="utf-8") == "b, kept lower-case\n"
    assert Path("c.txt").read_text(encoding="utf-8") == "c\n"
    assert not Path("d.txt").exists()


# --- the policies -------------------------------------------------------------------------


def test_ready_made_policies():
    diff = nb.make_diff("x", None, "x\n")
    assert nb.approve_all("any.py", diff) == nb.Decision(True, "")
    assert nb.reject_all("freeze")("any.py", diff) == nb.Decision(False, "freeze")
    only_docs = nb.approve_matching("docs/**", "*.md")
    assert only_docs("docs/a/b.txt", diff).approved
    assert only_docs("README.md", diff).approved
    refused = only_docs("src/main.py", diff)
    assert not refused.approved and "docs/** or *.md" in refused.reason


def test_scripted_answers_in_order_then_runs_out():
    seen = []
    person = nb.scripted([nb.APPROVE, False,
                          lambda path, diff: seen.append(path) or nb.reject("after a look")])
    assert person("a", "") == nb.APPROVE
    assert person("b", "") is False
    assert person("c", "") == nb.Decision(False, "after a look") and seen == ["c"]
    with pytest.raises(LookupError, match="no answer left for d"):
        person("d", "")


def test_showing_prints_the_diff_and_the_answer(capsys):
    diff = nb.make_diff("a.txt", "a\n", "b\n")
    assert nb.showing(nb.reject_all("no"))("a.txt", diff) == nb.Decision(False, "no")
    assert capsys.readouterr().out == diff + "person:      rejected: no\n"


@pytest.mark.parametrize(("typed", "approved", "reason"), [
    ("y", True, ""), ("Y", True, ""), ("yes", True, ""), (" y \n", True, ""),
    ("n", False, "the person said no"), ("", False, "the person said no"),
    ("No", False, "the person said no"), ("yep", False, "yep"), ("ok", False, "ok"),
    ("use pathlib instead", False, "use pathlib instead"),
    (EOFError, False, "no answer from the person (input closed)"),
])
def test_terminal_policy(monkeypatch, capsys, typed, approved, reason):
    prompts = []

    def fake_input(prompt):
        prompts.append(prompt)
        if isinstance(typed, type):
            raise typed
        return typed

    monkeypatch.setattr("builtins.input", fake_input)
    diff = nb.make_diff("greet.py", GREET, GREET.replace("Hello", "Hi"))
    assert nb.ask_terminal("greet.py", diff) == nb.Decision(approved, reason)
    assert prompts == [f"{nb.ANSWERS}\napply this change to greet.py? [y/N, or say why not] "]
    assert "only y or yes applies it" in nb.ANSWERS and "anything else is a no" in nb.ANSWERS
    assert capsys.readouterr().out.startswith(diff)  # shown before the question, plain here


def test_ctrl_c_at_the_question_stops_the_run_writes_nothing_and_answers_every_call(
        monkeypatch, capsys):
    def ctrl_c(prompt):
        raise KeyboardInterrupt

    monkeypatch.setattr("builtins.input", ctrl_c)
    client = ScriptedClient([[tool_call("edit_file", path="a.txt", old_str="", new_str="a\n"),
                              tool_call("edit_file", path="b.txt", old_str="", new_str="b\n")],
                             reply("Wrote both.")])
    tools, registry = nb.approval_tools(nb.ask_terminal)
    bot = Agent(client, "scripted", tools=tools, registry=registry, on_event=None)
    with pytest.raises(KeyboardInterrupt):
        bot.chat("Write a and b.")
    assert bot.stop_reason == "interrupted" and len(client.requests) == 1  # it did not go on
    assert not Path("a.txt").exists() and not Path("b.txt").exists()
    assert agent.pairing_problem(bot.messages) is None
    answers = [json.loads(m["content"])["error"] for m in bot.messages if m["role"] == "tool"]
    assert answers == [agent.INTERRUPTED, agent.NOT_RUN]  # the asked one, the one never begun
    assert bot.chat("Go on.") == "Wrote both."  # the same agent can be asked again


def test_the_terminal_policy_in_a_conversation(monkeypatch, capsys):
    answers = iter(["y", "not that file"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    script = [[tool_call("edit_file", path="a.txt", old_str="", new_str="a\n"),
               tool_call("edit_file", path="b.txt", old_str="", new_str="b\n")],
              reply("Wrote a.txt; b.txt was refused.")]
    tools, registry = nb.approval_tools(nb.ask_terminal)
    bot = Agent(ScriptedClient(script), "scripted", tools=tools, registry=registry,
                on_event=None)
    bot.chat("Write a and b.")
    assert Path("a.txt").exists() and not Path("b.txt").exists()
    assert "not that file" in bot.messages[-2]["content"]


# --- the preview --------------------------------------------------------------------------


def test_a_new_file_shows_as_all_added():
    diff = nb.make_diff("dir/new.py", None, "one\ntwo\n")
    assert diff == "--- /dev/null\n+++ b/dir/new.py\n@@ -0,0 +1,2 @@\n+one\n+two\n"
    assert nb.make_diff("empty.txt", None, "") == "--- /dev/null\n+++ b/empty.txt\n"


def test_a_missing_final_newline_is_marked_and_no_change_is_empty():
    diff = nb.make_diff("a.txt", "one\ntwo", "one\nTWO")
    assert diff.endswith("-two\n\\ No newline at end of file\n+TWO\n"
                         "\\ No newline at end of file\n")
    assert nb.make_diff("a.txt", "same\n", "same\n") == ""


@pytest.mark.parametrize("inside", ["\x0c", "\r", "\x1c", "\x85", "\u2028", "\u2029", "\v"])
def test_lines_are_split_at_newline_only(inside):
    """str.splitlines would break "a\x0cb\n" in two and mark a false missing newline."""
    diff = nb.make_diff("a.txt", f"a{inside}b\nsame\n", f"a{inside}c\nsame\n")
    assert diff == f"--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-a{inside}b\n+a{inside}c\n same\n"
    assert "No newline" not in diff


def test_a_file_name_with_a_newline_keeps_the_diff_header_on_one_line():
    diff = nb.make_diff("evil\n+fake.py", None, "x\n")
    assert diff.split("\n")[:2] == ["--- /dev/null", "+++ b/evil\\n+fake.py"]


class Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def test_colour_only_when_the_output_is_a_terminal(monkeypatch):
    diff = nb.make_diff("a.txt", "-- old\nsame\n", "new\nsame\n")
    plain, terminal = Stream(tty=False), Stream(tty=True)
    nb.show_diff(diff, plain)
    nb.show_diff(diff, terminal)
    assert plain.getvalue() == diff and "\x1b[" not in plain.getvalue()
    lines = terminal.getvalue().split("\n")
    assert lines[0] == "\x1b[1m--- a/a.txt\x1b[0m"  # header: bold
    assert lines[3] == "\x1b[31m--- old\x1b[0m"  # a removed line that starts with "--": red
    assert lines[4] == "\x1b[32m+new\x1b[0m"
    assert lines[5] == " same"
    no_colour = Stream(tty=True)
    monkeypatch.setenv("NO_COLOR", "1")
    nb.show_diff(diff, no_colour)
    assert no_colour.getvalue() == diff


SNEAKY = 'import os; os.remove("data.db")\x1b[2K\x1b[G\n'  # erases itself on a terminal


@pytest.mark.parametrize("tty", [False, True])
def test_control_characters_are_shown_not_obeyed(monkeypatch, tty):
    diff = nb.make_diff("a.py", "x = 1\n", "x = 1\n" + SNEAKY + "\tindented\r\n\u202eevil\n")
    out = Stream(tty)
    nb.show_diff(diff, out)
    shown = out.getvalue()
    assert '+import os; os.remove("data.db")\\x1b[2K\\x1b[G' in shown
    assert "+\tindented\\r" in shown and "+\\u202eevil" in shown  # tab kept, CR and RLO shown
    added_by_us = shown.replace("\x1b[0m", "").replace("\x1b[1m", "")
    for code in nb.ANSI.values():
        added_by_us = added_by_us.replace(code, "")
    assert "\x1b" not in added_by_us and "\r" not in added_by_us and "\u202e" not in shown
    assert ("\x1b[32m+import" in shown) is tty  # our own colours are kept on a terminal


def test_the_terminal_policy_shows_hidden_characters_in_diff_and_path(monkeypatch, capsys):
    prompts = []
    monkeypatch.setattr("builtins.input", lambda prompt: prompts.append(prompt) or "n")
    diff = nb.make_diff("a.py", "", SNEAKY)
    nb.ask_terminal("a\x1b[2K.py", diff)
    assert "\\x1b[2K\\x1b[G" in capsys.readouterr().out
    assert prompts == [f"{nb.ANSWERS}\napply this change to a\\x1b[2K.py? [y/N, or say why not] "]
    nb.showing(nb.reject_all("no\x1b[2K"))("a.py", diff)
    out = capsys.readouterr().out
    assert "\x1b" not in out and out.endswith("person:      rejected: no\\x1b[2K\n")


def test_the_policy_gets_the_diff_as_it_is():
    """Escaping is for what a person sees; a function policy gets the real text."""
    policy = recording(nb.reject("no"))
    _, edit = gated(policy)
    with pytest.raises(nb.Rejected):
        edit("a.py", "", SNEAKY)
    assert policy.asked[0][1].endswith("+" + SNEAKY)


def test_the_terminal_policy_colours_on_a_terminal_only(monkeypatch):
    diff = nb.make_diff("a.txt", "a\n", "b\n")
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    for tty in (True, False):
        out = Stream(tty)
        monkeypatch.setattr("sys.stdout", out)
        nb.ask_terminal("a.txt", diff)
        assert ("\x1b[32m+b\x1b[0m" in out.getvalue()) is tty


def test_sandboxed_approval_tools_is_the_stack_in_one_call(workdir):
    (workdir / "project" / "docs").mkdir(parents=True)
    (workdir / "secret.txt").write_text("secret\n", encoding="utf-8")
    tools, registry = nb.sandboxed_approval_tools(nb.approve_all, "project")  # relative
    assert [t["function"]["name"] for t in tools] == ["read_file", "list_files", "edit_file"]
    assert registry["list_files"].func is sandbox.list_in
    for path in ("../secret.txt", str(workdir / "secret.txt")):
        with pytest.raises(sandbox.EscapeError):
            registry["edit_file"](path, "", "mine\n")
    os.chdir(workdir / "project" / "docs")  # the workspace stays where it was
    assert registry["edit_file"]("docs/a.md", "", "a\n")["path"] == "docs/a.md"
    assert (workdir / "project" / "docs" / "a.md").read_text(encoding="utf-8") == "a\n"
    assert (workdir / "secret.txt").read_text(encoding="utf-8") == "secret\n"


TAKE_AWAY = """
import json, sys
import diff_approval
from agent import Agent, ScriptedClient, reply, tool_call

out = {"course": "course" in sys.modules, "sandbox": "sandbox" in sys.modules}
tools, registry = diff_approval.approval_tools(diff_approval.approve_all)
out["plain"] = registry["edit_file"]("plain.txt", "", "plain\\n")["action"]
if len(sys.argv) > 1:
    import os
    os.makedirs("project", exist_ok=True)
    tools, registry = diff_approval.sandboxed_approval_tools(
        diff_approval.approve_matching("*.md"), "project")
    script = [[tool_call("edit_file", path="notes.md", old_str="", new_str="# notes\\n"),
               tool_call("edit_file", path="../escape.md", old_str="", new_str="x\\n"),
               tool_call("edit_file", path="setup.py", old_str="", new_str="x\\n")],
              reply("done")]
    bot = Agent(ScriptedClient(script), "scripted", tools=tools, registry=registry,
                system_prompt=diff_approval.APPROVAL_PROMPT, on_event=None)
    bot.chat("go")
    out["stacked"] = [m["content"] for m in bot.messages if m["role"] == "tool"]
    out["files"] = sorted(os.listdir("project"))
print(json.dumps(out))
"""


@pytest.mark.slow
@pytest.mark.parametrize("stacked", [False, True], ids=["beside agent.py", "and sandbox.py"])
def test_the_exported_module_works_beside_agent_py_and_stacks_on_sandbox_py(tmp_path, stacked):
    import shutil
    import subprocess
    import sys

    root = Path(course.__file__).resolve().parent.parent
    shutil.copy(root / "agent.py", tmp_path / "agent.py")
    lessons = ["06-diff-approval", "05-sandbox"] if stacked else ["06-diff-approval"]
    for lesson in lessons:
        out = tmp_path / f"{course.module_name(course.notebook_path(lesson))}.py"
        with contextlib.redirect_stdout(io.StringIO()):
            assert course.main(["export", lesson, "-o", str(out)]) == 0
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AGENT_FROM_ZERO")}
    done = subprocess.run([sys.executable, "-c", TAKE_AWAY, *(["stacked"] if stacked else [])],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["course"] is False and out["sandbox"] is False  # imported only when stacked
    assert out["plain"] == "created"
    if stacked:
        created, escaped, refused = out["stacked"]
        assert json.loads(created) == {"path": "notes.md", "action": "created", "approved": True}
        assert "path escapes the workspace" in escaped
        assert "only files matching *.md may be changed" in refused
        assert out["files"] == ["notes.md"]
        assert not (tmp_path / "escape.md").exists()


# --- the exercises' checks tell the plausible wrong answers from a right one ----------------


def failing_cases(report) -> list[str]:
    return [what for ok, what, _ in report.results if not ok]


def assert_fails_on(report, start):
    failed = failing_cases(report)
    assert failed, f"a wrong answer passed:\n{report!r}"
    assert any(what.startswith(start) for what in failed), \
        f"expected a failure starting {start!r}:\n{report!r}"


def test_check_06_1_catches_a_question_that_keeps_ask_terminals_answers_line():
    """06.1 done by copying ask_terminal and adding "e": its question still says "only y or yes
    applies it" and never names "e". One case fails, that one."""
    import diff_approval

    def ask_or_edit(editor):
        def policy(path, diff):
            diff_approval.show_diff(diff)
            try:
                answer = input(f"{diff_approval.ANSWERS}\napply this change to {path}? "
                               "[y/N, or say why not] ").strip()
            except EOFError:
                return diff_approval.reject("no answer from the person (input closed)")
            if answer.lower() in ("y", "yes"):
                return diff_approval.APPROVE
            if answer.lower() == "e":
                return diff_approval.Decision(True, rewrite=editor)
            return diff_approval.reject("the person said no" if answer.lower() in ("", "n", "no")
                                        else answer)
        return policy

    report = course.check("06.1", ask_or_edit)
    assert failing_cases(report) == [
        'the question names "e", and does not say that only y or yes applies it'], report


def conflict_tools_as_the_old_hint_said(policy):
    """06.3 as the old hint led to it: on every StaleFile, read the file again (which updates
    the fingerprint), and keep only the text the model read, never the text it wrote."""
    import diff_approval
    tools, registry = diff_approval.approval_tools(policy)
    read, edit = registry["read_file"], registry["edit_file"]
    last_read = {}

    def read_file(path):
        result = read(path)
        last_read[result["path"]] = result["content"]
        return result

    def edit_file(path, old_str, new_str):
        try:
            return edit(path, old_str, new_str)
        except diff_approval.StaleFile as exc:
            now = read(path)
            before = last_read.get(now["path"])
            last_read[now["path"]] = now["content"]
            if before is None:
                raise
            changes = diff_approval.make_diff(now["path"], before, now["content"])
            raise diff_approval.StaleFile(f"{exc}\n{changes}") from None

    return tools, {**registry, "read_file": read_file, "edit_file": edit_file}


def test_check_06_3_catches_a_blind_overwrite_after_read_it_first():
    report = course.check("06.3", conflict_tools_as_the_old_hint_said)
    assert_fails_on(report, "and it stays refused on a second try")


def test_check_06_3_catches_a_diff_that_ignores_the_models_own_write():
    import diff_approval

    def careful_but_forgetful(policy):
        tools, registry = diff_approval.approval_tools(policy)
        read, edit = registry["read_file"], registry["edit_file"]
        last_read = {}

        def read_file(path):
            result = read(path)
            last_read[os.path.realpath(path)] = result["content"]
            return result

        def edit_file(path, old_str, new_str):
            try:
                return edit(path, old_str, new_str)
            except diff_approval.StaleFile as exc:
                before = last_read.get(os.path.realpath(path))
                if "changed" not in str(exc) or before is None:
                    raise
                now = read_file(path)
                changes = diff_approval.make_diff(now["path"], before, now["content"])
                raise diff_approval.StaleFile(f"{exc}\n{changes}") from None

        return tools, {**registry, "read_file": read_file, "edit_file": edit_file}

    report = course.check("06.3", careful_but_forgetful)
    assert_fails_on(report, "the model's own write counts as what it saw")
    assert "and it stays refused on a second try" not in failing_cases(report)


def test_check_06_5_catches_a_log_that_a_tab_and_a_newline_can_forge(monkeypatch):
    """The reference solution with every field written as it came: one case fails, that one."""
    solution = course._load_file(Path(course.__file__).resolve().parent.parent / "solutions"
                                 / "06-diff-approval.py", "solution_06_for_the_forged_log")
    monkeypatch.setattr(solution, "visible", lambda text, keep="": text)
    report = course.check("06.5", solution.audit_log)
    assert_fails_on(report, "a path or a reason holding a tab and a newline cannot forge a line")
    assert len(failing_cases(report)) == 1, report


# --- Going further: a conversation that goes on -------------------------------------------------


def test_a_resumed_conversation_edits_what_it_read_and_wrote_and_nothing_it_cannot_be_sure_of(
        tmp_path):
    """seen_in rebuilds seen from the history's results: a read's content, an edit's new text
    (new_str, or old_str replaced in what the model last had); an error, a result cut short by
    agent.bound, a person's own version, leave the file out."""
    root = Path(os.path.realpath(tmp_path))
    for name, text in (("read.md", "one\n"), ("made.md", "x"), ("cut.md", "long\n" * 5000),
                       ("theirs.md", "a\n"), ("edited.md", "a\nb\n")):
        (root / name).write_text(text)
    tools, registry = nb.sandboxed_approval_tools(
        lambda path, diff: nb.Decision(True, rewrite=(lambda t: t + "mine\n")
                                       if path == "theirs.md" else None), root)
    (root / "made.md").unlink()
    first = Agent(ScriptedClient([
        [tool_call("read_file", path="read.md"), tool_call("read_file", path="cut.md"),
         tool_call("read_file", path="theirs.md"), tool_call("read_file", path="edited.md"),
         tool_call("read_file", path="missing.md")],
        [tool_call("edit_file", path="made.md", old_str="", new_str="made\n"),
         tool_call("edit_file", path="theirs.md", old_str="a", new_str="b"),
         tool_call("edit_file", path="edited.md", old_str="b\n", new_str="c\n")],
        reply("Done.")]), "m", tools=tools, registry=registry, max_tool_output=2_000,
        on_event=None)
    first.chat("go")
    assert "truncated" in first.messages[4]["content"]  # cut.md's result was cut short
    seen = nb.seen_in(first.messages, lambda path: (sandbox.resolve_in(root, path), path))
    digests = {Path(key).name: value for key, value in seen.items()}
    assert digests == {name: nb.digest((root / name).read_bytes())
                       for name in ("read.md", "made.md", "edited.md")}
    assert (root / "edited.md").read_text() == "a\nc\n"  # its digest is of the text written
    # a new process, given the history: edits what it saw, refuses what it cannot be sure of
    tools, registry = nb.sandboxed_approval_tools(nb.approve_all, root)  # no history: as before
    with pytest.raises(nb.StaleFile, match="you have not read it"):
        registry["edit_file"]("read.md", "one", "two")
    tools, registry = sandbox.sandbox_tools(root, ("read",))
    tools, registry = nb.approval_tools(nb.approve_all, root=root, tools=tools, registry=registry,
                                        resolve=partial(sandbox.resolve_in, root),
                                        history=first.messages)
    for name in ("read.md", "made.md", "edited.md"):
        assert registry["edit_file"](name, "", "new\n")["approved"] is True
    for name in ("cut.md", "theirs.md"):
        with pytest.raises(nb.StaleFile, match="you have not read it"):
            registry["edit_file"](name, "", "new\n")


def test_a_resumed_conversation_keeps_a_read_that_a_refused_edit_left_as_it_was(tmp_path):
    """A rejected edit writes nothing, and the run itself keeps what the model read: a resumed
    conversation must too, or it refuses an edit the run would have allowed."""
    root = Path(os.path.realpath(tmp_path))
    (root / "a.txt").write_text("one\n")
    tools, registry = nb.sandboxed_approval_tools(lambda path, diff: nb.Decision(False, "not now"),
                                                  root)
    first = Agent(ScriptedClient([[tool_call("read_file", path="a.txt")],
                                  [tool_call("edit_file", path="a.txt", old_str="one",
                                             new_str="two")],
                                  reply("Asked.")]), "m", tools=tools, registry=registry,
                  on_event=None)
    first.chat("go")
    assert "rejected" in first.messages[-2]["content"]  # the person said no; nothing written
    seen = nb.seen_in(first.messages, lambda path: (sandbox.resolve_in(root, path), path))
    assert {Path(key).name for key in seen} == {"a.txt"}
    tools, registry = sandbox.sandbox_tools(root, ("read",))
    tools, registry = nb.approval_tools(nb.approve_all, root=root, tools=tools, registry=registry,
                                        resolve=partial(sandbox.resolve_in, root),
                                        history=first.messages)
    assert registry["edit_file"]("a.txt", "one", "two")["approved"] is True
    assert (root / "a.txt").read_text() == "two\n"

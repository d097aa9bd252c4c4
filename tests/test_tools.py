"""The three tools: plain functions on the current directory that return dicts and raise
with a message saying what went wrong."""

import pytest

from agent import edit_file, list_files, read_file


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    """Every test works in its own empty folder: the tools use relative paths."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- read_file -----------------------------------------------------------------------------


def test_read_file_returns_path_and_whole_content(in_tmp):
    (in_tmp / "notes.txt").write_text("line 1\nline 2 你好\n", encoding="utf-8")
    assert read_file("notes.txt") == {"path": "notes.txt", "content": "line 1\nline 2 你好\n"}


def test_read_file_keeps_crlf_line_endings(in_tmp):
    (in_tmp / "dos.txt").write_bytes(b"a\r\nb\r\n")
    assert read_file("dos.txt")["content"] == "a\r\nb\r\n"


def test_read_file_missing_file_raises_saying_no_such_file():
    with pytest.raises(FileNotFoundError, match="no such file: missing.txt"):
        read_file("missing.txt")


def test_read_file_directory_raises_saying_it_is_a_directory(in_tmp):
    (in_tmp / "src").mkdir()
    with pytest.raises(IsADirectoryError, match="src is a directory"):
        read_file("src")


def test_read_file_non_utf8_raises_saying_not_utf8(in_tmp):
    (in_tmp / "image.bin").write_bytes(b"\x89PNG\xff\xfe\x00\x81")
    with pytest.raises(ValueError, match="image.bin is not a UTF-8 text file"):
        read_file("image.bin")


# --- list_files ----------------------------------------------------------------------------


def test_list_files_is_sorted_by_name_and_marks_files_and_dirs(in_tmp):
    for name in ["zeta.py", "alpha.txt", "Beta.md"]:
        (in_tmp / name).write_text("x")
    (in_tmp / "middle").mkdir()
    assert list_files(".") == {
        "path": ".",
        "files": [
            {"name": "Beta.md", "type": "file"},
            {"name": "alpha.txt", "type": "file"},
            {"name": "middle", "type": "dir"},
            {"name": "zeta.py", "type": "file"},
        ],
    }


def test_list_files_defaults_to_the_current_directory(in_tmp):
    (in_tmp / "only.txt").write_text("x")
    assert list_files() == {"path": ".", "files": [{"name": "only.txt", "type": "file"}]}


def test_list_files_of_a_subfolder(in_tmp):
    (in_tmp / "pkg").mkdir()
    (in_tmp / "pkg" / "mod.py").write_text("x")
    assert list_files("pkg")["files"] == [{"name": "mod.py", "type": "file"}]


def test_list_files_empty_folder_gives_empty_list():
    assert list_files(".")["files"] == []


def test_list_files_missing_directory_raises():
    with pytest.raises(FileNotFoundError, match="no such directory: nowhere"):
        list_files("nowhere")


def test_list_files_on_a_file_raises_saying_it_is_a_file(in_tmp):
    (in_tmp / "a.txt").write_text("x")
    with pytest.raises(NotADirectoryError, match="a.txt is a file"):
        list_files("a.txt")


# --- edit_file: create / overwrite (old_str == "") -------------------------------------------


def test_edit_file_with_empty_old_str_creates_the_file(in_tmp):
    assert edit_file("new.py", "", "print('hi')\n") == {"path": "new.py", "action": "created"}
    assert (in_tmp / "new.py").read_bytes() == b"print('hi')\n"


def test_edit_file_create_makes_missing_parent_folders(in_tmp):
    assert edit_file("a/b/c.txt", "", "deep")["action"] == "created"
    assert (in_tmp / "a" / "b" / "c.txt").read_text() == "deep"


def test_edit_file_with_empty_old_str_overwrites_an_existing_file(in_tmp):
    (in_tmp / "f.txt").write_text("old content that is longer")
    assert edit_file("f.txt", "", "new") == {"path": "f.txt", "action": "overwritten"}
    assert (in_tmp / "f.txt").read_text() == "new"


def test_edit_file_create_writes_utf8_without_newline_translation(in_tmp):
    edit_file("u.txt", "", "你好\r\nworld\n")
    assert (in_tmp / "u.txt").read_bytes() == "你好\r\nworld\n".encode()


def test_edit_file_create_on_a_directory_raises(in_tmp):
    (in_tmp / "d").mkdir()
    with pytest.raises(IsADirectoryError, match="d is a directory"):
        edit_file("d", "", "x")


# --- edit_file: replace (old_str must occur exactly once) ------------------------------------


def test_edit_file_replaces_a_unique_occurrence(in_tmp):
    (in_tmp / "g.py").write_text("def greet(name):\n    return 'Hello'\n")
    assert edit_file("g.py", "'Hello'", "'你好'") == {"path": "g.py", "action": "edited"}
    assert (in_tmp / "g.py").read_text(encoding="utf-8") == "def greet(name):\n    return '你好'\n"


def test_edit_file_replace_preserves_crlf_elsewhere_in_the_file(in_tmp):
    (in_tmp / "dos.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    edit_file("dos.txt", "two", "TWO")
    assert (in_tmp / "dos.txt").read_bytes() == b"one\r\nTWO\r\nthree\r\n"


@pytest.mark.parametrize("text, old, found", [
    ("alpha\nbeta\n", "gamma", 0),
    ("x = 1\nx = 1\n", "x = 1", 2),
    ("ab ab ab", "ab", 3),
    ("aaa", "aa", 2),  # overlapping matches count: replacing the first would be a guess
])
def test_edit_file_zero_or_several_occurrences_raise_with_count_and_write_nothing(
        in_tmp, text, old, found):
    target = in_tmp / "t.txt"
    target.write_bytes(text.replace("\n", "\r\n").encode())
    before = target.read_bytes()
    mtime = target.stat().st_mtime_ns
    with pytest.raises(ValueError, match=f"exactly once in t.txt, found {found}"):
        edit_file("t.txt", old, "REPLACED")
    assert target.read_bytes() == before  # byte for byte
    assert target.stat().st_mtime_ns == mtime  # not even rewritten


def test_edit_file_replace_in_a_missing_file_raises_and_creates_nothing(in_tmp):
    with pytest.raises(FileNotFoundError, match="no such file: ghost.py"):
        edit_file("ghost.py", "a", "b")
    assert not (in_tmp / "ghost.py").exists()


def test_edit_file_replace_in_a_non_utf8_file_raises_and_leaves_it(in_tmp):
    (in_tmp / "b.bin").write_bytes(b"\xff\xfeab")
    with pytest.raises(ValueError, match="not a UTF-8"):
        edit_file("b.bin", "ab", "cd")
    assert (in_tmp / "b.bin").read_bytes() == b"\xff\xfeab"


def test_tools_work_relative_to_the_current_directory(in_tmp, tmp_path_factory, monkeypatch):
    other = tmp_path_factory.mktemp("other")
    monkeypatch.chdir(other)
    edit_file("here.txt", "", "x")
    assert (other / "here.txt").exists()
    assert not (in_tmp / "here.txt").exists()
    assert read_file("here.txt")["content"] == "x"


def test_replace_once_is_the_one_rule_every_edit_uses():
    """agent.edit_file, lesson 05's edit_in and lesson 06's edit_file all call it."""
    from agent import replace_once

    assert replace_once("a = 1\nb = 2\n", "b = 2", "b = 3", "x.py") == "a = 1\nb = 3\n"
    with pytest.raises(ValueError, match=r"exactly once in x.py, found 0 \(read the file again"):
        replace_once("a", "b", "c", "x.py")
    with pytest.raises(ValueError, match=r"found 2 \(add surrounding lines"):
        replace_once("aaa", "aa", "b", "x.py")  # overlapping: twice, not once

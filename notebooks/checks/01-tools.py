"""The checks of lesson 01's coding exercises: course.check("01.1", fixed_edit_file) and so on.

Each check runs in a throw-away folder (course.check makes it), and each case builds the
files it needs there, so a check never sees or changes the notebook's workspace."""

import json
import os
import re
from pathlib import Path

import course
from props.tool_lab import SETTINGS  # the notebook's settings file: two debug flags

import agent


def inside(folder: Path, action):
    """Run action() with folder as the working directory (the tools use relative paths)."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        return action()
    finally:
        os.chdir(before)


def files_in(folder: Path) -> dict:
    """Every file and folder under folder: name -> bytes (None for a folder)."""
    return {path.relative_to(folder).as_posix(): None if path.is_dir() else path.read_bytes()
            for path in sorted(folder.rglob("*"))}


def outcome(tool, args) -> tuple:
    """What a call did: ("returns", result) or ("raises", exception)."""
    try:
        return "returns", tool(*args)
    except Exception as exc:  # the student's code may raise anything; that is an outcome too
        return "raises", exc


def said(result: tuple) -> str:
    kind, value = result
    if kind == "returns":
        return f"returns {agent.one_line(agent.to_json(value), 90)}"
    return f"raises {type(value).__name__}: {agent.one_line(str(value), 90)}"


def differences(folder: Path, other: Path) -> list[str]:
    mine, theirs = files_in(folder), files_in(other)
    return sorted(name for name in set(mine) | set(theirs) if mine.get(name, 0) != theirs.get(
        name, 0))


# --- 01.1: the article's edit_file, fixed ------------------------------------------------------


def small_project() -> None:
    """What every case of 01.1 starts from: the files of the notebook's error table."""
    Path("src").mkdir()
    Path("src/greet.py").write_bytes(b'def greet(name):\n    return f"Hello, {name}!"\n')
    Path("notes.txt").write_bytes(b"Tools act; the model decides.\n")
    Path("settings.py").write_bytes(SETTINGS.encode("utf-8"))
    Path("version.txt").write_bytes(b"1.1.1\n")
    Path("logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    Path("windows.txt").write_bytes(b"one\r\ntwo\r\n")


EDIT_CASES = [
    ("create a new file: says created", "创建新文件：返回 created", ("new.txt", "", "new\n")),
    ("create a file in a folder that does not exist yet",
     "在还不存在的文件夹里创建文件", ("sub/dir/new.txt", "", "new\n")),
    ("old_str empty on an existing file: overwrites, says overwritten",
     "已有的文件、old_str 为空：覆盖，返回 overwritten",
     ("notes.txt", "", "replaced\n")),
    ("refuse to create over a directory (IsADirectoryError)",
     "拒绝在文件夹的位置上创建文件（IsADirectoryError）", ("src", "", "x")),
    ("replace text that occurs once: says edited",
     "替换只出现一次的文本：返回 edited", ("src/greet.py", "Hello", "Hi")),
    ("refuse old_str that is not there (ValueError, found 0), write nothing",
     "拒绝不存在的 old_str（ValueError，found 0），什么也不写",
     ("notes.txt", "Goodbye", "Bye")),
    ("refuse old_str that occurs twice (found 2), write nothing",
     "拒绝出现两次的 old_str（found 2），什么也不写",
     ("settings.py", '"debug": True', '"debug": False')),
    ("refuse overlapping matches: 1.1 starts twice in 1.1.1 (found 2)",
     "拒绝重叠的匹配：1.1 在 1.1.1 里有两个起始位置（found 2）",
     ("version.txt", "1.1", "1.2")),
    ("refuse to edit a missing file (FileNotFoundError)",
     "拒绝编辑不存在的文件（FileNotFoundError）", ("missing.py", "x", "y")),
    ("refuse to edit a directory (IsADirectoryError)",
     "拒绝编辑文件夹（IsADirectoryError）", ("src", "x", "y")),
    ("refuse a file that is not UTF-8 (ValueError)",
     "拒绝不是 UTF-8 的文件（ValueError）", ("logo.png", "PNG", "JPG")),
    ("keep \\r\\n line endings when editing",
     "编辑时保留 \\r\\n 换行符", ("windows.txt", "two", "2")),
]


def same_as_edit_file(yours, args, case: int) -> None:
    """Run yours and agent.edit_file on twin copies of the small project; assert they agree."""
    folders = {}
    for who in ("yours", "agent"):
        folders[who] = Path(f"case{case}", who)
        folders[who].mkdir(parents=True)
        inside(folders[who], small_project)
    mine = inside(folders["yours"], lambda: outcome(yours, args))
    wanted = inside(folders["agent"], lambda: outcome(agent.edit_file, args))
    told = course.both(f"yours {said(mine)}; agent.edit_file {said(wanted)}",
                       f"你的函数：{said(mine)}；agent.edit_file：{said(wanted)}")
    assert mine[0] == wanted[0], told
    if wanted[0] == "returns":
        assert mine[1] == wanted[1], told
    else:
        assert type(mine[1]) is type(wanted[1]), told
        count = re.search(r"found \d+", str(wanted[1]))
        assert not count or count.group() in str(mine[1]), course.both(
            f"the message should say how many it found ({count.group()}): {told}",
            f"消息里应当说明找到了几处（{count.group()}）：{told}")
    changed = differences(folders["yours"], folders["agent"])
    assert not changed, course.both(
        f"afterwards these differ from agent.edit_file's: {', '.join(changed)}",
        f"运行之后，这些文件和 agent.edit_file 留下的不一样：{', '.join(changed)}")


@course.exercise("01.1", "the article's edit_file, fixed until it behaves like agent.edit_file",
                         "修好文章里的 edit_file，改到行为和 agent.edit_file 一样")
def _(t, fixed_edit_file):
    for number, (what, zh, args) in enumerate(EDIT_CASES, 1):
        with t.case(what, zh):
            same_as_edit_file(fixed_edit_file, args, number)


# --- 01.2: find_text -------------------------------------------------------------------------


def searchable_project() -> None:
    for name, data in {
        "project/a.py": b"import os\nprint('hello')\n",
        "project/notes.md": b"hello world\nhello again\n",
        "project/sub/b.txt": b"nothing to see\n",
        "project/sub/deep/c.txt": b"one\ntwo\nsay hello\n",
        "project/logo.png": b"\x89PNG hello \xff\xfe",  # "hello" is in it, but it is not text
    }.items():
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_bytes(data)
    Path("project/empty").mkdir()


FOUND = [{"path": "project/a.py", "line": 2}, {"path": "project/notes.md", "line": 1},
         {"path": "project/sub/deep/c.txt", "line": 3}]


def short(value) -> str:
    return agent.one_line(repr(value), 150)


def matches_of(result, call: str) -> list:
    assert isinstance(result, dict) and "matches" in result, course.both(
        f"{call} should return a dict with 'path' and 'matches', not {short(result)}",
        f"{call} 应当返回一个带 'path' 和 'matches' 的字典，而不是 {short(result)}")
    return result["matches"]


@course.exercise("01.2", "find_text(text, path): which files contain the text, and where",
                         "find_text(text, path)：哪些文件含有这段文本，在哪一行")
def _(t, find_text):
    searchable_project()
    with t.case("returns {'path': path, 'matches': [...]}, like list_files returns 'files'",
                "返回 {'path': path, 'matches': [...]}，就像 list_files 返回 'files'"):
        result = find_text("hello", "project")
        matches_of(result, "find_text('hello', 'project')")
        assert result.get("path") == "project", course.both(
            f"'path' is {result.get('path')!r}, not 'project'",
            f"'path' 是 {result.get('path')!r}，不是 'project'")
    with t.case("finds the text in every subfolder, and only in text files",
                "在每个子文件夹里找，而且只找文本文件"):
        found = matches_of(find_text("hello", "project"), "find_text('hello', 'project')")
        paths = sorted(str(m.get("path")) for m in found if isinstance(m, dict))
        wanted = sorted(m["path"] for m in FOUND)
        assert paths == wanted, course.both(f"found {paths}, expected {wanted}",
                                            f"找到的是 {paths}，应当是 {wanted}")
    with t.case("each match is {path, line}: the path as read_file takes it, the first line "
                "(counting from 1), sorted by path",
                "每个匹配是 {path, line}：path 是 read_file 能接受的路径，line 是第一个含有该"
                "文本的行（从 1 数起）；按路径排序"):
        found = matches_of(find_text("hello", "project"), "find_text('hello', 'project')")
        assert found == FOUND, course.both(f"got {short(found)}", f"得到的是 {short(found)}")
    with t.case("a file that is not UTF-8 is skipped, not an error",
                "不是 UTF-8 的文件跳过，不算错误"):
        found = matches_of(find_text("PNG", "project"), "find_text('PNG', 'project')")
        assert found == [], course.both(
            f"find_text('PNG', 'project') should find nothing, got {found}",
            f"find_text('PNG', 'project') 应当什么也找不到，却得到 {found}")
    with t.case("the default path '.' gives paths without './'",
                "默认路径 '.' 给出的路径不带 './'"):
        found = inside(Path("project"), lambda: find_text("hello"))["matches"]
        wanted = [{**m, "path": m["path"].removeprefix("project/")} for m in FOUND]
        assert found == wanted, course.both(f"got {short(found)}", f"得到的是 {short(found)}")
    with t.case("the result turns into JSON (what the model receives)",
                "结果能转成 JSON（也就是模型收到的内容）"):
        result = find_text("hello", "project")
        assert json.loads(json.dumps(result)) == result, course.both(
            "json.dumps cannot write it unchanged", "json.dumps 无法把结果原样写出来")
    with t.case("a missing folder raises FileNotFoundError, as list_files does",
                "文件夹不存在时抛出 FileNotFoundError，和 list_files 一样"):
        kind, value = outcome(find_text, ("hello", "nowhere"))
        assert kind == "raises" and isinstance(value, FileNotFoundError), course.both(
            f"find_text('hello', 'nowhere') {said((kind, value))}",
            f"find_text('hello', 'nowhere') 的结果：{said((kind, value))}")
    with t.case("a file instead of a folder raises NotADirectoryError, as list_files does",
                "给的是文件而不是文件夹时，抛出 NotADirectoryError，和 list_files 一样"):
        kind, value = outcome(find_text, ("hello", "project/a.py"))
        assert kind == "raises" and isinstance(value, NotADirectoryError), course.both(
            f"find_text('hello', 'project/a.py') {said((kind, value))}",
            f"find_text('hello', 'project/a.py') 的结果：{said((kind, value))}")


# --- 01.3: explain the line-ending trap --------------------------------------------------------


def mentions_crlf(message: str) -> bool:
    return "\\r\\n" in message or "\r\n" in message


def refused(tool, args, *, path: str) -> str:
    """The message of the ValueError tool(*args) raises; asserts it raised and wrote nothing."""
    before = Path(path).read_bytes()
    kind, value = outcome(tool, args)
    assert kind == "raises" and isinstance(value, ValueError), course.both(
        f"{args[0]}: expected a ValueError, but it {said((kind, value))}",
        f"{args[0]}：应当抛出 ValueError，实际结果是 {said((kind, value))}")
    assert Path(path).read_bytes() == before, course.both(
        f"{path} was changed, though the edit was refused", f"修改被拒绝了，{path} 却还是变了")
    return str(value)


@course.exercise("01.3", "edit_file that explains a miss caused by \\r\\n line endings",
                         "能说明 \\r\\n 换行符造成匹配失败的 edit_file")
def _(t, edit_file_crlf_hint):
    def dos():  # a fresh copy for each case
        Path("dos.txt").write_bytes(b"one\r\ntwo\r\n")

    with t.case("old_str with \\n on a \\r\\n file: refused, the message names \\r\\n",
                "\\r\\n 文件、old_str 里是 \\n：拒绝，消息里提到 \\r\\n"):
        dos()
        message = refused(edit_file_crlf_hint, ("dos.txt", "one\ntwo", "1\n2"), path="dos.txt")
        assert mentions_crlf(message), course.both(
            f"the message does not mention \\r\\n: {message!r}",
            f"消息里没有提到 \\r\\n：{message!r}")
    with t.case("and nothing is guessed: the file is unchanged", "而且不做猜测：文件不变"):
        dos()
        outcome(edit_file_crlf_hint, ("dos.txt", "one\ntwo", "1\n2"))
        assert Path("dos.txt").read_bytes() == b"one\r\ntwo\r\n", course.both(
            f"dos.txt became {Path('dos.txt').read_bytes()!r}",
            f"dos.txt 变成了 {Path('dos.txt').read_bytes()!r}")
    with t.case("old_str with \\r\\n on a \\r\\n file: edited, \\r\\n kept",
                "\\r\\n 文件、old_str 里是 \\r\\n：修改成功，\\r\\n 保留"):
        dos()
        result = outcome(edit_file_crlf_hint, ("dos.txt", "one\r\ntwo", "1\r\n2"))
        assert result == ("returns", {"path": "dos.txt", "action": "edited"}), said(result)
        assert Path("dos.txt").read_bytes() == b"1\r\n2\r\n", course.both(
            f"dos.txt became {Path('dos.txt').read_bytes()!r}",
            f"dos.txt 变成了 {Path('dos.txt').read_bytes()!r}")
    with t.case("a real miss on a \\r\\n file is the ordinary 'read the file again'",
                "\\r\\n 文件里确实找不到时，仍给出普通的 'read the file again'"):
        dos()
        message = refused(edit_file_crlf_hint, ("dos.txt", "three", "3"), path="dos.txt")
        assert "read the file again" in message and not mentions_crlf(message), \
            course.both(f"got {message!r}", f"得到的是 {message!r}")
    with t.case("a \\n file does not use \\r\\n, so its misses are ordinary too "
                "(even with \\r\\n in old_str)",
                "\\n 文件不用 \\r\\n，所以匹配失败也是普通的那种（即使 old_str 里有 \\r\\n）"):
        Path("unix.txt").write_bytes(b"one\ntwo\n")
        message = refused(edit_file_crlf_hint, ("unix.txt", "one\r\ntwo", "1"), path="unix.txt")
        assert "read the file again" in message and not mentions_crlf(message), \
            course.both(f"got {message!r}", f"得到的是 {message!r}")
    with t.case("everything else is still edit_file: create, edit once, refuse two matches",
                "其余行为仍和 edit_file 一样：创建、替换一处、拒绝两处匹配"):
        result = outcome(edit_file_crlf_hint, ("new.txt", "", "a a\n"))
        assert result == ("returns", {"path": "new.txt", "action": "created"}), said(result)
        message = refused(edit_file_crlf_hint, ("new.txt", "a", "b"), path="new.txt")
        assert "found 2" in message, course.both(f"got {message!r}", f"得到的是 {message!r}")
        result = outcome(edit_file_crlf_hint, ("new.txt", "a a", "b"))
        assert result == ("returns", {"path": "new.txt", "action": "edited"}), said(result)


# --- 01.4: replace_all -----------------------------------------------------------------------


@course.exercise("01.4", "edit_file with replace_all, exactly once by default",
                         "带 replace_all 的 edit_file，默认仍是恰好一次")
def _(t, edit_file_all):
    def config():
        Path("config.py").write_bytes(b"x = old\r\ny = old\r\n")

    with t.case("replace_all=True replaces every match, says how many, keeps \\r\\n",
                "replace_all=True 替换所有匹配，说明替换了几处，保留 \\r\\n"):
        config()
        result = outcome(edit_file_all, ("config.py", "old", "new", True))
        wanted = {"path": "config.py", "action": "edited", "replaced": 2}
        assert result == ("returns", wanted), said(result)
        assert Path("config.py").read_bytes() == b"x = new\r\ny = new\r\n", course.both(
            f"config.py became {Path('config.py').read_bytes()!r}",
            f"config.py 变成了 {Path('config.py').read_bytes()!r}")
    with t.case("by default it is still exactly once: two matches are refused, nothing written",
                "默认仍是恰好一次：两处匹配被拒绝，什么也不写"):
        config()
        message = refused(edit_file_all, ("config.py", "old", "new"), path="config.py")
        assert "found 2" in message, course.both(f"got {message!r}", f"得到的是 {message!r}")
    with t.case("replace_all=False edits a single match like edit_file",
                "replace_all=False 像 edit_file 一样，替换唯一的一处匹配"):
        config()
        kind, value = outcome(edit_file_all, ("config.py", "x = old", "x = new", False))
        assert kind == "returns" and value.get("action") == "edited" and \
            value.get("replaced", 1) == 1, said((kind, value))
        assert Path("config.py").read_bytes() == b"x = new\r\ny = old\r\n"
    with t.case("replace_all=True with no match is refused (found 0): the model's picture of "
                "the file is stale",
                "replace_all=True 却一处也没匹配到：拒绝（found 0），说明模型对文件的印象已经过时"):
        config()
        message = refused(edit_file_all, ("config.py", "older", "new", True), path="config.py")
        assert "found 0" in message, course.both(f"got {message!r}", f"得到的是 {message!r}")
    with t.case("replace_all=True with one match: replaced 1",
                "replace_all=True 且只有一处匹配：replaced 1"):
        config()
        result = outcome(edit_file_all, ("config.py", "y = old", "y = new", True))
        assert result == ("returns", {"path": "config.py", "action": "edited", "replaced": 1}), \
            said(result)
    with t.case("overlapping matches are refused even with replace_all ('aa' in 'aaa')",
                "即使用 replace_all，重叠的匹配也被拒绝（'aaa' 里的 'aa'）"):
        Path("overlap.txt").write_bytes(b"aaa")
        refused(edit_file_all, ("overlap.txt", "aa", "b", True), path="overlap.txt")
    with t.case("old_str empty still creates the file", "old_str 为空时仍然创建文件"):
        result = outcome(edit_file_all, ("new.txt", "", "hello\n"))
        assert result == ("returns", {"path": "new.txt", "action": "created"}), said(result)


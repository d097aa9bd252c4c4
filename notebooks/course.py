"""Helpers the notebooks share. Nothing here is part of the agent.

In a notebook:
  fresh_workspace(name)    a new temporary folder to work in; says where it is, and that it is
                           deleted when the kernel stops
  scratch()                a throw-away folder for one block of code (checks, exercises)
  table(), history()       readable tables: HTML in Jupyter, aligned text everywhere else
  watch(agent)             the history table, growing in place as each message lands
  rewind(label, *things)   makes a cell that carries a story on safe to run again
  check("04.2", answer)    runs an exercise's checks on your code and says what passed
                           (in Chinese in a notebook of notebooks/zh/: see "Two languages")
  import sandbox           a lesson's export cells, loaded as a module (any lesson with them);
                           an export cell run in this kernel is part of that module at once

From a shell:
  python notebooks/course.py export NN-slug -o FILE.py   a lesson's export cells as one module
  python notebooks/course.py export --all -o DIR          every lesson's, one module each
  python notebooks/course.py build DIR [--with-eval]      a standalone agent project (the kit)
  python notebooks/course.py execute NN-slug | --all      re-run notebooks, save their outputs
  python notebooks/course.py zh-sync NN-slug | --all      bring notebooks/zh/NN-slug.ipynb in
                                                          step with the English notebook
"""

from __future__ import annotations

import argparse
import ast
import atexit
import contextlib
import copy
import functools
import hashlib
import html
import importlib.abc
import importlib.util
import io
import json
import linecache
import os
import re
import shutil
import string
import subprocess
import sys
import tempfile
import tokenize
import traceback
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent
ROOT = NOTEBOOKS.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import agent  # noqa: E402  (needs the path above)

# The first lines of every notebook's first code cell (a test checks it). They find this
# file from wherever the notebook was opened, and say in one sentence what to do if they can't.
FIRST_CELL = '''\
# Find the course's helpers (notebooks/course.py): above this folder, or in the repository
# that $AGENT_FROM_ZERO names - so a copy of this notebook runs anywhere.
import os
import sys
from pathlib import Path

if "course" not in sys.modules:
    places = [Path.cwd(), *Path.cwd().parents, Path(os.environ.get("AGENT_FROM_ZERO", "."))]
    found = [p / "notebooks" for p in places if (p / "notebooks" / "course.py").is_file()]
    if not found:
        import warnings  # IPython adds "To exit: use 'exit'..." to a SystemExit: not wanted here

        warnings.filterwarnings("ignore", "To exit")
        raise SystemExit("This notebook needs the course's files: open it from the notebooks/"
                         " folder of Agent from Zero, or set AGENT_FROM_ZERO to the folder that"
                         " holds agent.py before starting Jupyter.")
    sys.path.insert(0, str(found[0].resolve()))
import course  # also puts the repository on sys.path, so `import agent` works
'''


# --- Two languages: a notebook in notebooks/zh/ speaks Chinese --------------------------------
# notebooks/zh/NN-slug.ipynb is the English notebook with its prose in Chinese. Jupyter starts a
# notebook's kernel in the notebook's folder, and the first cell imports course there: so the
# folder the kernel started in says which language course speaks, and no student has a setting
# to find. It is read once, at that import; fresh_workspace moves the working directory later,
# and the language stays. use_language("zh") sets it by hand (tests; a copy opened elsewhere).

ZH_NOTEBOOKS = NOTEBOOKS / "zh"


def language_of(folder) -> str:
    """ "zh" for notebooks/zh/ (and any folder inside it), "en" for every other folder."""
    folder = Path(folder).resolve()
    return "zh" if folder == ZH_NOTEBOOKS or ZH_NOTEBOOKS in folder.parents else "en"


LANGUAGE = language_of(Path.cwd())


def use_language(language: str) -> str:
    """Make course speak language ("en" or "zh") from now on; returns the one it spoke."""
    global LANGUAGE
    if language not in ("en", "zh"):
        raise ValueError(f"course speaks 'en' or 'zh', not {language!r}")
    before, LANGUAGE = LANGUAGE, language
    return before


# Every sentence course itself shows a student, in both languages; {name} is filled in. A
# Chinese notebook's outputs are its English notebook's with these sentences (and the checks'
# texts) in Chinese - in_chinese() below makes one from the other - so the Chinese notebooks
# need no run of their own. Errors the agent sends to the model are not here: they stay English,
# part of the protocol the lessons show.
MESSAGES = {
    "workspace": (
        "workspace: {path}\n(a new temporary folder, now the current directory; it is deleted "
        "when the kernel shuts down - a killed kernel leaves it behind - so copy out anything "
        "you want to keep)",
        "工作区：{path}\n（新建的临时文件夹，现在是当前目录。内核关闭时删除，内核被强行终止时会"
        "留下；想保留的文件，请先复制出去）"),
    "not in its module": (
        "note: this cell ran, but not as part of the module {name}: {error} (an exported "
        "{name}.py would fail the same way)",
        "注意：这个单元格运行了，但没有成为模块 {name} 的一部分：{error}（导出的 {name}.py "
        "也会这样失败）"),
    "saved cells fail": (
        "note: the saved export cells of {name} do not run ({error}); {name} is made of the "
        "export cells run in this kernel only",
        "注意：{name} 保存在笔记本里的导出单元格运行不了（{error}）；{name} 只由这个内核里运行过的"
        "导出单元格组成"),
    "cannot rewind": (
        "rewind cannot remember a {kind}; give it an Agent, a ScriptedClient, a list, a dict or "
        "a folder",
        "rewind 记不住 {kind}：请交给它 Agent、ScriptedClient、列表、字典或文件夹"),
    "no exercise": (
        "no exercise {exercise!r}: the checks are in {folder}/",
        "没有练习 {exercise!r}：各练习的检查在 {folder}/ 里"),
    # a check's report (Report): its first line, then one line per case
    "report": ("Exercise {exercise}, {title}: {verdict}", "练习 {exercise} · {title}——{verdict}"),
    "all pass": ("all pass - well done", "全部通过，做得好"),
    "some pass": ("{good} of {total} pass", "{total} 项中通过 {good} 项"),
    "PASS": ("PASS", "通过"),
    "FAIL": ("FAIL", "失败"),
    "not written": ("not written yet", "还没写"),
    "raised": ("your code raised {error}", "你的代码抛出了 {error}"),
    "stopped": ("the check stopped", "检查中途停下了"),
    "could not start": ("the check could not start", "检查没法开始"),
    "could not finish": ("the check could not finish", "检查没能做完"),
}


def say(key: str, language: str | None = None, **values) -> str:
    """MESSAGES[key] in the language course speaks (or the one given), values filled in."""
    english, chinese = MESSAGES[key]
    return (chinese if (language or LANGUAGE) == "zh" else english).format(**values)


# --- Folders --------------------------------------------------------------------------------


def fresh_workspace(name: str = "workspace") -> Path:
    """Create an empty temporary folder, make it the working directory, return its path.
    It is removed when the kernel exits normally (atexit: not when the kernel is killed);
    the notebook says so where it is made."""
    path = Path(tempfile.mkdtemp(prefix=f"afz-{name}-")).resolve()
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    os.chdir(path)
    print(say("workspace", path=path))
    return path


@contextlib.contextmanager
def scratch(name: str = "scratch"):
    """A throw-away temporary folder as the working directory, for one block of code."""
    before = os.getcwd()
    path = Path(tempfile.mkdtemp(prefix=f"afz-{name}-")).resolve()
    os.chdir(path)
    try:
        yield path
    finally:
        os.chdir(before)
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def working_in(folder):
    """`folder` as the working directory for one block of code, and the one before it again
    afterwards: a cell whose tools work in a folder says so itself, and leans on no other
    cell's os.chdir. (contextlib.chdir does this from Python 3.11 on.)"""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield Path(folder)
    finally:
        os.chdir(before)


# --- Tables ---------------------------------------------------------------------------------


class Table:
    """Rows under a header: shown as an HTML table by Jupyter, as aligned text elsewhere."""

    def __init__(self, header, rows, width=70):
        self.header = [printable(h) for h in header]
        self.rows = [[printable(cell) for cell in row] for row in rows]
        self.width = width

    def _repr_html_(self):
        def row(cells, tag):
            return "<tr>" + "".join(
                f'<{tag} style="text-align:left;vertical-align:top;white-space:pre-wrap">'
                f"{html.escape(c)}</{tag}>" for c in cells) + "</tr>"
        return ("<table>" + row(self.header, "th")
                + "".join(row(r, "td") for r in self.rows) + "</table>")

    def __repr__(self):
        cells = [[agent.one_line(c, self.width) for c in r] for r in [self.header, *self.rows]]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                 for r in cells]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)


def printable(value) -> str:
    """str(value), with a lone surrogate (half an emoji) shown as \\udXXX: Jupyter cannot
    send one, and a table must never stop a run."""
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")


def table(header, rows, width=70) -> Table:
    return Table(header, rows, width)


def history(messages, width=70) -> Table:
    """The message history, one row per message (and one per extra parallel tool call)."""
    rows = [(i, *row) for i, row in enumerate(agent.history_rows(messages))]
    return Table(["#", "role", "tool call", "tool_call_id", "content"], rows, width)


# --- Watching a run live ----------------------------------------------------------------------


def in_jupyter() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


@contextlib.contextmanager
def watch(bot: agent.Agent, width: int = 70):
    """Show bot's history while it runs: in Jupyter one table, updated in place as each
    message lands; elsewhere one printed line per new row. print_event's lines are left out
    while watching (the table shows the same); any other handler still gets every event."""
    original = bot.on_event
    if in_jupyter():
        from IPython.display import display
        handle = display(history(bot.messages, width), display_id=True)

        def show():
            handle.update(history(bot.messages, width))
    else:
        printed = 0  # lines of the table printed so far, the header included

        def show():
            nonlocal printed
            lines = agent.format_history(bot.messages, width).split("\n")  # not at U+2028
            for line in lines[printed:]:
                print(line)
            printed = len(lines)

    def on_event(event):
        if original is not agent.print_event:
            original(event)
        if event["type"] == "message_end":
            show()

    bot.on_event = on_event
    try:
        yield bot
    finally:
        bot.on_event = original
        show()  # answers appended quietly (after Ctrl-C, say) appear too


# --- Cells that can run again -------------------------------------------------------------------

_rewind_points: dict[str, list] = {}


def rewind(label: str, *things) -> None:
    """The first line of a cell that carries a story on. The first time the cell runs, remember
    the state of each thing; every later time, put it back first, so the cell shows the same
    thing again. Things: an agent.Agent (its history and stop reason, and where its
    ScriptedClient is), a ScriptedClient, a list or a dict (contents), a folder (its files)."""
    things = _with_clients(things)
    point = _rewind_points.get(label)
    if point is not None and len(point) == len(things) and all(
            saved is thing for (saved, _), thing in zip(point, things, strict=True)):
        for thing, state in point:
            _restore(thing, state)
        return
    _rewind_points[label] = [(thing, _remember(thing)) for thing in things]


def _with_clients(things) -> list:
    out = []
    for thing in things:
        out.append(thing)
        client = getattr(thing, "client", None)
        if isinstance(thing, agent.Agent) and isinstance(client, agent.ScriptedClient):
            out.append(client)
    return out


def _remember(thing):
    if isinstance(thing, agent.Agent):
        return copy.deepcopy((thing.messages, thing.stop_reason))
    if isinstance(thing, agent.ScriptedClient):
        return copy.deepcopy((thing.requests, thing.call_count))
    if isinstance(thing, (list, dict)):
        return copy.deepcopy(thing)
    if isinstance(thing, Path) and thing.is_dir():
        return _folder_state(thing)
    raise TypeError(say("cannot rewind", kind=type(thing).__name__))


def _restore(thing, state) -> None:
    state = copy.deepcopy(state)
    if isinstance(thing, agent.Agent):
        thing.messages[:], thing.stop_reason = state
    elif isinstance(thing, agent.ScriptedClient):
        thing.requests[:], thing.call_count = state
    elif isinstance(thing, list):
        thing[:] = state
    elif isinstance(thing, dict):
        thing.clear()
        thing.update(state)
    else:
        _restore_folder(thing, state)


def _folder_state(folder: Path) -> dict:
    state = {}
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        if path.is_symlink():
            state[name] = ("link", os.readlink(path))
        elif path.is_dir():
            state[name] = ("dir", None)
        else:
            state[name] = ("file", path.read_bytes())
    return state


def _restore_folder(folder: Path, state: dict) -> None:
    for path in list(folder.iterdir()):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    for name, (kind, value) in state.items():  # sorted: a folder comes before its files
        path = folder / name
        if kind == "dir":
            path.mkdir()
        elif kind == "link":
            path.symlink_to(value)
        else:
            path.write_bytes(value)


# --- Exercises and their checks ---------------------------------------------------------------

CHECKS = NOTEBOOKS / "checks"
_exercises: dict[str, tuple[str, object]] = {}  # "04.2" -> (title, check function)
_chinese_titles: dict[str, str] = {}  # "04.2" -> its title in Chinese


def exercise(exercise_id: str, title: str, zh: str = ""):
    """Declare the check of one exercise (in notebooks/checks/NN-slug.py): its id, its title,
    and the title in Chinese, written beside it (a Chinese notebook shows that one)."""
    def register(check):
        _exercises[exercise_id] = (title, check)
        _chinese_titles[exercise_id] = zh
        return check
    return register


def both(english: str, chinese: str) -> str:
    """A check's message with its Chinese written beside it:
    `assert ok, course.both(f"got {x!r}", f"得到的是 {x!r}")`. It is the English; a report in a
    Chinese notebook shows the Chinese, which course reads from the checks' source as it reads
    a case's two texts (check_texts), so a saved English report turns Chinese the same way."""
    return english


class Report:
    """What one run of an exercise's checks found: one line per check. A check gives each
    case's text in English and, beside it, in Chinese: t.case("english", "中文")."""

    def __init__(self, exercise_id: str, title: str, title_zh: str = ""):
        self.exercise_id, self.title, self.results = exercise_id, title, []
        self.title_zh = title_zh
        self.chinese: dict[str, str] = {}  # a case's English text -> its Chinese one

    def expect(self, condition, what: str, zh: str = "", detail: str = "") -> bool:
        self._add(bool(condition), what, zh, "" if condition else detail)
        return bool(condition)

    @contextlib.contextmanager
    def case(self, what: str, zh: str = ""):
        """One check: it passes unless the block raises."""
        try:
            yield
        except NotImplementedError:
            self._add(False, what, zh, say("not written", "en"))
        except AssertionError as exc:  # its message is the detail (one line of it)
            self._add(False, what, zh, str(exc).split("\n")[0])
        except Exception as exc:
            self._add(False, what, zh, say("raised", "en", error=_exception_line(exc)))
        else:
            self._add(True, what, zh, "")

    def _add(self, ok: bool, what: str, zh: str, detail: str) -> None:
        self.results.append((ok, what, detail))
        if zh:
            self.chinese[what] = zh

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(ok for ok, _, _ in self.results)

    def __bool__(self) -> bool:
        return self.passed

    def missing_chinese(self) -> list[str]:
        """The texts of this report that have no Chinese beside them (its title first)."""
        missing = [] if self.title_zh else [self.title]
        return missing + [what for _, what, _ in self.results
                          if what not in self.chinese and what not in _COURSE_CASES]

    def text(self, language: str | None = None) -> str:
        """The report in English or Chinese (default: the language course speaks)."""
        language = language or LANGUAGE
        good = sum(ok for ok, _, _ in self.results)
        lines = [_report_line(language, self.exercise_id, self.title, self.title_zh,
                              "all" if self.passed else (good, len(self.results)))]
        for ok, what, detail in self.results:
            lines.append(_case_line(language, ok, what, self.chinese.get(what, ""), detail))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()


# The cases course itself adds to a report, when a check cannot run to its end.
_COURSE_CASES = {MESSAGES[key][0]: key for key in ("stopped", "could not start",
                                                   "could not finish")}


def _report_line(language, exercise_id, title, title_zh, verdict) -> str:
    """A report's first line; verdict is "all" or (passed, cases)."""
    if verdict == "all":
        shown = say("all pass", language)
    else:
        shown = say("some pass", language, good=verdict[0], total=verdict[1])
    return say("report", language, exercise=exercise_id,
               title=(title_zh or title) if language == "zh" else title, verdict=shown)


def _case_line(language, ok, what, what_zh, detail) -> str:
    """One line of a report. In Chinese, a dash sets the detail off (a case's text may hold a
    colon), and a text that has no Chinese stays English, with the ": " after it; a detail is
    the check's own message, in Chinese where the check wrote it with course.both, and the
    words course writes in one (not written yet, your code raised ...) are Chinese."""
    mark = say("PASS" if ok else "FAIL", language)
    if language != "zh":
        return f"  {mark}  {what}" + (f": {detail}" if detail else "")
    if not what_zh and what in _COURSE_CASES:
        what_zh = say(_COURSE_CASES[what], "zh")
    line = f"  {mark}  {what_zh or what}"
    if detail:
        line += ("——" if what_zh else ": ") + _detail_in_chinese(detail)
    return line


def _detail_in_chinese(detail: str) -> str:
    """A case's detail in Chinese: the check's message given with course.both, or the words
    course wrote; else as it is (a value the check shows, or a message with no Chinese)."""
    return _check_text_in_chinese(detail) or _message_in_chinese(detail, _DETAILS)


def _exception_line(exc: BaseException) -> str:
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def check(exercise_id: str, *answers) -> Report:
    """Run exercise exercise_id's checks on your answer(s), in a scratch folder, and say in
    plain words what passed and what did not."""
    title, run = _find_exercise(exercise_id)
    report = Report(exercise_id, title, _chinese_titles.get(exercise_id, ""))
    with scratch(f"check-{exercise_id}"):
        try:
            run(report, *answers)
        except AssertionError as exc:  # the check's own assert, outside a case
            report.results.append((False, say("stopped", "en"), str(exc)))
        except NotImplementedError:
            report.results.append((False, say("could not start", "en"),
                                   say("not written", "en")))
        except Exception as exc:
            report.results.append((False, say("could not finish", "en"),
                                   say("raised", "en", error=_exception_line(exc))))
    return report


def _find_exercise(exercise_id: str):
    if exercise_id not in _exercises:
        lesson = exercise_id.split(".")[0]
        for path in sorted(CHECKS.glob(f"{lesson}-*.py")):
            _load_file(path, f"checks_{path.stem.replace('-', '_')}")
    if exercise_id not in _exercises:
        raise LookupError(say("no exercise", exercise=exercise_id, folder=CHECKS.name))
    return _exercises[exercise_id]


def all_exercises() -> dict[str, tuple[str, object]]:
    """Every exercise of every lesson: id -> (title, check)."""
    for path in sorted(CHECKS.glob("[0-9][0-9]-*.py")):
        _load_file(path, f"checks_{path.stem.replace('-', '_')}")
    return dict(sorted(_exercises.items()))


def _load_file(path: Path, module_name: str):
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


# --- Chinese: the checks' texts, and a Chinese notebook's outputs -------------------------------
# A check writes each text a student reads as two string literals side by side, English then
# Chinese: course.exercise("01.2", "find_text(...)", "find_text(……)"), t.case("english",
# "中文"), t.expect(condition, "english", "中文", detail=...), or a tuple ("english", "中文", ...)
# in a list of cases. A report shows the Chinese one in a Chinese notebook. The cases exist only
# while a check runs, so in_chinese() reads the pairs from the checks' source instead: any two
# such literals side by side (an f-string pair is a template), which needs no run and no
# kernel. tests/test_zh_checks.py runs every check and compares both ways of getting Chinese.

_CJK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
# what {value!r} shows: a string's quoted text whole, or the repr of a number, a list, None
# (which starts with no quote: a quoted text is never cut short, so its ": " stays inside it)
_QUOTED = r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^'"].*?)"""


def _literal(node) -> str | None:
    """The text of a string literal (an f-string's text without its {values}), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    return None


def _template(english: ast.JoinedStr, chinese) -> tuple[re.Pattern, list]:
    """An f-string pair as (a pattern of the English, the Chinese as text and group numbers).
    A value the Chinese shows is the English one with the same code, or else the one in the
    same place."""
    pattern, sources = "", []
    for value in english.values:
        if isinstance(value, ast.Constant):
            pattern += re.escape(value.value)
        else:
            pattern += _QUOTED if value.conversion == ord("r") else "(.+?)"
            sources.append(ast.unparse(value.value))
    mine = [ast.unparse(v.value) for v in getattr(chinese, "values", [])
            if not isinstance(v, ast.Constant)]
    by_code = all(code in sources for code in mine)
    if not by_code and len(mine) != len(sources):
        raise ValueError("the Chinese shows values the English does not")
    parts, place = [], 0
    for value in getattr(chinese, "values", [chinese]):
        if isinstance(value, ast.Constant):
            parts.append(value.value)
        else:  # the number of the English group it shows
            parts.append(1 + (sources.index(mine[place]) if by_code else place))
            place += 1
    return re.compile(pattern), parts


@functools.cache
def check_texts() -> tuple[dict[str, str], list, list[str], set[str]]:
    """Every text the checks give in both languages, read from their source: (English ->
    Chinese, the f-string templates as (pattern, parts, a failure message?), the problems found:
    one English text given two Chinese ones, or a template that cannot be followed, the plain
    texts given as a case's, a title's: not only as a course.both message)."""
    exact, templates, problems, cases = {}, [], [], set()
    for path in sorted(CHECKS.glob("[0-9][0-9]-*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, (ast.Call, ast.Tuple, ast.List)):
                continue
            row = node.args if isinstance(node, ast.Call) else node.elts
            message = isinstance(node, ast.Call) and ast.unparse(node.func) == "course.both"
            for english, chinese in zip(row, row[1:], strict=False):
                en, zh = _literal(english), _literal(chinese)
                if en is None or zh is None or _CJK.search(en) or not _CJK.search(zh):
                    continue
                where = f"{path.name}:{english.lineno}"
                if isinstance(english, ast.JoinedStr):
                    try:
                        templates.append((*_template(english, chinese), message))
                    except ValueError as exc:
                        problems.append(f"{where}: {exc}")
                elif isinstance(chinese, ast.JoinedStr):
                    problems.append(f"{where}: the Chinese is an f-string, the English is not")
                elif exact.setdefault(en, zh) != zh:
                    problems.append(f"{where}: {en!r} has two Chinese texts: {exact[en]!r} "
                                    f"and {zh!r}")
                elif not message:
                    cases.add(en)
    return exact, templates, problems, cases


def _check_text_in_chinese(text: str, messages: bool = True) -> str:
    """A check's text in Chinese, "" if it has none. messages=False: only a case's (or a
    title's) text, never a failure message: one that starts with a value ("{n} lines: {x}")
    would match a whole "case: detail" line. Of the templates that match, the one with the
    most literal text: "asked about {x}" is not "asked {x}" with the value "about ..."."""
    exact, patterns, _, cases = check_texts()
    if text in exact and (messages or text in cases):
        return exact[text]
    best, literal = "", -1
    for pattern, parts, message in patterns:
        found = None if message and not messages else pattern.fullmatch(text)
        size = found and len(text) - sum(len(value) for value in found.groups())
        if found and size > literal:  # a value that is itself a text the checks translate
            best, literal = "".join(p if isinstance(p, str) else exact.get(found[p], found[p])
                                    for p in parts), size  # is shown translated
    return best


def _pattern(template: str, **patterns) -> re.Pattern:
    """A pattern that matches template.format(...), each {name} a group (patterns: its own)."""
    pattern, seen = "", set()
    for literal, name, _, _ in string.Formatter().parse(template):
        pattern += re.escape(literal)
        if name is not None:
            group = patterns.get(name, ".+?")
            pattern += f"(?P={name})" if name in seen else f"(?P<{name}>{group})"
            seen.add(name)
    return re.compile(pattern)


def _fill(template: str, values: dict) -> str:
    """template with each {name} replaced by values[name] as it is (matched text: no !r)."""
    return "".join(literal + ("" if name is None else values[name])
                   for literal, name, _, _ in string.Formatter().parse(template))


_NOTES = ("workspace", "not in its module", "saved cells fail")  # printed alone, by course
_DETAILS = ("not written", "raised")  # the words course writes into a case's detail


def _message_in_chinese(text: str, keys) -> str:
    """text in Chinese if it is one of MESSAGES[keys], else text as it is."""
    for key in keys:
        found = _pattern(MESSAGES[key][0]).fullmatch(text)
        if found:
            return _fill(MESSAGES[key][1], found.groupdict())
    return text


_VERDICT = _pattern(MESSAGES["some pass"][0], good=r"\d+", total=r"\d+")
_REPORT_LINE = _pattern(MESSAGES["report"][0], exercise=r"\d+\.\d+", title=".+",
                        verdict=f"{re.escape(MESSAGES['all pass'][0])}|{_VERDICT.pattern}")
_CASE_LINE = re.compile(f"  ({MESSAGES['PASS'][0]}|{MESSAGES['FAIL'][0]})  (.*)")


def in_chinese(text: str) -> str:
    """An output's text as a Chinese notebook shows it: the lines course printed (its notes,
    a check's report) in Chinese, every other line as it is. What zh-sync gives a Chinese
    notebook for each output of the English one; a Chinese kernel prints the same."""
    lines, shown, at, in_report = text.split("\n"), [], 0, False
    while at < len(lines):
        for key in _NOTES:
            size = MESSAGES[key][0].count("\n") + 1
            found = _pattern(MESSAGES[key][0]).fullmatch("\n".join(lines[at:at + size]))
            if found:
                shown.append(_fill(MESSAGES[key][1], found.groupdict()))
                at += size
                break
        else:
            line = lines[at]
            report = _REPORT_LINE.fullmatch(line)
            case = _CASE_LINE.fullmatch(line) if in_report else None
            if report:
                verdict = _VERDICT.fullmatch(report["verdict"])
                shown.append(_report_line("zh", report["exercise"], report["title"],
                                          _check_text_in_chinese(report["title"]),
                                          (int(verdict["good"]), int(verdict["total"]))
                                          if verdict else "all"))
                in_report = True
            elif case:
                shown.append(_case_in_chinese(case[1] == MESSAGES["PASS"][0], case[2]))
            else:
                shown.append(line)
            at += 1
    return "\n".join(shown)


def _case_in_chinese(ok: bool, rest: str) -> str:
    """A case's line, "what: detail" in English, in Chinese. Which ": " ends the case's text
    (it may hold some): the last one that leaves a text the checks translate, else the first
    one before a detail course wrote; else the line has no detail."""
    cuts = [at for at in range(len(rest)) if rest.startswith(": ", at)]
    for at in [len(rest), *reversed(cuts)]:
        what = rest[:at]
        zh = _check_text_in_chinese(what, messages=False)
        if zh or what in _COURSE_CASES:
            return _case_line("zh", ok, what, zh, rest[at + 2:])
    for at in cuts:
        if _message_in_chinese(rest[at + 2:], _DETAILS) != rest[at + 2:]:
            return _case_line("zh", ok, rest[:at], "", rest[at + 2:])
    return _case_line("zh", ok, rest, "", "")


# --- Chinese notebooks: kept in step with the English ones --------------------------------------
# notebooks/zh/NN-slug.ipynb has the English notebook's cells, in the same order, with the same
# ids: the markdown in Chinese, the code the same once comments are set aside, the outputs the
# English ones through in_chinese. Each cell's metadata "zh" holds a short hash of the English
# source it follows, so an English change is seen. `python notebooks/course.py zh-sync NN`
# rebuilds it from both; tests/test_zh_notebooks.py keeps the pairs in step.

SYNC_MARK = "zh-sync:"  # a cell that holds it still needs a translator (the tests fail on it)
_NEW_TEXT = "<!-- zh-sync: 新的英文单元格，请译成中文，然后删去这一行 -->\n\n"
_CHANGED_TEXT = ("<!-- zh-sync: 英文原文改了，请对照更新下面的译文，然后删去这条注释。"
                 "现在的英文原文：\n\n{english}\n-->\n\n")
_NEW_COMMENTS = "# zh-sync: 请把教学用的注释译成中文，然后删去这一行\n"
_CHANGED_COMMENTS = "# zh-sync: 英文注释改了，请对照英文笔记本更新，然后删去这一行\n"


def source_hash(source: str) -> str:
    """A short hash of an English cell's source: what its Chinese twin's metadata keeps."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:12]


def code_tokens(source: str) -> list[tuple[int, str]]:
    """A code cell's code as Python reads it: its tokens without comments and blank lines, so
    two cells that differ only in their comments give the same list."""
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [(t.type, "" if t.type in (tokenize.NEWLINE, tokenize.DEDENT) else t.string)
            for t in tokens if t.type not in skipped]


def _has_comments(source: str) -> bool:
    return any(t.type == tokenize.COMMENT for t in
               tokenize.generate_tokens(io.StringIO(source).readline))


def _with_first_line(source: str, line: str) -> str:
    """source with line put first - after an export cell's mark, which must stay first."""
    if export_mark(source):
        mark, _, rest = source.partition("\n")
        return f"{mark}\n{line}{rest}"
    return line + source


def _text_in_chinese(text, like):
    """in_chinese of an output's text, kept a list of lines if it was one."""
    joined = in_chinese("".join(text) if isinstance(text, list) else text)
    return joined.splitlines(keepends=True) if isinstance(like, list) else joined


def outputs_in_chinese(outputs: list) -> list:
    """A code cell's outputs as its Chinese twin shows them: every text through in_chinese."""
    shown = copy.deepcopy(outputs)
    for output in shown:
        if output.get("output_type") == "stream":
            output["text"] = _text_in_chinese(output["text"], output["text"])
        elif "text/plain" in output.get("data", {}):
            plain = output["data"]["text/plain"]
            output["data"]["text/plain"] = _text_in_chinese(plain, plain)
    return shown


def zh_notebook(english_path: Path) -> tuple[dict, list[str]]:
    """The Chinese twin of an English notebook, made from it and the twin as it is now: (the
    notebook, the cells that need a translator, as "id: what to do"). A markdown cell keeps its
    Chinese if the English it translates is unchanged; a code cell is the English code, with
    the twin's comments if its code is the same; outputs and counts are the English ones, with
    course's lines through in_chinese. A cell that needs a translator gets a zh-sync line."""
    english = json.loads(english_path.read_text(encoding="utf-8"))
    zh_path = ZH_NOTEBOOKS / english_path.name
    old = json.loads(zh_path.read_text(encoding="utf-8")) if zh_path.exists() else {"cells": []}
    before = {cell.get("id"): cell for cell in old["cells"]}
    cells, todo = [], []
    for cell in english["cells"]:
        source, kind = "".join(cell["source"]), cell["cell_type"]
        reason = "still marked zh-sync: finish it, then delete the zh-sync line"
        twin = copy.deepcopy(cell)
        twin["metadata"] = {**cell.get("metadata", {}), "zh": {"source": source_hash(source)}}
        was = before.get(cell.get("id"))
        mine = "".join(was["source"]) if was and was["cell_type"] == kind else None
        follows = mine is not None and \
            was.get("metadata", {}).get("zh", {}).get("source") == source_hash(source)
        if kind == "markdown":
            translation = _translation(mine)
            if follows and translation is not None:
                twin["source"] = mine  # translated, and the English is unchanged
            elif translation is not None:
                twin["source"] = _CHANGED_TEXT.format(english=source) + translation
                reason = "the English changed: update the translation"
            else:
                twin["source"] = _NEW_TEXT + source
                reason = "new: translate it"

        elif kind == "code":
            twin["outputs"] = outputs_in_chinese(cell.get("outputs", []))
            if mine is not None and _same_code(mine, source):
                twin["source"] = mine  # its Chinese comments stay
                if not follows and SYNC_MARK not in mine:  # the English comments changed
                    twin["source"] = _with_first_line(mine, _CHANGED_COMMENTS)
                    reason = "the English comments changed: update them"
            elif _has_comments(source):
                twin["source"] = _with_first_line(source, _NEW_COMMENTS)
                reason = "new code: translate the comments that teach"
        if SYNC_MARK in "".join(twin["source"]):
            todo.append(f"{cell.get('id')} ({kind}): {reason}")
        cells.append(twin)
    return {**english, "cells": cells}, todo


def _translation(text: str | None) -> str | None:
    """The Chinese of a twin's markdown cell: itself, or what a zh-sync note was put above;
    None if it has none (no twin, or the English copied in to be translated)."""
    if text is None or text.startswith(_NEW_TEXT):
        return None
    if text.startswith(_CHANGED_TEXT.split("{")[0]):
        return text.split("\n-->\n\n", 1)[1] if "\n-->\n\n" in text else None
    return text


def _same_code(one: str, other: str) -> bool:
    """The same code, comments aside, and the same export mark (a comment that matters)."""
    try:
        return code_tokens(one) == code_tokens(other) and export_mark(one) == export_mark(other)
    except (tokenize.TokenError, SyntaxError):
        return one == other


def zh_sync(english_path: Path) -> list[str]:
    """Write notebooks/zh/<the same name> from the English notebook and the Chinese one as it
    is; returns the cells that need a translator."""
    import nbformat
    notebook, todo = zh_notebook(english_path)
    write_file(ZH_NOTEBOOKS / english_path.name,
               nbformat.writes(nbformat.from_dict(notebook)) + "\n")
    return todo


# --- Export cells: load them as a module, or write them to a file -------------------------------


def notebook_path(name: str) -> Path:
    """notebooks/NN-slug.ipynb from "NN-slug", "NN-slug.ipynb" or "NN"."""
    stem = name.removesuffix(".ipynb")
    matches = [NOTEBOOKS / f"{stem}.ipynb"] if (NOTEBOOKS / f"{stem}.ipynb").exists() else \
        sorted(NOTEBOOKS.glob(f"{stem}-*.ipynb"))
    if len(matches) != 1:
        known = ", ".join(p.stem for p in sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb")))
        raise LookupError(f"no notebook {name!r}; the notebooks are: {known}")
    return matches[0]


def module_name(path: Path) -> str:
    """The name a notebook's export cells go by: its slug, "05-sandbox" -> "sandbox"."""
    return path.stem.split("-", 1)[1].replace("-", "_")


def cells(path: Path, tag: str | None = None) -> list[dict]:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return [cell for cell in notebook["cells"] if tag is None
            or tag in cell.get("metadata", {}).get("tags", [])]


# Every export cell starts with this line, naming its module: the kernel cannot see a cell's
# tags, but it sees its text, so this line is how a cell run in Jupyter joins its module.
EXPORT_MARK = "# export: "


def export_mark(source: str) -> str | None:
    """The module an export cell's text says it belongs to, or None for any other cell."""
    first = source.lstrip("\n").split("\n", 1)[0].rstrip()
    name = first.removeprefix(EXPORT_MARK)
    return name if first.startswith(EXPORT_MARK) and name.isidentifier() else None


def without_mark(source: str) -> str:
    """An export cell's code without its first line, the mark (an exported module omits it)."""
    source = source.strip("\n")
    return source.split("\n", 1)[1].strip("\n") if export_mark(source) else source


def export_source(path: Path) -> str:
    """The code of a notebook's export cells, one cell after another, without their marks."""
    code = [without_mark("".join(c["source"])) for c in cells(path, "export")
            if c["cell_type"] == "code"]
    if not code:
        raise LookupError(f"{path.name} has no code cell tagged 'export'")
    return "\n\n\n".join(code) + "\n"


def load_notebook(name: str):
    """A fresh module of a notebook's export cells (a new copy on every call; `import sandbox`
    gives the shared one): the saved file's cells, and then, in a kernel that has run some of
    them, those cells as they were last run, so a copy has the student's edits too."""
    import types
    path = notebook_path(name)
    module = types.ModuleType(module_name(path))
    module.__file__ = str(path)
    _run(export_source(path), f"{path.name} (export cells)", module)
    for source in _cells_run_here.get(module.__name__, []):
        _run(without_mark(source), _kernel_cell_name(module.__name__), module)
    return module


# --- Export cells run in a kernel are their module ---------------------------------------------
# A student edits an export cell and runs it: from then on `import sandbox`, every later cell
# and every check must use that code, not the saved file's. So after each export cell runs, its
# code runs once more inside its module (loaded first from the saved notebook if it is not yet),
# and the names it defined in the notebook are set to the module's objects: one copy of each,
# whatever imports it. (Running a cell again is harmless: export cells only define.)

_cells_run_here: dict[str, list[str]] = {}  # module -> export cells run in this kernel, in order
_kernel_cells = iter(range(1, 1 << 62))  # a name of its own for each run, for tracebacks


def _kernel_cell_name(module: str) -> str:
    return f"{module} (an export cell run in this kernel, #{next(_kernel_cells)})"


def _join_module(result) -> None:
    """IPython's post_run_cell hook: an export cell that ran without error joins its module."""
    source = getattr(result.info, "raw_cell", "") or ""
    name = export_mark(source)
    if name is None or not result.success:
        return
    module = sys.modules.get(name) or _module_to_join(name)
    before = dict(vars(module))
    runs = _cells_run_here.setdefault(name, [])
    try:
        _run(without_mark(source), _kernel_cell_name(name), module)
    except Exception as exc:  # it ran in the notebook but not as its module: say so, once
        print(say("not in its module", name=name, error=_exception_line(exc)))
        return
    if source in runs:
        runs.remove(source)
    runs.append(source)
    from IPython import get_ipython
    names = get_ipython().user_ns  # the notebook's own names, now the module's objects
    for key, value in vars(module).items():
        if not key.startswith("__") and (key not in before or before[key] is not value):
            names[key] = value


def _module_to_join(name: str):
    """The module a first export cell joins: the saved notebook's (so a section run on its own
    still has the cells above it), or, for a module the course does not have, a new one."""
    import types
    if name in _ExportCellsFinder().names():
        try:
            return importlib.import_module(name)
        except Exception as exc:
            print(say("saved cells fail", name=name, error=_exception_line(exc)))
            sys.modules.pop(name, None)
    module = types.ModuleType(name)
    module.__file__ = f"<export cells run in this kernel: {name}>"
    sys.modules[name] = module
    return module


def _listen_for_export_cells() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and _join_module not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", _join_module)


_listen_for_export_cells()


def _run(source: str, name: str, module) -> None:
    """Run source in module; tracebacks show its own lines, not the notebook's JSON."""
    linecache.cache[name] = (len(source), None, source.splitlines(keepends=True), name)
    # dont_inherit: not this file's `from __future__ import annotations`, which would turn the
    # cells' annotations into strings (and break a @dataclass in them)
    exec(compile(source, name, "exec", dont_inherit=True), module.__dict__)


class _ExportCellsFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes `import sandbox` load notebooks/05-sandbox.ipynb's export cells, so export cells
    can import each other by the names they have once exported. Real modules come first."""

    def names(self) -> dict[str, Path]:
        found = {}
        for path in sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb")):
            if any(c["cell_type"] == "code" for c in cells(path, "export")):
                found[module_name(path)] = path
        return found

    def find_spec(self, fullname, path=None, target=None):
        if path is not None or fullname not in self.names():
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=str(self.names()[fullname]))

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        path = Path(module.__spec__.origin)
        module.__file__ = str(path)
        _run(export_source(path), f"{path.name} (export cells)", module)


if not any(isinstance(finder, _ExportCellsFinder) for finder in sys.meta_path):
    sys.meta_path.append(_ExportCellsFinder())


def export(path: Path, for_kit: bool = False) -> str:
    """A notebook's export cells as the text of one importable module, with a header: where it
    came from, or (for_kit, in the builder's kit) only what the module is."""
    source = export_source(path)
    uses = sorted({node.lineno for node in ast.walk(ast.parse(source))
                   if isinstance(node, ast.Name) and node.id == "course"
                   or isinstance(node, (ast.Import, ast.ImportFrom)) and "course" in
                   [a.name for a in node.names] + [getattr(node, "module", None)]})
    if uses:
        raise ValueError(f"{path.name}: export cells must not use course (lines {uses} of the "
                         "exported code); move display code to a cell that is not exported")
    source = last_definitions_only(source)
    title = _title(path)
    if for_kit:  # the kit's README says where the modules come from; a module says what it is
        return (f'"""{title.split(": ", 1)[-1]}.\n\nOne module of this kit; it is yours to '
                'change.\n"""\n\n' + imports_first(source))
    header = (f'"""{title}\n\nExported from notebooks/{path.name} by\n'
              f"`python notebooks/course.py export {path.stem}`. Put agent.py beside it (and "
              "the\nmodules of the other lessons it imports); then it is yours to change.\n"
              '"""\n\n')
    return header + source


def last_definitions_only(source: str) -> str:
    """The module without a top-level function or class that a later one of the same name
    replaces (with its decorators and the comment lines right above it). A notebook may show
    a short version on its main path and the whole one in Going further; the later definition
    is what the module means, and a builder's file holds it once (ruff: F811)."""
    tree = ast.parse(source)
    defined = [node for node in tree.body
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    last = {node.name: node for node in defined}
    lines, drop = source.split("\n"), set()
    for node in defined:
        if last[node.name] is not node:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
            while start > 0 and lines[start - 1].lstrip().startswith("#"):
                start -= 1
            drop.update(range(start, node.end_lineno))
    if not drop:
        return source
    kept = "\n".join(line for at, line in enumerate(lines) if at not in drop)
    return re.sub(r"\n{4,}", "\n\n\n", kept)


def imports_first(source: str) -> str:
    """The module with every top-level import in one block at its top, sorted as isort sorts
    (the standard library, then other packages, then this project's modules) and each once: a
    notebook imports where a cell needs it; a builder reads a module's imports in one place. An
    import keeps its own line and its comment."""
    tree = ast.parse(source)
    lines = source.split("\n")
    ours = {"agent", "streaming_model",
            *(module_name(p) for p in NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))}
    found, drop = {}, set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            drop.update(range(node.lineno - 1, node.end_lineno))
            text = "\n".join(lines[node.lineno - 1:node.end_lineno])
            found.setdefault(ast.dump(node), (node, text))
    if not found:
        return source

    def key(item):
        node, _ = item
        top = (node.names[0].name if isinstance(node, ast.Import) else node.module or "")
        section = (0 if top.split(".")[0] in sys.stdlib_module_names else
                   2 if top.split(".")[0] in ours else 1)
        return section, isinstance(node, ast.ImportFrom), top.lower()
    block, last = [], None
    for node, text in sorted(found.values(), key=key):
        if last is not None and key((node, text))[0] != last:
            block.append("")
        block.append(text)
        last = key((node, text))[0]
    rest = "\n".join(line for i, line in enumerate(lines) if i not in drop)
    rest = re.sub(r"\n{4,}", "\n\n\n", rest).lstrip("\n")
    return _isort("\n".join(block) + "\n\n\n" + rest, ours)


def _isort(source: str, ours: set[str]) -> str:
    """source with its imports as ruff's isort writes them (names merged and ordered), where ruff
    is installed, as it is in the course's environment; as it is otherwise."""
    if importlib.util.find_spec("ruff") is None:
        return source
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--fix", "--isolated",
                           "--select", "I,F811", "--line-length", "100", "--config",
                           f"lint.isort.known-first-party = {sorted(ours)!r}".replace("'", '"'),
                           "--stdin-filename", "module.py", "-"],
                          input=source, capture_output=True, text=True)
    return done.stdout if done.returncode in (0, 1) and done.stdout.strip() else source


def _title(path: Path) -> str:
    for cell in cells(path):
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return "Lesson " + line[2:].strip().replace(" — ", ": ", 1)
    return f"Lesson {path.stem}"


def write_file(path: Path, text: str) -> None:
    """Write text to path whole or not at all: a temporary file beside it, then a rename. The
    file keeps its mode, or gets an ordinary one (not mkstemp's private 0o600) if it is new."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it
    os.umask(mask)
    return mask


# --- The builder's kit: a standalone project -------------------------------------------------

KIT = NOTEBOOKS / "kit"  # the kit's own files (main.py, README, tests), copied as they are
# The lessons whose modules main.py uses. Lesson 13's evaluation runner is not one: main.py
# never imports it, so a kit has it only if asked for (build --with-eval: KIT_EVAL).
KIT_EVAL = {"13": "evaluation"}
KIT_LESSONS = {"05": "sandbox", "06": "diff_approval", "07": "tracing", "08": "text_actions",
               "09": "sessions", "10": "parallel_and_steering", "11": "streaming",
               "12": "context_budget", "15": "mcp_and_skills", "16": "subagents_and_plans"}
NOT_COPIED = {"conftest.py"}  # kit/conftest.py keeps the course's pytest out of kit/tests
# Props a lesson's module comes with in the kit, copied as files of their own (they import no
# course): lesson 11's scripted model that streams, for main.py's offline --scripted runs.
KIT_PROPS = {"streaming": ["streaming_model"]}


def kit_files(with_eval: bool = False) -> tuple[dict[str, str], list[str]]:
    """What build writes, file name -> text, and the lessons it left out (not written yet).
    The modules are export's, for KIT_LESSONS (and KIT_EVAL, with_eval) and every lesson
    module they import."""
    exported = _ExportCellsFinder().names()
    lessons = {**KIT_LESSONS, **(KIT_EVAL if with_eval else {})}
    wanted = [name for name in lessons.values() if name in exported]
    left_out = [f"{name} (lesson {number})" for number, name in lessons.items()
                if name not in exported]
    files = {"agent.py": (ROOT / "agent.py").read_text(encoding="utf-8")}
    while wanted:  # guards comes in with text_actions, which imports it
        name = wanted.pop(0)
        if f"{name}.py" not in files:
            files[f"{name}.py"] = export(exported[name], for_kit=True)
            wanted += sorted(_imported(files[f"{name}.py"]) & set(exported))
            for prop in KIT_PROPS.get(name, []):
                files[f"{prop}.py"] = (NOTEBOOKS / "props" / f"{prop}.py").read_text(
                    encoding="utf-8")
    for path in sorted(KIT.rglob("*")):
        name = path.relative_to(KIT).as_posix()
        skipped = [part for part in path.relative_to(KIT).parts  # caches, editors' files
                   if part == "__pycache__" or part.startswith(".") and part != ".gitignore"]
        if path.is_file() and name not in NOT_COPIED and not skipped:
            files[name] = path.read_text(encoding="utf-8")
    return files, left_out


def kit_size(files: dict[str, str]) -> int:
    """Lines of Python in the kit besides its tests: what a builder reads and keeps."""
    return sum(text.count("\n") for name, text in files.items()
               if name.endswith(".py") and not name.startswith("tests/"))


def _imported(source: str) -> set[str]:
    """The top-level names of every module source imports, at any depth (a function's too)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def build(folder: Path, force: bool = False,
          with_eval: bool = False) -> tuple[list[str], list[str]]:
    """Write the kit into folder, each file whole; returns (files written, lessons left out).
    A folder with files in it is refused unless force: then the kit's files are replaced and
    every other file is left as it is. with_eval: lesson 13's evaluation runner too."""
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is a file; give a folder to build the kit in")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise ValueError(f"{folder} is not empty; give an empty or new folder, or --force to "
                         "write the kit's files over the ones there")
    files, left_out = kit_files(with_eval)
    for name, text in files.items():
        write_file(folder / name, text)
    return list(files), left_out


# --- Executing notebooks ------------------------------------------------------------------------


def provider_settings(environ) -> list[str]:
    """The variables that would send a run to a real provider or name another model: a
    notebook run to make or check committed outputs must not see them (conftest.py too)."""
    return [name for name in environ if name.startswith("OPENAI_") or name == "AGENT_MODEL"]


def execute(path: Path, timeout: int = 600) -> None:
    """Run a notebook top to bottom in a fresh kernel and save its outputs in place: what
    nbval compares against. The kernel sees no key, so a cell that would call a real model
    says it was skipped, whoever runs this; temporary folders go under one removed after."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="afz-execute-") as tmp:
        os.environ["TMPDIR"] = tmp  # the kernel inherits the environment
        for name in provider_settings(os.environ):
            del os.environ[name]
        try:
            NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                           coalesce_streams=True,  # one stdout output, however it was flushed
                           resources={"metadata": {"path": str(path.parent)}},
                           record_timing=False).execute()
        finally:
            os.environ.clear()
            os.environ.update(saved)
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
    write_file(path, nbformat.writes(notebook) + "\n")


# --- Command line -----------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python notebooks/course.py",
                                     description="Take a lesson's code away, build the builder's "
                                     "kit, or re-run notebooks.")
    commands = parser.add_subparsers(dest="command", required=True)
    out = commands.add_parser("export", help="write a lesson's export cells as one module")
    out.add_argument("lesson", nargs="?", help="e.g. 05-sandbox (or 05)")
    out.add_argument("--all", action="store_true", help="every lesson with export cells")
    out.add_argument("-o", "--output", required=True,
                     help="the .py file to write (with --all: the folder)")
    kit = commands.add_parser("build", help="write a standalone agent project: agent.py, the "
                              "lessons' modules, main.py, its README and tests")
    kit.add_argument("folder", help="where to write it: a new or empty folder")
    kit.add_argument("--force", action="store_true",
                     help="write into a folder that has files (the kit's are replaced)")
    kit.add_argument("--with-eval", action="store_true",
                     help="add lesson 13's evaluation runner, evaluation.py (main.py does not "
                     "use it; the course's task suite stays in the course)")
    run = commands.add_parser("execute", help="re-run notebooks and save their outputs")
    run.add_argument("lessons", nargs="*", help="e.g. 03-the-loop (or 03)")
    run.add_argument("--all", action="store_true", help="every notebook")
    sync = commands.add_parser("zh-sync", help="make notebooks/zh/NN-slug.ipynb from the English "
                               "notebook and the Chinese one, and say which cells need a "
                               "translator")
    sync.add_argument("lessons", nargs="*", help="e.g. 01-tools (or 01)")
    sync.add_argument("--all", action="store_true", help="every notebook that has a Chinese twin")
    args = parser.parse_args(argv)
    try:
        if args.command == "export":
            return _export_command(parser, args)
        if args.command == "build":
            return _build_command(args)
        if args.command == "zh-sync":
            return _zh_sync_command(parser, args)
        return _execute_command(parser, args)
    except (LookupError, ValueError, SyntaxError) as exc:
        print(f"course.py: {exc}", file=sys.stderr)
        return 1


def _export_command(parser, args) -> int:
    if args.all == bool(args.lesson):
        parser.error("give one lesson, or --all")
    output = Path(args.output)
    if args.all:
        if output.exists() and not output.is_dir():
            parser.error(f"--all writes one file per lesson: {output} must be a folder")
        finder = _ExportCellsFinder()
        for name, path in finder.names().items():
            write_file(output / f"{name}.py", export(path))
            print(f"{output / (name + '.py')}  <- {path.name}")
    else:
        if output.is_dir():
            parser.error(f"{output} is a folder; give the .py file to write")
        path = notebook_path(args.lesson)
        write_file(output, export(path))
        print(f"{output}  <- {path.name}")
    print("Put agent.py beside the exported modules: they import it.")
    return 0


def _build_command(args) -> int:
    folder = Path(args.folder)
    try:
        written, left_out = build(folder, args.force, args.with_eval)
    except OSError as exc:  # a folder we may not write in, a full disk: the files written stay
        print(f"course.py: could not write the kit into {folder}: {exc}", file=sys.stderr)
        return 1
    for name in written:
        print(folder / name)
    size = kit_size({name: (folder / name).read_text(encoding="utf-8") for name in written})
    print(f"The kit: {size:,} lines of Python besides its tests.")
    if left_out:
        print("Left out, not written yet: " + ", ".join(left_out) + ". main.py turns off what "
              "needs them (python main.py --help says what); build again once they are.")
    print(f"\nA project of its own. Next: cd {folder}, then follow its README.md (set up, run "
          "offline, run its tests).")
    return 0


def _execute_command(parser, args) -> int:
    if args.all == bool(args.lessons):
        parser.error("give one or more notebooks, or --all")
    paths = (sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb")) if args.all
             else [notebook_path(name) for name in args.lessons])
    for path in paths:
        print(f"executing {path.name} ...", flush=True)
        execute(path)
    return 0


def _zh_sync_command(parser, args) -> int:
    if args.all == bool(args.lessons):
        parser.error("give one or more notebooks, or --all")
    paths = ([NOTEBOOKS / p.name for p in sorted(ZH_NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))]
             if args.all else [notebook_path(name) for name in args.lessons])
    for path in paths:
        twin = ZH_NOTEBOOKS / path.name
        before = twin.read_bytes() if twin.exists() else b""
        todo = zh_sync(path)
        changed = "updated, now" if twin.read_bytes() != before else "already"
        print(f"{twin.relative_to(ROOT)}: {changed} in step with {path.name}" if not todo else
              f"{twin.relative_to(ROOT)}: {len(todo)} cells need a translator (each has a "
              "zh-sync line):")
        for line in todo:
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

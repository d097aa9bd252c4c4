"""course speaks Chinese in a Chinese notebook, and a Chinese output follows from the English one.

A check gives every text a student reads in English and, beside it, in Chinese. A report is
shown in the language course speaks; in_chinese() turns the English report (or any English
output) into the Chinese one, from the checks' source, without running anything. Both ways must
give the same text: the Chinese notebooks' outputs are made the second way (zh-sync), a student's
kernel shows the first. So every check is run here, on its reference solution and on its
starter cell, and its report compared both ways; and every text it showed must have its
Chinese, but in the lessons listed in CHECKS_NOT_YET_IN_CHINESE, whose missing texts are listed
(pytest -rx shows them)."""

import ast
import re
import sys

import course
import pytest
from test_exercises import STARTERS, all_solutions

EXERCISES = course.all_exercises()

# Lessons whose checks still have texts in English only, by number. This list only shrinks.
CHECKS_NOT_YET_IN_CHINESE: set[str] = set()
# Lessons whose checks still give some failure messages (an assert's text, a detail) in
# English only, not as course.both(english, chinese). This list only shrinks.
CHECK_MESSAGES_NOT_YET_IN_CHINESE: set[str] = set()


@pytest.fixture
def in_chinese_notebook():
    before = course.use_language("zh")
    yield
    course.use_language(before)


def reports_of(exercise_id: str, monkeypatch) -> list:
    """The reports of the exercise's check on its reference solution and on its starter."""
    reports = [course.check(exercise_id, *all_solutions()[exercise_id])]
    check = course.check

    def recording_check(*args):
        reports.append(check(*args))
        return reports[-1]

    for notebook, index, source in STARTERS:
        if re.search(rf"course\.check\(\s*\"{re.escape(exercise_id)}\"", source):
            with monkeypatch.context() as patch, course.scratch("starter"):
                patch.setattr(course, "check", recording_check)
                exec(compile(source, f"{notebook} cell {index}", "exec"), {"__name__": "starter"})
    return reports


def test_the_checks_texts_pair_up_without_problems():
    assert course.check_texts()[2] == []
    assert len(course.check_texts()[0]) > 100


@pytest.mark.slow
@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_a_check_shows_in_chinese_what_in_chinese_makes_of_its_english(
        exercise_id, in_chinese_notebook, monkeypatch):
    reports = reports_of(exercise_id, monkeypatch)
    assert len(reports) == 2, "a solution and a starter"
    for report in reports:
        assert repr(report) == report.text("zh"), "a Chinese notebook shows the Chinese report"
        assert course.in_chinese(report.text("en")) == report.text("zh")
    missing = sorted({text for report in reports for text in report.missing_chinese()})
    lesson = exercise_id.split(".")[0]
    if lesson in CHECKS_NOT_YET_IN_CHINESE:
        if missing:
            pytest.xfail(f"still English only ({len(missing)}): " + " | ".join(missing))
        pytest.fail(f"every text of {exercise_id} has its Chinese: if all of lesson {lesson}'s "
                    "have, take it off CHECKS_NOT_YET_IN_CHINESE")
    assert not missing, "texts with no Chinese beside them:\n" + "\n".join(missing)


def test_a_report_in_chinese_keeps_the_checks_details_and_puts_courses_own_words_in_chinese():
    @course.exercise("99.3", "a tiny test exercise", "一道很小的测试练习")
    def _(t, double):
        with t.case("doubles 2", "把 2 翻倍"):
            assert double(2) == 4, f"double(2) gave {double(2)}"
        with t.case("doubles 3", "把 3 翻倍"):
            double(3)
        with t.case("an English text only"):
            raise NotImplementedError
        t.expect(double(0) == 0, "keeps 0", "0 不变", detail=f"double(0) is {double(0)}")

    try:
        report = course.check("99.3", lambda x: x + 2 if x != 3 else 1 / 0)
    finally:
        del course._exercises["99.3"]
    assert report.text("en").splitlines() == [
        "Exercise 99.3, a tiny test exercise: 1 of 4 pass",
        "  PASS  doubles 2",
        "  FAIL  doubles 3: your code raised ZeroDivisionError: division by zero",
        "  FAIL  an English text only: not written yet",
        "  FAIL  keeps 0: double(0) is 2",
    ]
    assert report.text("zh").splitlines() == [
        "练习 99.3 · 一道很小的测试练习——4 项中通过 1 项",
        "  通过  把 2 翻倍",
        "  失败  把 3 翻倍——你的代码抛出了 ZeroDivisionError: division by zero",
        "  失败  an English text only: 还没写",
        "  失败  0 不变——double(0) is 2",
    ]
    assert report.missing_chinese() == ["an English text only"]


A_CHECK_WITH_MESSAGES = """
import course

@course.exercise("99.5", "halve(n)", "halve(n)：减半")
def _(t, halve):
    with t.case("halves 4", "把 4 减半"):
        got = halve(4)
        assert got == 2, course.both(f"halve(4) gave {got!r}, not 2",
                                     f"halve(4) 得出 {got!r}，不是 2")
    with t.case("leaves 0 alone", "0 不变"):
        assert halve(0) == 0, course.both("0 changed", "0 变了")
    with t.case("an odd number is refused", "奇数被拒绝"):
        try:
            halve(3)
        except ValueError:
            pass
        else:
            raise AssertionError(course.both("halve(3) was not refused", "halve(3) 没被拒绝"))
    t.expect(halve(8) == 4, "halves 8", "把 8 减半",
             detail=course.both(f"got {halve(8)}", f"得出 {halve(8)}"))
    lines, asked = halve(6), "a.txt"
    with t.case("halves 6", "把 6 减半"):  # a message that starts with a value
        assert lines == 3, course.both(f"{lines} lines: not 3", f"{lines} 行：不是 3")
    with t.case("asks about a.txt", "问到 a.txt"):
        if lines == 1:
            assert False, course.both(f"asked {asked!r}", f"问的是 {asked!r}")
        assert False, course.both(f"asked about {asked!r}", f"问到的是 {asked!r}")
"""


def test_a_checks_message_given_with_both_shows_in_chinese_in_a_chinese_report(
        tmp_path, monkeypatch):
    (tmp_path / "99-halves.py").write_text(A_CHECK_WITH_MESSAGES, encoding="utf-8")
    monkeypatch.setattr(course, "CHECKS", tmp_path)
    monkeypatch.setattr(course, "_exercises", {})
    course.check_texts.cache_clear()
    try:
        report = course.check("99.5", lambda n: [n + 1, 7][n == 0])
        english, chinese = report.text("en"), report.text("zh")
        made_from_english = course.in_chinese(english)
    finally:  # the texts read from tmp_path must not stay in the cache
        course.check_texts.cache_clear()
        sys.modules.pop("checks_99_halves", None)
    assert english.splitlines()[1:] == [
        "  FAIL  halves 4: halve(4) gave 5, not 2",
        "  FAIL  leaves 0 alone: 0 changed",
        "  FAIL  an odd number is refused: halve(3) was not refused",
        "  FAIL  halves 8: got 9",
        "  FAIL  halves 6: 7 lines: not 3",
        "  FAIL  asks about a.txt: asked about 'a.txt'",
    ]
    assert chinese.splitlines()[1:] == [
        "  失败  把 4 减半——halve(4) 得出 5，不是 2",
        "  失败  0 不变——0 变了",
        "  失败  奇数被拒绝——halve(3) 没被拒绝",
        "  失败  把 8 减半——得出 9",
        "  失败  把 6 减半——7 行：不是 3",  # not the whole line read as that message
        "  失败  问到 a.txt——问到的是 'a.txt'",  # the template that fits most closely
    ]
    assert made_from_english == chinese, "a saved report turns Chinese the same way"
    assert course.both("English", "中文") == "English", "a check's own text stays English"


def messages_of_the_checks() -> list[tuple[str, int, ast.AST]]:
    """Every message a check gives with a failure (the text of an assert, of an
    AssertionError, a detail=): (file, line, the message's code)."""
    found = []
    for path in sorted(course.CHECKS.glob("[0-9][0-9]-*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assert) and node.msg is not None:
                found.append((path.name, node.lineno, node.msg))
            elif isinstance(node, ast.Call):
                if (isinstance(node.func, ast.Name) and node.func.id == "AssertionError"
                        and node.args):
                    found.append((path.name, node.lineno, node.args[0]))
                found += [(path.name, node.lineno, k.value) for k in node.keywords
                          if k.arg == "detail"]
    return found


def english_only(message: ast.AST) -> bool:
    """A message that holds English words a student reads and no Chinese beside them: a text,
    or an f-string, not given as course.both(english, chinese). A value alone (a repr, a
    helper's description of what it got) is not a sentence, and stays as it is."""
    if isinstance(message, ast.Call) and ast.unparse(message.func) == "course.both":
        return False
    texts = [n.value for n in ast.walk(message)
             if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return any(re.search(r"[A-Za-z]{2}", text) for text in texts)


def test_every_message_a_check_gives_a_student_has_its_chinese_beside_it():
    english = {}
    for name, line, message in messages_of_the_checks():
        if english_only(message):
            english.setdefault(name[:2], []).append(f"{name}:{line}: {ast.unparse(message)[:80]}")
        elif isinstance(message, ast.Call) and ast.unparse(message.func) == "course.both":
            assert len(message.args) == 2 and all(
                course._literal(arg) is not None for arg in message.args), \
                f"{name}:{line}: course.both takes two texts, the English and the Chinese"
            assert re.search(r"[\u4e00-\u9fff]", course._literal(message.args[1])), \
                f"{name}:{line}: the second text of course.both is the Chinese one"
    for lesson in sorted(CHECK_MESSAGES_NOT_YET_IN_CHINESE):
        assert lesson in english, (f"every message of lesson {lesson}'s checks has its "
                                   "Chinese: take it off CHECK_MESSAGES_NOT_YET_IN_CHINESE")
    still = {lesson: lines for lesson, lines in english.items()
             if lesson not in CHECK_MESSAGES_NOT_YET_IN_CHINESE}
    assert not still, "messages in English only:\n" + "\n".join(
        line for lines in still.values() for line in lines)


def both_messages() -> list[tuple[str, int, ast.Call]]:
    """Every course.both(english, chinese) in the checks: (file, line, the call)."""
    return [(path.name, node.lineno, node)
            for path in sorted(course.CHECKS.glob("[0-9][0-9]-*.py"))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "course.both"]


def with_sample_values(text: ast.AST, samples: dict) -> str:
    """A message's text with a sample value for each {value}: the same code, the same sample
    (a quoted text for !r, else [n]), so the English and the Chinese show the same values."""
    if isinstance(text, ast.Constant):
        return text.value
    shown = ""
    for part in text.values:
        if isinstance(part, ast.Constant):
            shown += part.value
            continue
        code = ast.unparse(part.value)
        if code not in samples:
            samples[code] = repr(f"v{len(samples)}") if part.conversion == ord("r") else \
                f"[{len(samples)}]"
        shown += samples[code]
    return shown


def test_every_message_is_shown_in_its_own_chinese_alone_and_after_a_case():
    """No other template takes a message over (a shorter one it also fits, or, on a report's
    line, a message read as the case's text): each is matched back to the Chinese beside it."""
    case = "the default path '.' gives paths without './'"
    case_zh = course._check_text_in_chinese(case)
    report = "Exercise 01.2, find_text(text, path): which files contain the text, and where: "
    wrong = []
    for name, line, call in both_messages():
        samples = {}
        english, chinese = (with_sample_values(text, samples) for text in call.args)
        shown = course.in_chinese(f"{report}0 of 1 pass\n  FAIL  {case}: {english}")
        if (course._check_text_in_chinese(english) != chinese
                or shown.split("\n")[1] != f"  失败  {case_zh}——{chinese}"):
            wrong.append(f"{name}:{line}: {english!r} -> {shown.split(chr(10))[1]!r}")
    assert case_zh and len(both_messages()) > 0
    assert not wrong, f"{len(wrong)} messages not shown as meant:\n" + "\n".join(wrong)


def test_a_check_that_cannot_start_says_so_in_chinese():
    @course.exercise("99.4", "a check that stops", "一个会停下的检查")
    def _(t, answer):
        answer()

    try:
        report = course.check("99.4", lambda: (_ for _ in ()).throw(NotImplementedError()))
        stopped = course.check("99.4", lambda: (_ for _ in ()).throw(AssertionError("no")))
    finally:
        del course._exercises["99.4"]
    assert report.text("zh").splitlines() == ["练习 99.4 · 一个会停下的检查——1 项中通过 0 项",
                                              "  失败  检查没法开始——还没写"]
    assert stopped.text("zh").endswith("  失败  检查中途停下了——no")
    assert report.missing_chinese() == [] and stopped.missing_chinese() == []


def test_in_chinese_knows_the_reports_of_the_checks_and_courses_notes_and_nothing_else():
    english = (course.say("workspace", "en", path="/tmp/afz-01-x") + "\n"
               "Exercise 01.2, find_text(text, path): which files contain the text, and where: "
               "0 of 2 pass\n"
               "  FAIL  a file that is not UTF-8 is skipped, not an error: not written yet\n"
               "  PASS  the default path '.' gives paths without './'\n")
    assert course.in_chinese(english) == (
        course.say("workspace", "zh", path="/tmp/afz-01-x") + "\n"
        "练习 01.2 · find_text(text, path)：哪些文件含有这段文本，在哪一行——2 项中通过 0 项\n"
        "  失败  不是 UTF-8 的文件跳过，不算错误——还没写\n"
        "  通过  默认路径 '.' 给出的路径不带 './'\n")
    others = ("  PASS  a line like a case, but no report above it\n"
              "workspace: a word a lesson prints\nall pass - well done\n")
    assert course.in_chinese(others) == others


@pytest.mark.parametrize("key", ["workspace", "not in its module", "saved cells fail"])
def test_every_note_course_prints_alone_is_put_in_chinese(key):
    values = {"path": "/tmp/afz-x", "name": "guards", "error": "NameError: name 'x' is not defined"}
    english, chinese = (course.say(key, language, **values) for language in ("en", "zh"))
    assert course.in_chinese(english) == chinese != english
    assert course.in_chinese(f"before\n{english}\nafter") == f"before\n{chinese}\nafter"


def test_every_message_has_the_same_values_in_both_languages():
    import string
    for key, (english, chinese) in course.MESSAGES.items():
        names = [{name for _, name, _, _ in string.Formatter().parse(text) if name}
                 for text in (english, chinese)]
        assert names[0] == names[1], key
        assert re.search(r"[\u4e00-\u9fff]", chinese), f"{key}: not Chinese"

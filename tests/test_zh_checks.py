"""course speaks Chinese in a Chinese notebook, and a Chinese output follows from the English one.

A check gives every text a student reads in English and, beside it, in Chinese. A report is
shown in the language course speaks; in_chinese() turns the English report (or any English
output) into the Chinese one, from the checks' source, without running anything. Both ways must
give the same text: the Chinese notebooks' outputs are made the second way (zh-sync), a student's
kernel shows the first. So every check is run here, on its reference solution and on its
starter cell, and its report compared both ways; and every text it showed must have its
Chinese, but in the lessons listed in CHECKS_NOT_YET_IN_CHINESE, whose missing texts are listed
(pytest -rx shows them)."""

import re

import course
import pytest
from test_exercises import STARTERS, all_solutions

EXERCISES = course.all_exercises()

# Lessons whose checks still have texts in English only, by number. This list only shrinks.
CHECKS_NOT_YET_IN_CHINESE: set[str] = set()


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
        t.expect(double(0) == 0, "keeps 0", "0 不变", detail=f"got {double(0)}")

    try:
        report = course.check("99.3", lambda x: x + 2 if x != 3 else 1 / 0)
    finally:
        del course._exercises["99.3"]
    assert report.text("en").splitlines() == [
        "Exercise 99.3, a tiny test exercise: 1 of 4 pass",
        "  PASS  doubles 2",
        "  FAIL  doubles 3: your code raised ZeroDivisionError: division by zero",
        "  FAIL  an English text only: not written yet",
        "  FAIL  keeps 0: got 2",
    ]
    assert report.text("zh").splitlines() == [
        "练习 99.3 · 一道很小的测试练习——4 项中通过 1 项",
        "  通过  把 2 翻倍",
        "  失败  把 3 翻倍——你的代码抛出了 ZeroDivisionError: division by zero",
        "  失败  an English text only: 还没写",
        "  失败  0 不变——got 2",
    ]
    assert report.missing_chinese() == ["an English text only"]


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

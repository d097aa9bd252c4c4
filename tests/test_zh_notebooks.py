"""The Chinese notebooks keep step with the English ones, so they need no run of their own.

notebooks/zh/NN-slug.ipynb is notebooks/NN-slug.ipynb with its prose in Chinese. A pair has
- the same cells, in the same order, with the same ids, types and metadata (but "zh");
- in each code cell the same code once comments are set aside (course.code_tokens compares
  Python's tokens, not text) and the same export mark; the comments may be Chinese;
- the same outputs and execution counts, except the lines course itself prints (a check's
  report, fresh_workspace's note), which are Chinese: each output is course.in_chinese of the
  English one, what a kernel started in notebooks/zh/ prints;
- in each cell's metadata, "zh": {"source": a hash of the English source it follows}, so an
  English cell changed after it was translated fails here; and no cell still has the line
  `python notebooks/course.py zh-sync` puts in a cell that needs a translator;
- markdown in Chinese: no run of six English words outside code, links and math;
- a first cell that links the Chinese lesson and the English notebook, links that go to the
  Chinese twins of lessons and notebooks, and none that is broken.
zh-sync, run on a notebook that passes, changes nothing. The Chinese notebooks are not run
under nbval (conftest.py leaves notebooks/zh out): the last test makes sure."""

import json
import re
import subprocess
import sys
from pathlib import Path

import course
import pytest
from test_translation import FENCE, broken_links, links

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
ZH = course.ZH_NOTEBOOKS
LESSONS = ROOT / "lessons"

# The lessons whose notebook has no Chinese twin yet (`course.py zh-sync NN`, then translate),
# by number. This list only shrinks.
NOT_YET_IN_CHINESE: set[str] = set()

ENGLISH = sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))
TWINS = sorted(ZH.glob("[0-9][0-9]-*.ipynb"))


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def text(cell: dict) -> str:
    return "".join(cell["source"])


def english_of(twin: Path) -> Path:
    return NOTEBOOKS / twin.name


@pytest.mark.parametrize("english", ENGLISH, ids=[p.stem for p in ENGLISH])
def test_every_english_notebook_has_a_chinese_twin(english):
    twin = ZH / english.name
    if english.stem[:2] in NOT_YET_IN_CHINESE:
        assert not twin.exists(), f"{twin.name} exists: take {english.stem[:2]} off " \
                                  "NOT_YET_IN_CHINESE"
        pytest.skip("its Chinese twin is still to be made")
    assert twin.is_file(), (f"notebooks/zh/{english.name} is missing: make it with "
                            f"`python notebooks/course.py zh-sync {english.stem}`, then translate")


def test_every_chinese_notebook_has_an_english_one():
    assert [p.name for p in TWINS if not english_of(p).exists()] == []


@pytest.mark.parametrize("twin", TWINS, ids=[p.stem for p in TWINS])
def test_a_twin_has_the_same_cells_in_the_same_order(twin):
    mine, theirs = cells(twin), cells(english_of(twin))
    assert [(c.get("id"), c["cell_type"]) for c in mine] == \
        [(c.get("id"), c["cell_type"]) for c in theirs], "the cells differ (id, type)"
    for zh, en in zip(mine, theirs, strict=True):
        metadata = {k: v for k, v in zh.get("metadata", {}).items() if k != "zh"}
        assert metadata == en.get("metadata", {}), f"cell {zh['id']}: the metadata differ"
    notebook, english = (json.loads(p.read_text(encoding="utf-8"))
                         for p in (twin, english_of(twin)))
    assert {k: v for k, v in notebook.items() if k != "cells"} == \
        {k: v for k, v in english.items() if k != "cells"}, "the notebooks' metadata differ"


@pytest.mark.parametrize("twin", TWINS, ids=[p.stem for p in TWINS])
def test_a_twin_has_the_same_code_and_shows_the_same_outputs_with_courses_lines_in_chinese(twin):
    for zh, en in zip(cells(twin), cells(english_of(twin)), strict=True):
        if en["cell_type"] != "code":
            continue
        where = f"cell {en['id']}"
        assert course.code_tokens(text(zh)) == course.code_tokens(text(en)), \
            f"{where}: the code differs from the English (comments aside)"
        assert course.export_mark(text(zh)) == course.export_mark(text(en)), \
            f"{where}: the export mark differs"
        assert zh.get("execution_count") == en.get("execution_count"), \
            f"{where}: the execution count differs"
        assert zh.get("outputs") == course.outputs_in_chinese(en.get("outputs", [])), \
            f"{where}: the outputs are not the English ones with course's lines in Chinese " \
            "(run zh-sync)"


@pytest.mark.parametrize("twin", TWINS, ids=[p.stem for p in TWINS])
def test_every_cell_of_a_twin_follows_the_english_as_it_is_now(twin):
    stale, marked = [], []
    for zh, en in zip(cells(twin), cells(english_of(twin)), strict=True):
        if zh.get("metadata", {}).get("zh", {}).get("source") != course.source_hash(text(en)):
            stale.append(en["id"])
        if course.SYNC_MARK in text(zh):
            marked.append(en["id"])
    assert not stale, (f"the English of cells {', '.join(stale)} changed after they were "
                       f"translated: run `python notebooks/course.py zh-sync {twin.stem}`")
    assert not marked, f"cells {', '.join(marked)} still need a translator (their zh-sync line)"


def english_prose(markdown: str) -> list[str]:
    """Runs of six or more English words in markdown, outside code, links' targets, math, HTML
    and URLs: prose left untranslated. Names, a short quote, `code` and a title stay below it."""
    prose = FENCE.sub(" ", markdown)
    for pattern in (r"<!--.*?-->", r"`[^`\n]*`", r"\$\$.*?\$\$", r"\$[^$\n]+\$", r"\]\([^)]*\)",
                    r"https?://\S+", r"<[^>]+>"):
        prose = re.sub(pattern, " ", prose, flags=re.S)
    word = r"[A-Za-z][A-Za-z'’-]*"
    return re.findall(rf"{word}(?:[\s,;:.!?()\"/*-]+{word}){{5,}}", prose)


@pytest.mark.parametrize("twin", TWINS, ids=[p.stem for p in TWINS])
def test_a_twins_markdown_is_chinese(twin):
    english = [f"cell {c['id']}: {run!r}" for c in cells(twin) if c["cell_type"] == "markdown"
               for run in english_prose(text(c))]
    assert not english, "English prose left in the markdown:\n" + "\n".join(english)


def test_english_prose_is_told_from_names_code_and_links():
    assert english_prose("工具就是函数：`read_file(path)` 返回 {\"path\", \"content\"}。") == []
    assert english_prose("见 [Rebuild what this section needs](../x.md) 和 $a + b$。") == []
    assert english_prose("```python\nprint('this is code, not prose at all')\n```") == []
    assert english_prose("它说 no such file: missing.py，然后停下。") == []
    assert english_prose("The tool reads the file and returns a dict.") == \
        ["The tool reads the file and returns a dict"]


@pytest.mark.parametrize("twin", TWINS, ids=[p.stem for p in TWINS])
def test_a_twins_first_cell_links_the_chinese_lesson_and_the_english_notebook(twin):
    first = text(cells(twin)[0])
    targets = {link.partition("#")[0] for link in links(first)}
    lesson = f"../../lessons/zh/{twin.stem}.md"
    assert (LESSONS / "zh" / f"{twin.stem}.md").is_file(), f"no Chinese lesson {lesson}"
    assert lesson in targets, f"the first cell does not link the Chinese lesson, {lesson}"
    assert f"../{twin.name}" in targets, f"the first cell does not link ../{twin.name}"


@pytest.mark.parametrize("twin", TWINS, ids=[p.stem for p in TWINS])
def test_a_twin_links_chinese_texts_and_no_link_is_broken(twin):
    problems = []
    for number, cell in enumerate(cells(twin)):
        if cell["cell_type"] != "markdown":
            continue
        problems += [f"cell {cell['id']}: {p}" for p in broken_links(text(cell), twin)]
        for link in links(text(cell)):
            target = (twin.parent / link.partition("#")[0]).resolve()
            if re.match(r"^[a-z]+:", link) or not link.partition("#")[0]:
                continue
            english_lesson = target.parent == LESSONS and (LESSONS / "zh" / target.name).exists()
            english_notebook = target.parent == NOTEBOOKS and (ZH / target.name).exists() and \
                not (number == 0 and target.name == twin.name)
            if english_lesson or english_notebook:
                problems.append(f"cell {cell['id']}: {link} is English; link its Chinese twin")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("twin", TWINS, ids=[p.stem for p in TWINS])
def test_zh_sync_changes_nothing_in_a_twin_that_is_in_step(twin):
    import nbformat
    notebook, todo = course.zh_notebook(english_of(twin))
    assert todo == [], f"cells that need a translator: {todo}"
    assert nbformat.writes(nbformat.from_dict(notebook)) + "\n" == \
        twin.read_text(encoding="utf-8"), f"run `python notebooks/course.py zh-sync {twin.stem}`"


@pytest.mark.parametrize("twin", TWINS, ids=[p.stem for p in TWINS])
def test_an_english_notebook_links_its_chinese_twin(twin):
    first = text(cells(english_of(twin))[0])
    assert f"zh/{twin.name}" in {link.partition("#")[0] for link in links(first)}, \
        f"the first cell of {twin.name} does not link zh/{twin.name}"


@pytest.mark.slow
def test_the_suite_does_not_run_the_chinese_notebooks_under_nbval():
    """pytest's testpaths collect notebooks/ and all below it; conftest.py leaves zh/ out.
    Named on the command line, a Chinese notebook is collected (to run it by hand)."""
    def collected(*paths):
        done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0",
                               *paths], cwd=ROOT, capture_output=True, text=True, timeout=120)
        return [line for line in done.stdout.splitlines() if "::" in line]
    everything = collected("notebooks")
    assert any(line.startswith("notebooks/01-tools.ipynb::") for line in everything)
    assert not [line for line in everything if line.startswith("notebooks/zh/")]
    if TWINS:
        named = collected(str(TWINS[0].relative_to(ROOT)))
        assert named and all(line.startswith("notebooks/zh/") for line in named)


def run_first_cell(cwd: Path, then: str) -> list[str]:
    """The first cell as a student's kernel runs it in cwd, then more code; what it printed."""
    done = subprocess.run([sys.executable, "-c", course.FIRST_CELL + then], cwd=cwd,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.slow
def test_a_kernel_started_in_notebooks_zh_finds_the_course_and_speaks_chinese_wherever_it_goes():
    """Jupyter starts a notebook's kernel in its folder: course takes the language from there,
    once, when the first cell imports it; fresh_workspace moving away does not change it."""
    shown = run_first_cell(ZH, "print(course.__file__, course.LANGUAGE)\n"
                               "course.fresh_workspace('t')\n"
                               "print(course.LANGUAGE, Path.cwd() != course.ZH_NOTEBOOKS)\n")
    assert shown[0] == f"{NOTEBOOKS / 'course.py'} zh"
    assert shown[1].startswith("工作区：") and shown[2].startswith("（新建的临时文件夹")
    assert shown[3] == "zh True"
    assert run_first_cell(NOTEBOOKS, "print(course.LANGUAGE)\n") == ["en"]


def test_the_language_is_chinese_in_notebooks_zh_only_and_can_be_set_by_hand():
    assert course.language_of(ZH) == course.language_of(ZH / "sub") == "zh"
    assert course.language_of(NOTEBOOKS) == course.language_of(ROOT) == "en"
    assert course.language_of(ROOT / "lessons" / "zh") == "en"
    before = course.use_language("zh")
    try:
        assert course.say("not written") == "还没写"
        with pytest.raises(ValueError, match="'en' or 'zh'"):
            course.use_language("fr")
    finally:
        course.use_language(before)
    assert course.say("not written") == "not written yet"


def write_notebook(path: Path, cells: list[dict]) -> Path:
    import nbformat
    notebook = nbformat.v4.new_notebook(cells=[nbformat.from_dict(c) for c in cells])
    path.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")
    return path


def markdown(cell_id, source, **metadata):
    return {"cell_type": "markdown", "id": cell_id, "source": source, "metadata": metadata}


def code(cell_id, source, outputs=(), count=1, **metadata):
    return {"cell_type": "code", "id": cell_id, "source": source, "metadata": metadata,
            "outputs": list(outputs), "execution_count": count}


def test_zh_sync_keeps_what_is_translated_and_marks_what_needs_a_translator(tmp_path, monkeypatch):
    monkeypatch.setattr(course, "ZH_NOTEBOOKS", tmp_path / "zh")
    (tmp_path / "zh").mkdir()
    note = course.say("workspace", "en", path="/tmp/afz-99-x")
    stream = {"output_type": "stream", "name": "stdout", "text": note + "\nhello\n"}
    english = write_notebook(tmp_path / "99-demo.ipynb", [
        markdown("m1", "# 99 — A demo"), code("k1", "x = 1  # one\nprint(x)", [stream]),
        markdown("m2", "Some English text."), code("k2", "y = 2", count=2)])
    # a new twin: the English copied in, each cell that needs a translator marked
    notebook, todo = course.zh_notebook(english)
    assert [c["id"] for c in notebook["cells"]] == ["m1", "k1", "m2", "k2"]
    assert [line.split(" ")[0] for line in todo] == ["m1", "k1", "m2"]  # k2 has no comment
    assert notebook["cells"][0]["source"].startswith("<!-- zh-sync:")
    assert notebook["cells"][1]["source"].startswith("# zh-sync:")
    assert "".join(notebook["cells"][1]["outputs"][0]["text"]) == \
        course.say("workspace", "zh", path="/tmp/afz-99-x") + "\nhello\n"
    assert text(notebook["cells"][3]) == "y = 2"
    # translated: kept as it is, as long as the English does not change
    notebook["cells"][0]["source"] = "# 99 — 一个演示"
    notebook["cells"][1]["source"] = "x = 1  # 一\nprint(x)"
    notebook["cells"][2]["source"] = "一段中文。"
    twin = write_notebook(tmp_path / "zh" / english.name, notebook["cells"])
    again, todo = course.zh_notebook(english)
    assert todo == [] and [text(c) for c in again["cells"]] == [text(c) for c in cells(twin)]
    # the English changes: new text, a comment, new code, a new cell
    write_notebook(english, [
        markdown("m1", "# 99 — A demo"), code("k1", "x = 1  # the first\nprint(x)", [stream]),
        markdown("m2", "Other English text."), code("k2", "y = 3", count=2),
        markdown("m3", "A new cell.")])
    notebook, todo = course.zh_notebook(english)
    sources = [text(c) for c in notebook["cells"]]
    assert sources[0] == "# 99 — 一个演示"
    assert sources[1].startswith("# zh-sync:") and sources[1].endswith("x = 1  # 一\nprint(x)")
    assert "Other English text." in sources[2] and sources[2].endswith("\n一段中文。")
    assert sources[3] == "y = 3"
    assert sources[4].startswith("<!-- zh-sync:") and sources[4].endswith("A new cell.")
    assert [line.split(" ")[0] for line in todo] == ["k1", "m2", "m3"]
    # a cell gone from the English is gone from the twin
    write_notebook(english, [markdown("m1", "# 99 — A demo")])
    assert [c["id"] for c in course.zh_notebook(english)[0]["cells"]] == ["m1"]


def test_code_is_compared_without_its_comments_but_with_its_export_mark():
    assert course.code_tokens("x = 1  # one\n\n# a note\nprint(x)\n") == \
        course.code_tokens("x = 1  # 一\nprint(x)  # 打印")
    assert course.code_tokens("x = 1\n") != course.code_tokens("x = 2\n")
    assert course.code_tokens("if x:\n    y = 1\n") != \
        course.code_tokens("if x:\n    pass\ny = 1\n")
    assert course.code_tokens("s = 'a # b'\n") != course.code_tokens("s = 'a # c'\n")
    assert not course._same_code("# export: tools\nx = 1\n", "# export: tool\nx = 1\n")

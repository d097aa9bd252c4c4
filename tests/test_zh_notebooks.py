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
NOT_YET_IN_CHINESE = {"03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14",
                      "15", "16"}

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

"""The Chinese edition keeps step with the English one, and no link in either is broken.

Every English text has a twin: lessons/NN-slug.md -> lessons/zh/NN-slug.md, lessons/README.md and
lessons/GLOSSARY.md -> lessons/zh/, README.md -> README.zh.md. A twin has
- the same headings in the same order: each Chinese heading is preceded by `<a id="..."></a>`
  naming the English heading's anchor, so every link (e.g. GLOSSARY.md#tool-call) works in both;
- the same code blocks, byte for byte, in the same order (a Mermaid diagram may translate its
  labels, but keeps its place and its number of lines);
- the same links in each section, to the same files and anchors (a lesson's twin links to
  twins);
and every relative link in either language points to a file and an anchor that exist.
Each notebook's first cell links to its lesson in both languages; the Chinese notebooks
(notebooks/zh/) are kept in step with the English ones by tests/test_zh_notebooks.py."""

import json
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "lessons"
ZH = LESSONS / "zh"
NOTEBOOKS = ROOT / "notebooks"

# English texts whose Chinese twin is still being written (a new lesson starts here).
NOT_YET_TRANSLATED: set[str] = set()


# Lessons still being written, which other texts already link to. This list only shrinks.
NOT_YET_WRITTEN: set[str] = set()


def still_being_written(file: Path) -> bool:
    """A lesson not written yet, or the Chinese twin of a text still being translated."""
    if file.name in NOT_YET_WRITTEN:
        return True
    english = ROOT / "README.md" if file.name == "README.zh.md" else LESSONS / file.name
    return file.parent in (ZH, ROOT) and str(english.relative_to(ROOT)) in NOT_YET_TRANSLATED


def english_texts() -> list[Path]:
    return [ROOT / "README.md", LESSONS / "README.md", LESSONS / "GLOSSARY.md",
            *sorted(LESSONS.glob("[0-9][0-9]-*.md"))]


def twin(english: Path) -> Path:
    return ROOT / "README.zh.md" if english == ROOT / "README.md" else ZH / english.name


def translated() -> list[Path]:
    return [p for p in english_texts() if str(p.relative_to(ROOT)) not in NOT_YET_TRANSLATED]


FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$", re.M)
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
ANCHOR = re.compile(r'<a id="([^"]+)"></a>')


def without_code(text: str) -> str:
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def links(text: str) -> list[str]:
    """The targets of the Markdown links in text, outside code blocks and `inline code`."""
    return LINK.findall(re.sub(r"`[^`\n]*`", "", without_code(text)))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"<[^>]+>", "", heading)
    text = re.sub(r"[`*_~]|\[|\]\([^)]*\)|\]", lambda m: "_" if m.group(0) == "_" else "", text)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = without_code(path.read_text(encoding="utf-8"))
    found, seen = set(ANCHOR.findall(text)), Counter()
    for _, heading in HEADING.findall(text):
        base = slug(heading)
        found.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return found


def headings(path: Path) -> list[tuple[int, str]]:
    """(level, anchor) of every heading; a Chinese one takes the <a id> just before it."""
    text = without_code(path.read_text(encoding="utf-8"))
    lines, out = text.split("\n"), []
    for i, line in enumerate(lines):
        match = HEADING.match(line)
        if not match:
            continue
        given = ANCHOR.findall(lines[i - 1]) if i else []
        out.append((len(match.group(1)), given[0] if given else slug(match.group(2))))
    return out


def code_blocks(path: Path) -> list[str]:
    blocks = []
    for block in FENCE.findall(path.read_text(encoding="utf-8")):
        if block.startswith("```mermaid"):
            block = f"```mermaid ({block.count(chr(10))} lines)"  # labels may be translated
        blocks.append(block)
    return blocks


def normalized(link: str, source: Path) -> str:
    """A link as the thing it points at, the same whichever language links to it."""
    if re.match(r"^[a-z]+:", link):
        return link
    target, _, anchor = link.partition("#")
    path = (source.parent / target).resolve() if target else source.resolve()
    if path == (ROOT / "README.zh.md").resolve():
        path = ROOT / "README.md"
    elif path.parent == ZH.resolve():
        path = LESSONS / path.name
    elif path.parent == (ROOT / "notebooks" / "zh").resolve():
        path = ROOT / "notebooks" / path.name  # the Chinese text links the Chinese twin
    return f"{path.relative_to(ROOT).as_posix()}#{anchor}"


def links_by_section(path: Path) -> list[Counter]:
    text = without_code(path.read_text(encoding="utf-8"))
    sections = re.split(r"^## ", text, flags=re.M)
    return [Counter(normalized(link, path) for link in links(section)) for section in sections]


@pytest.mark.parametrize("english", english_texts(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_english_text_has_a_chinese_twin(english):
    if str(english.relative_to(ROOT)) in NOT_YET_TRANSLATED:
        pytest.skip("its Chinese twin is still being written")
    assert twin(english).is_file(), f"{twin(english).relative_to(ROOT)} is missing"


@pytest.mark.parametrize("english", translated(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_twins_have_the_same_sections_code_and_links(english):
    chinese = twin(english)
    assert headings(chinese) == headings(english), "headings differ (level, anchor)"
    assert code_blocks(chinese) == code_blocks(english), "code blocks differ"
    assert links_by_section(chinese) == links_by_section(english), "links differ by section"


def test_the_chinese_texts_send_a_reader_to_the_chinese_notebooks():
    """A Chinese student follows a link from a Chinese lesson, the course map or README.zh.md
    to notebooks/zh/NN-slug.ipynb, never to the English notebook beside it."""
    english_notebooks = []
    for path in [ROOT / "README.zh.md", *sorted(ZH.glob("*.md"))]:
        for link in links(without_code(path.read_text(encoding="utf-8"))):
            target = (path.parent / link.partition("#")[0]).resolve()
            if target.suffix == ".ipynb" and target.parent == (ROOT / "notebooks").resolve():
                english_notebooks.append(f"{path.relative_to(ROOT)}: {link}")
    assert not english_notebooks, "links to English notebooks:\n" + "\n".join(english_notebooks)


def all_markdown() -> list[Path]:
    return [p for p in [ROOT / "README.md", ROOT / "README.zh.md", *LESSONS.rglob("*.md"),
                        *(ROOT / "notebooks").glob("*.md")] if p.is_file()]


def broken_links(text: str, path: Path) -> list[str]:
    """The relative links in text, written in the file at path, whose target or anchor is
    missing (a text still being written or translated may be missing, not yet broken)."""
    broken = []
    for link in links(text):
        if re.match(r"^[a-z]+:", link):
            continue
        target, _, anchor = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        if not file.exists():
            if not still_being_written(file):
                broken.append(f"{link}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{link}: no such anchor")
    return broken


@pytest.mark.slow
@pytest.mark.parametrize("path", all_markdown(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_to_a_file_and_anchor_that_exist(path):
    broken = broken_links(path.read_text(encoding="utf-8"), path)
    assert not broken, "\n".join(broken)


def notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))


def markdown_cells(notebook: Path) -> list[str | None]:
    """The text of each markdown cell, None for a code cell."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) if cell["cell_type"] == "markdown" else None
            for cell in cells]


@pytest.mark.parametrize("notebook", notebooks(), ids=lambda p: p.stem)
def test_every_notebook_links_its_lesson_in_both_languages(notebook):
    """The first cell links to lessons/NN-slug.md and to lessons/zh/NN-slug.md. Only the
    twin of a lesson still in NOT_YET_TRANSLATED may be left out (while it does not exist)."""
    first = markdown_cells(notebook)[0]
    assert first is not None, "the first cell is a markdown cell: the notebook's introduction"
    targets = {link.partition("#")[0] for link in links(first)}
    english, chinese = LESSONS / f"{notebook.stem}.md", ZH / f"{notebook.stem}.md"
    assert english.is_file(), f"{notebook.name} has no lesson text {english.relative_to(ROOT)}"
    assert f"../lessons/{english.name}" in targets, \
        f"its first cell does not link the lesson text, ../lessons/{english.name}"
    may_wait = str(english.relative_to(ROOT)) in NOT_YET_TRANSLATED and not chinese.exists()
    if not may_wait:
        assert f"../lessons/zh/{chinese.name}" in targets, \
            f"its first cell does not link the Chinese twin, ../lessons/zh/{chinese.name}"


@pytest.mark.parametrize("notebook", notebooks(), ids=lambda p: p.stem)
def test_every_relative_link_in_a_notebook_points_to_a_file_and_anchor_that_exist(notebook):
    broken = [f"cell {n}: {problem}" for n, text in enumerate(markdown_cells(notebook))
              if text is not None for problem in broken_links(text, notebook)]
    assert not broken, "\n".join(broken)


def test_the_readmes_link_to_each_other():
    chinese = ROOT / "README.zh.md"
    if not chinese.exists():
        pytest.skip("README.zh.md is still being written")
    assert "README.zh.md" in (ROOT / "README.md").read_text(encoding="utf-8").split("\n\n")[1]
    assert "README.md" in chinese.read_text(encoding="utf-8")


def test_the_slug_of_a_heading_is_githubs():
    assert slug("The articles") == "the-articles"
    assert slug("`finish_reason`") == "finish_reason"
    assert slug("ToolCall and ToolResult") == "toolcall-and-toolresult"
    assert slug("terminal escape (CSI)") == "terminal-escape-csi"
    assert slug("pi's event names") == "pis-event-names"
    assert slug("Appendix: what else can go wrong") == "appendix-what-else-can-go-wrong"
    assert slug("工具调用 tool call") == "工具调用-tool-call"

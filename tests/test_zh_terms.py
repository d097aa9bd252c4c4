"""The Chinese edition says one thing one way: one term per concept, one title per lesson.

lessons/zh/GLOSSARY.md ends with a table, "中文版用词": for each concept the term to use and the
words not to use. Every Chinese text is read here, outside its code: the Chinese lessons, the two
READMEs and the glossary (but that table itself), the markdown and the comments of the Chinese
notebooks (notebooks/zh/), and the Chinese strings of the exercise checks (notebooks/checks/) and
of course.py (its MESSAGES above all). A word the table says not to use fails the test, which
names the file and the line.

And each lesson has one Chinese title, its own `# NN — title`: the course table of README.zh.md,
the course map and the teacher's guide of lessons/zh/README.md, and the glossary's lesson
headings give it word for word.

And no Chinese word is in italics (Chinese fonts have none): in the Chinese Markdown and the
markdown cells of the Chinese notebooks, emphasis on Chinese is **bold** or nothing."""

import ast
import io
import json
import re
import tokenize
from pathlib import Path

import pytest
from test_translation import FENCE

ROOT = Path(__file__).resolve().parent.parent
ZH = ROOT / "lessons" / "zh"
GLOSSARY = ZH / "GLOSSARY.md"
TABLE_ANCHOR = '<a id="terms-of-the-chinese-edition"></a>'
CJK = re.compile(r"[\u4e00-\u9fff]")


def table_section(text: str) -> tuple[int, int]:
    """The lines (first, end) of the glossary's terms section: its anchor up to the next ## ."""
    lines = text.split("\n")
    first = lines.index(TABLE_ANCHOR)
    end = next((i for i in range(first + 2, len(lines)) if lines[i].startswith("## ")
                or (lines[i].startswith("<a id=") and i + 1 < len(lines)
                    and lines[i + 1].startswith("## "))), len(lines))
    return first, end


def cell_items(cell: str) -> list[str]:
    """The words of a table cell, separated by 、; a word in ``...`` or `...` is taken as it is
    written there (it may hold a space or a backtick); — means none."""
    items = []
    for item in (part.strip() for part in cell.split("、")):
        if item in ("", "—"):
            continue
        if item.startswith("``") and item.endswith("``"):
            item = item[2:-2].strip()
        elif item.startswith("`") and item.endswith("`"):
            item = item[1:-1]
        items.append(item)
    return items


def terms() -> list[tuple[str, str, list[str]]]:
    """(English, the Chinese term, the words not to use) for each row of the glossary's table."""
    text = GLOSSARY.read_text(encoding="utf-8")
    first, end = table_section(text)
    rows = [line for line in text.split("\n")[first:end] if line.startswith("|")]
    assert rows[0].split("|")[1:4] == [" English ", " 用这个 ", " 不用这些 "], rows[0]
    out = []
    for row in rows[2:]:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        assert len(cells) == 4, f"a row of the terms table has {len(cells)} cells: {row}"
        out.append((cells[0], cells[1], cell_items(cells[2])))
    return out


def prose(text: str) -> str:
    """text with what is not prose blanked out, line for line: code blocks, link targets,
    URLs (up to the first character that is not ASCII: the Chinese after a bare URL is still
    prose), HTML tags. An inline `code` span is kept as a bare pair of backticks, so a word that
    stands next to code (覆盖 `ask_model`) is still seen, and a word inside code is not."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    text = re.sub(r"``[^`\n]+``|`[^`\n]+`", "``", text)
    text = re.sub(r"\]\([^)\s]+(?:\s+\"[^\"]*\")?\)", "]", text)
    text = re.sub(r"https?://[^\s<>\u0080-\U0010ffff]+", " ", text)  # a URL is ASCII
    return re.sub(r"<[^>\n]+>", " ", text)


def markdown_lines(path: Path, skip: tuple[int, int] = (0, 0)):
    for number, line in enumerate(prose(path.read_text(encoding="utf-8")).split("\n"), 1):
        if not skip[0] < number <= skip[1]:
            yield f"{path.relative_to(ROOT)}:{number}", line


def notebook_lines(path: Path):
    """The markdown of a Chinese notebook, and the comments of its code, line by line."""
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"])
        where = f"{path.relative_to(ROOT)} cell {cell.get('id')} line"
        if cell["cell_type"] == "markdown":
            for number, line in enumerate(prose(source).split("\n"), 1):
                yield f"{where} {number}", line
        elif cell["cell_type"] == "code":
            for token in tokenize.generate_tokens(io.StringIO(source).readline):
                if token.type == tokenize.COMMENT:
                    yield f"{where} {token.start[0]}", prose(token.string)


def string_lines(path: Path):
    """The Chinese strings of a Python file (a check's texts, course's messages), one by one."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and CJK.search(node.value):
            yield f"{path.relative_to(ROOT)}:{node.lineno}", prose(node.value)


def chinese_lines():
    """(where, a line of Chinese prose) in every Chinese text of the course."""
    yield from markdown_lines(ROOT / "README.zh.md")
    for path in sorted(ZH.glob("*.md")):
        skip = (0, 0)
        if path == GLOSSARY:
            first, end = table_section(path.read_text(encoding="utf-8"))
            skip = (first, end)  # 1-based lines first+1 .. end: the section itself
        yield from markdown_lines(path, skip)
    for path in sorted((ROOT / "notebooks" / "zh").glob("*.ipynb")):
        yield from notebook_lines(path)
    for path in [*sorted((ROOT / "notebooks" / "checks").glob("*.py")),
                 ROOT / "notebooks" / "course.py"]:
        yield from string_lines(path)


def pattern(word: str) -> re.Pattern:
    """A word not to use; one that starts or ends with a Latin letter is a whole word there."""
    before = r"(?<![A-Za-z])" if re.match(r"[A-Za-z]", word) else ""
    after = r"(?![A-Za-z])" if re.search(r"[A-Za-z]$", word) else ""
    return re.compile(before + re.escape(word) + after)


def test_the_terms_table_is_there_and_each_row_has_a_term():
    table = terms()
    assert len(table) > 30
    for english, chinese, avoid in table:
        assert english and chinese, (english, chinese)
        assert chinese not in avoid, f"{english}: {chinese} is both to use and not to use"


def test_no_chinese_text_uses_a_word_the_terms_table_says_not_to_use():
    avoid = [(word, pattern(word), english, chinese) for english, chinese, words in terms()
             for word in words]
    found = [f"{where}: {word!r} — use {chinese!r} ({english})"
             for where, line in chinese_lines()
             for word, regex, english, chinese in avoid if regex.search(line)]
    assert not found, f"{len(found)} uses of words the glossary's terms table rules out:\n" + \
        "\n".join(found)


def test_a_word_next_to_code_is_seen_and_a_word_in_code_is_not():
    line = prose("把 `dict` 交给 [服务端](GLOSSARY.md#server)，再覆盖 `ask_model`。")
    assert not pattern("dict").search(line) and not pattern("server").search(line)
    assert pattern("服务端").search(line) and pattern("覆盖 `").search(line)
    assert not pattern("dict").search("dictionary") and pattern("dict").search("一个 dict。")
    assert prose("```python\nx = '服务端'\n```\n服务器") == "\n\n\n服务器"
    assert pattern("服务端").search(prose("见 https://example.org/a.html；服务端"))


# --- One title per lesson ------------------------------------------------------------------------

LESSONS = sorted(ZH.glob("[0-9][0-9]-*.md"))


def title(lesson: Path) -> str:
    """The lesson's own title: its first line `# NN — title`, without the number."""
    heading = next(line for line in lesson.read_text(encoding="utf-8").split("\n")
                   if line.startswith("# "))
    number, dash, text = heading[2:].partition(" — ")
    assert number == lesson.name[:2] and dash, f"{lesson.name}: its title is {heading!r}"
    return text.strip()


def titles_given(lesson: Path) -> dict[str, list[str]]:
    """Where the other texts name the lesson, and the title each gives it."""
    number, name = lesson.name[:2], re.escape(lesson.name)
    readme = (ROOT / "README.zh.md").read_text(encoding="utf-8")
    course_map = (ZH / "README.md").read_text(encoding="utf-8")
    glossary = GLOSSARY.read_text(encoding="utf-8")
    row = rf"^\| {number} \| \[([^\]]+)\]\("
    return {
        "README.zh.md, the course table": re.findall(row + rf"lessons/zh/{name}\)", readme, re.M),
        "lessons/zh/README.md, the course map": re.findall(row + rf"{name}\)", course_map, re.M),
        "lessons/zh/README.md, the teacher's guide":
            re.findall(rf"^\*\*{number} — (.+?)。\*\*", course_map, re.M),
        "lessons/zh/GLOSSARY.md, the lesson's heading":
            re.findall(rf"^## 第 {number} 课 — (.+?)\s*$", glossary, re.M),
    }


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_a_lesson_has_one_title_everywhere(lesson):
    own = title(lesson)
    wrong = []
    for where, found in titles_given(lesson).items():
        if found != [own]:
            wrong.append(f"{where}: {found or 'not found'}")
    assert not wrong, f"the lesson's title is {own!r}; elsewhere:\n" + "\n".join(wrong)


# --- No italics on Chinese words -----------------------------------------------------------------

# Chinese fonts have no italic: a browser slants the glyphs, or shows them plain. Emphasis on
# Chinese is bold (**...**), or nothing. A single * or _ opens emphasis when a non-space follows
# it and closes it when a non-space precedes it (a bullet "* " is neither); _ does not, inside a
# word. Bold markers (** and __) are taken out first, so **粗体** is not seen and ***粗斜体*** is.
ITALIC = re.compile(r"(?<![\\*])\*(?=[^\s*])([^*\n]*?[^\s*\\])\*(?!\*)"
                    r"|(?<![\w\\])_(?=[^\s_])([^_\n]*?[^\s_\\])_(?!\w)")


def italics(line: str) -> list[str]:
    """The *emphasis* or _emphasis_ in a line of prose that holds a Chinese character."""
    line = re.sub(r"\*\*|__", "", line)
    return [m.group(0) for m in ITALIC.finditer(line) if CJK.search(m.group(0))]


def chinese_markdown_lines():
    """(where, a line of prose) in the Chinese Markdown: the lessons, the READMEs, the glossary
    (its table too), and the markdown cells of the Chinese notebooks."""
    yield from markdown_lines(ROOT / "README.zh.md")
    for path in sorted(ZH.glob("*.md")):
        yield from markdown_lines(path)
    for path in sorted((ROOT / "notebooks" / "zh").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                source = prose("".join(cell["source"]))
                for number, line in enumerate(source.split("\n"), 1):
                    yield f"{path.relative_to(ROOT)} cell {cell.get('id')} line {number}", line


def test_italics_are_seen_on_chinese_words_only():
    assert italics("工具负责*执行*调用") == ["*执行*"]
    assert italics("*提示：* 先读文件") == ["*提示：*"]
    assert italics("一个 _字典_ 而已") == ["_字典_"]
    assert italics("***很重要***") == ["*很重要*"]
    assert not italics("**提示：** 先读文件") and not italics("__粗体__")
    assert not italics("* 列表的一项") and not italics("- 一项 * 另一项 *")
    assert not italics("*emphasis* in English") and not italics("max_turns 和 turn_start 的轮次")
    assert not italics(prose("`*.md` 匹配任何深度上的文件名，`**` 代表任意多层*文件夹"))
    assert not italics(prose("```\n*代码里的星号*\n```"))


def test_no_chinese_text_is_in_italics():
    found = [f"{where}: {', '.join(words)}" for where, line in chinese_markdown_lines()
             if (words := italics(line))]
    assert not found, f"{len(found)} lines put Chinese in italics (Chinese fonts have none; " \
        "use **bold** where the emphasis matters, else nothing):\n" + "\n".join(found)

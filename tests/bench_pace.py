"""How much each lesson asks of a class: the figures the course map quotes, run by hand.

    .venv/bin/python tests/bench_pace.py [NN ...] [--no-run]

Per lesson it prints the main path's size and the notebook's run time:
  words      prose of lessons/NN-slug.md outside code blocks, before "## Going further"
             (or "## Sources"): what a class reads together
  nb words   prose of the notebook's Markdown cells before its first "## Going further: ..."
  code       lines of code cells before that heading, the first cell included (blank lines
             not counted; comments are, since a student reads them)
  main s     seconds the notebook's main-path cells take to run, in a fresh kernel, one after
             another, once each (the kernel's start not counted)
  all s      the same for every cell, Going further included
  further    what Going further holds: its section titles
Guide figures (lessons/README.md): about 3,000 words and 450 lines of code on the main path.
"""

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "notebooks")]


def prose_words(markdown: str) -> int:
    """Words outside fenced code blocks, inline code counted as one word."""
    text, fenced = [], False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            text.append(line)
    plain = re.sub(r"`[^`]*`", " code ", "\n".join(text))
    plain = re.sub(r"\]\([^)]*\)", "]", plain)  # a link's address is not read
    plain = re.sub(r"<[^>]+>", " ", plain)  # anchors and other tags
    return len(re.findall(r"[A-Za-z0-9][\w'’.-]*|[\u4e00-\u9fff]", plain))


def main_path_of_lesson(text: str) -> str:
    """The lesson's text up to "## Going further" or "## Sources", whichever comes first."""
    cut = [m.start() for m in re.finditer(r"^## (Going further|Sources)\s*$", text, re.M)]
    return text[: min(cut)] if cut else text


def going_further(cells: list[dict]) -> int:
    """The index of the notebook's first "## Going further: ..." cell (or len(cells))."""
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "markdown" and re.search(
                r"^## Going further", "".join(cell["source"]), re.M):
            return i
    return len(cells)


def code_lines(cells: list[dict]) -> int:
    return sum(1 for c in cells if c["cell_type"] == "code"
               for line in "".join(c["source"]).split("\n")
               if line.strip())


def run_times(path: Path, cut: int) -> tuple[float, float]:
    """Seconds the cells before `cut`, and all cells, take in a fresh kernel (one run each)."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    main = total = 0.0
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            started = time.perf_counter()
            client.execute_cell(cell, index)
            took = time.perf_counter() - started
            total += took
            main += took if index < cut else 0.0
    return main, total


def lesson_figures(path: Path, run: bool) -> dict:
    lesson = ROOT / "lessons" / f"{path.stem}.md"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    cut = going_further(cells)
    further = [line[3:].removeprefix("Going further: ") for c in cells[cut:]
               if c["cell_type"] == "markdown"
               for line in "".join(c["source"]).split("\n") if line.startswith("## ")]
    figures = {
        "lesson": path.stem,
        "words": prose_words(main_path_of_lesson(lesson.read_text(encoding="utf-8")))
        if lesson.exists() else 0,
        "nb words": sum(prose_words("".join(c["source"])) for c in cells[:cut]
                        if c["cell_type"] == "markdown"),
        "code": code_lines(cells[:cut]),
        "further": "; ".join(further) or "-",
    }
    if run:
        figures["main s"], figures["all s"] = run_times(path, cut)
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("lessons", nargs="*", help="e.g. 05 or 05-sandbox (default: all)")
    parser.add_argument("--no-run", action="store_true", help="sizes only, no notebook runs")
    args = parser.parse_args(argv)
    paths = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
    if args.lessons:
        paths = [p for p in paths if any(p.stem.startswith(n) for n in args.lessons)]
    print(f"{'lesson':<30} {'words':>6} {'nb words':>8} {'code':>5} "
          f"{'main s':>7} {'all s':>6}  going further")
    for path in paths:
        f = lesson_figures(path, not args.no_run)
        times = (f"{f['main s']:7.1f} {f['all s']:6.1f}" if "main s" in f else f"{'-':>7} {'-':>6}")
        print(f"{f['lesson']:<30} {f['words']:6d} {f['nb words']:8d} {f['code']:5d} {times}  "
              f"{f['further']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The whole promise of "every cell can be run again", for every notebook: after a full run in
one kernel, everything from each `## ` section down is run once more, as a student scrolling
back does, and must show what it showed the first time. The suite checks each cell twice in a
row (conftest.py) and this from one section of notebook 14 (tests/test_notebooks.py); running
it from every section of every notebook takes minutes, so it is run by hand, never collected:

    .venv/bin/python tests/run_again_from_every_section.py [NN-slug ...]

It prints one line per notebook and exits 1 if a cell raised or showed something else."""

import re
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "notebooks"), str(ROOT / "tests")]

from test_notebooks import shown_text  # noqa: E402  (needs the path above)


def problems(path: Path) -> tuple[int, list[str]]:
    """How many sections were run again, and what went wrong (the first problem of each)."""
    notebook = nbformat.read(path, as_version=4)
    cells = notebook.cells
    sections = [i for i, cell in enumerate(cells) if cell.cell_type == "markdown"
                and re.search(r"^## ", cell.source, re.M)]
    client = NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    found = []
    with client.setup_kernel():
        for index, cell in enumerate(cells):
            client.execute_cell(cell, index)
        first = [shown_text(cell) for cell in cells]
        for start in sections[1:]:  # from the first section down is a full run again
            for index in range(start, len(cells)):
                try:
                    client.execute_cell(cells[index], index)
                except Exception as exc:  # the cell's own error, as Jupyter would show it
                    found.append(f"from cell {start}: cell {index} raised "
                                 f"{str(exc).strip().splitlines()[-1][:200]}")
                    break
                tags = cells[index].metadata.get("tags", [])  # once, or not compared (timings)
                unchecked = "once" in tags or "nbval-ignore-output" in tags
                if not unchecked and shown_text(cells[index]) != first[index]:
                    found.append(f"from cell {start}: cell {index} shows something else")
                    break
    return len(sections) - 1, found


def notebook(name: str) -> Path:
    """A notebook named as course.py names one: 03-the-loop, 03-the-loop.ipynb or 03."""
    stem = Path(name).name.removesuffix(".ipynb")
    found = sorted((ROOT / "notebooks").glob(f"{stem}.ipynb")) or sorted(
        (ROOT / "notebooks").glob(f"{stem}-*.ipynb"))
    if len(found) != 1:
        raise SystemExit(f"no single notebook is called {name!r}: give e.g. 03-the-loop or 03")
    return found[0]


def main(names: list[str]) -> int:
    paths = [notebook(name) for name in names] or sorted(
        (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
    failed = False
    for path in paths:
        count, found = problems(path)
        print(f"{path.name:<34} {count:3d} sections run again: "
              f"{'; '.join(found) if found else 'the same'}", flush=True)
        failed = failed or bool(found)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""What a kernel holds after a notebook's main path only, for the tests of lessons whose main
path defines a short version of what Going further defines again, whole (08, 10): the code of
the main-path export cells, and the lesson's module with those cells run again over it."""

import contextlib
import json
import re

import course


def main_path_export_cells(notebook: str) -> list[str]:
    """The code of notebook's export cells before its first "## Going further"."""
    code = []
    for cell in json.loads(course.notebook_path(notebook).read_text("utf-8"))["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and re.search(r"^## Going further", source, re.M):
            return code
        if "export" in cell.get("metadata", {}).get("tags", []):
            code.append(course.without_mark(source))
    raise AssertionError(f"no Going further in notebook {notebook}")


@contextlib.contextmanager
def main_path_only(module, notebook: str):
    """module as a kernel holds it after the main path only (its export cells run again over
    the whole module, as course does when a student runs them); put back as it was after."""
    saved = dict(vars(module))
    try:
        for source in main_path_export_cells(notebook):
            course._run(source, "a main-path export cell", module)
        yield saved
    finally:
        vars(module).clear()
        vars(module).update(saved)

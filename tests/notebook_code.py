"""Load the code a notebook defines, so tests exercise the notebook's own definitions.

Cells tagged "export" (cell metadata: {"tags": ["export"]}) hold the definitions a lesson
builds; tests import them from the notebook itself, so there is one definition, not a copy.
"""

import json
import sys
import types
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def load_notebook(name: str, tag: str = "export") -> types.ModuleType:
    """Run the cells of notebooks/<name> tagged `tag` in a fresh module and return it."""
    path = NOTEBOOKS / name
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    source = [
        "".join(cell["source"])
        for cell in cells
        if cell["cell_type"] == "code" and tag in cell.get("metadata", {}).get("tags", [])
    ]
    if not source:
        raise LookupError(f"{name} has no code cell tagged {tag!r}")
    if str(NOTEBOOKS) not in sys.path:
        sys.path.insert(0, str(NOTEBOOKS))  # the cells may `import course`
    module = types.ModuleType(path.stem.replace("-", "_"))
    module.__file__ = str(path)
    exec(compile("\n\n".join(source), str(path), "exec"), module.__dict__)
    return module

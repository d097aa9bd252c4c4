"""Small helpers the notebooks share. Nothing here is part of the agent.

- makes `import agent` work from notebooks/ (agent.py lives one folder up)
- fresh_workspace(): a new, empty temporary folder to work in, so a notebook never
  touches the repository and its outputs never show a machine's paths
- table() / history(): a readable table in Jupyter (HTML), plain text everywhere else
"""

import atexit
import html
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import agent  # noqa: E402  (needs the path above)


def fresh_workspace(name: str = "workspace") -> Path:
    """Create an empty temporary folder, make it the working directory, return its path.
    It is removed when the kernel exits."""
    path = Path(tempfile.mkdtemp(prefix=f"afz-{name}-")).resolve()
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    os.chdir(path)
    return path


class Table:
    """Rows under a header: shown as an HTML table by Jupyter, as aligned text elsewhere."""

    def __init__(self, header, rows, width=70):
        self.header = [str(h) for h in header]
        self.rows = [[str(cell) for cell in row] for row in rows]
        self.width = width

    def _repr_html_(self):
        def row(cells, tag):
            return "<tr>" + "".join(
                f'<{tag} style="text-align:left;vertical-align:top;white-space:pre-wrap">'
                f"{html.escape(c)}</{tag}>" for c in cells) + "</tr>"
        return ("<table>" + row(self.header, "th")
                + "".join(row(r, "td") for r in self.rows) + "</table>")

    def __repr__(self):
        cells = [[agent.one_line(c, self.width) for c in r] for r in [self.header, *self.rows]]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                 for r in cells]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)


def table(header, rows, width=70) -> Table:
    return Table(header, rows, width)


def history(messages, width=70) -> Table:
    """The message history, one row per message (and one per extra parallel tool call)."""
    rows = [(i, *row) for i, row in enumerate(agent.history_rows(messages))]
    return Table(["#", "role", "tool call", "tool_call_id", "content"], rows, width)

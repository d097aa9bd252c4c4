"""A tiny MCP server, to try --mcp with: notes kept in memory while it runs.

    .venv/bin/python main.py --mcp ".venv/bin/python examples/notes_server.py" "Note: buy milk"

It speaks MCP on its standard input and output (the stdio transport), as main.py's --mcp expects.
list_notes says it only reads (readOnlyHint); main.py asks before every call all the same.
The tools return text and declare no return type: with one, the SDK would send an output
schema, and the client would check every result against it."""

from mcp.server import MCPServer
from mcp.types import ToolAnnotations

NOTES: list[str] = []
server = MCPServer("notes")


@server.tool()
def add_note(text: str):
    """Keep a note, for later in this conversation."""
    NOTES.append(text)
    return f"note {len(NOTES)} kept"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def list_notes():
    """Every note kept so far, numbered."""
    return "\n".join(f"{n}. {text}" for n, text in enumerate(NOTES, 1)) or "(no notes yet)"


if __name__ == "__main__":
    server.run()  # over stdio, the default

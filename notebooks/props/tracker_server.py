"""A tiny issue tracker, served over MCP: the server lesson 15 writes with the SDK's server API.

The lesson starts it as a child process (python tracker_server.py); it speaks MCP on its standard
input and output, and writes its logs to standard error, as the stdio transport asks."""

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

ISSUES = {
    1: "greet.py: the greeting is misspelled. greet('Ana') says 'Helo, Ana!'; "
       "it must say 'Hello, Ana!'. See the attached log.",
    2: "Add a --shout option to greet.py that prints the greeting in capitals.",
}
ATTACHMENTS = {"issue-1.log": "$ python greet.py Ana\nHelo, Ana!\n"}

server = MCPServer("tracker")


@server.tool()
def list_issues():
    """List the open issues: one line each, its number and its first words."""
    return "\n".join(f"#{n} {text[:50]}" for n, text in ISSUES.items())


@server.tool()
def read_issue(number: int):
    """The whole text of one issue."""
    if number not in ISSUES:  # a ToolError reaches the client as a result with isError: true
        raise ToolError(f"there is no issue #{number}; the open issues are {sorted(ISSUES)}")
    return ISSUES[number]


@server.tool()
def read_file(path: str):
    """Read a file attached to an issue, such as a log."""
    if path not in ATTACHMENTS:
        raise ToolError(f"no attachment {path!r}; the attachments are {sorted(ATTACHMENTS)}")
    return ATTACHMENTS[path]


if __name__ == "__main__":
    server.run()  # over stdio, the default

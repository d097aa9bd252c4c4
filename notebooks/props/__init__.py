"""Props: what the lessons' demonstrations and tests need that is not part of any agent.

A prop is course material, never exported: a builder takes away the export cells, and none of
them imports this package. Each module says which lesson brought it in.

  clock     FakeClock, a clock that moves only when told to; with_latency and with_tool_time,
            which make model calls and tools take time on it (lesson 07, used from 09 on)
  text_models  models without tool calling, scripted: action and finish texts, lesson 03's
            four tasks written as such a model writes them, a model that reads the repeat
            warning (lesson 08)
  mcp_lab   lesson 15's lab: its two MCP servers (tracker_server.py, unruly_server.py), the
            skills folder (skills/), a git repository with a broken file, scripted models that
            read git, choose a skill or obey a tool's description, and a strict server
"""

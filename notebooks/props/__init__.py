"""Props: what the lessons' demonstrations and tests need that is not part of any agent.

A prop is course material, never exported: a builder takes away the export cells, and none of
them imports this package. Each module says which lesson brought it in.

  tool_lab  attempt (call a tool, say what it returned or raised), the two-flag SETTINGS file,
            and the article's edit_file as published and with its branches put right (lesson 01)
  registry_lab  check_says (check_tools, reporting instead of raising), the notes file the runs
            read, and quiet_run, an agent run that prints nothing, in a folder of its own (02)
  loop_lab  requests_table (what each request carried), and the five tasks on an agent whose
            handler notes whether each call was in the history when its tool ran (lesson 03)
  guard_lab write, unanswered, last_error, on_error (a scripted step that reacts to the error it
            reads), the stubborn model, and run_quietly, an agent run for the checks (lesson 04)
  clock     FakeClock, a clock that moves only when told to; with_latency and with_tool_time,
            which make model calls and tools take time on it (lesson 07, used from 09 on)
  text_models  models without tool calling, scripted: action and finish texts, lesson 03's
            four tasks written as such a model writes them, a model that reads the repeat
            warning (lesson 08)
  delegation_lab  lesson 16's scripted parents and subagents, the plan's live view; shop.py is
            the twelve-module package with one bug they search (lesson 16)
"""

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
  calc_lab  lesson 09's project (calc.py and its test), its run_tests tool, the scripted model
            that goes on after a crash, and crash_mid_tool, which kills crash_run.py (the
            program beside it) with SIGKILL while its tool runs
  lab       build_lab, SECRET, tree: a workspace with a secret beside it and traps inside it;
            gullible_script, a model that obeys a file's hidden orders (lesson 05)
  half_write  writes that stop half-way, as a full disk would stop them (lesson 06)
  nightly_job the failed nightly job lesson 07 traces: its project, its scripted model, and
            record_run, which records that run again for a section run on its own
  trace_views  lesson 07's two views of a trace: plot_timeline (the chart, matplotlib) and
            event_rows (one table row per record)
  context_lab  the shop (a project and a verifier that reads its files), the careful model that
            renames a function in it, the note taker that summarises (and a sloppy one), and
            run_task, plot_prompts and cached_tokens, which run and measure it (lesson 12)
  finish_order  FinishOrder, which makes the calls of a batch finish in a chosen order; slow,
            which makes a tool wait first (lesson 10)
  streaming_model  StreamingScriptedClient, a scripted model that streams, cut at awkward
            places in the shape one of four servers gives; server_sent_events, the bytes a
            server sends for it (lesson 11; the builder's kit gets a copy)
  chunk_table  CHUNK_COLUMNS and chunk_rows: what a stream holds, one row per chunk, for lesson
            11's notebook (kept out of streaming_model, which the kit copies)
  delegation_lab  lesson 16's scripted parents and subagents, the plan's live view; shop.py is
            the twelve-module package with one bug they search (lesson 16)
  tasks     the course's task suite: twelve small coding tasks with their verifiers and
            reference solutions, TASKS and TASK by name (lesson 13)
  characters
            lesson 13's scripted characters: MODELS (competent, sloppy, looping, reckless,
            confabulating), TROUBLE (hanging, stubborn, crashing, raising), and on_stage, the
            fake clock and timed agent for repeatable wall times
  mcp_lab   lesson 15's lab: its two MCP servers (tracker_server.py, unruly_server.py), the
            skills folder (skills/), a git repository with a broken file, scripted models that
            read git, choose a skill or obey a tool's description, and a strict server
  pages_fixer  lesson 14's scripted model: fixer, a good model fixing pages.py, and note_taker,
            its summariser (capstone.py --scripted loads the file beside the exported modules)
  capstone_run  lesson 14's run made repeatable: Stopwatch (made-up durations on a fake clock),
            the scripted person, record_run for a section run on its own, and TRICKS, four ways
            to make pytest pass with pages.py still wrong
"""

"""Props: what the lessons' demonstrations and tests need that is not part of any agent.

A prop is course material, never exported: a builder takes away the export cells, and none of
them imports this package. Each module says which lesson brought it in.

  clock     FakeClock, a clock that moves only when told to; with_latency and with_tool_time,
            which make model calls and tools take time on it (lesson 07, used from 09 on)
  context_lab  the shop (a project and a verifier that reads its files), the careful model that
            renames a function in it, the note taker that summarises (and a sloppy one), and
            run_task, plot_prompts and cached_tokens, which run and measure it (lesson 12)
"""

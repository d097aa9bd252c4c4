"""Props: what the lessons' demonstrations and tests need that is not part of any agent.

A prop is course material, never exported: a builder takes away the export cells, and none of
them imports this package. Each module says which lesson brought it in.

  clock     FakeClock, a clock that moves only when told to; with_latency and with_tool_time,
            which make model calls and tools take time on it (lesson 07, used from 09 on)
  half_write  writes that stop half-way, as a full disk would stop them (lesson 06)
  nightly_job the failed nightly job lesson 07 traces: its project, its scripted model, and
            record_run, which records that run again for a section run on its own
"""

"""Props: what the lessons' demonstrations and tests need that is not part of any agent.

A prop is course material, never exported: a builder takes away the export cells, and none of
them imports this package. Each module says which lesson brought it in.

  clock     FakeClock, a clock that moves only when told to; with_latency and with_tool_time,
            which make model calls and tools take time on it (lesson 07, used from 09 on)
  calc_lab  lesson 09's project (calc.py and its test), its run_tests tool, the scripted model
            that goes on after a crash, and crash_mid_tool, which kills crash_run.py (the
            program beside it) with SIGKILL while its tool runs
"""

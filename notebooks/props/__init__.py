"""Props: what the lessons' demonstrations and tests need that is not part of any agent.

A prop is course material, never exported: a builder takes away the export cells, and none of
them imports this package. Each module says which lesson brought it in.

  clock     FakeClock, a clock that moves only when told to; with_latency and with_tool_time,
            which make model calls and tools take time on it (lesson 07, used from 09 on)
  tasks     the course's task suite: twelve small coding tasks with their verifiers and
            reference solutions, TASKS and TASK by name (lesson 13)
  characters
            lesson 13's scripted characters: MODELS (competent, sloppy, looping, reckless,
            confabulating), TROUBLE (hanging, stubborn, crashing, raising), and on_stage, the
            fake clock and timed agent for repeatable wall times
"""

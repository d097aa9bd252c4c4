"""Props: what the lessons' demonstrations and tests need that is not part of any agent.

A prop is course material, never exported: a builder takes away the export cells, and none of
them imports this package. Each module says which lesson brought it in.

  clock     FakeClock, a clock that moves only when told to; with_latency and with_tool_time,
            which make model calls and tools take time on it (lesson 07, used from 09 on)
  finish_order  FinishOrder, which makes the calls of a batch finish in a chosen order; slow,
            which makes a tool wait first (lesson 10)
  streaming_model  StreamingScriptedClient, a scripted model that streams, cut at awkward
            places in the shape one of four servers gives; server_sent_events, the bytes a
            server sends for it (lesson 11; the builder's kit gets a copy)
"""

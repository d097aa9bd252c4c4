"""The nightly job that failed, and a scripted model that finds out why (lesson 07).

`make_project(folder)` writes a small project: `app.py`, its settings (with a fake API key in
them, as settings files often have) and a server log of about 55,000 characters whose end says
why the job failed. `SCRIPT` is what the scripted model does, as a good model would: look
around, read the log, read the code and the settings, look for an older log that is not there,
write `NOTES.md`, answer. `record_run(traces)` runs that task once more, traced by lesson 07's
`Tracer` on a fake clock, so a section of the notebook that runs on its own has the same trace
as the run it explains."""

import json
import os
import shutil
import tempfile
from pathlib import Path

from course import working_in  # the chdir for one block that the notebooks use

from agent import reply, step, tool_call
from props.clock import FakeClock, with_latency, with_tool_time

PAYMENTS_API_KEY = "demo-credential-not-real-5150"  # fake: the secret the trace must not keep

NOTES = ("# Why the nightly job failed (2026-05-14)\n\n"
         "Charge 1042 timed out three times (30 s each) calling payments.example/v2, then the job\n"
         "stopped with TimeoutError. app.py has no retry with backoff and no fallback.\n")
TASK = ("Last night's job failed. Find out why from logs/server.log and write the cause "
        "to NOTES.md.")
SCRIPT = [
    tool_call("list_files", path="."),
    step(tool_call("read_file", path="logs/server.log"),
         reasoning_content="The log is long; the failure should be near its end."),
    [tool_call("read_file", path="app.py"), tool_call("read_file", path="settings.env")],
    step(tool_call("read_file", path="logs/server.log.1"), content="Is there an older log?"),
    tool_call("edit_file", path="NOTES.md", old_str="", new_str=NOTES),
    reply("Charge 1042 timed out three times against the payments API, so the job stopped. "
          "I wrote the cause to NOTES.md; app.py needs a retry with backoff."),
]


def make_project(folder) -> Path:
    """The same starting files every time (a recording and its replay must start alike); what
    an earlier run left in the folder is removed first (the folder itself stays: it may be the
    current directory). Its settings hold PAYMENTS_API_KEY, as settings files often do."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    (folder / "logs").mkdir()
    (folder / "app.py").write_text(
        "import os\nimport urllib.request\n\n\ndef charge(order_id, cents):\n"
        "    url = os.environ['PAYMENTS_URL'] + '/charge'\n"
        "    timeout = float(os.environ['PAYMENTS_TIMEOUT'])\n"
        "    data = f'{order_id},{cents}'.encode()\n"
        "    return urllib.request.urlopen(url, data=data, timeout=timeout)\n")
    (folder / "settings.env").write_text(
        "PAYMENTS_URL=https://payments.example/v2\nPAYMENTS_TIMEOUT=30\n"
        f"PAYMENTS_API_KEY={PAYMENTS_API_KEY}\n")
    lines = [f"2026-05-14 0{i // 3600}:{i // 60 % 60:02d}:{i % 60:02d} INFO  "
             f"GET /health 200 {3 + i % 5}ms" for i in range(0, 7_200, 6)]
    lines += ["2026-05-14 02:14:07 WARN  charge 1042: payments timed out after 30 s (try 1 of 3)",
              "2026-05-14 02:14:38 WARN  charge 1042: payments timed out after 30 s (try 2 of 3)",
              "2026-05-14 02:15:09 ERROR charge 1042: payments timed out after 30 s (try 3 of 3)",
              "2026-05-14 02:15:09 ERROR job failed: TimeoutError: the read operation timed out"]
    (folder / "logs" / "server.log").write_text("\n".join(lines) + "\n")
    return folder


def record_run(traces, on_event=None):
    """The task run again on a fresh project, traced into the folder traces (emptied first),
    exactly as lesson 07's "A run worth tracing" runs it: returns (agent, tracer, run), run
    being the records of its trace, read back one JSON line at a time as that section reads
    them."""
    import tracing  # the lesson's module; this prop only repeats its demonstration

    import agent

    os.environ["PAYMENTS_API_KEY"] = PAYMENTS_API_KEY  # where a deployment keeps its keys
    shutil.rmtree(traces, ignore_errors=True)
    clock = FakeClock()
    tracer = tracing.Tracer(traces, clock=clock)
    handlers = agent.fan_out(on_event, tracer) if on_event else tracer
    with tempfile.TemporaryDirectory() as folder, working_in(make_project(folder)):
        bot = agent.Agent(with_latency(agent.ScriptedClient(SCRIPT), clock), "scripted-demo",
                          registry=with_tool_time(agent.TOOL_REGISTRY, clock), on_event=handlers)
        bot.chat(TASK)
    with tracer.paths[0].open("rb") as file:
        run = [json.loads(line) for line in file]
    return bot, tracer, run

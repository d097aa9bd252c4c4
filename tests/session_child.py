"""A child process for tests/test_sessions.py: it records an agent's run in a session and
stops at the stage named on its command line, says so on stdout, and waits to be killed.

    python tests/session_child.py SESSION_FILE STAGE

STAGE is where it waits:
  question   in the middle of the first model call: the user's message has no answer yet
  model      in the middle of the second model call (after call_1 was answered)
  tool       in the middle of the tool of call_2
  results    after the assistant message with call_2 and call_3 is recorded, before either runs
  mid-batch  call_2 done, in the middle of call_3's tool; call_4 not started
  hold       it only holds the session open (the lock), running nothing
"""

import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "notebooks")]
import course  # noqa: E402,F401  (makes `import sessions` load lesson 09's export cells)
import sessions  # noqa: E402

from agent import TOOL_REGISTRY, TOOLS, Agent, ScriptedClient, schema, tool_call  # noqa: E402

PATH, STAGE = sys.argv[1], sys.argv[2]


def wait_to_be_killed() -> None:
    print(f"at {STAGE}", flush=True)  # the test reads this line, then kills us
    threading.Event().wait()


def slow(path: str = ".") -> dict:
    """A tool that never finishes here."""
    wait_to_be_killed()
    return {}


def model_call_hangs(messages):
    wait_to_be_killed()


def stop_before_the_tools(event):  # after the session's own handler has written the message
    message = event.get("message", {})
    if event["type"] == "message_end" and message.get("role") == "assistant" and event.get(
            "turn") == 2 and message.get("tool_calls"):
        wait_to_be_killed()


second = {
    "model": model_call_hangs,
    "tool": tool_call("slow"),
    "results": [tool_call("slow"), tool_call("list_files")],
    "mid-batch": [tool_call("read_file", path="a.txt"), tool_call("slow"), tool_call("list_files")],
}
session = sessions.new_session(PATH)
if STAGE == "hold":
    wait_to_be_killed()
steps = [model_call_hangs] if STAGE == "question" else [tool_call("read_file", path="a.txt"),
                                                        second[STAGE]]
bot = Agent(ScriptedClient(steps), "scripted-demo",
            tools=[*TOOLS, schema(slow, "Slow.", path="A folder.")],
            registry={**TOOL_REGISTRY, "slow": slow},
            on_event=stop_before_the_tools if STAGE == "results" else None)
sessions.record(session, bot)
bot.chat("read a.txt, then more")

"""The run lesson 09 kills: an agent on the scripted model, recorded in a session (and traced
by lesson 07's tracer, for comparison). The model reads calc.py, adds mul(a, b), and asks for
run_tests; here that tool prints one line and then waits to be killed.

    python crash_run.py REPOSITORY NOTEBOOKS      (in the project's folder)
"""

import sys
import threading

sys.path[:0] = sys.argv[1:3]  # so agent, course, props and the lessons' modules can be imported
import course  # noqa: E402,F401  (makes `import sessions` load lesson 09's export cells)
import sessions  # noqa: E402
import tracing  # noqa: E402

from agent import TOOL_REGISTRY, TOOLS, Agent, ScriptedClient, schema, tool_call  # noqa: E402
from props.clock import FakeClock  # noqa: E402


def run_tests() -> dict:  # in this child, the tests never finish
    print("run_tests has started", flush=True)  # tell the notebook where we are...
    threading.Event().wait()  # ...and wait here, in the middle of the tool, to be killed


MUL = "\n\ndef mul(a, b):\n    return a * b\n"
script = [tool_call("read_file", path="calc.py"),
          tool_call("edit_file", path="calc.py", old_str="return a + b\n",
                    new_str="return a + b\n" + MUL),
          tool_call("run_tests")]
bot = Agent(ScriptedClient(script), "scripted-demo",
            tools=[*TOOLS, schema(run_tests, "Run the project's tests.")],
            registry={**TOOL_REGISTRY, "run_tests": run_tests},
            on_event=tracing.Tracer("traces", clock=FakeClock()))
session = sessions.new_session("session.jsonl", clock=FakeClock())
sessions.record(session, bot)
bot.chat("Add mul(a, b) to calc.py, then run the tests.")

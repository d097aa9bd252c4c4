"""The bounded shell tool of lesson 05 (run_command), against the notebook's own definition.

Timeouts here are one or two seconds, so the file runs in a few seconds.
"""

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import course
import pytest
from course import load_notebook
from main_path import main_path_export_cells  # tests/main_path.py
from processes import started_group, within  # tests/processes.py

import agent

pytestmark = pytest.mark.skipif(os.name != "posix", reason="run_command needs a POSIX shell")

nb = load_notebook("05-sandbox.ipynb")
PYTHON = shlex.quote(sys.executable)


@pytest.fixture
def workspace(tmp_path):
    folder = Path(os.path.realpath(tmp_path)) / "workspace"
    folder.mkdir()
    return folder


def run(workspace, command, **options):
    options.setdefault("timeout", 2)
    return nb.make_run_command(workspace, **options)(command)


def timed(workspace, command, **options):
    started = time.monotonic()
    result = run(workspace, command, **options)
    return result, time.monotonic() - started


def alive(pid: int) -> bool:
    """True if the process exists and is not a zombie waiting to be reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat_file = Path(f"/proc/{pid}/stat")
    if stat_file.exists():  # Linux: the state letter follows the ")" of the command name
        return stat_file.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def test_runs_in_the_workspace_with_home_there(workspace):
    run(workspace, "echo hi > made.txt; mkdir -p notes; cd && echo home > notes/at-home.txt")
    assert (workspace / "made.txt").read_text() == "hi\n"
    assert (workspace / "notes" / "at-home.txt").read_text() == "home\n"


def test_output_shows_workspace_paths_never_the_machine_path(workspace):
    """pwd and $HOME would print where the workspace is on the machine; the output says "."
    instead, and an absolute path below it becomes the workspace path the file tools use."""
    (workspace / "notes").mkdir()
    assert run(workspace, "pwd") == {"exit_code": 0, "output": ".\n"}
    assert run(workspace, "pwd -P; echo $HOME; echo \"$HOME/\"; cd notes && pwd")["output"] == \
        ".\n.\n.\nnotes\n"
    program = "open(__import__('os').path.abspath('notes/missing.txt'))"
    output = run(workspace, f"{PYTHON} -c {shlex.quote(program)}")["output"]
    assert "No such file or directory: 'notes/missing.txt'" in output
    assert run(workspace, "ls -d \"$PWD\"/notes \"$PWD\"")["output"] == ".\nnotes\n"
    assert str(workspace) not in run(workspace, "env; ls -la; find \"$PWD\"")["output"]


def test_a_path_that_only_starts_like_the_workspace_is_left_alone(workspace):
    sibling = f"{workspace}-evil/x {workspace}x"  # other folders: not the workspace
    assert run(workspace, f"echo {shlex.quote(sibling)}")["output"] == sibling + "\n"
    elsewhere = f"/elsewhere{workspace}/x"  # the workspace's path inside another path
    assert run(workspace, f"echo {shlex.quote(elsewhere)}")["output"] == elsewhere + "\n"


def test_a_command_that_cannot_start_leaks_no_path(workspace):
    run_command = nb.make_run_command(workspace / "gone", timeout=2)
    with pytest.raises(OSError) as caught:
        run_command("true")
    assert str(caught.value) == "the command could not start: No such file or directory"
    assert str(workspace) not in str(caught.value)


def test_exit_code_and_stderr_are_reported(workspace):
    assert run(workspace, "true") == {"exit_code": 0, "output": ""}
    assert run(workspace, "echo out; echo err >&2; exit 7") == {"exit_code": 7,
                                                                 "output": "out\nerr\n"}
    assert run(workspace, "no-such-command-anywhere")["exit_code"] == 127


def test_a_command_waiting_for_input_gets_end_of_file_at_once(workspace):
    result, seconds = timed(workspace, "cat; read line || echo 'no input'")
    assert result == {"exit_code": 0, "output": "no input\n"}  # no timeout: it did not wait
    assert seconds < 5  # far below the 10 s timeout, even on a busy machine
    script = "import sys; print(repr(sys.stdin.read()))"
    assert run(workspace, f"{PYTHON} -c {shlex.quote(script)}")["output"] == "''\n"


def gone(pid: int) -> bool:
    """Wait (at most a second) for a killed process to disappear: SIGKILL is asynchronous."""
    for _ in range(100):
        if not alive(pid):
            return True
        time.sleep(0.01)
    return False


def test_timeout_kills_the_whole_process_group(workspace):
    command = "(sleep 30; echo too late > late.txt) & echo $!; sleep 30"
    result, seconds = timed(workspace, command, timeout=0.5)
    assert result["timed_out"] == "killed after 0.5 s, with its process group"
    assert result["exit_code"] == -signal.SIGKILL
    assert 0.5 <= seconds < 10  # the timeout, not the 30 s sleep, ended it
    assert gone(int(result["output"]))  # the background child went with the shell


def test_a_background_child_is_killed_after_a_normal_exit_too(workspace):
    command = "(sleep 30; echo too late > late.txt) >/dev/null 2>&1 & echo $!"
    result = run(workspace, command, timeout=2)
    assert result["exit_code"] == 0
    assert "timed_out" not in result  # it did not wait for the child until the timeout...
    assert gone(int(result["output"]))  # ...and the child did not outlive it
    assert not (workspace / "late.txt").exists()


def test_a_background_child_holding_the_output_does_not_stall_the_tool(workspace):
    result, seconds = timed(workspace, "sleep 30 & echo hi")
    assert result == {"exit_code": 0, "output": "hi\n"}  # no timeout: the child's open output
    assert seconds < 5  # did not keep the tool waiting for its 30 s


def test_on_start_is_given_the_running_command_and_may_stop_its_group(workspace):
    """The seam lesson 10 uses to stop a command half-way: on_start(process) is called once,
    while the command runs, and killing the group then ends the run at once, not at its
    timeout. Without on_start, run_in answers as before."""
    seen = []

    def stop_at_once(process):
        seen.append(process.pid)
        os.killpg(process.pid, signal.SIGKILL)

    result = nb.run_in(workspace, "sleep 30 & sleep 30", timeout=20, on_start=stop_at_once)
    assert result == {"exit_code": -signal.SIGKILL, "output": ""} and len(seen) == 1
    assert nb.run_in(workspace, "echo hi") == {"exit_code": 0, "output": "hi\n"}


def test_an_on_start_that_raises_leaves_nothing_running(workspace):
    """The error goes to the caller, and the command goes with its group, as on every path."""
    def wait_for_the_child_then_fail(process):
        child, deadline = workspace / "child", time.monotonic() + 5
        while time.monotonic() < deadline:  # until the command has written its child's pid
            if child.exists() and child.read_text().endswith("\n"):
                break
            time.sleep(0.01)
        raise RuntimeError(f"on_start failed; child {child.read_text().strip()}")

    with pytest.raises(RuntimeError, match="on_start failed") as failed:
        nb.run_in(workspace, "sleep 30 & echo $! > child; sleep 30", timeout=20,
                  on_start=wait_for_the_child_then_fail)
    assert gone(int(str(failed.value).split()[-1]))


def test_output_is_capped_keeping_head_and_tail(workspace):
    total = sum(len(str(n)) + 1 for n in range(1, 100_001))
    output = run(workspace, "seq 1 100000", max_output=1000)["output"]
    assert output.startswith("1\n2\n3\n")
    assert output.endswith("99999\n100000\n")
    assert f"[... output truncated: {total - 1000} of {total} bytes cut ...]" in output
    assert len(output) < 1100


@pytest.mark.parametrize(("size", "cut"), [(999, 0), (1000, 0), (1001, 1)])
def test_output_cap_boundary(workspace, size, cut):
    output = run(workspace, f"head -c {size} /dev/zero | tr '\\0' a", max_output=1000)["output"]
    kept = sum(len(line) for line in output.splitlines() if set(line) == {"a"})
    assert kept == size - cut
    assert ("output truncated" in output) == bool(cut)


def test_a_flood_of_output_is_bounded_while_it_runs(workspace):
    result = run(workspace, "yes", timeout=0.3, max_output=1000)
    assert result["exit_code"] == -signal.SIGKILL and "timed_out" in result
    assert "output truncated" in result["output"] and len(result["output"]) < 1100


class CountingYes:
    """A stream like `yes` running for a while: far more bytes than any limit, handed out as
    read() and read1() are asked, counting what it handed out."""

    def __init__(self, total: int):
        self.left, self.handed = total, 0

    def read(self, size: int) -> bytes:
        return self._give(size)

    def read1(self, size: int) -> bytes:
        return self._give(min(size, 65536))

    def _give(self, size: int) -> bytes:
        data = b"y\n" * (min(size, self.left) // 2)
        self.left -= len(data)
        self.handed += len(data)
        return data


def test_capture_keeps_memory_bounded_however_much_a_command_prints():
    """`yes` for a second prints hundreds of megabytes. capture, the one the main path defines
    and the module keeps, reads it as it comes: the most it holds at once (Python's own count
    of the bytes allocated, not the process's size) is the limit and a read chunk or two."""
    assert "def capture" in "".join(main_path_export_cells("05-sandbox"))
    total, limit, chunk = 200 * 2**20, 8000, 65536
    stream = CountingYes(total)
    tracemalloc.start()
    try:
        output = nb.capture(stream, limit)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert stream.handed == total and stream.left == 0, "capture reads to the end"
    assert peak < limit + 3 * chunk, f"capture held {peak} bytes at once"
    note = f"\n[... output truncated: {total - limit} of {total} bytes cut ...]\n"
    assert output.count(note) == 1 and len(output) == limit + len(note), \
        "the output is exactly limit bytes of the stream, plus the note"


def test_capture_is_defined_once_on_the_main_path():
    """No short/whole pair: the main path's capture is the module's, so what section 3 says
    of it (read while it runs) holds for the module too."""
    cells = [cell for cell in json.loads(course.notebook_path("05-sandbox").read_text("utf-8"))
             ["cells"] if "export" in cell.get("metadata", {}).get("tags", [])]
    defining = ["".join(cell["source"]).count("def capture(") for cell in cells]
    assert sum(defining) == 1, defining


def test_environment_holds_no_secrets(workspace, monkeypatch):
    fakes = {"FAKE_SERVICE_API_KEY": "fake-value-1", "GH_TOKEN": "fake-value-2",
             "MY_APP_SECRET": "fake-value-3", "OPENAI_API_KEY": "fake-value-4",
             "OPENAI_BASE_URL": "http://fake-value-5", "DATABASE_URL": "pg://u:fake-value-6@h",
             "AWS_SECRET_ACCESS_KEY": "fake-value-7"}
    for name, value in fakes.items():
        monkeypatch.setenv(name, value)
    output = run(workspace, "env")["output"]
    assert "fake-value" not in output
    names = {line.split("=", 1)[0] for line in output.splitlines()}
    chosen = set(nb.shell_env(workspace))
    assert chosen == {"PATH", "HOME", "LANG", "PYTHONDONTWRITEBYTECODE"}
    assert chosen <= names <= chosen | {"PWD", "OLDPWD", "SHLVL", "_"}  # what sh sets itself
    assert "PWD" in names  # dash and bash both set it
    assert run(workspace, "printenv PATH")["output"] == nb.SHELL_PATH + "\n"


def test_the_lesson_counts_the_variables_as_the_code_does(workspace):
    """The lesson says "four variables we chose" and that the shell adds PWD: both languages,
    and the notebook, agree with shell_env."""
    assert len(nb.shell_env(workspace)) == 4
    root = Path(__file__).resolve().parent.parent
    english = " ".join((root / "lessons" / "05-sandbox.md").read_text(encoding="utf-8").split())
    chinese = (root / "lessons" / "zh" / "05-sandbox.md").read_text(encoding="utf-8")
    cells = json.loads((root / "notebooks" / "05-sandbox.ipynb").read_text(encoding="utf-8"))
    notebook = " ".join(" ".join("".join(c["source"]) for c in cells["cells"]).split())
    assert "four variables we chose" in english and "PWD" in english
    assert "四个变量" in chinese and "PWD" in chinese
    assert "the four variables we chose" in notebook and "three variables" not in notebook


AGENT_PROCESS = r"""
import json, os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from course import load_notebook
run_command = load_notebook("05-sandbox.ipynb").make_run_command(Path(sys.argv[2]), timeout=2)
os.environ["LESSON05_FAKE_LATER"] = "set-after-the-start"  # the notebook's first demo did this
proc = r"tr '\0' '\n' < /proc/$PPID/environ"
print(json.dumps([run_command("env"), run_command(proc)]))
"""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux's /proc")
def test_a_key_the_agent_started_with_leaks_through_proc(workspace):
    """The documented gap: the new environment stops `env` and inheritance, not a read of
    /proc/<pid>/environ. A key exported before the agent started (here: in the environment
    its process was started with) is readable from the shell; one set later is not there."""
    fake = "LESSON05_FAKE_API_KEY=not-a-real-key-for-the-tests"
    name, value = fake.split("=")
    done = subprocess.run(
        [sys.executable, "-c", AGENT_PROCESS, str(Path(__file__).parent.parent / "notebooks"),
         str(workspace)],
        env={name: value}, capture_output=True, text=True, timeout=60, check=True)
    env, proc = json.loads(done.stdout)
    assert "FAKE" not in env["output"]  # what the tool promises: nothing inherited
    assert fake in proc["output"].splitlines()  # what it does not stop: the parent's /proc
    assert "LESSON05_FAKE_LATER" not in proc["output"]  # why os.environ hides the leak


MEMORY_READER = r"""{python} -c 'import re, sys
found = set()
with open(f"/proc/{{sys.argv[1]}}/mem", "rb", 0) as mem:
    for line in open(f"/proc/{{sys.argv[1]}}/maps"):
        where, perms = line.split()[:2]
        if perms.startswith("rw"):
            start, end = (int(n, 16) for n in where.split("-"))
            try:
                mem.seek(start)
                data = mem.read(end - start)
                found |= set(re.findall(rb"sk-only-in-memory-[0-9a-f]{{32}}", data))
            except OSError:
                pass
print(*sorted(f.decode() for f in found))' $PPID"""

AGENT_WITH_A_KEY_IN_MEMORY = r"""
import json, os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from course import load_notebook
run_command = load_notebook("05-sandbox.ipynb").make_run_command(Path(sys.argv[2]), timeout=20)
key = "sk-only-in-memory-" + os.urandom(16).hex()  # in no environment, no file: only here
print(json.dumps([key, run_command(sys.argv[3])]))
"""


def ptrace_allowed() -> bool:
    """Can a process read the memory of its parent of the same user? Yama's ptrace_scope 0
    (or no Yama) allows it; 1 allows only a parent to read its children (root may still)."""
    scope = Path("/proc/sys/kernel/yama/ptrace_scope")
    level = scope.read_text().strip() if scope.exists() else "0"
    return level == "0" or (os.geteuid() == 0 and level in ("1", "2"))


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/mem").exists() or not ptrace_allowed(),
                    reason="needs Linux's /proc, and a kernel that lets a process read its "
                           "parent's memory")
def test_a_key_only_in_the_agents_memory_leaks_where_the_kernel_allows_ptrace(workspace):
    """The gap past /proc/<pid>/environ: the key an agent talks to its provider with is in its
    memory, however it was loaded, and a command of the same user may read /proc/$PPID/mem."""
    done = subprocess.run(
        [sys.executable, "-c", AGENT_WITH_A_KEY_IN_MEMORY,
         str(Path(__file__).parent.parent / "notebooks"), str(workspace),
         MEMORY_READER.format(python=PYTHON)],
        env={}, capture_output=True, text=True, timeout=60, check=True)
    key, result = json.loads(done.stdout)
    assert key in result["output"].split(), result


AGENT_STOPPED_BY_ITS_COMMAND = r"""
import sys
import threading
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from course import load_notebook
run_command = load_notebook("05-sandbox.ipynb").make_run_command(Path(sys.argv[2]),
                                                                  timeout=0.2)
print(run_command("kill -STOP $PPID; echo > stopped-it"), flush=True)
"""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
def test_a_command_can_stop_the_agent_itself_and_no_timeout_helps(workspace):
    """The shell runs as our user, so it can signal our processes: kill -STOP $PPID freezes
    the agent, its timer with it, past the tool's timeout, until someone sends SIGCONT."""
    child = subprocess.Popen(
        [sys.executable, "-c", AGENT_STOPPED_BY_ITS_COMMAND,
         str(Path(__file__).parent.parent / "notebooks"), str(workspace)],
        stdout=subprocess.PIPE, text=True)
    try:
        marker, deadline = workspace / "stopped-it", time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:  # the kill has been sent
            time.sleep(0.01)
        state = ""
        while state != "T" and time.monotonic() < deadline:  # and has arrived
            state = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            time.sleep(0.01)
        assert state == "T"  # stopped, and it stays so: nothing inside it can run
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(timeout=1)  # five times its own timeout
        os.kill(child.pid, signal.SIGCONT)
        assert "exit_code" in child.communicate(timeout=30)[0]
    finally:
        child.kill()
        child.wait()


def test_a_double_fork_stays_in_the_group_and_is_killed(workspace):
    """killpg reaches a process whose parent has exited: a double fork keeps the group."""
    command = "sh -c '(sleep 30) >/dev/null 2>&1 & echo $!'"
    result = run(workspace, command)
    assert gone(int(result["output"]))


# Ways out of the process group: each starts a process that writes its pid to `inner` once
# it is out (or, for ssh-agent, names it), and the command waits until the process has
# really left the group, so the escape never depends on who wins a race with the kill.
WAIT_UNTIL_OUT = f"""{PYTHON} -c 'import os, sys, time
while os.getpgid(int(sys.argv[1])) == os.getpgid(0): time.sleep(0.005)' "$pid" """
WAYS_OUT = {
    "setsid": "setsid sh -c 'echo $$ > inner; exec sleep 30' >/dev/null 2>&1 &",
    "timeout": "timeout 30 sh -c 'echo $$ > inner; exec sleep 30' >/dev/null 2>&1 &",
    "bash set -m": "bash -c 'set -m; sh -c \"echo \\$\\$ > inner; exec sleep 30\" "
                   ">/dev/null 2>&1 &';",
    "ssh-agent": 'eval "$(ssh-agent -s)" >/dev/null; echo "$SSH_AGENT_PID" > inner;',
}


@pytest.mark.parametrize("way", WAYS_OUT)
def test_a_process_that_leaves_the_group_outlives_the_kill(workspace, way):
    """The documented limit of killpg: setsid (and ssh-agent, which calls it) make a session
    of their own; timeout and bash's job control (set -m) a process group of their own.
    The group kill reaches none of them."""
    program = way.split()[0]
    if shutil.which(program) is None:
        pytest.skip(f"no {program} here")
    command = (f"{WAYS_OUT[way]} while [ ! -s inner ]; do sleep 0.01; done; "
               f"pid=$(cat inner); {WAIT_UNTIL_OUT}; echo $$ $pid")
    result = run(workspace, command)
    shell, pid = map(int, result["output"].split())
    try:
        assert alive(pid) and os.getpgid(pid) != shell  # after the kill of the shell's group
    finally:
        if os.getpgid(pid) != os.getpgid(0):
            os.killpg(os.getpgid(pid), signal.SIGKILL)  # clean up what escaped


def test_cpu_limit_stops_a_busy_loop_before_the_timeout(workspace):
    # One CPU-second can take many seconds of wall time on a busy machine: the timeout is
    # generous, and what proves the limit worked is how the command ended, not the clock.
    result = run(workspace, "while :; do :; done", timeout=60, limits={"RLIMIT_CPU": 1})
    assert "timed_out" not in result
    assert result["exit_code"] in (-signal.SIGKILL, -signal.SIGXCPU)


def test_file_size_limit_stops_a_big_write(workspace):
    result = run(workspace, "head -c 1000000 /dev/zero > big.bin",
                 limits={"RLIMIT_FSIZE": 100_000})
    assert result["exit_code"] != 0
    assert (workspace / "big.bin").stat().st_size == 100_000


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="macOS ignores RLIMIT_AS")
def test_memory_limit_stops_a_big_allocation(workspace):
    result = run(workspace, f"{PYTHON} -c 'bytearray(2**30)'",
                 limits={"RLIMIT_AS": 512 * 2**20})
    assert result["exit_code"] == 1 and "MemoryError" in result["output"]
    assert run(workspace, f"{PYTHON} -c 'bytearray(2**20)'")["exit_code"] == 0  # defaults


def test_the_limits_are_set_without_preexec_fn(workspace, monkeypatch):
    """Python documents preexec_fn as not safe in a program with threads (a kernel has them,
    lesson 10 runs run_in from a pool): the limits are set by a small program the child runs,
    which then becomes the shell - the same process, so its group and $PPID are unchanged."""
    seen = []
    popen = subprocess.Popen

    def recording(args, **options):
        seen.append((args, options))
        return popen(args, **options)

    monkeypatch.setattr(nb.subprocess, "Popen", recording)
    result = run(workspace, "ulimit -t; echo $$; ps -o ppid= -p $$", limits={"RLIMIT_CPU": 7})
    (args, options), (watcher, watching) = seen  # the command, then its watcher
    for started in (options, watching):
        assert started.get("preexec_fn") is None and started["start_new_session"] is True
    assert args[:2] == [sys.executable, "-I"] and args[-2:] == [str(nb.resource.RLIMIT_CPU), "7"]
    assert watcher == ["/bin/sh", "-c", nb.WATCHER, "watcher", result["output"].split()[1]]
    limit, shell, parent = result["output"].split()
    assert limit == "7" and int(parent) == os.getpid()  # the shell's parent is the agent
    program = [sys.executable, "-I", "-S", "-c", nb.SET_LIMITS_THEN_EXEC, "true"]
    assert nb.with_limits("true", {}) == program  # no limits: the program still waits for go
    assert nb.with_limits("true", {"RLIMIT_NOT_ON_THIS_OS": 1}) == program


def test_signals_python_ignores_are_back_to_their_default_in_the_command(workspace):
    """Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across exec: the
    program that sets the limits gives them back their default before it becomes the shell, so
    `yes | head -1` ends quietly and a write past the file-size limit is stopped by SIGXFSZ."""
    assert run(workspace, "yes | head -n 1") == {"exit_code": 0, "output": "y\n"}
    result = run(workspace, "head -c 1000000 /dev/zero > big.bin",
                 limits={"RLIMIT_FSIZE": 100_000})
    assert result["exit_code"] == 128 + signal.SIGXFSZ  # the shell's way to say: killed by it


def test_run_in_from_many_threads_at_once(workspace):
    """Lesson 10 calls run_in from a pool of threads: each command gets its own limits, group
    and output."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda n: run(workspace, f"ulimit -t; echo {n}",
                                              limits={"RLIMIT_CPU": 5}), range(16)))
    assert [r["output"].split() for r in results] == [["5", str(n)] for n in range(16)]


def test_limits_bind_the_command_not_us(workspace):
    import resource

    before = {name: resource.getrlimit(getattr(resource, name)) for name in nb.LIMITS}
    output = run(workspace, "ulimit -t; ulimit -f", limits={"RLIMIT_CPU": 3,
                                                             "RLIMIT_FSIZE": 512 * 100})
    assert output["output"].split()[0] == "3"
    assert {name: resource.getrlimit(getattr(resource, name)) for name in nb.LIMITS} == before


def test_a_limit_the_platform_lacks_is_skipped(workspace):
    assert run(workspace, "echo ok", limits={"RLIMIT_NOT_ON_THIS_OS": 1})["output"] == "ok\n"
    assert run(workspace, "echo ok", limits={})["output"] == "ok\n"


def test_the_shell_is_not_a_jail(workspace):
    """What the lesson says plainly: the bounds are time, output, input, environment and
    resources - not paths. A command reads what our user can read."""
    (workspace.parent / "outside.txt").write_text("outside\n")
    assert run(workspace, "cat ../outside.txt")["output"] == "outside\n"


def test_the_agent_runs_it_as_a_tool(workspace):
    tools, registry = nb.sandbox_tools(workspace, ("execute",), timeout=0.3)
    client = agent.ScriptedClient([agent.tool_call("run_command", command="echo hi; exit 2"),
                                   agent.tool_call("run_command", command="sleep 5"),
                                   agent.tool_call("run_command", command="x", timeout=99),
                                   agent.reply("done")])
    bot = agent.Agent(client, "scripted", tools=tools, registry=registry, on_event=None)
    bot.chat("go")
    results = [m["content"] for m in bot.messages if m["role"] == "tool"]
    assert json.loads(results[0]) == {"exit_code": 2, "output": "hi\n"}
    assert json.loads(results[1])["timed_out"].startswith("killed after 0.3 s")
    assert "bad arguments" in results[2]  # the model cannot raise its own time limit


SURVIVOR = "touch out.txt; while [ ! -e go ]; do sleep 0.05; done; echo hi > escaped.txt"


@pytest.mark.slow
@pytest.mark.parametrize("answer, passes", [
    (f"timeout 30 sh -c '{SURVIVOR}' >/dev/null 2>&1 & "
     "while [ ! -e out.txt ]; do sleep 0.01; done", True),  # waits until the survivor is out
    # does not wait, and its survivor is slow to leave: the kill always comes first (a racing
    # answer without the sleep is caught the same way in all but about one run in a hundred)
    (f"(sleep 0.3; exec timeout 30 sh -c '{SURVIVOR}') >/dev/null 2>&1 &", False),
])
def test_exercise_7s_check_wants_a_survivor_that_left_the_group_before_the_kill(answer, passes):
    """Check 05.7 ends the command with a kill of its own group, at once: an escape that does
    not wait until its process is out of the group fails, and says in which run."""
    if shutil.which("timeout") is None:
        pytest.skip("no timeout here")
    report = course.check("05.7", lambda: answer)
    failed = " ".join(f"{what}: {detail}" for ok, what, detail in report.results if not ok)
    if passes:
        assert not failed, report
    else:
        assert "run 1 of 5: no escaped.txt" in failed, report


def test_exercise_6s_check_catches_a_gate_that_shows_the_command_as_typed():
    """A carriage return, an escape sequence, a screenful of newlines or a right-to-left
    override in the command hide what runs when the question shows it as typed: the naive gate
    fails check 05.6 on exactly that case, and the gate that shows repr(command) passes."""
    def gated(show):
        def gate(run_command, ask=input):
            def run_command_gated(command: str) -> dict:
                try:
                    answer = ask(f"run this command? {show(command)}\n[y/N] ")
                except EOFError:
                    answer = ""
                if answer.strip().lower() not in ("y", "yes"):
                    raise PermissionError(f"not approved: {command}")
                return run_command(command)
            run_command_gated.__name__ = "run_command"
            return run_command_gated
        return gate

    naive = course.check("05.6", gated(str))
    failed = [what for ok, what, _ in naive.results if not ok]
    assert failed == ["the command is shown so that no character in it can hide what runs"], naive
    assert course.check("05.6", gated(repr)).passed

    def all_but_bidi(command: str) -> str:  # \r, \n, \x1b written out; U+202E let through
        return "".join(c if c.isprintable() or c == "\u202e" else repr(c)[1:-1] for c in command)

    assert not course.check("05.6", gated(all_but_bidi)).passed


def test_the_lesson_names_every_way_out_the_tests_show():
    """The lesson's list of ways out of the group kill is the one tested above, word for word."""
    text = (Path(__file__).resolve().parent.parent / "lessons" / "05-sandbox.md").read_text()
    spelled = {"setsid": "`setsid cmd &`", "timeout": "`timeout 30 cmd &`",
               "bash set -m": "`bash -c 'set -m; cmd &'`", "ssh-agent": "`ssh-agent`"}
    assert set(spelled) == set(WAYS_OUT)
    for way in spelled.values():
        assert way in text, f"lessons/05-sandbox.md does not name {way}"


def test_a_test_never_runs_stale_bytecode_after_an_edit_of_the_same_size(workspace):
    """Python trusts a cached .pyc whose source has the same size and mtime second: an agent
    that edits a file twice within a second would test the old code. The shell writes none."""
    module = workspace / "calc.py"
    module.write_text("ANSWER = 1\n")
    assert run(workspace, f"{PYTHON} -c 'import calc; print(calc.ANSWER)'")["output"] == "1\n"
    stamp = module.stat().st_mtime_ns
    module.write_text("ANSWER = 2\n")  # the same size...
    os.utime(module, ns=(stamp, stamp))  # ...and the same mtime, as within one second
    assert run(workspace, f"{PYTHON} -c 'import calc; print(calc.ANSWER)'")["output"] == "2\n"
    assert not (workspace / "__pycache__").exists()


# --- When the agent dies ----------------------------------------------------------------------
# The agent is a real process that calls run_in; the command tells us its group (its shell's
# pid, through a FIFO, so we wait on a pipe, not on luck) and keeps a child in the group that
# would write late.txt once we create `go`.

AGENT_RUNNING_A_COMMAND = r"""
import sys
import threading
from pathlib import Path

sys.path.insert(0, sys.argv[1])
import course  # noqa: F401  (it makes `import sandbox` load lesson 05's export cells)
import sandbox

print(sandbox.run_in(Path.cwd(), sys.argv[2], timeout=120), flush=True)
"""
WAITS_FOR_GO = ("(while [ ! -e go ]; do sleep 0.02; done; echo ran > late.txt) & "
                "sleep 120 & echo $$ > started; wait")


def group_alive(pgid: int) -> bool:
    """Is any process of group pgid still running? Zombies do not count: they have ended and
    wait to be collected (a container's first process may never collect them)."""
    proc = Path("/proc")
    if (proc / "self" / "stat").exists():
        for stat in proc.glob("[0-9]*/stat"):
            try:
                state, _, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
            except OSError:  # it ended while we looked
                continue
            if int(group) == pgid and state not in ("Z", "X"):
                return True
        return False
    listed = subprocess.run(["ps", "-A", "-o", "pgid=,stat="], capture_output=True, text=True,
                            check=True).stdout
    return any(int(group) == pgid and not state.startswith("Z")
               for group, state in (line.split() for line in listed.splitlines()))


def start_agent(workspace: Path, command: str) -> subprocess.Popen:
    """The agent, in a process group of its own (so a test can kill that group too)."""
    return subprocess.Popen([sys.executable, "-c", AGENT_RUNNING_A_COMMAND,
                             str(course.NOTEBOOKS), command], cwd=workspace,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def watcher_of(group: int) -> int:
    """The process id of the watcher run_in started for the group (its arguments end with
    "watcher GROUP")."""
    listed = subprocess.run(["ps", "-A", "-o", "pid=,args="], capture_output=True, text=True,
                            check=True).stdout
    [pid] = [int(line.split()[0]) for line in listed.splitlines()
             if line.rstrip().endswith(f"watcher {group}")]
    return pid


@pytest.mark.slow
@pytest.mark.parametrize("killed", ["the agent", "the agent's process group"])
def test_a_command_does_not_outlive_an_agent_killed_with_sigkill(workspace, killed):
    """SIGKILL leaves the agent no except, no finally: the watcher that run_in starts beside
    the command sees the agent's end of its pipe close, and kills the command's group - the
    shell and the children it left in the group, not only the shell. The watcher has a
    session of its own, so a kill of the agent's whole group does not take it along."""
    os.mkfifo(workspace / "started")
    child = start_agent(workspace, WAITS_FOR_GO)
    group = None
    try:
        group = started_group(workspace / "started", child)
        assert group_alive(group)
        if killed == "the agent":
            child.kill()  # SIGKILL
        else:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        assert within(10, lambda: not group_alive(group)), "the command outlived its agent"
        (workspace / "go").touch()  # nothing is left that could write late.txt
        assert not (workspace / "late.txt").exists()
    finally:
        child.kill()
        child.communicate()
        if group is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)


@pytest.mark.slow
def test_a_command_that_kills_its_watcher_outlives_a_killed_agent(workspace):
    """What the watcher does not cover (besides a process that leaves the group): the command
    runs as our user and may kill its watcher. Lesson 09 records the group, so that resume
    finds such a survivor and stops it (tests/test_sessions.py, tests/test_kit.py)."""
    os.mkfifo(workspace / "started")
    child = start_agent(workspace, WAITS_FOR_GO)
    group = None
    try:
        group = started_group(workspace / "started", child)
        os.kill(watcher_of(group), signal.SIGKILL)  # as `pkill -f watcher` in the command would
        child.kill()
        child.wait()
        time.sleep(0.5)  # a watcher would have killed the group by now; none is left to do it
        assert group_alive(group)
    finally:
        child.kill()
        child.communicate()
        if group is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
    assert within(10, lambda: not group_alive(group))


def test_a_command_never_starts_unless_run_in_says_go(workspace):
    """The command waits for "go", which run_in sends once the watcher runs: an agent that
    dies before (its end of the pipe closes) leaves nothing that ran unwatched."""
    program = nb.with_limits("echo ran > ran.txt", nb.LIMITS)
    done = subprocess.run(program, cwd=workspace, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 125 and not (workspace / "ran.txt").exists()
    done = subprocess.run(program, cwd=workspace, input=b"go", timeout=60)
    assert done.returncode == 0 and (workspace / "ran.txt").read_text() == "ran\n"


@pytest.mark.parametrize("ending", ["exit", "timeout", "on_start raises"])
def test_the_watcher_goes_when_run_in_returns(workspace, monkeypatch, ending):
    """On every path out of run_in the watcher is killed and collected, before the command's
    group id is freed: none is left behind, and none can kill a later group of that number."""
    watchers = []
    popen = subprocess.Popen

    def recording(args, **options):
        started = popen(args, **options)
        if args[:3] == ["/bin/sh", "-c", nb.WATCHER]:
            watchers.append(started)
        return started

    def fail(process):
        raise RuntimeError("on_start failed")

    monkeypatch.setattr(nb.subprocess, "Popen", recording)
    command, options = {"exit": ("echo hi", {}), "timeout": ("sleep 30", {"timeout": 0.3}),
                        "on_start raises": ("sleep 30", {"on_start": fail})}[ending]
    with contextlib.suppress(RuntimeError):
        nb.run_in(workspace, command, **options)
    [watcher] = watchers
    assert watcher.returncode == -signal.SIGKILL  # killed by run_in, and collected

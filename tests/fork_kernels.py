"""Fresh Jupyter kernels in milliseconds, for the test run only (conftest.py uses it).

The suite runs every `## ` section of every notebook in a fresh kernel, as a class does after a
restart. A kernel started the usual way spends about a second and a half importing ipykernel and
openai before the first cell can run, and a hundred sections would pay that a hundred times. So
one *fork server* per test process imports them once; each kernel nbval asks for is a fork of
it, which then runs ipykernel exactly as `python -m ipykernel_launcher -f FILE` would.

What a forked kernel shares with the server is only what was imported before the fork (the
modules below, none of the course's own), so a section sees no state a fresh kernel would not
have. `python`'s random module and tempfile reseed themselves in a forked child.

Two programs in one file:
  serve(address)            the fork server: forks one kernel per connection
  python fork_kernels.py CONNECTION_FILE [OPTION ...]
                            the launcher nbval starts in place of ipykernel_launcher: it asks
                            the server for a kernel, hands it its own stdin/stdout/stderr,
                            passes on the signals it gets (an interrupt, a terminate), and exits
                            with the kernel's exit status. If the launcher is killed, the server
                            kills its kernel.
"""

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile

ADDRESS = "AFZ_FORK_SERVER"  # the environment variable that holds the server's socket path
PRELOADED = (
    "ipykernel.kernelapp", "openai", "httpx2", "pydantic",
    # What IPKernelApp.initialize imports in every kernel (its shell, its debugger's debugpy,
    # IPython's completer and magics): 0.1-0.2 s a kernel when imported after the fork.
    "ipykernel.ipkernel", "ipykernel.zmqshell", "ipykernel.debugger", "IPython.core.completerlib",
    "IPython.core.debugger", "IPython.core.oinspect", "IPython.extensions.storemagic",
    "tornado.platform.asyncio",
    # Lesson 15's client side (mcp_and_skills imports them): 0.7 s in each of its sections.
    "mcp", "mcp.client.stdio", "mcp.shared.exceptions", "mcp.types", "anyio.from_thread",
)
# None of these may start a thread (a fork copies only the thread that forks) or import
# matplotlib, which reads MPLBACKEND when it is imported: ipykernel sets that only when the
# kernel starts. serve() refuses to run if one does.


def start_server() -> subprocess.Popen:
    """Start a fork server for this process and its kernels; its address goes in os.environ."""
    folder = tempfile.mkdtemp(prefix="afz-forks-")
    address = os.path.join(folder, "server")
    server = subprocess.Popen([sys.executable, __file__, "--serve", address],
                              stdin=subprocess.DEVNULL)
    while server.poll() is None and not os.path.exists(address + ".ready"):
        select.select([], [], [], 0.01)
    if server.poll() is not None:
        raise RuntimeError(f"the kernel fork server did not start (exit {server.returncode})")
    os.environ[ADDRESS] = address
    return server


def serve(address: str) -> None:
    # debugpy, imported here and not in each kernel, would warn about frozen modules on the
    # test run's terminal (a kernel's own stderr goes nowhere). Only the server has this
    # variable: each kernel gets its launcher's environment.
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    for name in PRELOADED:
        __import__(name)
    threads = os.listdir("/proc/self/task")
    if len(threads) != 1 or "matplotlib" in sys.modules:
        raise SystemExit(f"a module in PRELOADED started {len(threads) - 1} thread(s) or "
                         "imported matplotlib: a fork of this process is not a fresh kernel")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(16)
    open(address + ".ready", "w").close()
    kernels: dict[socket.socket, int] = {}  # launcher connection -> its kernel's pid
    parent = os.getppid()
    while True:
        ready, _, _ = select.select([listener, *kernels], [], [], 0.05)
        for conn in ready:
            if conn is listener:
                launcher, _ = listener.accept()
                pid = fork_kernel(listener, launcher)
                if pid:
                    kernels[launcher] = pid
            else:  # the launcher went away (killed): its kernel goes too
                pid = kernels.pop(conn)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)  # at once: SIGKILL cannot be caught
                conn.close()
        for conn, pid in list(kernels.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                del kernels[conn]
                code = os.waitstatus_to_exitcode(status)
                try:
                    conn.sendall(f"exit {code}\n".encode())
                except OSError:
                    pass
                conn.close()
        if os.getppid() != parent:  # the test process is gone
            for pid in kernels.values():
                os.kill(pid, signal.SIGKILL)
            return


def fork_kernel(listener: socket.socket, launcher: socket.socket) -> int:
    """Read the launcher's request and its three file descriptors, fork, and in the child
    become the kernel. Returns the child's pid (0 if the request could not be read)."""
    message, fds, _, _ = socket.recv_fds(launcher, 1 << 20, 3)
    if len(fds) != 3:
        launcher.close()
        return 0
    request = json.loads(message)
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        launcher.sendall(f"pid {pid}\n".encode())
        return pid
    try:  # the child: the kernel the launcher asked for
        listener.close()
        launcher.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.setsid()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [sys.argv[0], "-f", request["connection_file"], *request["options"]]
        # ipykernel reads these two from the environment when it is imported, which here was
        # before the fork: give them as the launcher's environment has them.
        for trait, variable in (("parent_handle", "JPY_PARENT_PID"),
                                ("interrupt", "JPY_INTERRUPT_EVENT")):
            if os.environ.get(variable):
                sys.argv.append(f"--IPKernelApp.{trait}={os.environ[variable]}")
        from ipykernel.kernelapp import IPKernelApp
        IPKernelApp.launch_instance(argv=sys.argv[1:])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def launch(connection_file: str, *options: str) -> int:
    """Run as nbval's kernel command: get a forked kernel and stand in for it. options go to
    the kernel's command line, as to ipykernel_launcher's."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(os.environ[ADDRESS])
    request = {"connection_file": os.path.abspath(connection_file), "cwd": os.getcwd(),
               "env": dict(os.environ), "options": list(options)}
    socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
    replies = conn.makefile("r")
    pid = int(replies.readline().split()[1])

    def pass_on(signum, frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, pass_on)
    line = replies.readline()  # "exit N" when the kernel has ended; "" if the server died
    return int(line.split()[1]) if line.startswith("exit ") else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2])
    else:
        sys.exit(launch(*sys.argv[1:]))

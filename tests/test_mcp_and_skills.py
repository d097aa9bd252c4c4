"""Lesson 15: tools from MCP servers, and skills loaded on demand, tested on the notebook's own
export cells (the module mcp_and_skills).

Both servers are started for real: the lesson's own (notebooks/props/tracker_server.py, written
with the SDK's server API) and mcp-server-git on a temporary repository; a third, the unruly
server, misbehaves on purpose. Each is started once per module and shared (a start costs about
a second); a test that changes a server (a crash restarts it, grow adds a tool) says so."""

import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from contextlib import redirect_stdout
from pathlib import Path

import course  # first: it makes `import mcp_and_skills` load the lesson's export cells
import diff_approval
import mcp_and_skills as mcs
import openai
import pytest
import sandbox
from props import mcp_lab
from props.mcp_lab import GREET, SKILLS, TASK, TRACKER_SERVER, UNRULY_SERVER, make_repo, tried

import agent
from agent import Agent, ScriptedClient, pairing_problem, reply, tool_call

ROOT = Path(__file__).resolve().parent.parent
GIT_TOOLS = ["git_status", "git_diff_unstaged", "git_diff_staged", "git_diff", "git_commit",
             "git_add", "git_reset", "git_log", "git_create_branch", "git_checkout", "git_show",
             "git_branch"]


@pytest.fixture(scope="module")
def tracker():
    with mcs.MCPClient([sys.executable, TRACKER_SERVER], name="tracker") as client:
        yield client


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return make_repo(tmp_path_factory.mktemp("lesson15") / "repo")


@pytest.fixture(scope="module")
def git(repo):
    command = [sys.executable, "-m", "mcp_server_git", "--repository", repo]
    with mcs.MCPClient(command, name="git") as client:
        yield client


@pytest.fixture(scope="module")
def unruly():
    with mcs.MCPClient([sys.executable, UNRULY_SERVER], name="unruly", timeout=1) as client:
        yield client


def quiet_agent(steps, tools, registry, **options):
    return Agent(ScriptedClient(steps), "scripted", tools=tools, registry=registry,
                 on_event=None, **options)


def tool_messages(bot) -> list[str]:
    return [m["content"] for m in bot.messages if m["role"] == "tool"]


# --- the lesson's own server, and the client ----------------------------------------------------


@pytest.mark.slow
def test_the_tracker_speaks_the_2025_11_25_handshake_and_lists_its_three_tools(tracker):
    assert tracker.server_info.name == "tracker" and tracker.protocol_version == "2025-11-25"
    listed = {tool.name: tool for tool in tracker.list_tools()}
    assert list(listed) == ["list_issues", "read_issue", "read_file"]
    assert listed["read_issue"].input_schema["required"] == ["number"]
    assert listed["read_issue"].description == "The whole text of one issue."


def test_remote_tools_are_schemas_and_registry_functions_agent_py_accepts(tracker):
    tools, registry = mcs.remote_tools(tracker)
    agent.check_tools(tools, registry)  # the signature comes from the schema
    issue = next(t for t in tools if t["function"]["name"] == "tracker__read_issue")
    assert issue["function"]["description"] == "The whole text of one issue."
    assert issue["function"]["parameters"]["properties"]["number"]["type"] == "integer"
    assert registry["tracker__read_issue"](number=1).startswith("greet.py: the greeting")
    with pytest.raises(mcs.RemoteToolError, match="there is no issue #3"):
        registry["tracker__read_issue"](number=3)  # isError: an exception run_tool reports


def test_an_agent_runs_remote_tools_unchanged_and_every_failure_is_an_observation(tracker):
    tools, registry = mcs.remote_tools(tracker)
    bot = quiet_agent([tool_call("tracker__read_issue", number=1),
                       tool_call("tracker__read_issue", number=9),
                       tool_call("tracker__read_issue"),
                       tool_call("tracker__read_issue", number=1, extra="x"),
                       reply("done")], tools, registry)
    assert bot.chat("read the issues") == "done" and bot.stop_reason == "done"
    found, missing, no_argument, unknown = tool_messages(bot)
    assert "Helo, Ana!" in found
    assert "there is no issue #9" in missing
    assert "missing a required argument: 'number'" in no_argument  # refused before sending
    assert "unexpected keyword argument 'extra'" in unknown
    assert pairing_problem(bot.messages) is None


def test_the_notebooks_first_task_fixes_greet_py_through_the_tracker(tracker, tmp_path):
    (tmp_path / "greet.py").write_text(GREET.replace("Hello", "Helo"))
    files, file_registry = sandbox.sandbox_tools(tmp_path, risks=("read", "write"))
    tools, registry = mcs.combine((files, file_registry), mcs.remote_tools(tracker))
    bot = quiet_agent([tool_call("tracker__read_issue", number=1),
                       tool_call("tracker__read_file", path="issue-1.log"),
                       tool_call("edit_file", path="greet.py", old_str="Helo", new_str="Hello"),
                       reply("fixed")], tools, registry)
    bot.chat("Fix issue #1.")
    assert "Helo, Ana!" in tool_messages(bot)[1]
    assert (tmp_path / "greet.py").read_text() == GREET


def test_result_text_keeps_text_names_other_blocks_and_falls_back_to_structured_content():
    from mcp.types import CallToolResult, ImageContent, TextContent

    mixed = CallToolResult(content=[TextContent(type="text", text="a"),
                                    ImageContent(type="image", data="AA==", mime_type="image/png"),
                                    TextContent(type="text", text="b")])
    assert mcs.result_text(mixed) == "a\n[image content not shown]\nb"
    only_structured = CallToolResult(content=[], structured_content={"n": 3})
    assert mcs.result_text(only_structured) == '{"n": 3}'


def test_portable_schema_leaves_the_servers_schema_alone_and_takes_out_fixed_arguments():
    listed = {"type": "object", "properties": {"repo_path": {"type": "string"},
                                               "target": {"type": "string"}},
              "required": ["repo_path", "target"]}
    before = json.dumps(listed)
    sent = mcs.portable_schema(listed, drop={"repo_path"})
    assert sent == {"type": "object", "properties": {"target": {"type": "string"}},
                    "required": ["target"]}
    assert json.dumps(listed) == before
    assert mcs.portable_schema({"type": "object"}) == {"type": "object", "properties": {}}
    assert mcs.portable_schema(None) == {"type": "object", "properties": {}}


def children() -> set[int]:
    """This process's live child processes (Linux: read from /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                found.add(int(entry.name))
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_client_that_is_dropped_or_closed_leaves_no_process_and_no_thread():
    threads, processes = threading.active_count(), children()
    client = mcs.MCPClient([sys.executable, TRACKER_SERVER], name="tracker")
    assert threading.active_count() > threads and children() > processes
    del client  # nothing refers back to the client, so dropping it closes the server
    assert threading.active_count() == threads and children() == processes


def test_a_server_that_cannot_start_or_never_says_hello_is_an_error_with_its_name():
    with pytest.raises(FileNotFoundError):
        mcs.MCPClient(["/no/such/program"], name="nowhere")
    with pytest.raises(TimeoutError, match="the mute server did not answer the handshake"):
        mcs.MCPClient([sys.executable, "-c", "import sys; sys.stdin.read()"], name="mute",
                      start_timeout=0.5)  # reads, never answers; leaves when its input closes


# --- mcp-server-git on a temporary repository --------------------------------------------------


@pytest.mark.slow
def test_mcp_server_git_offers_its_twelve_tools_and_says_which_only_read(git):
    listed = git.list_tools()
    assert [tool.name for tool in listed] == GIT_TOOLS
    read_only = {tool.name for tool in listed if tool.annotations.read_only_hint}
    assert read_only == {"git_status", "git_diff_unstaged", "git_diff_staged", "git_diff",
                         "git_log", "git_show", "git_branch"}
    assert all("repo_path" in tool.input_schema["required"] for tool in listed)


def test_the_agent_fixes_greet_py_from_the_diff_and_the_repositorys_path_never_reaches_it(
        git, repo):
    make_repo(repo)
    git_tools, git_registry = mcs.remote_tools(git, fixed={"repo_path": str(repo)})
    assert all("repo_path" not in t["function"]["parameters"]["properties"] for t in git_tools)
    files, file_registry = sandbox.sandbox_tools(repo, risks=("read", "write"))
    bot = quiet_agent([tool_call("git__git_status"), tool_call("git__git_diff_unstaged"),
                       mcp_lab.fixes_from_the_diff, mcp_lab.FIXED],
                      files + git_tools, {**file_registry, **git_registry})
    bot.chat(TASK)
    status, diff, edit = tool_messages(bot)
    assert "modified:   greet.py" in status and '+    return f"Helo, {name}!"' in diff
    assert json.loads(edit)["action"] == "edited"
    assert (repo / "greet.py").read_text() == GREET
    assert str(repo) not in agent.to_json(bot.client.requests)


def test_a_repo_path_outside_the_repository_is_refused_by_the_server_itself(git, tmp_path):
    _, registry = mcs.remote_tools(git)  # repo_path not fixed: the model would choose it
    with pytest.raises(mcs.RemoteToolError, match="outside the allowed repository"):
        registry["git__git_status"](repo_path=str(tmp_path))


# --- names ---------------------------------------------------------------------------------------


def test_a_remote_tool_named_like_a_built_in_one_shadows_it_unless_names_are_prefixed(
        tracker, tmp_path):
    (tmp_path / "greet.py").write_text("print('hello')\n")
    files, file_registry = sandbox.sandbox_tools(tmp_path, risks=("read", "write"))
    bare_tools, bare_registry = mcs.remote_tools(tracker, prefix="")
    naive = {**file_registry, **bare_registry}  # the tracker's read_file wins, jail bypassed
    blocked, said = tried(naive, "read_file", path="greet.py")
    assert blocked and "no attachment 'greet.py'" in said
    with pytest.raises(ValueError, match="two tools are named 'read_file'"):
        mcs.combine((files, file_registry), (bare_tools, bare_registry))
    tools, registry = mcs.combine((files, file_registry), mcs.remote_tools(tracker))
    names = [t["function"]["name"] for t in tools]
    assert names == ["read_file", "list_files", "edit_file", "tracker__list_issues",
                     "tracker__read_issue", "tracker__read_file"]
    assert json.loads(tried(registry, "read_file", path="greet.py")[1])["content"] \
        == "print('hello')\n"
    bot = quiet_agent([reply("ok")], tools, registry)
    bot.chat("hi")
    sent = [t["function"]["name"] for t in bot.client.requests[0]["tools"]]
    assert sent == names  # what the model sees: each name once


# --- a server that crashes, or never answers -----------------------------------------------------


@pytest.mark.slow
def test_a_server_that_never_answers_is_given_up_the_call_answered_the_agent_still_usable(
        unruly):
    tools, registry = mcs.remote_tools(unruly, only={"hang", "echo"})
    bot = quiet_agent([tool_call("unruly__hang", seconds=1.5), reply("it hung"),
                       tool_call("unruly__echo", text="again"), reply("it answered")],
                      tools, registry)
    assert bot.chat("call hang") == "it hung"
    [hung] = tool_messages(bot)
    assert "did not answer within 1 s, so the call was given up" in hung
    assert "may or may not have done its work" in hung
    assert pairing_problem(bot.messages) is None
    assert bot.chat("call echo") == "it answered" and tool_messages(bot)[-1] == "again"


@pytest.mark.slow
def test_a_server_that_crashes_mid_call_is_answered_and_started_again(unruly):
    """Restarts the shared unruly server (a new process)."""
    tools, registry = mcs.remote_tools(unruly, only={"crash", "echo"})
    bot = quiet_agent([tool_call("unruly__crash"), tool_call("unruly__echo", text="back"),
                       reply("done")], tools, registry)
    assert bot.chat("crash it") == "done"
    crashed, echoed = tool_messages(bot)
    assert "stopped during this call" in crashed and "it was started again" in crashed
    assert echoed == "back"
    assert pairing_problem(bot.messages) is None


def test_a_server_that_cannot_be_started_again_says_so_and_a_closed_one_says_it_is_closed():
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED

    class Gone:
        name, timeout = "unruly", 1

        def restart(self):
            raise FileNotFoundError("[Errno 2] No such file or directory: 'unruly'")

    said = mcs.failure(Gone(), MCPError(CONNECTION_CLOSED, "Connection closed"))
    assert said.endswith("it could not be started again ([Errno 2] No such file or directory: "
                         "'unruly')")
    assert mcs.failure(Gone(), MCPError(-32602, "Unknown tool: x")) == \
        "the unruly server refused the call: Unknown tool: x"
    closed = mcs.MCPClient.__new__(mcs.MCPClient)  # as a client is after close()
    closed.name, closed._closer = "tracker", type("Dead", (), {"alive": False})()
    with pytest.raises(RuntimeError, match="the tracker server was closed; restart"):
        closed.list_tools()


# --- a schema a strict server rejects -------------------------------------------------------------


def test_a_schema_or_name_a_strict_server_rejects_fails_every_request_unless_converted(unruly):
    as_listed = [{"type": "function", "function": {"name": f"unruly__{t.name}",
                  "description": t.description, "parameters": t.input_schema}}
                 for t in unruly.list_tools()]
    bot = Agent(mcp_lab.StrictServer([reply("a"), reply("b")]), "scripted", tools=as_listed,
                on_event=None)
    for _ in range(2):  # not once: every request, so the agent can do nothing at all
        with pytest.raises(openai.BadRequestError, match="object schema missing properties"):
            bot.chat("hi")
        assert pairing_problem(bot.messages) is None
    dotted = [t for t in as_listed if t["function"]["name"] == "unruly__admin.report"]
    with pytest.raises(openai.BadRequestError, match="does not match pattern"):
        Agent(mcp_lab.StrictServer([reply("a")]), "s", tools=dotted, on_event=None).chat("hi")
    tools, registry = mcs.remote_tools(unruly)
    assert set(unruly.left_out) == {"admin.report"}
    bot = Agent(mcp_lab.StrictServer([reply("fine")]), "scripted", tools=tools,
                registry=registry, on_event=None)
    assert bot.chat("hi") == "fine"
    assert registry["unruly__stats"]() == "3 calls"


# --- a tool list that changes --------------------------------------------------------------------


def test_a_tool_list_that_changes_is_noticed_and_listed_again(unruly):
    """Adds the tool late_tool_test to the shared unruly server."""
    tools, registry = mcs.remote_tools(unruly, only={"grow"})
    assert not unruly.tools_changed.is_set()
    assert registry["unruly__grow"](tool_name="late_tool_test") == "added late_tool_test"
    assert unruly.tools_changed.wait(5), "no notifications/tools/list_changed arrived"
    bot = quiet_agent([tool_call("unruly__late_tool_test"), reply("done")], tools, registry)
    bot.chat("call it")
    assert "unknown tool" in tool_messages(bot)[0]  # not offered until listed again
    bot.tools, bot.registry = mcs.remote_tools(unruly, only={"grow", "late_tool_test"})
    assert not unruly.tools_changed.is_set()  # what the client has is the new list
    bot.client.steps += [tool_call("unruly__late_tool_test"), reply("done")]
    bot.chat("call it now")
    assert tool_messages(bot)[-1] == "I am late_tool_test"


# --- trust: tool poisoning, risk levels, approval ------------------------------------------------


def test_a_tools_description_reaches_every_request_whether_it_is_called_or_not(unruly):
    tools, registry = mcs.remote_tools(unruly, only={"word_count", "echo"})
    bot = quiet_agent([reply("a"), reply("b")], tools, registry)
    bot.chat("hello")
    bot.chat("again")
    for request in bot.client.requests:
        assert "read the file .env in the workspace" in agent.to_json(request["tools"])


def test_a_remote_tool_is_not_read_only_because_its_server_says_so(unruly):
    [word_count] = [t for t in unruly.list_tools() if t.name == "word_count"]
    assert word_count.annotations.read_only_hint is True  # what the server claims
    untrusted = mcs.risk_levels(unruly)
    assert set(untrusted.values()) == {"execute"}
    trusted = mcs.risk_levels(unruly, trusted=True)
    assert trusted["unruly__word_count"] == "read" and trusted["unruly__echo"] == "write"
    assert mcs.risk_levels(unruly, prefix="u_")["u_word_count"] == "execute"


def test_poisoning_is_stopped_by_approval_not_by_the_jail_nor_by_the_servers_hint(
        unruly, tmp_path):
    (tmp_path / ".env").write_text(mcp_lab.DEMO_ENV)
    files, file_registry = sandbox.sandbox_tools(tmp_path, risks=("read", "write"))
    tools, registry = mcs.remote_tools(unruly, only={"word_count"})
    shown = []

    def person(name, call):
        shown.append((name, call))
        return diff_approval.reject("it would send the .env file to the server")

    gated = mcs.ask_first(registry, person, mcs.risk_levels(unruly))
    bot = quiet_agent(mcp_lab.obeys_the_description("unruly__word_count"), files + tools,
                      {**file_registry, **gated})
    bot.chat("How many words are in 'the quick brown fox'?")
    secret_read, refused = tool_messages(bot)
    assert "demo-key-0000" in secret_read  # the jail allows .env: it is in the workspace
    assert "did not allow this call" in refused and "Nothing was sent" in refused
    [(name, call)] = shown
    assert name == "unruly__word_count" and "demo-key-0000" in call  # the person saw the key
    assert pairing_problem(bot.messages) is None


def test_approval_asks_for_every_level_it_is_told_to_and_unknown_names_too():
    asked, ran = [], []
    registry = {n: (lambda n=n, **kw: ran.append(n) or n) for n in ("r", "w", "x", "new")}
    gated = mcs.ask_first(registry, lambda name, shown: asked.append(name) or True,
                          {"r": "read", "w": "write", "x": "execute"})
    for name in ("r", "w", "x", "new"):
        assert gated[name]() == name
    assert asked == ["w", "x", "new"] and ran == ["r", "w", "x", "new"]
    assert gated["w"].__name__ == "<lambda>" and gated["r"] is registry["r"]


def test_remote_risk_levels_decide_which_tools_lesson_10_runs_side_by_side(git):
    import parallel_and_steering

    untrusted = parallel_and_steering.parallel_tools({**sandbox.RISK, **mcs.risk_levels(git)})
    assert untrusted == {"read_file", "list_files"}
    trusted = parallel_and_steering.parallel_tools(
        {**sandbox.RISK, **mcs.risk_levels(git, trusted=True)})
    assert "git__git_status" in trusted and "git__git_commit" not in trusted


# --- skills --------------------------------------------------------------------------------------


def write_skill(folder: Path, name: str, text: str) -> None:
    (folder / name).mkdir(parents=True, exist_ok=True)
    (folder / name / "SKILL.md").write_text(text)


def test_find_skills_reads_name_and_description_and_says_what_it_left_out(tmp_path):
    write_skill(tmp_path, "good", "---\nname: good\ndescription: 'Does good things.'\n---\nBody.")
    write_skill(tmp_path, "silent", "---\nname: silent\n---\nNo description.")
    write_skill(tmp_path, "Wrong", "---\nname: Wrong\ndescription: Bad name.\n---\n")
    write_skill(tmp_path, "other", "---\nname: elsewhere\ndescription: Not its folder.\n---\n")
    write_skill(tmp_path, "plain", "No front matter at all.")
    skills, problems = mcs.find_skills(tmp_path)
    assert list(skills) == ["good"] and skills["good"].description == "Does good things."
    assert problems == [
        "Wrong/SKILL.md: its name 'Wrong' must be its folder's, in lowercase letters, digits "
        "and single hyphens; it is left out",
        "other/SKILL.md: its name 'elsewhere' must be its folder's, in lowercase letters, "
        "digits and single hyphens; it is left out",
        "plain/SKILL.md: no description, so it is left out",
        "silent/SKILL.md: no description, so it is left out"]
    assert mcs.skills_prompt({}) == ""  # no skills: not a word about them


def test_the_prompt_holds_names_and_descriptions_and_load_skill_the_body():
    skills, problems = mcs.find_skills(SKILLS)
    assert list(skills) == ["git-basics", "python-tests", "release-notes"] and not problems
    prompt = mcs.skills_prompt(skills)
    for skill in skills.values():
        _, body = mcs.front_matter(skill.path.read_text())
        assert f"- {skill.name}: {skill.description}" in prompt
        assert body.splitlines()[0] not in prompt  # "# Reading a git repository" is not
    schema, load_skill = mcs.skill_tool(skills)
    agent.check_tools([schema], {"load_skill": load_skill})
    assert schema["function"]["parameters"]["properties"]["skill"]["enum"] == sorted(skills)
    assert load_skill("git-basics").startswith("# Reading a git repository")
    assert load_skill("release-notes").endswith("Files beside it: format.md")
    with pytest.raises(LookupError, match="no skill named 'deploy'; the skills are"):
        load_skill("deploy")


def test_the_scripted_model_picks_the_skill_the_task_needs_and_follows_its_steps(tmp_path):
    repo = make_repo(tmp_path / "repo")
    skills, _ = mcs.find_skills(SKILLS)
    schema, load_skill = mcs.skill_tool(skills)
    files, file_registry = sandbox.sandbox_tools(repo)
    bot = quiet_agent([mcp_lab.picks_a_skill] + [mcp_lab.next_skill_step] * 3 + [mcp_lab.FIXED],
                      files + [schema], {**file_registry, "load_skill": load_skill},
                      system_prompt=sandbox.SANDBOX_PROMPT + mcs.skills_prompt(skills))
    bot.chat(TASK)
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]))
             for m in bot.messages for c in m.get("tool_calls", [])]
    assert calls[:3] == [("load_skill", {"skill": "git-basics"}),
                         ("run_command", {"command": "git status --short"}),
                         ("run_command", {"command": "git diff"})]
    assert calls[3][0] == "edit_file" and (repo / "greet.py").read_text() == GREET
    notes = quiet_agent([mcp_lab.picks_a_skill], [schema], {"load_skill": load_skill},
                        system_prompt=mcs.skills_prompt(skills))
    with pytest.raises(agent.ScriptExhausted):
        notes.chat("Write the release notes of version 2.0 from the commit log.")
    assert json.loads(notes.messages[2]["tool_calls"][0]["function"]["arguments"]) == \
        {"skill": "release-notes"}


# --- for builders --------------------------------------------------------------------------------


@pytest.mark.slow
def test_with_server_and_with_skills_add_a_server_behind_a_policy_and_a_skills_folder(
        tmp_path):
    repo = make_repo(tmp_path / "repo")
    asked = []
    toolset = sandbox.sandbox_tools(repo, risks=("read", "write"))
    command = [sys.executable, "-m", "mcp_server_git", "--repository", repo]
    client, toolset = mcs.with_server(
        toolset, command, name="git", fixed={"repo_path": str(repo)},
        policy=lambda name, shown: asked.append(name) or diff_approval.reject("not today"))
    try:
        toolset, prompt = mcs.with_skills(toolset, "You help.", SKILLS)
        tools, registry = toolset
        assert len(tools) == 3 + 12 + 1 and "- git-basics:" in prompt
        bot = quiet_agent([[tool_call("git__git_status"), tool_call("git__git_add",
                                                                    files=["greet.py"])],
                           reply("done")], tools, registry, system_prompt=prompt)
        bot.chat("status, then add")
        status, added = tool_messages(bot)
        assert asked == ["git__git_status", "git__git_add"]  # untrusted: every tool asks
        assert "not today" in status and "not today" in added
    finally:
        client.close()
    assert mcs.with_skills(toolset, "same", tmp_path) == (toolset, "same")  # no skills there


def test_a_trusted_servers_read_only_tools_run_unasked_and_the_others_ask(git):
    asked = []
    _, registry = mcs.remote_tools(git)
    gated = mcs.ask_first(registry, lambda name, shown: asked.append(name) or False,
                          mcs.risk_levels(git, trusted=True))
    assert gated["git__git_status"] is registry["git__git_status"]
    with pytest.raises(diff_approval.Rejected):
        gated["git__git_commit"](repo_path="/nowhere", message="x")
    assert asked == ["git__git_commit"]


def test_ask_before_call_shows_the_call_and_only_yes_sends_it(monkeypatch):
    for typed, approved, reason in [("y", True, ""), ("", False, "the person said no"),
                                    ("not with my key", False, "not with my key")]:
        monkeypatch.setattr("builtins.input", lambda prompt, typed=typed: typed)
        out = io.StringIO()
        with redirect_stdout(out):
            decision = mcs.ask_before_call("x__count", 'x__count({"text": "\x1b[2Khi"})\n')
        assert (decision.approved, decision.reason) == (approved, reason)
        assert out.getvalue() == 'x__count({"text": "\\x1b[2Khi"})\n'  # escapes made visible

    def closed(prompt):
        raise EOFError

    monkeypatch.setattr("builtins.input", closed)
    with redirect_stdout(io.StringIO()):
        assert not mcs.ask_before_call("x", "x()\n").approved


# --- what the lesson says ------------------------------------------------------------------------


def lesson_texts() -> list[Path]:
    return [ROOT / "lessons" / "15-mcp-and-skills.md", ROOT / "lessons" / "zh" /
            "15-mcp-and-skills.md"]


def notebook_outputs() -> str:
    notebook = json.loads((ROOT / "notebooks" / "15-mcp-and-skills.ipynb").read_text())
    return "\n".join("".join(o.get("text") or o.get("data", {}).get("text/plain", ""))
                     for c in notebook["cells"] if c["cell_type"] == "code"
                     for o in c["outputs"])


def test_the_token_table_in_both_languages_is_what_the_notebook_computed():
    shown = notebook_outputs()
    computed = [re.findall(r"[\d,]+", line.split("  ", 1)[1]) for line in shown.splitlines()
                if line.startswith(("(a) MCP", "(b) a skill", "(c) all in the prompt"))]
    assert len(computed) == 3, shown
    for text in lesson_texts():
        rows = [line for line in text.read_text().splitlines() if line.startswith("| (")]
        stated = [re.findall(r"\d[\d,]*", row.split("|", 2)[2]) for row in rows]
        assert stated == computed, f"{text.name}: the table says {stated}, the code {computed}"


def test_the_figures_the_lesson_states_are_printed_by_the_notebook():
    shown = notebook_outputs()
    schemas = re.search(r"12 tools, ([\d,]+) characters of schemas.*agent\.TOOLS: ([\d,]+)",
                        shown)
    catalog = re.search(r"the catalog: ([\d,]+) characters, in every request; the bodies: "
                        r"([\d,]+)", shown)
    more = re.search(r"\(b\) costs less than \(c\) from about (\d+) more skills", shown)
    assert schemas and catalog and more, "the notebook no longer prints these figures"
    for text in lesson_texts():
        lesson = text.read_text()
        for figure in [*schemas.groups(), *catalog.groups(), more[1]]:
            assert figure in lesson, f"{text.name} does not state {figure}"


def test_the_lesson_links_the_tracker_server_the_notebook_starts():
    """The lesson does not reprint the server (the notebook shows it): it links the very file
    the notebook starts, so what the student reads is what runs."""
    for text in lesson_texts():
        targets = [(text.parent / link).resolve() for link in
                   re.findall(r"\]\(([^)#]*tracker_server\.py)\)", text.read_text())]
        assert TRACKER_SERVER.resolve() in targets, f"{text.name} does not link the server's file"


# --- take it with you ----------------------------------------------------------------------------


TAKE_AWAY = r"""
import json, sys
import mcp_and_skills as mcs
from agent import Agent, ScriptedClient, reply, tool_call

tracker_server, skills_folder = sys.argv[1:3]
with mcs.MCPClient([sys.executable, tracker_server], name="tracker") as tracker:
    tools, registry = mcs.remote_tools(tracker)
    (tools, registry), prompt = mcs.with_skills((tools, registry), "You help.", skills_folder)
    bot = Agent(ScriptedClient([tool_call("tracker__read_issue", number=2),
                                tool_call("load_skill", skill="python-tests"), reply("ok")]),
                "scripted", tools=tools, registry=registry, system_prompt=prompt, on_event=None)
    bot.chat("go")
print(json.dumps({"answers": [m["content"][:20] for m in bot.messages if m["role"] == "tool"],
                  "course": "course" in sys.modules, "sandbox": "sandbox" in sys.modules}))
"""


@pytest.mark.slow
def test_the_exported_module_runs_beside_agent_py_and_diff_approval_py(tmp_path):
    shutil.copy(ROOT / "agent.py", tmp_path / "agent.py")
    for lesson in ("15-mcp-and-skills", "06-diff-approval"):
        out = tmp_path / f"{course.module_name(course.notebook_path(lesson))}.py"
        with redirect_stdout(io.StringIO()):
            assert course.main(["export", lesson, "-o", str(out)]) == 0
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AGENT_FROM_ZERO")}
    done = subprocess.run([sys.executable, "-c", TAKE_AWAY, str(TRACKER_SERVER), str(SKILLS)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out == {"answers": ["Add a --shout option", "# Python tests\n\nStep"],
                   "course": False, "sandbox": False}

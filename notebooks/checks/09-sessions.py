"""Checks of lesson 09's coding exercises (notebooks/09-sessions.ipynb, "Your turn")."""

import copy
import json
from pathlib import Path

import course
import sessions

import agent

INTERRUPTED = agent.error_json(agent.INTERRUPTED)


def call(call_id: str) -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}


def asks(*ids: str) -> dict:
    return {"role": "assistant", "content": "", "tool_calls": [call(i) for i in ids]}


def result(call_id: str, text: str = "ok") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


SYSTEM, USER = {"role": "system", "content": "s"}, {"role": "user", "content": "go"}


@course.exercise("09.1", "orphan repair by hand", "亲手做孤立调用修补")
def _(t, repair):
    with t.case("a history without tool calls comes back the same",
                "没有工具调用的消息历史，原样返回"):
        plain = [SYSTEM, USER, {"role": "assistant", "content": "hi"}]
        assert repair(copy.deepcopy(plain)) == plain, "it changed a history that needed nothing"
    with t.case("the open calls of the last batch are answered, in call order, after the rest",
                "最后一批里没回答的调用，在其余消息之后，按调用顺序得到回答"):
        history = [SYSTEM, USER, asks("c1", "c2", "c3"), result("c1")]
        got = repair(copy.deepcopy(history))
        assert got[:4] == history, "the messages that were there must stay as they were, first"
        assert got[4:] == [result("c2", INTERRUPTED), result("c3", INTERRUPTED)], (
            f"expected answers for c2 then c3 with error_json(INTERRUPTED), got {got[4:]}")
    with t.case("an open batch in the middle is answered before the next message",
                "中间没回答完的一批调用，在下一条消息之前得到回答"):
        history = [SYSTEM, USER, asks("c1", "c2"), result("c2"), USER, asks("c3"), result("c3")]
        got = repair(copy.deepcopy(history))
        assert got[:4] == history[:4] and got[4] == result("c1", INTERRUPTED), (
            "c1's answer belongs right after its batch's results, before the user message")
        assert got[5:] == history[4:], "everything after the repaired batch stays as it was"
    with t.case("every repaired history is one a strict server accepts",
                "修补后的每段消息历史，严格服务器都会接受"):
        for history in ([asks("c1")], [USER, asks("a", "b"), USER, asks("c"), result("c")],
                        [USER, asks("x"), result("x"), asks("y", "z")]):
            problem = agent.pairing_problem(repair(copy.deepcopy(history)))
            assert problem is None, f"agent.pairing_problem says: {problem}"
    with t.case("the list it is given is not changed", "传入的列表没有被改动"):
        history = [USER, asks("c1", "c2")]
        before = copy.deepcopy(history)
        repair(history)
        assert history == before, "repair() changed the list it was given; return a new one"
    with t.case("a call that has its result gets no second one",
                "已经有结果的调用不会再得到第二个"):
        got = repair([USER, asks("c1", "c2"), result("c1"), result("c2")])
        assert [m.get("tool_call_id") for m in got if m["role"] == "tool"] == ["c1", "c2"], (
            "each call id must be answered exactly once")


def branched_session(path: Path) -> sessions.Session:
    """header 1 - system 2 - user 3 - assistant 4 - stop 5; branch 6 under 4, and its user
    7; a note 8 under 5; a 'compaction' 9 (a newer type) under 7."""
    session = sessions.new_session(path)
    session.append("message", message=SYSTEM)
    session.append("message", message=USER)
    session.append("message", message={"role": "assistant", "content": "one"})
    session.append("stop", stop_reason="done")
    session.append("branch", parent="4", **{"from": "5"})
    session.append("message", message={"role": "user", "content": "another way"})
    session.append("note", parent="5", text="on the first branch")
    session.append("compaction", parent="7", summary="from a newer version")
    return session


@course.exercise("09.2", "list the branches: the leaves of a session", "列出分支：会话的叶子节点")
def _(t, leaves):
    with t.case("a session with one branch has one leaf: the last entry",
                "只有一个分支的会话只有一个叶子节点：最后一个条目"):
        with sessions.new_session("one.jsonl") as session:
            session.append("message", message=SYSTEM)
            session.append("message", message=USER)
            got = leaves(session)
        assert list(got) == ["3"], f"expected ['3'], got {got}"
    with t.case("every branch's leaf, in the order of the file",
                "每个分支的叶子节点，按文件里的顺序"):
        with branched_session(Path("tree.jsonl")) as session:
            got = leaves(session)
        assert list(got) == ["8", "9"], f"expected ['8', '9'], got {got}"
    with t.case("an entry of an unknown type can be a leaf too", "未知类型的条目也可以是叶子节点"):
        assert "9" in leaves(sessions.load_session("tree.jsonl"))
    with t.case("the current leaf is one of them", "当前的叶子节点在其中"):
        session = sessions.load_session("tree.jsonl")
        assert session.leaf in leaves(session), f"the leaf {session.leaf} is missing"
    with t.case("an entry with a child is never a leaf", "有子条目的条目从来不是叶子节点"):
        got = leaves(sessions.load_session("tree.jsonl"))
        assert not {"1", "2", "4", "5", "7"} & set(got), f"{got} holds entries with children"


def the_fork() -> sessions.Session:
    assert Path("fork.jsonl").exists(), "fork() wrote no fork.jsonl"
    return sessions.load_session("fork.jsonl")


@course.exercise("09.3", "fork a branch into a file of its own", "把一个分支分出来，存成单独的文件")
def _(t, fork):
    branched_session(Path("tree.jsonl")).close()
    original = Path("tree.jsonl").read_bytes()
    source = sessions.load_session("tree.jsonl")
    forked = None
    with t.case("the new file is a session that loads without problems",
                "新文件是一个加载时没有问题的会话"):
        forked = fork(source, "9", "fork.jsonl")
        if isinstance(forked, sessions.Session):
            forked.close()
        loaded = the_fork()
        assert [p for p in loaded.problems if "compaction" not in p] == [], loaded.problems
    with t.case("its branch entry still names the leaf it left, in the source: never itself",
                "新文件的 branch 条目仍写着离开的那个叶子节点，指向原来的会话：从不指向自己"):
        [branch] = [e for e in the_fork().entries.values() if e["type"] == "branch"]
        assert branch.get("from") == "5" and Path(str(branch.get("from_session"))).name == (
            "tree.jsonl"), (f"the branch entry says {branch}: its 'from' is entry 5 of "
                            "tree.jsonl, so keep it and add 'from_session': str(session.path)")
    with t.case("it holds the branch's messages, the model's view of it",
                "新文件里有这个分支的消息，也就是模型看到的样子"):
        loaded = the_fork()
        assert loaded.messages() == source.messages("9"), (
            f"messages {loaded.messages()} instead of {source.messages('9')}")
    with t.case("and its other entries in order, the unknown type carried with its fields",
                "还有分支的其他条目，顺序不变，未知类型的条目连同字段一起带上"):
        loaded = the_fork()
        kinds = [e["type"] for e in loaded.path_to()]
        assert kinds == ["session", "message", "message", "message", "branch", "message",
                         "compaction"], f"the branch's types are {kinds}"
        assert loaded.entries[loaded.leaf].get("summary") == "from a newer version", (
            "the compaction entry lost its fields")
    with t.case("nothing from the other branch", "没有另一个分支的任何东西"):
        loaded = the_fork()
        texts = json.dumps(list(loaded.entries.values()))
        assert "on the first branch" not in texts and '"stop"' not in texts, (
            "entries of the other branch were copied")
        assert len(loaded.path_to()) == len(loaded.entries), "the fork has more than one branch"
    with t.case("the fork can be gone on with: opened, it takes new entries",
                "分出来的会话可以接着用：打开之后能写入新条目"):
        the_fork()
        try:
            with sessions.open_session("fork.jsonl") as session:
                for text in ("one more", "and one after it"):
                    session.append("note", text=text)
        except sessions.SessionLocked:
            raise AssertionError("fork() left fork.jsonl open for writing: return the new "
                                 "session, or close it") from None
        except sessions.SessionError as exc:
            raise AssertionError(f"{exc}: an entry's id is the line it is on, so copied ids "
                                 "collide with new ones; append each entry to new_session()'s "
                                 "file, as the hint says") from None
        texts = [e.get("text") for e in the_fork().path_to()]
        assert texts[-2:] == ["one more", "and one after it"], f"the branch ends {texts[-2:]}"
    with t.case("a path that exists is refused and left as it was",
                "已经存在的路径：拒绝，并保持原样"):
        Path("taken.jsonl").write_text("keep me\n")
        try:
            result = fork(source, "9", "taken.jsonl")
        except (sessions.SessionError, FileExistsError):
            result = None
        if isinstance(result, sessions.Session):
            result.close()
        assert result is None, "fork() wrote over a file that was already there"
        assert Path("taken.jsonl").read_text() == "keep me\n", "the existing file was changed"
    t.expect(Path("tree.jsonl").read_bytes() == original, "the original session is unchanged",
                                                          "原来的会话没有改变",
             detail="fork() changed the file it copied from")

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
        assert repair(copy.deepcopy(plain)) == plain, course.both(
            "it changed a history that needed nothing", "消息历史不需要修补，却被改动了")
    with t.case("the open calls of the last batch are answered, in call order, after the rest",
                "最后一批里没回答的调用，在其余消息之后，按调用顺序得到回答"):
        history = [SYSTEM, USER, asks("c1", "c2", "c3"), result("c1")]
        got = repair(copy.deepcopy(history))
        assert got[:4] == history, course.both(
            "the messages that were there must stay as they were, first",
            "原有的消息必须原样留着，排在最前")
        assert got[4:] == [result("c2", INTERRUPTED), result("c3", INTERRUPTED)], course.both(
            f"expected answers for c2 then c3 with error_json(INTERRUPTED), got {got[4:]}",
            f"c2 和 c3 应当依次得到回答，内容是 error_json(INTERRUPTED)；得到的是 {got[4:]}")
    with t.case("an open batch in the middle is answered before the next message",
                "中间没回答完的一批调用，在下一条消息之前得到回答"):
        history = [SYSTEM, USER, asks("c1", "c2"), result("c2"), USER, asks("c3"), result("c3")]
        got = repair(copy.deepcopy(history))
        assert got[:4] == history[:4] and got[4] == result("c1", INTERRUPTED), course.both(
            "c1's answer belongs right after its batch's results, before the user message",
            "c1 的回答应该紧跟在它那一批调用的结果之后，在用户消息之前")
        assert got[5:] == history[4:], course.both(
            "everything after the repaired batch stays as it was",
            "修补过的那一批调用之后，一切保持原样")
    with t.case("every repaired history is one a strict server accepts",
                "修补后的每段消息历史，严格服务器都会接受"):
        for history in ([asks("c1")], [USER, asks("a", "b"), USER, asks("c"), result("c")],
                        [USER, asks("x"), result("x"), asks("y", "z")]):
            problem = agent.pairing_problem(repair(copy.deepcopy(history)))
            assert problem is None, course.both(f"agent.pairing_problem says: {problem}",
                                                f"agent.pairing_problem 说：{problem}")
    with t.case("the list it is given is not changed", "传入的列表没有被改动"):
        history = [USER, asks("c1", "c2")]
        before = copy.deepcopy(history)
        repair(history)
        assert history == before, course.both(
            "repair() changed the list it was given; return a new one",
            "repair() 改动了传给它的列表；请返回一个新列表")
    with t.case("a call that has its result gets no second one",
                "已经有结果的调用不会再得到第二个"):
        got = repair([USER, asks("c1", "c2"), result("c1"), result("c2")])
        assert [m.get("tool_call_id") for m in got if m["role"] == "tool"] == ["c1", "c2"], (
            course.both("each call id must be answered exactly once",
                        "每个调用 id 都必须恰好得到一次回答"))


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
        assert list(got) == ["3"], course.both(f"expected ['3'], got {got}",
                                               f"应为 ['3']，得到的是 {got}")
    with t.case("every branch's leaf, in the order of the file",
                "每个分支的叶子节点，按文件里的顺序"):
        with branched_session(Path("tree.jsonl")) as session:
            got = leaves(session)
        assert list(got) == ["8", "9"], course.both(f"expected ['8', '9'], got {got}",
                                                    f"应为 ['8', '9']，得到的是 {got}")
    with t.case("an entry of an unknown type can be a leaf too", "未知类型的条目也可以是叶子节点"):
        assert "9" in leaves(sessions.load_session("tree.jsonl"))
    with t.case("the current leaf is one of them", "当前的叶子节点在其中"):
        session = sessions.load_session("tree.jsonl")
        assert session.leaf in leaves(session), course.both(
            f"the leaf {session.leaf} is missing", f"少了叶子节点 {session.leaf}")
    with t.case("an entry with a child is never a leaf", "有子条目的条目从来不是叶子节点"):
        got = leaves(sessions.load_session("tree.jsonl"))
        assert not {"1", "2", "4", "5", "7"} & set(got), course.both(
            f"{got} holds entries with children", f"返回的 {got} 里有带子条目的条目")


def the_fork() -> sessions.Session:
    assert Path("fork.jsonl").exists(), course.both("fork() wrote no fork.jsonl",
                                                    "fork() 没有写出 fork.jsonl")
    return sessions.load_session("fork.jsonl")


@course.exercise("09.3", "fork a branch into a file of its own", "把一个分支分出来，存成单独的文件")
def _(t, fork):
    branched_session(Path("tree.jsonl")).close()
    original = Path("tree.jsonl").read_bytes()
    source = sessions.load_session("tree.jsonl")
    forked = None
    with t.case("the new file is a session that loads without problems",
                "新文件是一个会话，加载时没有问题"):
        forked = fork(source, "9", "fork.jsonl")
        if isinstance(forked, sessions.Session):
            forked.close()
        loaded = the_fork()
        assert [p for p in loaded.problems if "compaction" not in p] == [], loaded.problems
    with t.case("its branch entry still names the leaf it left, in the source: never itself",
                "新文件的 branch 条目仍写着离开的那个叶子节点，指向原来的会话：从不指向自己"):
        [branch] = [e for e in the_fork().entries.values() if e["type"] == "branch"]
        assert branch.get("from") == "5" and Path(str(branch.get("from_session"))).name == (
            "tree.jsonl"), course.both(
                f"the branch entry says {branch}: its 'from' is entry 5 of tree.jsonl, so keep "
                "it and add 'from_session': str(session.path)",
                f"branch 条目写的是 {branch}：它的 'from' 是 tree.jsonl 的条目 5，所以要保留，"
                "再加上 'from_session': str(session.path)")
    with t.case("it holds the branch's messages, the model's view of it",
                "新文件里有这个分支的消息，也就是模型看到的样子"):
        loaded = the_fork()
        assert loaded.messages() == source.messages("9"), course.both(
            f"messages {loaded.messages()} instead of {source.messages('9')}",
            f"消息是 {loaded.messages()}，应为 {source.messages('9')}")
    with t.case("and its other entries in order, the unknown type carried with its fields",
                "还有分支的其他条目，顺序不变，未知类型的条目连同字段一起带上"):
        loaded = the_fork()
        kinds = [e["type"] for e in loaded.path_to()]
        assert kinds == ["session", "message", "message", "message", "branch", "message",
                         "compaction"], course.both(f"the branch's types are {kinds}",
                                                    f"这个分支上条目的类型是 {kinds}")
        assert loaded.entries[loaded.leaf].get("summary") == "from a newer version", (
            course.both("the compaction entry lost its fields", "compaction 条目丢了它的字段"))
    with t.case("nothing from the other branch", "没有另一个分支的任何东西"):
        loaded = the_fork()
        texts = json.dumps(list(loaded.entries.values()))
        assert "on the first branch" not in texts and '"stop"' not in texts, course.both(
            "entries of the other branch were copied", "另一个分支的条目也被复制过来了")
        assert len(loaded.path_to()) == len(loaded.entries), course.both(
            "the fork has more than one branch", "分出来的会话不止一个分支")
    with t.case("the fork can be gone on with: opened, it takes new entries",
                "分出来的会话可以接着用：打开之后能写入新条目"):
        the_fork()
        try:
            with sessions.open_session("fork.jsonl") as session:
                for text in ("one more", "and one after it"):
                    session.append("note", text=text)
        except sessions.SessionLocked:
            raise AssertionError(course.both(
                "fork() left fork.jsonl open for writing: return the new session, or close it",
                "fork() 没有关闭 fork.jsonl，它仍以写方式打开着："
                "请返回新会话，或者关闭它")) from None
        except sessions.SessionError as exc:
            raise AssertionError(course.both(
                f"{exc}: an entry's id is the line it is on, so copied ids collide with new "
                "ones; append each entry to new_session()'s file, as the hint says",
                f"会话出错：{exc}。条目的 id 就是它所在的行号，所以复制过来的 id 会和新条目的 id "
                "冲突；请照提示说的，把每个条目追加到 new_session() 建的文件里")) from None
        texts = [e.get("text") for e in the_fork().path_to()]
        assert texts[-2:] == ["one more", "and one after it"], course.both(
            f"the branch ends {texts[-2:]}", f"分支的结尾是 {texts[-2:]}")
    with t.case("a path that exists is refused and left as it was",
                "已经存在的路径：拒绝，并保持原样"):
        Path("taken.jsonl").write_text("keep me\n")
        try:
            result = fork(source, "9", "taken.jsonl")
        except (sessions.SessionError, FileExistsError):
            result = None
        if isinstance(result, sessions.Session):
            result.close()
        assert result is None, course.both("fork() wrote over a file that was already there",
                                           "fork() 覆盖了一个已经存在的文件")
        assert Path("taken.jsonl").read_text() == "keep me\n", course.both(
            "the existing file was changed", "已有的文件被改动了")
    t.expect(Path("tree.jsonl").read_bytes() == original, "the original session is unchanged",
                                                          "原来的会话没有改变",
             detail=course.both("fork() changed the file it copied from",
                                "fork() 改动了它复制的源文件"))

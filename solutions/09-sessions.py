"""Reference solutions of lesson 09's coding exercises; tests/test_exercises.py runs the checks
of notebooks/checks/09-sessions.py on them."""

import copy

import course  # noqa: F401  (lets `import sessions` load lesson 09's export cells)
import sessions

import agent


def repair(messages: list[dict]) -> list[dict]:
    """09.1: every call without a result is answered as interrupted, right after its batch."""
    def answers(ids):
        return [{"role": "tool", "tool_call_id": call_id,
                 "content": agent.error_json(agent.INTERRUPTED)} for call_id in ids]

    repaired, still_open = [], []
    for message in messages:
        if message["role"] == "tool" and message.get("tool_call_id") in still_open:
            still_open.remove(message["tool_call_id"])
        else:  # the batch is over: answer what is still open, before this message
            repaired += answers(still_open)
            still_open = [call["id"] for call in message.get("tool_calls", [])]
        repaired.append(copy.deepcopy(message))
    return repaired + answers(still_open)


def leaves(session: sessions.Session) -> list[str]:
    """09.2: the entries no entry names as its parent, in the order of the file."""
    parents = {entry["parent"] for entry in session.entries.values()}
    return [entry_id for entry_id in session.entries if entry_id not in parents]


def fork(session: sessions.Session, entry_id: str, path) -> sessions.Session:
    """09.3: a new session file holding only the branch that ends at entry_id."""
    branch = session.path_to(entry_id)  # before anything is written: an unknown id is refused
    forked = sessions.new_session(path)  # refuses a path that exists
    with forked:
        for entry in branch[1:]:
            fields = {k: v for k, v in entry.items() if k not in ("id", "parent", "type")}
            if entry["type"] == "branch" and "from_session" not in fields:
                fields["from_session"] = str(session.path)  # its 'from' is an id there, not here
            forked.append(entry["type"], **fields)
    return forked


SOLUTIONS = {"09.1": (repair,), "09.2": (leaves,), "09.3": (fork,)}

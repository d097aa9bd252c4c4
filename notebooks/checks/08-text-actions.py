"""Checks of lesson 08's coding exercises: course.check("08.k", answer) runs them."""

from pathlib import Path

import course
import text_actions  # its names are looked up at each use: a re-run export cell makes new ones

from agent import ScriptedClient, pairing_problem, reply, to_json

CALL_WITHOUT_TYPE = '{"name": "read_file", "arguments": {"path": "a.txt"}}'
FINISH = to_json({"type": "finish", "output": "ok"})


def refused(parse, text) -> bool:
    try:
        parse(text)
    except text_actions.FormatError:  # the notebook's own, as its export cell last made it
        return True
    return False


@course.exercise("08.1", 'accept a call without "type"')
def _(t, parse_loose):
    with t.case('{"name": ..., "arguments": ...} with no "type" is a call_tool action'):
        found = parse_loose(CALL_WITHOUT_TYPE)
        assert (found["type"], found["name"], found["arguments"]) == \
            ("call_tool", "read_file", {"path": "a.txt"}), f"got {found}"
    with t.case('a note tells the model to add "type"'):
        notes = parse_loose(CALL_WITHOUT_TYPE)["notes"]
        assert any("type" in note for note in notes), f"the notes are {notes}"
    with t.case("it is found in prose and in a code fence too"):
        found = parse_loose(f"I will read it:\n```json\n{CALL_WITHOUT_TYPE}\n```\nOK?")
        assert found["name"] == "read_file", f"got {found}"
    with t.case('"arguments" given as a JSON string still works'):
        found = parse_loose('{"name": "list_files", "arguments": "{}"}')
        assert (found["name"], found["arguments"]) == ("list_files", {}), f"got {found}"
    with t.case("a valid action comes out exactly as parse_action makes it"):
        assert parse_loose(FINISH) == text_actions.parse_action(FINISH), \
            f"got {parse_loose(FINISH)}"
    with t.case("no JSON, and an object with neither type nor name, are still refused"):
        assert refused(parse_loose, "Sure, I will read it."), "plain text was accepted"
        assert refused(parse_loose, '{"arguments": {"path": "a.txt"}}'), \
            "an object with no name became an action"
    with t.case('an explicit unknown "type" is still refused, even with a "name"'):
        assert refused(parse_loose, '{"type": "run", "name": "read_file"}'), \
            '{"type": "run", ...} became an action'


@course.exercise("08.2", "repair Python-style single quotes where that is exact")
def _(t, parse_python_style):
    with t.case("{'type': 'finish', 'output': 'ok'} is a finish, with a note"):
        found = parse_python_style("{'type': 'finish', 'output': 'ok'}")
        assert (found["type"], found["output"]) == ("finish", "ok"), f"got {found}"
        assert found["notes"], "no note tells the model to use double quotes"
    with t.case("a Python-style call inside prose is found"):
        found = parse_python_style("Sure: {'type': 'call_tool', 'name': 'read_file', "
                                   "'arguments': {'path': 'a.txt'}} - that's all")
        assert (found["name"], found["arguments"]) == ("read_file", {"path": "a.txt"}), \
            f"got {found}"
    with t.case("double quotes inside a single-quoted string are kept"):
        found = parse_python_style("{'type': 'finish', 'output': 'it is \"fine\"'}")
        assert found["output"] == 'it is "fine"', f"got {found['output']!r}"
    with t.case("an apostrophe inside a single-quoted string is refused, not guessed"):
        assert refused(parse_python_style, "{'type': 'finish', 'output': 'don't'}"), \
            "'don't' was accepted"
    with t.case("a key given twice is refused, as parse_action refuses it"):
        assert refused(parse_python_style, "{'type': 'finish', 'output': 'a', 'output': 'b'}"), \
            "{'output': 'a', 'output': 'b'} was accepted: which output was meant is a guess"
    with t.case("the model's text is never run as code"):
        sneaky = ("{'type': 'finish', 'output': "
                  "__import__('pathlib').Path('ran.txt').write_text('x')}")
        was_refused = refused(parse_python_style, sneaky)
        assert not Path("ran.txt").exists(), "the text was run: it wrote ran.txt (eval?)"
        assert was_refused, "a call in the text was accepted as an action"
    with t.case("valid JSON comes out exactly as parse_action makes it"):
        assert parse_python_style(FINISH) == text_actions.parse_action(FINISH)
    with t.case("other refusals stay: no JSON, or a call_tool without a name"):
        assert refused(parse_python_style, "Done!"), "plain text was accepted"
        assert refused(parse_python_style, "{'type': 'call_tool'}"), \
            "a call_tool without a name was accepted"
    with t.case("a JSON refusal that is not about quotes stays: a finish, then another action"):
        call = to_json({"type": "call_tool", "name": "read_file", "arguments": {"path": "a.txt"}})
        quoted = f'The format is {{"type": "finish", "output": "..."}}. So: {call}'
        assert refused(parse_python_style, quoted), \
            "a finish with another action after it was accepted (read it as a Python literal?)"


def action(name, **arguments):
    return reply(to_json({"type": "call_tool", "name": name, "arguments": arguments}))


BAD = reply("I will look at it now.")
DONE = reply(FINISH)


@course.exercise("08.3", "count every format error of a task")
def _(t, adapter_class):
    t.expect(isinstance(adapter_class, type) and issubclass(adapter_class,
                                                            text_actions.TextActions),
             "it is a subclass of TextActions", detail=f"got {adapter_class!r}")

    def agent_on(steps):
        client = ScriptedClient(steps)
        return text_actions.TextAgent(adapter_class(client, max_format_errors=3), "scripted",
                         on_event=None), client

    alternating = [BAD, action("list_files"), BAD, action("list_files"), BAD, DONE]
    with t.case("bad, good, bad, good, bad: the third bad reply stops the task, validly"):
        bot, client = agent_on(alternating + [BAD, BAD, DONE])
        bot.chat("look")
        assert bot.stop_reason == "format_errors", f"stop_reason is {bot.stop_reason!r}"
        assert len(client.requests) == 5, f"{len(client.requests)} requests, not 5"
        assert pairing_problem(bot.messages) is None, pairing_problem(bot.messages)
    with t.case("a new task counts from zero: two bad replies there do not stop it"):
        bot.chat("look again")
        assert bot.stop_reason == "done", f"stop_reason is {bot.stop_reason!r}"
    with t.case("two bad replies and a finish: the task ends done"):
        bot, _ = agent_on([BAD, action("list_files"), BAD, DONE])
        assert bot.chat("look") == "ok" and bot.stop_reason == "done", bot.stop_reason
    with t.case("a task with no format error counts 0"):
        adapter = adapter_class(ScriptedClient([]))
        history = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
        assert adapter.format_errors(history) == 0, f"got {adapter.format_errors(history)}"

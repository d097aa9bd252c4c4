"""Lesson 11's display side: parse_partial, which reads JSON cut off anywhere and never
raises, and StreamView, which shows a run as it arrives (Jupyter, terminal, plain)."""

import io
import json
import random
import re

import course
import httpx2
import openai
import pytest
from props.clock import FakeClock
from props.streaming_model import StreamingScriptedClient  # a prop: it streams offline

import agent
from agent import Agent, reply, step, tool_call

nb = course.load_notebook("11-streaming")
tracing = course.load_notebook("07-tracing")

ARGUMENTS = [
    json.dumps({"path": "notes.md", "old_str": "", "new_str": "# Notes\n\nSay \"hi\" \\ 你好\n"}),
    json.dumps({"path": "café/ü.txt", "text": "😀 tab\t end"}),  # ensure_ascii: \u escapes
    json.dumps({"path": "café/ü.txt", "text": "😀 tab\t end"}, ensure_ascii=False),
    json.dumps({"n": 123, "x": -4.5e-2, "big": 1e21, "ok": True, "no": False, "none": None}),
    json.dumps({"deep": {"list": [1, [2, [3, {"k": "v"}]], {}], "empty": []}, "s": "a,b:c}"}),
    json.dumps({"lines": ["one", "two", ""], "nested": {"a": {"b": {"c": "d"}}}}, indent=2),
    '{ "spaced" :  "out" ,"tight":"x",  "slash": "\\/", "ctl": "\\b\\f\\r" }',
    '["a top-level array", 1, {"x": null}]',
    '"a top-level string \\"with\\" escapes"',
    "42",
    "{}",
]


def consistent(partial, final) -> bool:
    """partial could be what a prefix of final's text shows: everything complete equal,
    the last value still arriving a prefix of its final value."""
    if isinstance(final, dict):
        if not isinstance(partial, dict) or list(partial) != list(final)[:len(partial)]:
            return False
        keys = list(partial)
        return all(partial[k] == final[k] for k in keys[:-1]) and \
            (not keys or consistent(partial[keys[-1]], final[keys[-1]]))
    if isinstance(final, list):
        if not isinstance(partial, list) or len(partial) > len(final):
            return False
        return all(p == f for p, f in zip(partial[:-1], final, strict=False)) and \
            (not partial or consistent(partial[-1], final[len(partial) - 1]))
    if isinstance(final, str):
        return isinstance(partial, str) and final.startswith(partial)
    if isinstance(final, bool) or final is None:
        return partial == final
    return isinstance(partial, (int, float)) and not isinstance(partial, bool)


@pytest.mark.parametrize("text", ARGUMENTS)
def test_parse_partial_on_every_prefix_never_raises_and_shows_only_what_arrived(text):
    final = json.loads(text)
    for n in range(len(text) + 1):
        shown = nb.parse_partial(text[:n])
        assert shown is None and not text[:n].strip() or consistent(shown, final), \
            (text[:n], shown)
        json.dumps(shown)  # always something a display can print
    assert nb.parse_partial(text) == final


def test_parse_partial_never_raises_on_text_that_is_not_json():
    rng = random.Random(11)
    alphabet = '{}[]":,\\ abcu0123456789.eE+-tnrfl\n\t\ud83d\ude00é'
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        json.dumps(nb.parse_partial(text))
    # nested deeper than Python recurses: nothing to show, and no RecursionError
    assert nb.parse_partial("[" * 100_000) is None
    assert nb.parse_partial('{"a": ' * 50_000) is None
    assert nb.parse_partial("[" * 50 + "1") == [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[
        1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]


@pytest.mark.parametrize(("text", "shown"), [
    ('{"path": "a', {"path": "a"}),
    ('{"path"', {}),  # a key without its colon
    ('{"path": ', {}),  # a key whose value has not begun
    ('{"s": "a\\', {"s": "a"}),  # a lone backslash: an escape still arriving
    ('{"s": "a\\\\', {"s": "a\\"}),  # an escaped backslash is whole
    ('{"s": "caf\\u00', {"s": "caf"}),  # \u with two of its four digits
    ('{"s": "caf\\u00e9', {"s": "café"}),
    ('{"s": "x\\ud83d', {"s": "x"}),  # the first half of a surrogate pair
    ('{"s": "x\\ud83d\\ude00', {"s": "x😀"}),
    ('{"s": "a\\\\u00', {"s": "a\\u00"}),  # not an escape: a backslash, then "u00"
    ('{"ok": tru', {}), ('{"ok": true', {"ok": True}), ('{"no": nul', {}),
    ('{"n": -', {}), ('{"n": 12', {"n": 12}), ('{"n": 1.', {"n": 1}), ('{"n": 1e', {"n": 1}),
    ('{"a": [1, 2', {"a": [1, 2]}), ('{"a": [1, "t', {"a": [1, "t"]}),
    ('{"a": 1} trailing', {"a": 1}), ('{"a": 1 oops "b": 2}', {"a": 1}),
    ('{"raw": "line\nbreak', {"raw": "line\nbreak"}),  # a raw newline, as some models send
    ('{"x": "\\q"}', {"x": "\\q"}),  # an escape JSON does not have: shown as it came
    ("", None), ("   ", None), ("nonsense", None),
])
def test_parse_partial_closes_what_is_open_and_leaves_out_what_is_still_arriving(text, shown):
    assert nb.parse_partial(text) == shown


# --- StreamView ----------------------------------------------------------------------------------


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def terminal(text: str) -> list[str]:
    """What a terminal shows after text: lines, "ESC[nF" (up n lines, to column 0) and
    "ESC[J" (clear from there down), the only escapes StreamView writes."""
    lines, row, i = [""], 0, 0
    while i < len(text):
        up = re.match(r"\x1b\[(\d+)F", text[i:])
        if up:
            row, i = max(0, row - int(up.group(1))), i + up.end()
            continue
        if text.startswith("\x1b[J", i):
            del lines[row:]
            lines.append("")
            i += 3
            continue
        if text[i] == "\n":
            row += 1
            if row == len(lines):
                lines.append("")
        else:
            lines[row] += text[i]
        i += 1
    return lines[:-1] if lines[-1] == "" else lines


def escapes(text: str) -> set[str]:
    return set(re.findall(r"\x1b\[[0-9;]*[A-Za-z]", text))


LONG = "x = 1\n" * 3 + "y = '" + "你好" * 30 + "'\n"
SCRIPT = [step(tool_call("edit_file", path="n.py", old_str="", new_str=LONG),
               tool_call("read_file", path="n.py"),
               content="Writing it.\nThen reading it back.",
               reasoning_content="Two steps."),
          reply("Done: n.py holds the code.")]


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LINES", "40")
    monkeypatch.delenv("TERM", raising=False)
    return tmp_path


def run(view, script=SCRIPT, agent_class=None, **client):
    agent_class = agent_class or nb.StreamingAgent
    make = StreamingScriptedClient if agent_class is not Agent else agent.ScriptedClient
    bot = agent_class(make(script, **client) if make is StreamingScriptedClient
                      else make(script), "scripted", on_event=view)
    bot.chat("Write n.py, then read it.")
    return bot


def test_plain_output_is_each_final_line_once_and_no_escape():
    out = io.StringIO()
    view = nb.StreamView(out, width=70)
    assert view.mode == "plain"
    run(view)
    printed = out.getvalue()
    assert printed.splitlines() == view.screen().splitlines()
    assert "\x1b" not in printed and nb.CURSOR not in printed
    assert printed.splitlines()[:4] == [
        "user:        Write n.py, then read it.",
        "thinking:    Two steps.",
        "agent:       Writing it.",
        "             Then reading it back."]


@pytest.mark.slow
def test_in_a_terminal_it_writes_in_place_and_ends_on_the_whole_transcript():
    out = FakeTTY()
    frames = []
    write = out.write
    out.write = lambda text: (write(text), frames.append(terminal(out.getvalue())))[0]
    view = nb.StreamView(out, width=60, every=0)
    assert view.mode == "terminal"
    run(view)
    assert terminal(out.getvalue()) == view.screen().splitlines()
    assert escapes(out.getvalue()) <= {f"\x1b[{n}F" for n in range(1, 60)} | {"\x1b[J"}
    growing = [line for frame in frames for line in frame
               if line.startswith("tool call:   edit_file(") and line.endswith(nb.CURSOR)]
    assert len(set(growing)) > 5  # the call was redrawn as its arguments arrived
    assert any('path="n.py"' in line and "new_str" not in line for line in growing)
    for frame in frames:
        assert all(nb.columns(line) <= 60 for line in frame), frame


def test_every_line_fits_its_width_with_wide_characters_too():
    view = nb.StreamView(io.StringIO(), width=40)
    run(view, [reply("你好" * 50 + "\n" + "a" * 90)])
    lines = view.screen().splitlines()
    assert all(nb.columns(line) <= 40 for line in lines), lines
    assert "".join(line[13:] for line in lines[1:]) == "你好" * 50 + "a" * 90


def test_what_the_model_writes_is_shown_not_obeyed():
    out = FakeTTY()
    run(nb.StreamView(out, width=100), [reply("evil\x1b[2J\x1b]0;title\x07 \u202eright")])
    assert escapes(out.getvalue()) <= {f"\x1b[{n}F" for n in range(1, 60)} | {"\x1b[J"}
    assert "\\x1b[2J" in out.getvalue() and "\u202e" not in out.getvalue()


def test_a_lone_surrogate_does_not_break_the_screen():
    out = io.StringIO()
    run(nb.StreamView(out), [tool_call("read_file", raw_arguments='{"path": "\\ud83d.txt"}'),
                             reply("no")])
    out.getvalue().encode("utf-8")  # what is written can be encoded


def test_in_jupyter_it_updates_one_output_area_per_run(monkeypatch):
    import IPython.display

    shown = []

    class Handle:
        def __init__(self, picture):
            self.pictures = [picture]

        def update(self, picture):
            self.pictures.append(picture)

    def display(picture, display_id=False):
        assert display_id is True
        shown.append(Handle(picture))
        return shown[-1]

    monkeypatch.setattr(IPython.display, "display", display)
    view = nb.StreamView(mode="jupyter", every=0)
    run(view)
    run(view, [reply("A second run, a second area.")])
    assert len(shown) == 2
    assert len(shown[0].pictures) > 20  # redrawn as the pieces came
    assert shown[0].pictures[-1].data.splitlines()[0] == "user:        Write n.py, then read it."
    assert shown[1].pictures[-1].data == view.screen()
    assert "A second run" in view.screen() and "Done: n.py" not in view.screen()


def test_a_redraw_at_most_every_so_often_and_the_last_picture_whole(in_tmp):
    clock = FakeClock(0.0)
    out = FakeTTY()
    writes = []
    write = out.write
    out.write = lambda text: (writes.append(text), write(text))[1]
    view = nb.StreamView(out, width=80, every=1.0, clock=clock)
    run(view, interval=0.05, sleep=clock.advance)
    assert terminal(out.getvalue()) == view.screen().splitlines()  # the last picture, whole
    seldom = len(writes)
    writes.clear()
    (in_tmp / "n.py").unlink()
    run(nb.StreamView(out, width=80, every=0, clock=clock), interval=0.05, sleep=clock.advance)
    assert seldom < len(writes) / 3  # one redraw a second instead of one per piece


def test_without_streaming_each_message_simply_appears_whole(in_tmp):
    streamed = nb.StreamView(io.StringIO(), width=70)
    run(streamed)
    (in_tmp / "n.py").unlink()
    not_streamed = nb.StreamView(io.StringIO(), width=70)
    run(not_streamed, agent_class=Agent)
    assert not_streamed.screen() == streamed.screen()


def test_a_dropped_stream_shows_what_came_and_says_it_was_not_kept():
    view = nb.StreamView(io.StringIO(), width=100)
    with pytest.raises(nb.IncompleteStream):
        run(view, drop={1: 20})
    lines = view.screen().splitlines()
    assert lines[-2].strip() == ("(cut off: none of this reply was kept, and none of its "
                                 "calls ran)")
    assert lines[-1].startswith("stopped:     error: IncompleteStream: the stream ended")
    assert nb.CURSOR not in view.screen()


def test_a_reply_cut_off_by_length_is_marked_and_its_calls_not_run():
    cut = '{"path": "n.py", "old_str": "", "new_str": "x = '
    view = nb.StreamView(io.StringIO(), width=120)
    run(view, [step(tool_call("edit_file", raw_arguments=cut), finish_reason="length"),
               reply("I stop.")])
    lines = view.screen().splitlines()
    assert lines[1] == 'cut off:     edit_file(path="n.py", old_str="", new_str="x = "'
    assert lines[2].strip().startswith("(not run: the reply hit its length limit")
    assert lines[3].startswith("tool error:  ") and "not executed" in lines[3]


def test_stops_and_empty_replies_are_shown():
    view = nb.StreamView(io.StringIO())
    bot = nb.StreamingAgent(StreamingScriptedClient([tool_call("list_files")] * 3),
                            "m", on_event=view, max_turns=2)
    bot.chat("loop")
    assert view.screen().splitlines()[-1] == "stopped:     max_turns"
    run(view, [reply("")])
    assert view.screen().splitlines()[-1] == "agent:       (an empty reply)"


def test_half_an_emoji_in_each_of_two_pieces_shows_as_the_emoji():
    view = nb.StreamView(io.StringIO(), width=80)
    view({"type": "message_start", "role": "assistant"})
    for piece in ["A \ud83d", "\ude00 for you"]:
        view({"type": "message_update", "part": "content", "delta": piece})
    for piece in ['{"new_str": "\ud83d', '\udc4b"']:  # and in a call's arguments
        view({"type": "message_update", "part": "tool_call", "index": 0, "tool_call_id": "c",
              "name": "edit_file", "delta": piece})
    assert view.screen().splitlines() == ["agent:       A 😀 for you",
                                          f"tool call:   edit_file(new_str=\"👋\"{nb.CURSOR}"]


def test_a_request_that_fails_before_any_data_shows_no_reply_only_the_error():
    """A 500 after the SDK's retries: no reply began, so there is no reply to show as cut
    off, only the error line saying what happened."""
    def fails(messages):
        request = httpx2.Request("POST", "http://x/v1/chat/completions")
        raise openai.InternalServerError("Error code: 500", body=None,
                                         response=httpx2.Response(500, request=request))

    view = nb.StreamView(io.StringIO(), width=100)
    with pytest.raises(openai.InternalServerError):
        run(view, [fails])
    assert view.screen().splitlines() == [
        "user:        Write n.py, then read it.",
        "stopped:     error: InternalServerError: Error code: 500"]


def test_it_knows_where_it_is(monkeypatch):
    assert nb.screen_mode(io.StringIO()) == "plain"
    assert nb.screen_mode(FakeTTY()) == "terminal"
    monkeypatch.setenv("TERM", "dumb")
    assert nb.screen_mode(FakeTTY()) == "plain"

"""Lesson 11: streaming. These tests exercise the code the notebook defines (its cells tagged
"export"), so there is one definition, not a copy: the scripted model that streams, the
accumulator, StreamingAgent, parse_partial and StreamView."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import course  # first: it makes `import tracing` load lesson 07's export cells
import httpx2
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk
from props.clock import FakeClock
from props.streaming_model import (  # a prop: it streams offline
    SERVER_STYLES,
    StreamingScriptedClient,
    awkward_places,
)
from test_loop import assert_history_valid

import agent
from agent import Agent, ScriptedClient, reply, step, tool_call

nb = course.load_notebook("11-streaming")
ROOT = Path(__file__).resolve().parent.parent
STYLES = list(SERVER_STYLES)

NOTE = '# Notes\n\nSay "hi" \\ to 你好\n'
CORPUS = {
    "text only": [reply('Just words, 你好, "quotes" and a \\ backslash.')],
    "one call": [tool_call("list_files", path="."), reply("Nothing here.")],
    "parallel calls": [step(tool_call("edit_file", path="n.md", old_str="", new_str=NOTE),
                            tool_call("read_file", path="n.md"), tool_call("list_files")),
                       reply("Done.")],
    "extras": [step(tool_call("list_files"), content="Looking.",
                    reasoning_content="Look first, then answer."),
               reply("Empty.", reasoning_content="", refusal="")],
    "empty content": [reply("")],
    "escapes": [tool_call("edit_file", raw_arguments='{"path": "a\\u00e9.txt", "old_str": "", '
                          '"new_str": "tab\\t\\"q\\"\\\\ \\ud83d\\ude00 \\/"}'),
                reply("ok")],
    "malformed arguments": [tool_call("read_file", raw_arguments='{"path": '), reply("Sorry.")],
    "length mid-arguments": [step(tool_call("edit_file", raw_arguments='{"path": "x.md", "ol'),
                                  finish_reason="length"), reply("I stop here.")],
    "three turns": [tool_call("list_files"), tool_call("read_file", path="missing.txt"),
                    reply("There is no missing.txt.")],
}


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def clean(folder: Path) -> None:
    for path in folder.iterdir():
        shutil.rmtree(path) if path.is_dir() else path.unlink()


def without_streaming(script, folder):
    clean(folder)
    events = []
    bot = Agent(ScriptedClient(script), "scripted", on_event=events.append)
    bot.chat("go")
    return bot, events


def streamed(script, folder, **client_options):
    clean(folder)
    events = []
    bot = nb.StreamingAgent(StreamingScriptedClient(script, **client_options), "scripted",
                            on_event=events.append)
    bot.chat("go")
    return bot, events


def shape(events):
    """The events as the loop emits them, without what only a stream has: the pieces, and
    the timing details of each model call."""
    timing = {"duration", "first_delta", "chunks", "usage"}
    return [{k: v for k, v in e.items() if k not in timing} for e in events
            if e["type"] != "message_update"]


def chunks_of(script, **options):
    client = StreamingScriptedClient(script, **options)
    return list(client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "go"}], stream=True,
        stream_options={"include_usage": True}))


# --- streamed history == history not streamed ------------------------------------------------


@pytest.mark.parametrize("name", CORPUS)
def test_for_every_script_the_streamed_history_is_the_history_not_streamed(name, workdir):
    plain, plain_events = without_streaming(CORPUS[name], workdir)
    for server in STYLES:
        for seed in range(4):
            bot, events = streamed(CORPUS[name], workdir, server=server, seed=seed)
            assert bot.messages == plain.messages, (server, seed)
            assert [r["messages"] for r in bot.client.requests] == \
                [r["messages"] for r in plain.client.requests]
            assert bot.stop_reason == plain.stop_reason
            assert shape(events) == shape(plain_events), (server, seed)
            assert_history_valid(bot.messages)


def test_a_streamed_request_is_the_request_not_streamed_plus_the_stream_fields(workdir):
    plain, _ = without_streaming(CORPUS["one call"], workdir)
    bot, _ = streamed(CORPUS["one call"], workdir)
    for sent, not_streamed in zip(bot.client.requests, plain.client.requests, strict=True):
        assert sent == not_streamed | {"stream": True, "stream_options": {"include_usage": True}}


def test_stream_options_can_be_left_out_for_a_server_that_refuses_them(workdir):
    class Plainer(nb.StreamingAgent):
        stream_options = None

    events = []
    bot = Plainer(StreamingScriptedClient(CORPUS["text only"]), "m", on_event=events.append)
    bot.chat("go")
    assert "stream_options" not in bot.client.requests[0]
    assert bot.client.requests[0]["stream"] is True
    [end] = [e for e in events if e["type"] == "message_end" and e["message"]["role"] ==
             "assistant"]
    assert end["usage"] is None  # without stream_options a stream carries no usage


def test_usage_arrives_in_a_last_chunk_and_reaches_message_end_as_without_streaming(workdir):
    chunks = chunks_of([reply("hello there")])
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])
    _, plain_events = without_streaming([reply("hello there")], workdir)
    _, events = streamed([reply("hello there")], workdir)

    def usage(events):
        return [e["usage"] for e in events if e["type"] == "message_end"
                and e["message"]["role"] == "assistant"]
    assert usage(events) == usage(plain_events)


# --- the pieces: message_update events --------------------------------------------------------


def test_every_piece_reaches_on_event_and_the_pieces_add_up_to_the_message(workdir):
    for server in STYLES:
        script = [CORPUS["parallel calls"][0], *CORPUS["extras"]]
        bot, events = streamed(script, workdir, server=server, seed=5)
        updates = [e for e in events if e["type"] == "message_update"]
        assert updates and all(isinstance(e["turn"], int) for e in updates)
        first = bot.messages[2]
        arguments = {}
        for e in updates:
            if e["turn"] == 1 and e["part"] == "tool_call":
                call = first["tool_calls"][e["index"]]
                assert (e["tool_call_id"], e["name"]) == (call["id"], call["function"]["name"])
                arguments[e["index"]] = arguments.get(e["index"], "") + e["delta"]
        assert [arguments[i] for i in range(3)] == \
            [c["function"]["arguments"] for c in first["tool_calls"]]
        thinking = "".join(e["delta"] for e in updates if e["part"] == "reasoning_content")
        assert thinking == "Look first, then answer."


def test_message_update_events_go_through_agent_emit():
    emitted = []

    class Watched(nb.StreamingAgent):
        def emit(self, event_type, **data):
            emitted.append(event_type)
            super().emit(event_type, **data)

    seen = []
    Watched(StreamingScriptedClient([reply("a few words")]), "m", on_event=seen.append) \
        .chat("go")
    assert "message_update" in emitted and emitted == [e["type"] for e in seen]


def test_first_delta_and_duration_are_measured_on_the_agents_clock():
    clock = FakeClock(0.0)
    events = []
    client = StreamingScriptedClient([reply("x" * 95)], piece=(5, 5), interval=0.05,
                                        sleep=clock.advance)
    nb.StreamingAgent(client, "m", on_event=events.append, clock=clock).chat("go")
    [end] = [e for e in events if e["type"] == "message_end" and e["message"]["role"] ==
             "assistant"]
    assert end["first_delta"] == pytest.approx(0.05)
    assert end["duration"] == pytest.approx(1.0) and end["chunks"] == 21  # 19 + finish + usage


def test_a_reply_not_streamed_waits_as_long_as_its_stream_would_take():
    clock = FakeClock(0.0)
    client = StreamingScriptedClient([reply("x" * 95)], piece=(5, 5), interval=0.05,
                                        sleep=clock.advance)
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}])
    assert clock() == pytest.approx(1.0)


# --- the scripted model that streams -----------------------------------------------------------


def test_chunks_are_real_sdk_objects_and_the_same_seed_cuts_the_same_way():
    script = CORPUS["parallel calls"][:1]
    first = chunks_of(script, seed=7)
    assert all(type(c) is ChatCompletionChunk for c in first)
    assert [c.model_dump() for c in first] == [c.model_dump() for c in chunks_of(script, seed=7)]
    assert [c.model_dump() for c in first] != [c.model_dump() for c in chunks_of(script, seed=8)]
    assert first[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].delta.role for c in first[1:] if c.choices] == [None] * (len(first) - 2)


def test_every_awkward_kind_of_cut_is_made_where_the_arguments_have_one():
    for name, script in CORPUS.items():
        for seed in range(5):
            chunks = chunks_of(script[:1], seed=seed)
            texts: dict[int, list[str]] = {}
            for chunk in chunks:
                for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                    texts.setdefault(delta.index, []).append(delta.function.arguments or "")
            for pieces in texts.values():
                whole = "".join(pieces)
                ends = {sum(map(len, pieces[:n + 1])) for n in range(len(pieces))}
                for kind, places in awkward_places(whole).items():
                    assert ends & set(places) or not places, (name, seed, kind, pieces)


def test_awkward_places_finds_strings_escapes_and_keys_before_their_colon():
    text = '{"ab": "c\\nd", "e" : "\\u00e9"}'
    places = awkward_places(text)
    assert text[:places["between a key and its colon"][0]] == '{"ab"'
    assert text[:places["between a key and its colon"][1]] == '{"ab": "c\\nd", "e"'
    assert {text[:at][-1] for at in places["inside an escape"]} == {"\\", "0"}
    assert 3 in places["inside a string"]  # between a and b


def test_parallel_calls_are_interleaved_by_index():
    interleaved = 0
    for seed in range(10):
        order = [d.index for c in chunks_of(CORPUS["parallel calls"][:1], seed=seed)
                 if c.choices for d in c.choices[0].delta.tool_calls or []]
        interleaved += order != sorted(order)
        heads = [d.index for c in chunks_of(CORPUS["parallel calls"][:1], seed=seed)
                 if c.choices for d in c.choices[0].delta.tool_calls or [] if d.id]
        assert heads == [0, 1, 2]  # calls start in order, each with its id once
    assert interleaved >= 5  # most seeds interleave the calls, as servers do


@pytest.mark.parametrize("server", STYLES)
def test_each_server_style_sends_what_its_description_says(server):
    chunks = chunks_of(CORPUS["parallel calls"][:1], server=server, seed=1)
    deltas = [d for c in chunks if c.choices for d in c.choices[0].delta.tool_calls or []]
    indexes = sorted({d.index for d in deltas})
    with_ids = [d for d in deltas if d.id]
    if server == "openai":
        assert indexes == [0, 1, 2] and len(with_ids) == 3
    if server == "repeats":
        assert indexes == [0, 1, 2] and len(with_ids) == len(deltas)
        assert all(d.function.name for d in deltas)
    if server == "index_zero":
        assert indexes == [0] and len(deltas) == 3 and len(with_ids) == 3
    if server == "from_one":
        assert indexes == [1, 2, 3]


def test_the_strict_pairing_check_still_applies_to_every_streamed_request():
    client = StreamingScriptedClient([reply("never sent")])
    open_call = [{"role": "user", "content": "x"},
                 {"role": "assistant", "content": "", "tool_calls": [
                     {"id": "c1", "type": "function",
                      "function": {"name": "list_files", "arguments": "{}"}}]}]
    with pytest.raises(openai.BadRequestError, match="no answer for"):
        client.chat.completions.create(model="m", messages=open_call, stream=True)
    assert client.streams == {}  # refused before any chunk was made
    assert client.requests[0]["stream"] is True  # and recorded as it was sent


def test_a_script_that_runs_out_says_so_when_streaming_too():
    client = StreamingScriptedClient([])
    with pytest.raises(agent.ScriptExhausted):
        client.chat.completions.create(model="m", messages=[], stream=True)


def test_an_unknown_server_style_is_a_clear_error():
    with pytest.raises(ValueError, match="server must be one of openai, repeats"):
        StreamingScriptedClient([], server="vllm")


# --- the accumulator ---------------------------------------------------------------------------


def chunk(delta=None, finish=None, usage=None, index=0):
    data = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [] if delta is None else [{"index": index, "delta": delta,
                                                  "finish_reason": finish}]}
    if usage:
        data["usage"] = usage
    return ChatCompletionChunk.model_validate(data)


def assembled(chunks):
    together = nb.Accumulator()
    for c in chunks:
        together.add(c)
    return agent.assistant_message(together.message())


def call_delta(index, arguments="", **fields):
    function = {"arguments": arguments, **({"name": fields.pop("name")} if "name" in fields
                                           else {})}
    return {"tool_calls": [{"index": index, **fields, "function": function}]}


def test_ids_and_names_given_only_in_the_first_chunk_are_kept_for_the_whole_call():
    message = assembled([
        chunk({"role": "assistant", **call_delta(0, id="a", type="function", name="read_file")}),
        chunk(call_delta(0, '{"path": ')), chunk(call_delta(0, '"x"}')), chunk({}, "tool_calls")])
    assert message["tool_calls"] == [{"id": "a", "type": "function", "function": {
        "name": "read_file", "arguments": '{"path": "x"}'}}]


def test_an_index_that_skips_or_starts_at_one_still_gives_calls_in_order():
    message = assembled([
        chunk(call_delta(2, id="b", type="function", name="list_files")),
        chunk(call_delta(5, "{}", id="c", type="function", name="read_file")),
        chunk(call_delta(2, "{}")), chunk({}, "tool_calls")])
    assert [(c["id"], c["function"]["arguments"]) for c in message["tool_calls"]] == \
        [("b", "{}"), ("c", "{}")]


def test_a_new_id_at_an_index_already_taken_is_a_new_call_and_a_repeated_id_is_not():
    message = assembled([
        chunk(call_delta(0, "{}", id="a", type="function", name="list_files")),
        chunk(call_delta(0, '{"pa', id="b", type="function", name="read_file")),
        chunk(call_delta(0, 'th": "x"}', id="b", type="function", name="read_file")),
        chunk({}, "tool_calls")])
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"])
            for c in message["tool_calls"]] == [("a", "list_files", "{}"),
                                                ("b", "read_file", '{"path": "x"}')]


def test_a_delta_without_an_index_continues_the_last_call():
    together = nb.Accumulator()
    first = chunk(call_delta(0, '{"a"', id="a", type="function", name="f"))
    rest = chunk(call_delta(0, ": 1}"))
    rest.choices[0].delta.tool_calls[0].index = None  # an old Ollama: no index at all
    for c in (first, rest, chunk({}, "tool_calls")):
        together.add(c)
    assert agent.assistant_message(together.message())["tool_calls"][0]["function"][
        "arguments"] == '{"a": 1}'


def test_a_call_whose_server_sent_no_id_gets_one_as_without_streaming():
    message = assembled([chunk(call_delta(0, "{}", type="function", name="list_files")),
                         chunk({}, "tool_calls")])
    assert message["tool_calls"][0]["id"].startswith("call_")


def test_the_last_usage_counts_and_other_choices_are_ignored():
    together = nb.Accumulator()
    for c in (chunk({"content": "a"}, usage={"prompt_tokens": 1, "completion_tokens": 1,
                                             "total_tokens": 2}),
              chunk({"content": "IGNORED"}, index=1),
              chunk({"content": "b"}, "stop", usage={"prompt_tokens": 1, "completion_tokens": 2,
                                                     "total_tokens": 3})):
        together.add(c)
    assert agent.assistant_message(together.message())["content"] == "ab"
    assert together.usage["total_tokens"] == 3


def test_extras_that_are_not_text_are_taken_whole_and_lists_grow():
    message = assembled([chunk({"content": "x", "sources": ["a"], "meta": {"n": 1}}),
                         chunk({"sources": ["b"], "meta": {"n": 2}}, "stop")])
    assert message["sources"] == ["a", "b"] and message["meta"] == {"n": 2}


def test_what_add_returns_is_each_piece_once():
    together = nb.Accumulator()
    updates = together.add(chunk({"role": "assistant", "content": "Hel",
                                  "reasoning_content": "hm", **call_delta(
                                      0, '{"', id="a", type="function", name="f")}))
    assert updates == [{"part": "content", "delta": "Hel"},
                       {"part": "reasoning_content", "delta": "hm"},
                       {"part": "tool_call", "index": 0, "tool_call_id": "a", "name": "f",
                        "delta": '{"'}]
    assert together.add(chunk({"content": ""})) == []


def test_a_stream_without_a_finish_reason_is_incomplete():
    together = nb.Accumulator()
    together.add(chunk({"content": "half an ans"}))
    with pytest.raises(nb.IncompleteStream, match="no finish_reason after 1 chunks"):
        together.message()
    assert issubclass(nb.IncompleteStream, openai.OpenAIError)


@pytest.mark.parametrize("name", [n for n in CORPUS if n != "length mid-arguments"])
def test_on_a_well_formed_stream_ours_agrees_with_the_sdks_helper(name):
    """Differential: where the SDK's ChatCompletionStreamState works (OpenAI's own shape), it
    gives the same message as ours, but for the index key it leaves in every call."""
    for seed in range(3):
        chunks = chunks_of(CORPUS[name][:1], seed=seed)
        state = ChatCompletionStreamState()
        for c in chunks:
            state.handle_chunk(c)
        theirs = agent.assistant_message(state.get_final_completion().choices[0].message)
        for call in theirs.get("tool_calls", []):
            assert call.pop("index") is not None
        assert assembled(chunks) == theirs


def test_the_sdks_helper_fails_where_ours_does_not():
    """Why the lesson writes its own accumulator: what the SDK's helper makes of each style."""
    script = CORPUS["parallel calls"][:1]
    expected = assembled(chunks_of(script))
    for server in ("repeats", "index_zero", "from_one"):
        chunks = chunks_of(script, server=server)
        assert assembled(chunks) == expected
        state = ChatCompletionStreamState()
        try:
            for c in chunks:
                state.handle_chunk(c)
            theirs = agent.assistant_message(state.get_final_completion().choices[0].message)
        except IndexError:
            assert server == "from_one"
            continue
        assert theirs["tool_calls"] != expected["tool_calls"]
        if server == "repeats":
            assert theirs["tool_calls"][0]["id"].startswith("call_1call_1")
        if server == "index_zero":
            assert len(theirs["tool_calls"]) == 1


# --- faults ------------------------------------------------------------------------------------


def test_a_dropped_stream_is_an_error_no_call_runs_and_the_history_stays_valid(workdir):
    script = [tool_call("edit_file", path="x.md", old_str="", new_str="x" * 40), reply("ok"),
              reply("back")]
    events = []
    client = StreamingScriptedClient(script, drop={1: 6})
    bot = nb.StreamingAgent(client, "m", on_event=events.append)
    with pytest.raises(nb.IncompleteStream, match="6 chunks .*1 tool call begun"):
        bot.chat("write")
    assert not (workdir / "x.md").exists()
    assert not [e for e in events if e["type"].startswith("tool_execution")]
    assert [m["role"] for m in bot.messages] == ["system", "user"]
    assert bot.stop_reason == "error" and "IncompleteStream" in events[-1]["error"]
    assert [e for e in events if e["type"] == "message_update"]  # pieces had been shown
    assert bot.chat("again") == "ok"
    assert_history_valid(bot.messages)


def test_finish_reason_length_in_the_middle_of_the_arguments_runs_no_call(workdir):
    cut = '{"path": "x.md", "old_str": "", "new_str": "# Half a fi'
    events = []
    bot = nb.StreamingAgent(StreamingScriptedClient(
        [step(tool_call("edit_file", raw_arguments=cut), finish_reason="length"), reply("ok")]),
        "m", on_event=events.append)
    bot.chat("write")
    assert not (workdir / "x.md").exists()
    assert not [e for e in events if e["type"] == "tool_execution_start"]
    assert "not executed" in bot.messages[3]["content"] and bot.stop_reason == "done"
    assert nb.parse_partial(cut) == {"path": "x.md", "old_str": "", "new_str": "# Half a fi"}


def test_the_stream_is_closed_when_a_handler_raises(workdir):
    class Enough(Exception):
        pass

    def stop(event):
        if event["type"] == "message_update" and event["delta"] == "e":
            raise Enough

    client = StreamingScriptedClient([reply("one two three four five six seven")],
                                        piece=(1, 1))
    streams = []
    create = client.chat.completions.create
    client.chat.completions.create = lambda **r: streams.append(create(**r)) or streams[-1]
    bot = nb.StreamingAgent(client, "m", on_event=stop)
    with pytest.raises(Enough):
        bot.chat("count")
    assert client.delivered[1] == 3  # "o", "n", "e": then the handler stopped it
    assert streams[0].gi_frame is None  # the generator was closed, not left open
    assert [m["role"] for m in bot.messages] == ["system", "user"]


def test_an_error_from_the_connection_mid_stream_leaves_the_history_valid(workdir):
    def breaking_stream(**request):
        yield from list(StreamingScriptedClient([reply("never whole")]).chat.completions
                        .create(**request))[:2]
        raise openai.APIConnectionError(request=httpx2.Request("POST", "http://x/v1"))

    client = StreamingScriptedClient([reply("ok")])
    bot = nb.StreamingAgent(client, "m", on_event=None)
    bot.client = type("Client", (), {})()
    bot.client.chat = type("Chat", (), {})()
    bot.client.chat.completions = type("Completions", (), {"create": staticmethod(
        breaking_stream)})()
    with pytest.raises(openai.APIConnectionError):
        bot.chat("go")
    assert [m["role"] for m in bot.messages] == ["system", "user"]
    assert bot.stop_reason == "error"


# --- lesson 07's tracer reads a streamed run ---------------------------------------------------


def test_lesson_07s_tracer_records_a_streamed_run_whole_and_it_replays(workdir):
    tracing = course.load_notebook("07-tracing")
    tracer = tracing.Tracer(workdir.parent / "traces", clock=FakeClock())
    script = CORPUS["parallel calls"]
    bot = nb.StreamingAgent(StreamingScriptedClient(script), "m", on_event=tracer)
    bot.chat("go")
    records = tracing.load_trace(tracer.paths[0])
    assert tracing.trace_problems(records) == []
    assert any(r["type"] == "message_update" for r in records)
    clean(workdir)
    replayed = tracing.replay(records)
    assert tracing.history_differences(records, replayed.messages) == []


# --- half an emoji in each of two chunks ------------------------------------------------------

EMOJI = [step(tool_call("edit_file", path="smile.md", old_str="", new_str="😀 hi 👋 ok\n"),
              content="A 😀 for you, and a 👋.", reasoning_content="Smile 😀 first."),
         reply("Done 😀👋.")]
HALF = re.compile("[\ud800-\udfff]")  # one half of a surrogate pair, on its own


def test_an_emoji_cut_between_its_two_halves_is_joined_before_anything_uses_it(workdir):
    """A server that counts UTF-16 units may send the two halves of an emoji (a surrogate
    pair) in two chunks. Joined piece by piece, they would stay two lone halves, which
    assistant_message turns into "?": the accumulator joins them first."""
    plain = Agent(ScriptedClient(EMOJI), "m", on_event=None)
    plain.chat("go")
    split = set()
    for seed in range(6):
        clean(workdir)
        seen = []
        client = StreamingScriptedClient(EMOJI, seed=seed, piece=(1, 3), utf16=True)
        bot = nb.StreamingAgent(client, "m", on_event=seen.append)
        bot.chat("go")
        for chunk in client.streams[1]:
            for key, value in (chunk.choices[0].delta.model_dump(exclude_none=True).items()
                               if chunk.choices else []):
                if HALF.search(json.dumps(value, ensure_ascii=False)):
                    split.add("tool_calls" if key == "tool_calls" else "text")
        assert bot.messages == plain.messages, seed
        assert (workdir / "smile.md").read_text(encoding="utf-8") == "😀 hi 👋 ok\n"
        pieces = [e["delta"] for e in seen if e["type"] == "message_update"]
        assert not [p for p in pieces if HALF.search(p)], "an event carried half a character"
    assert split == {"text", "tool_calls"}  # the server did cut emoji in half, both kinds


def test_a_lone_half_at_the_end_of_a_reply_is_kept_as_the_reply_not_streamed_keeps_it():
    together = nb.Accumulator()
    chunks = list(StreamingScriptedClient([reply("x \ud83d")], piece=(1, 1)).chat.completions
                  .create(model="m", messages=[{"role": "user", "content": "go"}], stream=True))
    pieces = [u["delta"] for chunk in chunks for u in together.add(chunk)]
    assert "".join(pieces) == "x \ud83d"  # announced too, once the reply has finished
    assert agent.assistant_message(together.message())["content"] == "x ?"  # as not streamed


# --- the module a builder takes away ----------------------------------------------------------


def test_the_exported_module_runs_beside_a_copy_of_agent_py(tmp_path, capsys):
    kit = tmp_path / "kit"
    kit.mkdir()
    assert course.main(["export", "11-streaming", "-o", str(kit / "streaming.py")]) == 0
    shutil.copy(ROOT / "agent.py", kit / "agent.py")
    shutil.copy(ROOT / "notebooks" / "props" / "streaming_model.py", kit / "streaming_model.py")
    program = (
        "import io, streaming, streaming_model\n"
        "from agent import reply, tool_call\n"
        "out = io.StringIO()\n"
        "client = streaming_model.StreamingScriptedClient([tool_call('list_files'),"
        " reply('Done.')])\n"
        "bot = streaming.StreamingAgent(client, 'm', on_event=streaming.StreamView(out))\n"
        "print(bot.chat('look'))\n"
        "print(out.getvalue().splitlines()[-1])\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ran = subprocess.run([sys.executable, "-c", program], cwd=elsewhere, capture_output=True,
                         text=True, timeout=60, env={"PYTHONPATH": str(kit), "PATH": ""})
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["Done.", "agent:       Done."]
    for name in ("streaming.py", "streaming_model.py"):
        assert "import course" not in (kit / name).read_text(encoding="utf-8")


# --- the exercises' checks catch the naive answers ----------------------------------------------


def test_check_11_2_catches_words_that_the_arguments_json_escapes():
    """Looking in the JSON text of the arguments misses rm -rf "/" (it arrives as rm -rf
    \\"/\\"); decoding the arguments only once they are whole JSON stops too late."""
    class StopStream(Exception):
        pass

    def stop_when(decode):
        def make(words, error=StopStream):
            so_far = {}

            def on_event(event):
                if event["type"] == "message_start":
                    so_far.clear()
                if event["type"] == "message_update":
                    part = (event["part"], event.get("index"))
                    so_far[part] = so_far.get(part, "") + event["delta"]
                    if any(words in said for said in [so_far[part], *decode(so_far[part])]):
                        raise error(words)
            return on_event
        return make

    def values_once_whole(text):  # the arguments decoded, but only once they are whole JSON
        try:
            values = json.loads(text)
        except ValueError:
            return []
        return [v for v in values.values() if isinstance(v, str)] if isinstance(values, dict) \
            else []

    in_the_text = stop_when(lambda text: [])
    when_whole = stop_when(values_once_whole)
    for naive in (in_the_text, when_whole):
        report = course.check("11.2", naive, StopStream)
        failed = [what for ok, what, _ in report.results if not ok]
        assert failed == ["a tool call's arguments are read as the tool gets them: JSON's "
                          "escapes do not hide the words"], (naive.__name__, repr(report))

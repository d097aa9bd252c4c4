"""A scripted model that streams: agent.ScriptedClient whose replies, asked with
stream=True, come as real ChatCompletionChunk objects, cut at awkward places, in the shape one
of four kinds of server gives them; and server_sent_events, the bytes a server sends for them.

Not part of the agent: offline runs (main.py --scripted) and tests use it to stream without a
server. It imports only agent and the openai SDK."""

import json
import random
import time
from itertools import pairwise

from openai.types.chat import ChatCompletionChunk

import agent

# How servers shape a tool call's deltas. Each style is one that real servers send.
SERVER_STYLES = {
    "openai": "a call's id, type and name in its first delta only; then its arguments, in pieces",
    "repeats": "id, type and name again in every delta of a call (Fireworks, DeepSeek, Qwen)",
    "index_zero": "each call whole in one delta, every one at index 0 (Ollama)",
    "from_one": "call indexes that start at 1, not 0 (some proxies, e.g. LiteLLM to Bedrock)",
}


class StreamingScriptedClient(agent.ScriptedClient):
    """agent.ScriptedClient that can stream: with stream=True, create() returns an iterator of
    real ChatCompletionChunk objects instead of one ChatCompletion.

    Every request still goes through ScriptedClient.create first: it is recorded, and one whose
    tool calls and results do not pair up is rejected with HTTP 400 before a chunk is sent.
    Then the response is cut into chunks: text into pieces, tool-call arguments at awkward
    places too (inside a string, inside an escape, between a key and its colon), parallel calls
    interleaved. The cuts come from random.Random, seeded per response: every run cuts alike.

    piece     (shortest, longest) piece of text, in characters
    server    how tool-call deltas look: a key of SERVER_STYLES
    drop      {response number: chunks}: that stream stops after so many chunks, with no
              finish_reason, as a dropped connection does
    interval, sleep   pacing: sleep(interval) before each chunk of the reply (time.sleep to
              watch it, a fake clock's advance to measure it). A response that is not streamed
              waits as long as its chunks would have taken, then comes all at once.
    utf16     cut text by UTF-16 units, as a server that counts in them (and escapes
              non-ASCII) does: an emoji may then come as two halves, in two chunks"""

    def __init__(self, steps, *, seed=0, piece=(1, 6), server="openai", drop=None,
                 interval=0.0, sleep=time.sleep, utf16=False):
        super().__init__(steps)
        if server not in SERVER_STYLES:
            raise ValueError(f"server must be one of {', '.join(SERVER_STYLES)}, not {server!r}")
        self.seed, self.piece, self.server, self.utf16 = seed, piece, server, utf16
        self.drop, self.interval, self.sleep = dict(drop or {}), interval, sleep
        self.streams: dict[int, list] = {}  # response number -> the chunks it was cut into
        self.delivered: dict[int, int] = {}  # response number -> chunks handed out so far

    def create(self, *, model, messages, **kwargs):
        # ScriptedClient estimates the usage from the size of the request: leave the stream
        # fields out of that, so the usage is the same streamed or not, as on a real server.
        asked = {key: kwargs.pop(key) for key in ("stream", "stream_options") if key in kwargs}
        try:
            completion = super().create(model=model, messages=messages, **kwargs)  # checks it
        finally:  # it is recorded (even when refused), with the stream fields, as sent
            self.requests[-1].update(json.loads(agent.to_json(asked)))
        n = len(self.requests)
        rng = random.Random(f"{self.seed}/{n}")  # the same cuts for response n on every run
        usage = bool((asked.get("stream_options") or {}).get("include_usage"))
        chunks = completion_chunks(completion, rng, self.piece, self.server, usage, self.utf16)
        self.streams[n], self.delivered[n] = chunks[: self.drop.get(n, len(chunks))], 0
        if not asked.get("stream"):  # the model took as long to write it: wait, then all
            if self.interval:
                self.sleep(self.interval * sum(1 for chunk in chunks if chunk.choices))
            return completion
        return self.deliver(n)

    def deliver(self, n: int):
        for chunk in self.streams[n]:
            if self.interval and chunk.choices:  # usage comes right after the last chunk
                self.sleep(self.interval)
            self.delivered[n] += 1
            yield chunk


def completion_chunks(completion, rng, piece=(1, 6), server="openai", usage=False,
                      utf16=False) -> list:
    """The chunks a server streams for `completion`: one delta each, then a last delta that
    brings the finish_reason, then (if asked) a chunk with the usage and no choices. utf16:
    text is cut by UTF-16 units, so a character beyond U+FFFF may come in two halves."""
    choice = completion.choices[0]
    message = choice.message.model_dump(mode="json", exclude_none=True, exclude={"role"})
    if utf16:
        message = json.loads(json.dumps(message), object_hook=in_utf16_units)
    deltas = list(message_deltas(message, rng, piece, server)) or [{"content": ""}]
    deltas[0] = {"role": "assistant", **deltas[0]}  # the first delta names the role
    head = {"id": completion.id, "object": "chat.completion.chunk",
            "created": completion.created, "model": completion.model}
    chunks = [{**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
              for delta in deltas]
    chunks.append({**head, "choices": [{"index": 0, "delta": {},
                                        "finish_reason": choice.finish_reason}]})
    if usage:  # as OpenAI does it: null usage on every chunk, then one chunk with no choices
        chunks = [{**chunk, "usage": None} for chunk in chunks]
        chunks.append({**head, "choices": [], "usage": completion.usage.model_dump(mode="json")})
    return [ChatCompletionChunk.model_validate(chunk) for chunk in chunks]


def message_deltas(message: dict, rng, piece, server):
    """The deltas of one message: extras first (a model's reasoning comes before its answer),
    then the text, then the tool calls."""
    for field, value in message.items():
        if field not in ("content", "tool_calls"):
            texts = (pieces(value, rng, piece) or [""]) if isinstance(value, str) else [value]
            yield from ({field: text} for text in texts)
    yield from ({"content": text} for text in pieces(message.get("content", ""), rng, piece))
    yield from call_deltas(message.get("tool_calls", []), rng, piece, server)


def call_deltas(calls: list[dict], rng, piece, server):
    if server == "index_zero":  # whole calls, one after another, all at index 0
        yield from ({"tool_calls": [{"index": 0, **call}]} for call in calls)
        return
    queues = []
    for position, call in enumerate(calls):
        index = position + (server == "from_one")
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        first = {"index": index, "id": call["id"], "type": call["type"],
                 "function": {"name": name, "arguments": ""}}
        again = {key: first[key] for key in ("id", "type")} if server == "repeats" else {}
        rest = [{"index": index, **again,
                 "function": {**({"name": name} if again else {}), "arguments": text}}
                for text in pieces(arguments, rng, piece, must=awkward_cuts(arguments, rng))]
        queues.append([first, *rest])
    started = 0  # calls start in order; once started, they interleave as a server sends them
    while any(queues):
        ready = [queue for queue in queues[:started] if queue]
        if started < len(queues) and (not ready or rng.random() < 0.4):
            queue, started = queues[started], started + 1
        else:
            queue = rng.choice(ready)
        yield {"tool_calls": [queue.pop(0)]}


def in_utf16_units(value):
    """Every string in value (a dict from json.loads) as UTF-16 units: "😀" becomes its two
    surrogates, "\\ud83d" and "\\ude00", so that a cut may fall between them."""
    def units(text):
        data = text.encode("utf-16-le", "surrogatepass")
        return "".join(chr(int.from_bytes(data[i:i + 2], "little")) for i in range(0, len(data), 2))
    return {key: units(item) if isinstance(item, str) else
            [units(x) if isinstance(x, str) else x for x in item] if isinstance(item, list) else
            item for key, item in value.items()}


def pieces(text: str, rng, piece=(1, 6), must=()) -> list[str]:
    """text cut into pieces of piece[0] to piece[1] characters, and at each position in must."""
    cuts, at = set(must), 0
    while at < len(text):
        at += rng.randint(*piece)
        cuts.add(at)
    edges = [0, *sorted(c for c in cuts if 0 < c < len(text)), len(text)]
    return [text[a:b] for a, b in pairwise(edges) if b > a]


def awkward_places(text: str) -> dict[str, list[int]]:
    """Where a cut in JSON text hurts a parser most: the positions inside a string, inside an
    escape (after its backslash, or inside a \\uXXXX), and between a key and its colon."""
    places = {"inside a string": [], "inside an escape": [], "between a key and its colon": []}
    start, i = None, 0  # start: where the string we are in began (None: not in a string)
    while i < len(text):
        char = text[i]
        if start is not None and char == "\\":
            places["inside an escape"] += [i + 1] + ([i + 3] if text[i + 1:i + 2] == "u" else [])
            i += 2
            continue
        if start is not None and char == '"':
            places["inside a string"] += list(range(start + 2, i))
            if text[i + 1:].lstrip().startswith(":"):
                places["between a key and its colon"].append(i + 1)
            start = None
        elif char == '"':
            start = i
        i += 1
    return places


def awkward_cuts(text: str, rng) -> list[int]:
    """One cut of each awkward kind that text has, chosen by rng."""
    return [rng.choice(found) for found in awkward_places(text).values() if found]


def server_sent_events(chunks, *, done=True, ascii=False) -> bytes:
    """The bytes a server sends for these chunks (server-sent events): a "data:" line with each
    chunk's JSON, a blank line after each, and "data: [DONE]" when the stream is complete.
    ascii: every character beyond ASCII written as a \\u escape, as some servers do (and the
    only way to send half an emoji, which UTF-8 cannot encode)."""
    def event(chunk):
        if ascii:
            return json.dumps(chunk.model_dump(mode="json", exclude_unset=True))
        return chunk.model_dump_json(exclude_unset=True)
    events = [f"data: {event(chunk)}\n\n" for chunk in chunks]
    return ("".join(events) + ("data: [DONE]\n\n" if done else "")).encode("utf-8")

"""Reference solutions of lesson 11's coding exercises (tests/test_exercises.py runs their
checks on them). They use the lesson's own module, streaming."""

import json

import openai
from streaming import IncompleteStream, StreamingAgent, parse_partial


def latency(clock):
    """Exercise 1: per model call, (turn, seconds to its first piece, seconds to its end)."""
    rows = []
    started, first = {}, {}

    def on_event(event):
        kind = event["type"]
        if kind == "message_start" and event.get("role") == "assistant":
            first.clear()
            started["at"] = clock()
        elif kind == "message_update" and "at" in started:
            first.setdefault("at", clock())
        elif kind == "message_end" and event["message"]["role"] == "assistant" \
                and "at" in started:
            now = clock()
            rows.append((event.get("turn"), first.get("at", now) - started["at"],
                         now - started["at"]))
            started.clear()
    return on_event, rows


class StopStream(Exception):
    """Raised by the handler to stop the run while the reply is still arriving."""


def stop_when(words, error=StopStream):
    """Exercise 2: stop the run as soon as one part of the reply arriving says words: its text,
    or what a tool call's arguments say (read with parse_partial, so that JSON's escapes, \"
    for a quote or \\u00e9 for é, do not hide them)."""
    so_far = {}  # ("content",) or ("tool_call", index) -> the text of that part so far

    def on_event(event):
        if event["type"] == "message_start":
            so_far.clear()  # a new reply: look at it on its own
        if event["type"] != "message_update":
            return
        part = ("tool_call", event["index"]) if event["part"] == "tool_call" else \
            (event["part"],)
        so_far[part] = so_far.get(part, "") + event["delta"]
        said = [so_far[part]]
        if part[0] == "tool_call":
            said += strings(parse_partial(so_far[part]))
        if any(words in text for text in said):
            raise error(f"stopped while the reply arrived: it began to say {words!r}")
    return on_event


def strings(value) -> list[str]:
    """Every string in a JSON value: keys and values, at any depth."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in [key, *strings(item)]]
    if isinstance(value, list):
        return [text for item in value for text in strings(item)]
    return []


NUMBER_GOES_ON = set("0123456789.eE+-")


def complete_keys(arguments):
    """Exercise 3: the keys of the object arriving whose values are final, in order."""
    decoder, text, keys = json.JSONDecoder(), arguments, []

    def skip(i, also=""):
        while i < len(text) and text[i] in " \t\r\n" + also:
            i += 1
        return i

    i = skip(0)
    if text[i:i + 1] != "{":
        return []
    i += 1
    while (i := skip(i, ",")) < len(text) and text[i] != "}":
        try:
            key, i = decoder.raw_decode(text, i)
        except ValueError:  # the key is still arriving
            return keys
        i = skip(i)
        if text[i:i + 1] != ":":
            return keys
        try:
            value, end = decoder.raw_decode(text, skip(i + 1))
        except ValueError:  # the value is still arriving (or has not begun)
            return keys
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number and (end == len(text) or text[end] in NUMBER_GOES_ON):
            return keys  # "12" may become 123, "1." 1.5
        keys.append(key)
        i = end
    return keys


class RetryingAgent(StreamingAgent):
    """Exercise 4: a dropped stream, or a connection that fails, is asked again."""

    retries = 1

    def ask_model(self, turn):
        for attempt in range(self.retries + 1):
            try:
                return super().ask_model(turn)
            except (IncompleteStream, openai.APIConnectionError):
                if attempt == self.retries:
                    raise


SOLUTIONS = {
    "11.1": (latency,),
    "11.2": (stop_when, StopStream),
    "11.3": (complete_keys,),
    "11.4": (RetryingAgent,),
}

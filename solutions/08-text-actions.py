"""Reference solutions of lesson 08's coding exercises (the tests run their checks)."""

import ast

import course  # noqa: F401  (loads the lessons' export cells, so text_actions imports)
import text_actions
from text_actions import FormatError, parse_action


def parse_loose(text):
    """parse_action, and {"name": ..., "arguments": ...} without "type" as a call_tool."""
    try:
        return parse_action(text)
    except FormatError as refusal:
        spans, _ = text_actions.object_spans(text)
        for start, end in spans:
            try:
                value, notes = text_actions.decoded(text[start:end])
            except FormatError:
                continue
            if "name" in value and "type" not in value:
                notes.append('your action had no "type"; add "type": "call_tool"')
                return text_actions.checked({**value, "type": "call_tool"}, notes)
        raise refusal


def parse_python_style(text):
    """parse_action, and a Python dict literal where JSON was refused. ast.literal_eval reads
    literals only: it runs nothing, and it refuses what Python itself cannot read."""
    try:
        return parse_action(text)
    except FormatError as refusal:
        if "single quotes" not in str(refusal):  # refused for another reason: it stays
            raise
        spans, _ = text_actions.object_spans(text)
        for start, end in spans:
            try:
                value = python_literal(text[start:end])
            except FormatError:  # a key given twice: say so
                raise
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            if isinstance(value, dict):
                note = "your action was a Python dict; JSON needs double quotes"
                return text_actions.checked(value, [note])
        raise refusal


def python_literal(span):
    """span as a Python literal. A key given twice is refused: ast.literal_eval, like
    json.loads, would keep the last value silently, so ast.parse shows every key first."""
    tree = ast.parse(span, mode="eval")
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [ast.literal_eval(key) for key in node.keys if key is not None]
            if len(keys) != len(set(keys)):
                raise FormatError("your action gives a key twice, so which value you meant "
                                  "is a guess; send each key once")
    return ast.literal_eval(tree)


class TotalFormatErrors(text_actions.TextActions):
    """Counts every reply of the current task that was not an action, in a row or not."""

    def format_errors(self, messages):
        count = 0
        for message in reversed(messages):
            if message["role"] == "user":
                break
            count += message["role"] == "assistant" and text_actions.is_format_error(message)
        return count


SOLUTIONS = {
    "08.1": (parse_loose,),
    "08.2": (parse_python_style,),
    "08.3": (TotalFormatErrors,),
}

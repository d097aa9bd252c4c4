"""What a stream holds, one row per chunk, for lesson 11's notebook to show: course material,
kept apart from streaming_model (which the builder's kit copies) because no agent needs it."""

CHUNK_COLUMNS = ["chunk", "delta", "finish_reason", "usage (total tokens)"]


def chunk_rows(chunks) -> list[tuple]:
    """One row per chunk (see CHUNK_COLUMNS): what its delta carries, in a few words, its
    finish_reason, its usage."""
    rows = []
    for n, chunk in enumerate(chunks, 1):
        choice = chunk.choices[0] if chunk.choices else None
        rows.append((n, described(choice.delta) if choice else "(no choices)",
                     (choice.finish_reason or "") if choice else "",
                     chunk.usage.total_tokens if chunk.usage else ""))
    return rows


def described(delta) -> str:
    """A delta in a few words: its role, its pieces of text, its pieces of tool calls."""
    words = []
    for key, value in delta.model_dump(mode="json", exclude_none=True).items():
        if key == "tool_calls":
            for call in value:
                function = call.get("function", {})
                said = [f"id={call['id']}" if "id" in call else "",
                        f"name={function['name']}" if "name" in function else "",
                        f"arguments={function.get('arguments', '')!r}"]
                words.append(f"call #{call.get('index')}: " + " ".join(w for w in said if w))
        else:
            words.append(f"{key}={value!r}")
    return ", ".join(words) or "(nothing new)"

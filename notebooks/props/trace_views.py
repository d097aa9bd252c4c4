"""Two views of a trace for lesson 07's notebook: the timeline chart and the one-row-per-record
table. Display, not the tracer: the lesson's module (`tracing`) keeps the data they draw
(`spans`, `turn_usage`) and needs only the standard library; this chart needs matplotlib.
Copy `plot_timeline` into your own project if you want the picture."""

import tracing  # the lesson's module: the spans and usage these views draw


def plot_timeline(run: list[dict], width: float = 9):
    """A chart of one run: model calls and tool executions on one time axis (red: an error),
    grey lines where turns begin, and below them the prompt tokens each model call was sent.
    width: the figure's width in inches (a longer run needs more, or its labels overlap)."""
    import matplotlib.pyplot as plt

    fig, (lanes, tokens) = plt.subplots(2, 1, figsize=(width, 4), sharex=True,
                                        gridspec_kw={"height_ratios": [2, 1.4]})
    t0 = run[0]["time"]
    sent = {row["turn"]: row["prompt_tokens"] for row in tracing.turn_usage(run)}
    tools_in_turn = {}
    for s in tracing.spans(run):
        start, width = s["start"] - t0, s["end"] - s["start"]
        color = "tab:red" if s["error"] else "tab:blue" if s["kind"] == "model" else "tab:green"
        if s["kind"] == "turn":
            for ax in (lanes, tokens):
                ax.axvline(start, color="0.85", linewidth=1, zorder=0)
        elif s["kind"] == "model":
            lanes.broken_barh([(start, width)], (1.6, 0.8), color=color)
            lanes.text(start + width / 2, 2, str(s["turn"]), ha="center", va="center",
                       color="white", fontsize=8)
            tokens.bar(start, sent.get(s["turn"]) or 0, width=width, align="edge", color=color)
        elif s["kind"] == "tool":
            lanes.broken_barh([(start, width)], (0.6, 0.8), color=color)
            below = tools_in_turn[s["turn"]] = tools_in_turn.get(s["turn"], -1) + 1
            lanes.text(start + width / 2, 0.45 - 0.35 * below, s["name"], ha="center",
                       va="top", fontsize=7)
    lanes.set_yticks([1, 2], ["tools", "model"])
    lanes.set_ylim(-0.8, 2.6)
    lanes.set_title(f"{run[0].get('model')}: {run[-1].get('stop_reason', 'unfinished')} "
                    f"(red: an error)", fontsize=10)
    tokens.set_ylabel("prompt tokens")
    tokens.set_xlabel("seconds since agent_start")
    fig.tight_layout()
    return fig


EVENT_COLUMNS = ["t (s)", "turn", "event", "took (s)", "detail"]


def detail(r: dict) -> str:
    """A few words on what one record says."""
    message = r.get("message", {})
    if r["type"].startswith("tool_execution"):
        return f"{r['tool_call_id']} {r['name']}" + (" error" if r.get("is_error") else "")
    if r.get("usage"):
        return f"assistant: {r['usage']['prompt_tokens']:,} tokens in, {r['finish_reason']}"
    if r["type"] == "message_start":
        return f"{r['messages']} messages sent"
    return message.get("role") or r.get("model") or r.get("stop_reason") or ""


def event_rows(run: list[dict], turns=None) -> list[tuple]:
    """One row per record (EVENT_COLUMNS): the time since agent_start, the turn, the event,
    the duration on a line that closes a span, and a few words on what it says. With turns
    (say (0, 1, 6)), only the records of those turns, and one row where others are left out."""
    t0 = run[0]["time"]
    rows, left_out = [], []

    def gap():
        if left_out:
            rows.append(("...", f"{left_out[0]}-{left_out[-1]}",
                         f"({len(left_out)} rows not shown)", "", ""))
            left_out.clear()

    for r in run:
        if turns is not None and r["turn"] not in turns:
            left_out.append(r["turn"])
            continue
        gap()
        rows.append((f"{r['time'] - t0:.2f}", r["turn"], r["type"],
                     f"{r['duration']:.2f}" if "duration" in r else "", detail(r)))
    gap()
    return rows

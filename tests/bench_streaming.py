"""What does streaming buy, and what does it cost? Run by hand (pytest does not collect it):

    .venv/bin/python tests/bench_streaming.py

(a) Time to the first text, in real time: a reply of twenty chunks fifty milliseconds apart,
    from lesson 11's scripted model with time.sleep, then from the real openai SDK reading
    server-sent events from a fake HTTP layer that sleeps between events. agent.Agent (no
    stream) against StreamingAgent; median of a few runs.
(b) What putting a stream back together costs: a 20,000-character edit_file call arriving in
    about 6,000 chunks, with no pauses. The Accumulator alone (and the SDK's
    ChatCompletionStreamState on the same chunks, for comparison), StreamingAgent end to end
    on the scripted model and over the real SDK, against agent.Agent on the same reply.
(c) What showing it costs: parse_partial on those arguments, cut off half-way; StreamView in
    terminal mode redrawing on every piece (every=0) against at most 20 times a second
    (every=0.05, the default).

Targets: the first text after about one chunk (~50 ms) instead of the whole reply (~1 s);
well under 50 microseconds of accumulation per chunk; a display that keeps up with the
stream at the default redraw rate.
"""

import io
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "notebooks")]

import course  # noqa: E402  (makes `import streaming` load lesson 11's export cells)
import httpx2  # noqa: E402
import openai  # noqa: E402
from openai.lib.streaming.chat import ChatCompletionStreamState  # noqa: E402
from props import streaming_model  # noqa: E402  (lesson 11's scripted model that streams)

from agent import Agent, reply, tool_call  # noqa: E402

streaming = course.load_notebook("11-streaming")
ANSWER = "x" * 95  # 19 pieces of five characters, then the finish: twenty chunks
INTERVAL = 0.05
RUNS = 3


def first_and_whole(make_agent, client) -> tuple[float, float]:
    """Seconds from chat() to the first text, and to the whole reply, on the real clock."""
    seen, started = {}, time.perf_counter()

    def note(event):
        now = time.perf_counter() - started
        if event["type"] == "message_update":
            seen.setdefault("first", now)
        if event["type"] == "message_end" and event["message"]["role"] == "assistant":
            seen.setdefault("first", now)
            seen["whole"] = now

    make_agent(client, "bench", on_event=note).chat("go")
    return seen["first"], seen["whole"]


def scripted_paced():
    return streaming_model.StreamingScriptedClient([reply(ANSWER)], piece=(5, 5), interval=INTERVAL)


def http_paced():
    """The real SDK; its fake HTTP layer sleeps INTERVAL before each event of a stream, and
    as long as the whole stream before a reply that is not streamed."""
    scripted = streaming_model.StreamingScriptedClient([reply(ANSWER)], piece=(5, 5))

    def handle(request):
        body = json.loads(request.content)
        answer = scripted.chat.completions.create(**body)
        if not body.get("stream"):
            time.sleep(INTERVAL * 20)
            return httpx2.Response(200, json=answer.model_dump(mode="json"))
        chunks = list(answer)

        def events():
            for chunk in chunks:
                if chunk.choices:
                    time.sleep(INTERVAL)
                yield streaming_model.server_sent_events([chunk], done=False)
            yield b"data: [DONE]\n\n"
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=events())

    return openai.OpenAI(api_key="bench", base_url="http://bench.test/v1", max_retries=0,
                         http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))


def part_a():
    print("(a) time to the first text: 20 chunks, 50 ms apart (median of "
          f"{RUNS} runs, in ms)")
    print(f"    {'':60} {'first text':>10} {'whole reply':>12}")
    for label, make_client in (("scripted model", scripted_paced),
                               ("real SDK over HTTP (MockTransport)", http_paced)):
        for agent_class in (Agent, streaming.StreamingAgent):
            runs = [first_and_whole(agent_class, make_client()) for _ in range(RUNS)]
            first = statistics.median(r[0] for r in runs) * 1000
            whole = statistics.median(r[1] for r in runs) * 1000
            name = f"{agent_class.__name__}, {label}"
            print(f"    {name:<60} {first:>10.1f} {whole:>12.1f}")


BIG = ("line of the file, line of the file\n" * 600)[:20_000]
BIG_CALL = [tool_call("edit_file", path="big.txt", old_str="", new_str=BIG), reply("done")]


def timed(function, runs=RUNS) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def http_fast():
    scripted = streaming_model.StreamingScriptedClient(BIG_CALL)

    def handle(request):
        body = json.loads(request.content)
        answer = scripted.chat.completions.create(**body)
        if not body.get("stream"):
            return httpx2.Response(200, json=answer.model_dump(mode="json"))
        return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                               content=streaming_model.server_sent_events(list(answer)))

    return openai.OpenAI(api_key="bench", base_url="http://bench.test/v1", max_retries=0,
                         http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))


def part_b(folder: Path):
    chunks = list(streaming_model.StreamingScriptedClient(BIG_CALL).chat.completions.create(
        model="bench", messages=[{"role": "user", "content": "go"}], stream=True))
    n = len(chunks)
    print(f"\n(b) putting it back together: a {len(BIG):,}-character call in {n:,} chunks")

    def ours():
        together = streaming.Accumulator()
        for chunk in chunks:
            together.add(chunk)
        together.message()

    def sdk():
        state = ChatCompletionStreamState()
        for chunk in chunks:
            state.handle_chunk(chunk)
        state.get_final_completion()

    for label, function in (("Accumulator", ours), ("the SDK's ChatCompletionStreamState", sdk)):
        seconds = timed(function)
        print(f"    {label:<60} {seconds * 1e6 / n:>8.1f} us a chunk")

    def run(agent_class, client):
        for path in folder.iterdir():
            path.unlink()
        agent_class(client, "bench", on_event=None).chat("write")

    for label, agent_class, make in (
            ("agent.Agent, scripted model (no stream)", Agent,
             lambda: streaming_model.StreamingScriptedClient(BIG_CALL)),
            ("StreamingAgent, scripted model", streaming.StreamingAgent,
             lambda: streaming_model.StreamingScriptedClient(BIG_CALL)),
            ("agent.Agent, real SDK over HTTP (no stream)", Agent, http_fast),
            ("StreamingAgent, real SDK over HTTP", streaming.StreamingAgent, http_fast)):
        seconds = timed(lambda agent_class=agent_class, make=make: run(agent_class, make()))
        print(f"    {label:<60} {seconds * 1000:>8.1f} ms the whole chat()")


def part_c(folder: Path):
    arguments = json.dumps({"path": "big.txt", "old_str": "", "new_str": BIG})
    half = arguments[: len(arguments) // 2]
    repeat = 200
    seconds = timed(lambda: [streaming.parse_partial(half) for _ in range(repeat)])
    print(f"\n(c) showing it: parse_partial of {len(half):,} characters cut off: "
          f"{seconds * 1e6 / repeat:.0f} us")

    def show(every):
        for path in folder.iterdir():
            path.unlink()
        out = io.StringIO()
        out.isatty = lambda: True
        view = streaming.StreamView(out, width=100, every=every)
        streaming.StreamingAgent(streaming_model.StreamingScriptedClient(BIG_CALL), "bench",
                                 on_event=view).chat("write")

    for every in (0, 0.05):  # every=0 takes seconds: once is enough
        seconds = timed(lambda every=every: show(every), runs=1 if every == 0 else RUNS)
        print(f"    StreamingAgent with StreamView(every={every}) in a terminal: "
              f"{seconds * 1000:>8.1f} ms the whole chat()")


def main():
    import os
    import tempfile

    with tempfile.TemporaryDirectory(prefix="afz-bench-11-") as tmp:
        os.chdir(tmp)
        part_a()
        part_b(Path(tmp))
        part_c(Path(tmp))
        os.chdir(ROOT)


if __name__ == "__main__":
    main()

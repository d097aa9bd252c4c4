"""A clock that moves only when told to, and model calls and tools that take time on it
(lesson 07). With it, every timing a notebook prints or a test checks is exact."""

import functools


class FakeClock:
    """A clock that moves only when told to, so the timings of a demo or a test are exact."""

    def __init__(self, start: float = 1_767_225_600.0):  # 2026-01-01 00:00 UTC
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def with_latency(client, clock, base=0.3, per_prompt_token=1 / 5_000, per_output_token=1 / 50):
    """Make every model call of `client` take time on `clock`, as a real server would."""
    create = client.chat.completions.create

    def slow_create(**request):
        response = create(**request)
        usage = response.usage
        clock.advance(base + usage.prompt_tokens * per_prompt_token
                      + usage.completion_tokens * per_output_token)
        return response

    client.chat.completions.create = slow_create
    return client


def with_tool_time(registry: dict, clock, seconds: float = 0.1) -> dict:
    """The same tools, each call taking `seconds` on `clock`."""
    def timed(func):
        @functools.wraps(func)  # keeps the signature call_tool checks arguments against
        def run(*args, **kwargs):
            clock.advance(seconds)
            return func(*args, **kwargs)
        return run
    return {name: timed(func) for name, func in registry.items()}

"""What the agent loop costs on top of the model and the tools.

Runs the demo's two-step scenario (two tools in parallel, then an answer) many
times through the real openai adapter and SDK against the scripted model server
on 127.0.0.1, with instant in-process tools, and prints:

- wall time per run (p50/p95) and per model round trip over HTTP;
- the loop's own share: run time minus model time minus tool time;
- the same loop with an in-process adapter (no HTTP, no SDK): pure loop overhead;
- prompt tokens served from the simulated cache thanks to the stable tool set.

Usage: python bench/bench_loop.py [--runs 200]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from typing import Any

import reach_openai.plugin
from reach_openai.scripted import Answer, Call, ScriptedModelServer, ToolCalls

from reach_core import Reach, connector
from reach_core.adapter import ModelRequest, ModelResponse, ModelToolCall, Usage


@connector(risk="read")
def get_weather(city: str) -> dict[str, Any]:
    """Current weather.

    Args:
        city: the city
    """
    return {"city": city, "temperature": "21 °C", "humidity": "45 %", "condition": "晴"}


@connector(risk="read")
def calculate(expression: str) -> int:
    """Arithmetic.

    Args:
        expression: e.g. 25 * 4
    """
    return 100


SCRIPT = [
    ToolCalls([Call("get_weather", {"city": "北京"}), Call("calculate", {"expression": "25 * 4"})]),
    Answer("北京 {get_weather[temperature]}, {calculate}"),
]


class InProcess:
    """The same two steps without HTTP: isolates the loop and pipeline."""

    name = "in-process"

    def describe(self) -> str:
        return self.name

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.step == 1:
            return ModelResponse(
                tool_calls=[
                    ModelToolCall("a", "get_weather", '{"city":"北京"}'),
                    ModelToolCall("b", "calculate", '{"expression":"25 * 4"}'),
                ],
                usage=Usage(100, 10),
            )
        return ModelResponse(text="done", usage=Usage(120, 5))


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def measure(reach: Reach, runs: int, adapter: Any = None) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"run": [], "model": [], "tools": [], "loop": [], "cached": [], "prompt": []}
    for i in range(runs + 5):
        t0 = time.perf_counter()
        result = await reach.run("北京天气？25 * 4？", adapter=adapter)
        wall = (time.perf_counter() - t0) * 1000
        assert result.outcome == "answered", result.error
        if i < 5:  # warm-up: imports, first connection
            continue
        model = sum(s.model_ms for s in result.steps)
        tools = sum(s.tools_ms for s in result.steps)
        out["run"].append(wall)
        out["model"].append(model / len(result.steps))
        out["tools"].append(tools)
        out["loop"].append(wall - model - tools)
        out["cached"].append(result.usage.cached_tokens)
        out["prompt"].append(result.usage.prompt_tokens)
    return out


def show(title: str, m: dict[str, list[float]]) -> None:
    print(title)
    print(f"  run wall time        p50 {pct(m['run'], .5):7.2f} ms   p95 {pct(m['run'], .95):7.2f} ms")
    print(f"  model call (each)    p50 {pct(m['model'], .5):7.2f} ms")
    print(f"  tools (both, 1 turn) p50 {pct(m['tools'], .5):7.2f} ms")
    print(f"  loop's own share     p50 {pct(m['loop'], .5):7.2f} ms per run (2 steps)")
    if sum(m["prompt"]):
        print(f"  prompt tokens cached {100 * sum(m['cached']) / sum(m['prompt']):5.1f} %")


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer(SCRIPT) as server:
        reach = Reach(
            {
                "reach": {"data_dir": tmp, "log_calls": False},
                "plugins": {"reach-openai": {"base_url": server.url, "api_key": "x", "max_retries": 0}},
            },
            plugins=[("reach-openai", reach_openai.plugin)],
        )
        reach.register(get_weather)
        reach.register(calculate)
        show(f"openai adapter + SDK over HTTP to the scripted server ({runs} runs)", await measure(reach, runs))
        show(f"in-process adapter, no HTTP ({runs} runs)", await measure(reach, runs, InProcess()))
        await reach.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    asyncio.run(main(parser.parse_args().runs))

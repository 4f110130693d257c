"""The SDK hands the model's JSON text to reach unparsed, so what reach refuses in
JSON text is refused through this bridge too: a key given twice (however spelt),
``NaN``, arguments that are not an object. (A lone surrogate escape is not here: the
SDK itself raises UnicodeEncodeError on it while planning the turn, before any tool.) Nothing runs and the model
reads reach's message (the same family as the pydantic-ai bridge's, whose framework
parsed the text first and kept the last value)."""

from __future__ import annotations

import json

import pytest
import reach_openai_agents
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
from openai import AsyncOpenAI
from reach_openai.scripted import Answer, Call, ToolCalls

API_KEY = "sk-scripted-openai-agents"
PAD = " " * 4000

REFUSED = [
    ('{"target":"tmp","target":"prod"}', "more than once"),
    ('{ "target" : "tmp" ,\n\t"target" : "prod" }', "more than once"),
    ('{"target":"tmp",' + PAD + '"target":"prod"}', "more than once"),
    ('{"target":"tmp","\\u0074arget":"prod"}', "more than once"),
    ('{"target":"tmp","target":"prod","target":"tmp"}', "more than once"),
    ('{"target":"t:m:p","target":"prod"}', "more than once"),
    ('{"target":"上海","target":"北京"}', "more than once"),
    ('{"target":NaN}', ""),
    ('["tmp"]', ""),
]


@pytest.mark.parametrize(("raw", "says"), REFUSED)
async def test_ambiguous_json_text_is_refused_and_nothing_runs(saver, scripted, raw, says):
    reach, saved = saver
    server = scripted([ToolCalls([Call("save", raw, id="c1")]), Answer("done")])
    model = OpenAIChatCompletionsModel(model="reach-scripted",
                                       openai_client=AsyncOpenAI(base_url=server.url, api_key=API_KEY, max_retries=0))
    agent = Agent(name="assistant", instructions="Answer briefly.", model=model,
                  tools=reach_openai_agents.tools(reach))
    result = await Runner.run(agent, "save it", run_config=RunConfig(tracing_disabled=True))
    assert saved == [] and result.final_output == "done"
    [reply] = [m["content"] for m in server.requests[-1]["messages"] if m.get("role") == "tool"]
    error = json.loads(reply)["error"]
    assert error["code"] in ("invalid_json", "invalid_arguments") and says in error["message"]

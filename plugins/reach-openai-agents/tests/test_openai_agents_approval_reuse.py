"""An approval given through the Agents SDK (``RunState.approve``) approves one call:
the tool, the call id and the arguments the person saw. The SDK remembers approvals
by call id for the rest of the run, so a model that sends the approved call id again
in a later turn, with other arguments (or the same ones), must not get a second
approved run of a dangerous tool."""

from __future__ import annotations

import pytest
import reach_openai_agents
from agents import Agent, MaxTurnsExceeded, ModelBehaviorError, OpenAIChatCompletionsModel, RunConfig, Runner
from openai import AsyncOpenAI
from reach_openai.scripted import Answer, Call, ToolCalls

from reach_core import connector

API_KEY = "sk-scripted-openai-agents"
OFFLINE = RunConfig(tracing_disabled=True)


def sdk_agent(url: str, tools) -> Agent:
    model = OpenAIChatCompletionsModel(model="reach-scripted",
                                       openai_client=AsyncOpenAI(base_url=url, api_key=API_KEY, max_retries=0))
    return Agent(name="assistant", instructions="Answer briefly.", model=model, tools=tools)


@pytest.fixture(params=[True, False], ids=["idempotent", "ledgered"])
def wiper(request, make_reach):
    wiped: list[str] = []

    @connector(risk="dangerous", idempotent=request.param, name="wipe")
    def wipe(target: str) -> str:
        """Wipe a target (dangerous: a person approves each call).

        Args:
            target: what to wipe
        """
        wiped.append(target)
        return f"wiped {target}"

    reach = make_reach()
    reach.register(wipe)
    return reach, wiped


def approved_then(call_id: str, later: list[Call]):
    return [ToolCalls([Call("wipe", {"target": "tmp"}, id=call_id)]), ToolCalls(later), Answer("done")]


@pytest.mark.parametrize("call_id", ["call_w", "调用"])
@pytest.mark.parametrize("later", [
    {"target": "prod"},                # other arguments
    {"target": "TMP"},                 # case
    {"target": "tmp "},                # trailing space
    {"target": "tmр"},                 # a Cyrillic look-alike letter
])
async def test_an_approved_call_id_sent_again_with_other_arguments_is_not_approved(
        wiper, scripted, call_id, later):
    reach, wiped = wiper
    server = scripted(approved_then(call_id, [Call("wipe", later, id=call_id)]))
    agent = sdk_agent(server.url, reach_openai_agents.tools(reach))
    first = await Runner.run(agent, "wipe tmp", run_config=OFFLINE)
    [pending] = first.interruptions
    state = first.to_state()
    state.approve(pending)
    try:  # the SDK itself may end the run (ModelBehaviorError): either way, no second wipe
        await Runner.run(agent, state, run_config=OFFLINE, max_turns=4)
    except ModelBehaviorError:
        pass
    assert wiped == ["tmp"], f"a second, unapproved wipe ran: {wiped}"


@pytest.mark.parametrize("call_id", ["call_w", "c-1"])
async def test_an_approved_call_sent_again_unchanged_runs_once(wiper, scripted, call_id):
    reach, wiped = wiper
    server = scripted(approved_then(call_id, [Call("wipe", {"target": "tmp"}, id=call_id)]))
    agent = sdk_agent(server.url, reach_openai_agents.tools(reach))
    first = await Runner.run(agent, "wipe tmp", run_config=OFFLINE)
    [pending] = first.interruptions
    state = first.to_state()
    state.approve(pending)
    try:  # the SDK keeps one item per call id: the scripted model replays until max_turns
        await Runner.run(agent, state, run_config=OFFLINE, max_turns=4)
    except MaxTurnsExceeded:
        pass
    assert wiped == ["tmp"]

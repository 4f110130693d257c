"""The seed article's code, with only renames (``AgentReach`` -> ``Reach``), runs on reach.

The article defines connectors as classes with class attributes and
``async def execute(self, params)``, registers them, offers their declarations
to the model, and runs each returned tool call with ``invoke(name, arguments)``.
Here its weather connector talks to a real HTTP server on 127.0.0.1 serving the
article's route ``GET /weather/{city}``.
"""

from __future__ import annotations

import json
from urllib.parse import unquote

import httpx
import pytest

from reach_core import Connector, Reach
from reach_core.testing import LoopbackHandler, serve_loopback

DATA = {"北京": {"temp": 21, "humidity": 45, "condition": "晴"}}


class _Handler(LoopbackHandler):
    def do_GET(self):  # noqa: N802
        city = unquote(self.path.removeprefix("/weather/"))
        body = DATA.get(city)
        self.reply_json(200 if body else 404, body or {"error": "city not found"})


@pytest.fixture
def weather_api():
    with serve_loopback(_Handler) as url:
        yield url


def make_article_connectors(base_url):
    # --- as written in the article (only the base class import is renamed) ---
    class WeatherConnector(Connector):
        name = "get_weather"
        description = "获取指定城市的实时天气信息"
        risk = "read"
        input_schema = {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "城市名称，如：北京"}},
            "required": ["city"],
        }

        async def execute(self, params):
            async with httpx.AsyncClient() as client:
                resp = await client.get(f"{base_url}/weather/{params['city']}")
                return resp.json()

    class NoteConnector(Connector):
        name = "append_note"
        description = "在笔记本中追加一条笔记"
        input_schema = {
            "type": "object",
            "properties": {"content": {"type": "string", "description": "笔记内容"}},
            "required": ["content"],
        }
        notes: list[str] = []

        async def execute(self, params):
            self.notes.append(params["content"])
            return {"status": "ok", "count": len(self.notes)}

    return WeatherConnector(), NoteConnector()


async def test_article_loop_runs_with_renames(tmp_path, weather_api):
    weather, note = make_article_connectors(weather_api)
    reach = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[])  # AgentReach() in the article
    reach.register(weather)
    reach.register(note)
    assert {c.name for c in reach.connectors()} == {"get_weather", "append_note"}
    assert reach.get("get_weather") is weather

    tools = reach.tools()  # what the article passes as `tools=` to the model
    assert {t["function"]["name"] for t in tools} == {"get_weather", "append_note"}

    # the model's reply, as the OpenAI SDK would hand it over
    tool_calls = [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "北京"}'}},
        {"id": "call_2", "type": "function",
         "function": {"name": "append_note", "arguments": '{"content": "明早慢跑 5 公里"}'}},
    ]
    messages = []
    for tc in tool_calls:  # the article's loop: one invoke per call, append the tool message
        result = await reach.invoke(tc)
        messages.append(result.to_message())
    assert json.loads(messages[0]["content"]) == {"temp": 21, "humidity": 45, "condition": "晴"}
    assert "晴" in messages[0]["content"]  # compact JSON keeps Chinese as is
    assert json.loads(messages[1]["content"]) == {"status": "ok", "count": 1}

    # the shorthand from the article
    res = await reach.invoke("get_weather", {"city": "北京"})
    assert res.ok and res.content["temp"] == 21
    missing = await reach.invoke("get_weather", {"city": "火星"})
    assert missing.ok is False and missing.error.code == "execution_failed"  # {"error": ...} is a business error

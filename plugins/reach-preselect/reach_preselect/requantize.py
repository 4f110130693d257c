"""``python -P requantize.py SOURCE DEST``: the fused int8 copy of a MiniLM file.

Run in a child process by :func:`reach_preselect.minilm.requantised`. Why a child:
``quantize_dynamic`` logs through the root logger with ``logging.warning()``, which
calls ``logging.basicConfig()`` when the root logger has no handler, and modules of
``onnxruntime.quantization`` call ``basicConfig`` on import. In reach's process that
would configure its host's logging (a stderr handler on the root logger, records
printed); silencing it there meant swapping the root logger's handlers, and a host
thread logging in that window lost its records. The child's logging is its own, and
its output is captured by the parent.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any


def _minilm_graph() -> Any:
    """``minilm_graph``, loaded from beside this file: the child runs this script by its
    path with ``-P``, so the package it belongs to may not be importable by name."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_reach_minilm_graph", Path(__file__).with_name("minilm_graph.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def requantize(source: Path, dest: Path) -> None:
    """Fold the casts of ``source`` (onnxruntime's basic optimisations), rebuild its graph
    with onnxruntime's fused operators where that computes the same hidden states
    (``minilm_graph.rebuild``), then quantise its MatMuls dynamically to int8 with one
    scale per output column, written to ``dest``."""
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        folded = Path(tmp) / "folded.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        model_path, extra = folded, {}
        fused = _minilm_graph().rebuild(str(folded))
        if fused is not None:
            model_path = Path(tmp) / "fused.onnx"
            onnx.save(fused, str(model_path))
            # its contrib operators have no ONNX shape inference: say what the tensors are
            extra = {"DefaultTensorType": onnx.TensorProto.FLOAT}
        quantize_dynamic(str(model_path), str(dest), weight_type=QuantType.QInt8, per_channel=True,
                         extra_options=extra)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python -P requantize.py SOURCE DEST\n")
        return 2
    requantize(Path(argv[0]), Path(argv[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

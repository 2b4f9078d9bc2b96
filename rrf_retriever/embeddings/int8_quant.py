"""onnxruntime's dynamic int8 quantisation of the MiniLM graph, with its per-channel weight loop done in numpy.

``onnxruntime.quantization.quantize_dynamic(per_channel=True)`` quantises each output channel of each weight in a
Python loop (``quant_utils.quantize_data``: 20,736 channels for all-MiniLM-L6-v2, ~2 s of a ~3 s first build).
:func:`quantize_int8` runs the same steps as ``quantize_dynamic`` (shape inference, opset update,
``ONNXQuantizer``) with the one method that loops, ``quantize_weight_per_channel_impl``, computed for all channels
at once by the same float32/float64 operations, so the file written is byte for byte the one ``quantize_dynamic``
writes (``tests/unit/embeddings/test_int8_quant.py`` compares every initializer and node). Anything the fast path
does not cover (overrides, another weight type, a minimum real range, float weights kept) goes to onnxruntime's
own method.

Example:
    >>> quantize_int8(build_graph(model_dir, fused=True), "int8.onnx")  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["quantize_int8"]

#: The ops whose weight products are quantised (``Attention``'s Q/K/V projection included).
OPS = ["MatMul", "Attention"]


def quantize_int8(model: Any, output: str | Path) -> None:
    """Write the int8 quantisation of the float ``onnx.ModelProto`` ``model`` to ``output``: what
    ``quantize_dynamic(model, output, op_types_to_quantize=OPS, per_channel=True, weight_type=QuantType.QInt8,
    extra_options={"DefaultTensorType": TensorProto.FLOAT})`` writes, without its per-channel Python loop.

    Raises:
        ImportError: ``onnx`` or ``onnxruntime.quantization`` is missing.
    """
    import numpy as np
    import onnx
    from onnx import TensorProto, numpy_helper
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization.onnx_quantizer import ONNXQuantizer
    from onnxruntime.quantization.quant_utils import (
        TENSOR_NAME_QUANT_SUFFIX,
        QuantizationMode,
        find_by_name,
        get_qmin_qmax_for_qType,
        save_and_reload_model_with_shape_infer,
        tensor_proto_to_array,
    )
    from onnxruntime.quantization.quantize import update_opset_version

    class _AllChannels(ONNXQuantizer):  # type: ignore[misc]  # onnxruntime ships no type hints
        def quantize_weight_per_channel_impl(
            self, weight_name: str, weight_qType: int, channel_axis: int, reduce_range: bool = True,
            keep_float_weight: bool = False,
        ) -> tuple[str, str, str]:
            initializer = find_by_name(weight_name, self.model.initializer())
            weights = tensor_proto_to_array(initializer) if initializer is not None else None
            overridden = self.tensor_quant_overrides.has_per_channel_overrides(weight_name)
            if (weights is None or weights.dtype != np.float32 or not weights.size or keep_float_weight or overridden
                    or weight_qType != TensorProto.INT8 or self.min_real_range is not None
                    or not -weights.ndim <= channel_axis < weights.ndim):
                return super().quantize_weight_per_channel_impl(  # type: ignore[no-any-return]  # untyped base
                    weight_name, weight_qType, channel_axis, reduce_range, keep_float_weight)
            axis = channel_axis % weights.ndim
            symmetric = self.is_weight_symmetric(weight_qType)
            qmin, qmax = get_qmin_qmax_for_qType(weight_qType, self.reduce_range and reduce_range, symmetric=symmetric)
            rows = np.moveaxis(weights, axis, 0).reshape(weights.shape[axis], -1)
            # compute_scale_zp, channel by channel: the range widened to hold 0, made symmetric if asked, its width
            # in float64 over the integer range's, a scale below float32's smallest normal replaced by 1
            rmin = np.minimum(rows.min(axis=1), np.float32(0))
            rmax = np.maximum(rows.max(axis=1), np.float32(0))
            if symmetric:
                absmax = np.maximum(np.abs(rmin), np.abs(rmax))
                rmin, rmax = -absmax, absmax
            wide = rmax.astype(np.float64) - rmin.astype(np.float64)
            scale64 = wide / (np.float64(qmax) - np.float64(qmin))
            unusable = scale64 < np.finfo(np.float32).tiny
            if symmetric:
                zero = np.full(rows.shape[0], np.round((qmin + qmax) / np.float64(2.0)))
            else:
                zero = np.round(qmin - rmin / scale64)
            scale = np.where(unusable, np.float32(1.0), scale64.astype(np.float32)).astype(np.float32)
            zero_point = np.where(unusable, 0, zero).astype(qmin.dtype)
            # quantize_nparray: (w / scale).round() + zero point in float32, clipped to the type's whole range
            shape = [1] * weights.ndim
            shape[axis] = -1
            low, high = get_qmin_qmax_for_qType(weight_qType, reduce_range=False, symmetric=False)
            values = (weights / scale.reshape(shape)).round() + zero_point.reshape(shape).astype(np.float32)
            quantized = np.clip(values, low, high).astype(qmin.dtype)
            q_name = weight_name + TENSOR_NAME_QUANT_SUFFIX
            zp_name, scale_name = weight_name + "_zero_point", weight_name + "_scale"
            dims = [initializer.dims[axis]]
            self.model.initializer_extend([
                onnx.helper.make_tensor(scale_name, initializer.data_type, dims, scale.tolist()),
                onnx.helper.make_tensor(zp_name, weight_qType, dims, zero_point.tolist()),
                numpy_helper.from_array(quantized.reshape(initializer.dims), q_name),
            ])
            return q_name, zp_name, scale_name

    # quantize_dynamic's own steps, with its defaults for what it is not given (shape inference cannot type the
    # contrib ops' outputs: they are all float)
    extra = {"DefaultTensorType": TensorProto.FLOAT, "MatMulConstBOnly": True}
    reloaded = update_opset_version(save_and_reload_model_with_shape_infer(model), QuantType.QInt8)
    quantizer = _AllChannels(reloaded, True, False, QuantizationMode.IntegerOps, False, QuantType.QInt8,
                             QuantType.QUInt8, None, [], [], list(OPS), extra)
    quantizer.quantize_model()
    quantizer.model.save_model_to_file(str(output), False)

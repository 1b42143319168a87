"""A catalogue of argument values, per argument name and per overload, for calls the schema alone cannot build.

``schema_calls`` builds a call from small tensors of one shape and fillers: enough for an
elementwise op, not for ``lstm_cell`` (an input, two hidden states and weights whose shapes
must fit), ``nll_loss2d`` (a 4-d input and a 3-d target of valid classes), ``coalesce`` (only a
SparseCPU kernel) or ``quantize_per_tensor`` (a ``ScalarType`` naming a quantized dtype). This
module is the data for those: like an OpInfo's sample inputs, but hand-chosen, one recipe per
overload, plus values by argument name and type that any recipe may leave out. What a recipe
does not name is built as ``schema_calls`` builds it (its tensors of the call's base dtype).

A value is plain (an int, a list of ints, a string, a bool, None), one of the specs below, or a
list of specs (a tensor list). ``Data`` tensors take the call's base dtype, so one recipe gives
one call per base dtype; every other spec fixes its dtype (indices, masks, lengths, quantization
parameters), and probing then casts each slot to every dtype as it probes any call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SPARSE_LAYOUTS = ("coo", "csr", "csc", "bsr", "bsc")


@dataclass(frozen=True)
class Data:
    """A tensor of the call's base dtype, values in [0, 2) (ints 0 or 1: valid indices), strided or sparse."""

    shape: tuple[int, ...]
    layout: str = "strided"  # or one of SPARSE_LAYOUTS: the dense tensor, converted (bsr/bsc: 1x1 blocks)


@dataclass(frozen=True)
class Fixed:
    """A tensor of these values and this dtype, whatever the base (lengths, masks, offsets, scales)."""

    values: Any  # a number or a nested list
    dtype: str = "int64"


@dataclass(frozen=True)
class Full:
    """A tensor of one value: of this dtype, or of the base dtype when none is given (``bernoulli_``'s p)."""

    shape: tuple[int, ...]
    value: float
    dtype: str | None = None


@dataclass(frozen=True)
class Ints:
    """Random integers in [0, high) of this dtype: class targets, indices into a dimension of ``high``."""

    shape: tuple[int, ...]
    high: int
    dtype: str = "int64"


@dataclass(frozen=True)
class Quantized:
    """A float tensor of the base dtype quantized per tensor (scale 0.1, zero point 0) to ``dtype``."""

    shape: tuple[int, ...]
    dtype: str = "quint8"


@dataclass(frozen=True)
class Storage:
    """An untyped storage of this many bytes (``set_``'s source), enough for a small tensor of any dtype."""

    nbytes: int = 256


@dataclass(frozen=True)
class Made:
    """What another overload returns for these arguments (specs too): a packed weight for the kernel that reads it."""

    overload: str
    arguments: tuple[Any, ...]


@dataclass(frozen=True)
class TorchName:
    """A torch attribute: a ``ScalarType`` (``quint8``) or a ``Layout`` (``sparse_csr``)."""

    name: str


def _rnn_parameters(gates: int, input_size: int, hidden: int) -> list[Data]:
    """One layer's weights and biases, as torch's RNN modules hold them: w_ih, w_hh, b_ih, b_hh."""
    return [Data((gates * hidden, input_size)), Data((gates * hidden, hidden)), Data((gates * hidden,)), Data((gates * hidden,))]


_RNN_FLAGS = {"has_biases": True, "num_layers": 1, "dropout": 0.0, "train": False, "bidirectional": False}
_BATCH_SIZES = Fixed([2, 2, 1])  # a packed sequence of lengths 3 and 2
_CONV3D = {"self": Data((1, 2, 3, 3, 3)), "weight": Data((2, 2, 2, 2, 2)), "kernel_size": [2, 2, 2], "bias": Data((2,))}
_CONV2D = {"self": Data((1, 2, 4, 4)), "weight": Data((2, 2, 3, 3)), "kernel_size": [3, 3], "bias": Data((2,))}
_CONVOLUTION = {
    "input": Data((1, 2, 4, 4)), "weight": Data((2, 2, 3, 3)), "bias": Data((2,)), "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1],
    "transposed": False, "output_padding": [0, 0], "groups": 1, "benchmark": False, "deterministic": False, "cudnn_enabled": False,
}  # fmt: skip
_PAD_BACKWARD_3D = {"grad_output": Data((1, 2, 4, 4, 4)), "self": Data((1, 2, 2, 2, 2)), "padding": [1, 1, 1, 1, 1, 1]}
_UPSAMPLE_3D_BACKWARD = {"grad_output": Data((1, 1, 4, 4, 4)), "output_size": [4, 4, 4], "input_size": [1, 1, 2, 2, 2]}
_UPSAMPLE_AA = {"input": Data((1, 1, 4, 4)), "output_size": [2, 2], "scale_factors": None}
_COO = {"self": Data((2, 3), "coo")}
_CSR = {"self": Data((2, 3), "csr")}
_CSC = {"self": Data((2, 3), "csc")}
_COO_PARTS = {"indices": Fixed([[0, 1, 1], [2, 0, 2]]), "values": Data((3,)), "size": [2, 3]}
_COMPRESSED = {"compressed_indices": Fixed([0, 1, 2]), "plain_indices": Fixed([0, 1]), "values": Data((2,)), "size": [2, 2]}
_CSR_PARTS = {"crow_indices": Fixed([0, 1, 2]), "col_indices": Fixed([0, 1]), "values": Data((2,)), "size": [2, 2]}
_CSC_PARTS = {"ccol_indices": Fixed([0, 1, 2]), "row_indices": Fixed([0, 1]), "values": Data((2,)), "size": [2, 2]}
_BLOCKS = {"values": Data((2, 1, 1))}


def _without_size(parts: dict[str, Any]) -> dict[str, Any]:
    """A constructor's parts without its size (the overload that infers it from the indices)."""
    return {name: value for name, value in parts.items() if name != "size"}


_QUANTIZE = {"self": Data((2, 3)), "dtype": TorchName("quint8")}
_ADAM = {
    "self": [Data((3,))], "grads": [Data((3,))], "exp_avgs": [Data((3,))], "exp_avg_sqs": [Data((3,))],
    "max_exp_avg_sqs": [], "state_steps": [Fixed([1.0], "float32")], "lr": 0.01, "beta1": 0.9, "beta2": 0.999,
    "weight_decay": 0.0, "eps": 1e-8, "amsgrad": False, "maximize": False,
}  # fmt: skip
_FAKE_QUANT = {
    "self": Data((2, 3)), "observer_on": Fixed([1]), "fake_quant_on": Fixed([1]), "running_min": Full((1,), 0.0),
    "running_max": Full((1,), 1.0), "scale": Fixed([0.1], "float32"), "zero_point": Fixed([0], "int32"),
    "averaging_const": 0.01, "quant_min": 0, "quant_max": 255, "ch_axis": 0,
}  # fmt: skip
_EMBEDDING_BAG_BACKWARD = {
    "grad": Data((2, 3)), "indices": Fixed([0, 1, 2, 3]), "offset2bag": Fixed([0, 0, 1, 1]), "bag_size": Fixed([2, 2]),
    "num_weights": 5, "scale_grad_by_freq": False, "mode": 0, "per_sample_weights": Data((4,)),
}  # fmt: skip
_FLOAT8 = Full((16, 16), 0.5, "float8_e4m3fn")
_SCALED_MM = {"self": _FLOAT8, "mat2": _FLOAT8, "scale_a": Fixed(1.0, "float32"), "scale_b": Fixed(1.0, "float32"), "bias": Data((16,)), "scale_result": Fixed(1.0, "float32")}
_SCALED_MM_V2 = {
    "self": _FLOAT8, "mat2": _FLOAT8, "scale_a": [Fixed([1.0], "float32")], "recipe_a": [0], "swizzle_a": [0], "scale_b": [Fixed([1.0], "float32")],
    "recipe_b": [0], "swizzle_b": [0], "bias": Data((16,)),
}  # fmt: skip
_FP16_LINEAR = {"input": Data((2, 4)), "packed_weight": Made("fbgemm_pack_gemm_matrix_fp16", (Data((3, 4)),)), "bias": Data((3,))}
_PACK_4BIT = {"weights": Ints((16, 16), 16, "uint8"), "scales_zeros": Data((16, 1)), "bias": None, "block_size": 32, "in_features": 32, "out_features": 16}
_ATTENTION_WEIGHTS = {"qkv_weight": Data((12, 4)), "qkv_bias": Data((12,)), "proj_weight": Data((4, 4)), "proj_bias": Data((4,))}
_ATTENTION_MASK = {"mask": Fixed([[False, True, False], [False, False, True], [False, False, False]], "bool"), "mask_type": 0}  # (L, L)
_LAYER_NORMS = {f"norm_{kind}_{n}": Data((4,)) for kind in ("weight", "bias") for n in (1, 2)}

# Per argument (name, schema type as the JIT spells it), a value any overload's call may take where its recipe names none.
ARGUMENTS: dict[tuple[str, str], Any] = {
    ("assert_msg", "str"): "nonzero",
    ("output_mask", "List[bool]"): [True, True, True],
    ("eps", "float"): 1e-5,
    ("momentum", "float"): 0.1,
    ("batch_first", "bool"): False,
    ("align_corners", "bool"): False,
    ("dep_token", "Tensor"): Data((1,)),
}

# Per overload ('name.overload', or the name alone for the default), the values its call needs.
RECIPES: dict[str, dict[str, Any]] = {
    # recurrent cells and layers: an input of 3 features, a hidden state of 4, a batch of 2
    "lstm_cell": {"input": Data((2, 3)), "hx": [Data((2, 4)), Data((2, 4))], "w_ih": Data((16, 3)), "w_hh": Data((16, 4)), "b_ih": Data((16,)), "b_hh": Data((16,))},
    "gru_cell": {"input": Data((2, 3)), "hx": Data((2, 4)), "w_ih": Data((12, 3)), "w_hh": Data((12, 4)), "b_ih": Data((12,)), "b_hh": Data((12,))},
    "rnn_tanh_cell": {"input": Data((2, 3)), "hx": Data((2, 4)), "w_ih": Data((4, 3)), "w_hh": Data((4, 4)), "b_ih": Data((4,)), "b_hh": Data((4,))},
    "rnn_relu_cell": {"input": Data((2, 3)), "hx": Data((2, 4)), "w_ih": Data((4, 3)), "w_hh": Data((4, 4)), "b_ih": Data((4,)), "b_hh": Data((4,))},
    "rnn_tanh.input": {"input": Data((3, 2, 3)), "hx": Data((1, 2, 4)), "params": _rnn_parameters(1, 3, 4), **_RNN_FLAGS},
    "rnn_relu.input": {"input": Data((3, 2, 3)), "hx": Data((1, 2, 4)), "params": _rnn_parameters(1, 3, 4), **_RNN_FLAGS},
    "rnn_tanh.data": {"data": Data((5, 3)), "batch_sizes": _BATCH_SIZES, "hx": Data((1, 2, 4)), "params": _rnn_parameters(1, 3, 4), **_RNN_FLAGS},
    "rnn_relu.data": {"data": Data((5, 3)), "batch_sizes": _BATCH_SIZES, "hx": Data((1, 2, 4)), "params": _rnn_parameters(1, 3, 4), **_RNN_FLAGS},
    "gru.data": {"data": Data((5, 3)), "batch_sizes": _BATCH_SIZES, "hx": Data((1, 2, 4)), "params": _rnn_parameters(3, 3, 4), **_RNN_FLAGS},
    "lstm.data": {"data": Data((5, 3)), "batch_sizes": _BATCH_SIZES, "hx": [Data((1, 2, 4)), Data((1, 2, 4))], "params": _rnn_parameters(4, 3, 4), **_RNN_FLAGS},
    "_thnn_differentiable_lstm_cell_backward": {
        "grad_hy": Data((2, 4)), "grad_cy": Data((2, 4)), "input_gates": Data((2, 16)), "hidden_gates": Data((2, 16)),
        "input_bias": Data((16,)), "hidden_bias": Data((16,)), "cx": Data((2, 4)), "cy": Data((2, 4)),
    },  # fmt: skip
    "_pack_padded_sequence": {"input": Data((3, 2, 4)), "lengths": Fixed([3, 2])},
    "_pack_padded_sequence_backward": {"grad": Data((5, 4)), "input_size": [3, 2, 4], "batch_sizes": _BATCH_SIZES},
    "_pad_packed_sequence": {"data": Data((5, 4)), "batch_sizes": _BATCH_SIZES, "padding_value": 0, "total_length": 3},
    # convolutions: a batch of one, two channels
    "slow_conv_transpose2d": _CONV2D,
    "thnn_conv2d": _CONV2D,
    "slow_conv_dilated2d": _CONV2D,
    "_slow_conv2d_forward": {**_CONV2D, "stride": [1, 1], "padding": [0, 0]},
    "_convolution": {**_CONVOLUTION, "allow_tf32": False},
    "_convolution.deprecated": _CONVOLUTION,
    "mkldnn_convolution": {"self": Data((1, 2, 4, 4)), "weight": Data((2, 2, 3, 3)), "bias": Data((2,)), "padding": [0, 0], "stride": [1, 1], "dilation": [1, 1], "groups": 1},
    "slow_conv_transpose3d": _CONV3D,
    "slow_conv3d": _CONV3D,
    "slow_conv3d_forward": {**_CONV3D, "stride": [1, 1, 1], "padding": [0, 0, 0]},
    "slow_conv_dilated3d": _CONV3D,
    "_slow_conv2d_backward.output_mask": {
        "grad_output": Data((1, 2, 3, 3)), "self": Data((1, 2, 4, 4)), "weight": Data((2, 2, 2, 2)), "kernel_size": [2, 2],
        "stride": [1, 1], "padding": [0, 0],
    },  # fmt: skip
    "_convolution_mode": {"input": Data((1, 2, 4, 4)), "weight": Data((2, 2, 3, 3)), "bias": Data((2,)), "stride": [1, 1], "padding": "same", "dilation": [1, 1], "groups": 1},
    "_convolution_double_backward": {
        "ggI": Data((1, 2, 4, 4)), "ggW": Data((2, 2, 3, 3)), "ggb": Data((2,)), "gO": Data((1, 2, 2, 2)), "weight": Data((2, 2, 3, 3)),
        "self": Data((1, 2, 4, 4)), "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "transposed": False,
        "output_padding": [0, 0], "groups": 1,
    },  # fmt: skip
    "conv_tbc": {"self": Data((5, 2, 3)), "weight": Data((3, 3, 4)), "bias": Data((4,)), "pad": 1},
    "_nnpack_spatial_convolution": {"input": Data((1, 2, 4, 4)), "weight": Data((2, 2, 3, 3)), "bias": None, "padding": [0, 0]},
    # losses, pads and upsampling backward
    "nll_loss2d": {"self": Data((2, 3, 4, 4)), "target": Ints((2, 4, 4), 3), "weight": Data((3,))},
    "nll_loss_backward": {
        "grad_output": Data(()), "self": Data((2, 3)), "target": Ints((2,), 3), "weight": Data((3,)), "reduction": 1, "ignore_index": -100,
        "total_weight": Full((), 2.0),
    },  # fmt: skip
    "multi_margin_loss_backward": {"grad_output": Data(()), "self": Data((2, 3)), "target": Ints((2,), 3), "p": 1, "margin": 1, "weight": Data((3,))},
    "nll_loss2d_backward": {
        "grad_output": Data(()), "self": Data((2, 3, 4, 4)), "target": Ints((2, 4, 4), 3), "weight": Data((3,)), "reduction": 1,
        "ignore_index": -100, "total_weight": Full((), 32.0),
    },  # fmt: skip
    "glu_jvp": {"glu": Data((2, 2)), "x": Data((2, 4)), "dx": Data((2, 4)), "dim": 1},
    "glu_backward_jvp": {"grad_x": Data((2, 4)), "grad_glu": Data((2, 2)), "x": Data((2, 4)), "dgrad_glu": Data((2, 2)), "dx": Data((2, 4)), "dim": 1},
    "reflection_pad2d_backward": {"grad_output": Data((1, 2, 6, 6)), "self": Data((1, 2, 4, 4)), "padding": [1, 1, 1, 1]},
    "reflection_pad3d_backward": _PAD_BACKWARD_3D,
    "replication_pad3d_backward": _PAD_BACKWARD_3D,
    "upsample_nearest3d_backward": _UPSAMPLE_3D_BACKWARD,
    "_upsample_nearest_exact3d_backward": _UPSAMPLE_3D_BACKWARD,
    "_upsample_bicubic2d_aa.vec": _UPSAMPLE_AA,
    "_upsample_lanczos2d_aa.vec": _UPSAMPLE_AA,
    "affine_grid_generator": {"theta": Data((1, 2, 3)), "size": [1, 1, 4, 4]},
    "affine_grid_generator_backward": {"grad": Data((1, 4, 4, 2)), "size": [1, 1, 4, 4]},
    "_grid_sampler_2d_cpu_fallback": {"input": Data((1, 1, 4, 4)), "grid": Data((1, 3, 3, 2)), "interpolation_mode": 0, "padding_mode": 0},
    "_grid_sampler_2d_cpu_fallback_backward": {
        "grad_output": Data((1, 1, 3, 3)), "input": Data((1, 1, 4, 4)), "grid": Data((1, 3, 3, 2)), "interpolation_mode": 0,
        "padding_mode": 0,
    },  # fmt: skip
    # the composite OpInfo never calls (its samples call the padding_idx overload), in max mode: every output has elements
    "embedding_bag": {"weight": Data((5, 3)), "indices": Fixed([0, 1, 2, 3]), "offsets": Fixed([0, 2]), "mode": 2},
    "_embedding_bag_dense_backward": {**_EMBEDDING_BAG_BACKWARD, "maximum_indices": Fixed([0, 0])},
    "_embedding_bag_sparse_backward": {**_EMBEDDING_BAG_BACKWARD, "offsets": Fixed([0, 2])},
    # matrices, norms, spectra
    "_addmm_activation": {"self": Data((3,)), "mat1": Data((2, 4)), "mat2": Data((4, 3))},
    "_int_mm": {"self": Ints((2, 8), 3, "int8"), "mat2": Ints((8, 2), 3, "int8")},
    "_weight_int8pack_mm": {"self": Data((2, 4)), "mat2": Ints((3, 4), 3, "int8"), "scales": Data((3,))},
    "nuclear_norm.dim": {"self": Data((2, 3)), "dim": [0, 1]},
    # two dimensions apart, as a broadcast's backward sums: a path that runs the float8 dtypes one dimension refuses
    "sum.dim_IntList": {"self": Data((2, 3, 2, 3)), "dim": [0, 2]},
    "linalg_cond.p_str": {"self": Data((3, 3)), "p": "fro"},
    "stft.center": {"self": Data((16,)), "n_fft": 4, "window": Data((4,)), "return_complex": True},
    "histogramdd.int_bins": {"self": Data((4, 2)), "bins": 2, "weight": Data((4,))},
    "_reshape_from_tensor": {"self": Data((2, 3)), "shape": Fixed([3, 2])},
    "_masked_softmax": {"self": Data((2, 3)), "mask": Fixed([[False, True, False], [False, False, True]], "bool")},
    # through one bool mask, values of one element take masked_fill (any dtype), a row takes self's (the 0-dim gate tells)
    "_index_put_impl_": {"self": Data((3, 4)), "indices": [Fixed([True, False, True], "bool")], "values": Data((4,))},
    "_unsafe_index_put": {"self": Data((3, 4)), "indices": [Fixed([True, False, True], "bool")], "values": Data((4,))},
    "_masked_softmax_backward": {"grad_output": Data((2, 3)), "output": Data((2, 3)), "mask": Fixed([[False, True, False], [False, False, True]], "bool")},
    "_rowwise_prune": {"weight": Data((3, 2)), "mask": Fixed([True, False, True], "bool"), "compressed_indices_dtype": TorchName("int32")},
    "bernoulli_.Tensor": {"self": Data((2, 3)), "p": Full((2, 3), 0.5)},
    # a dtype= argument at None: the return follows the input, which probing then judges (the return stays free)
    "rand_like.generator": {"self": Data((2, 3))},
    "randn_like.generator": {"self": Data((2, 3))},
    "linalg__powsum": {"self": Data((2, 3))},
    "to_mkldnn": {"self": Data((2, 3))},
    "view_copy.dtype": {"self": Data((2, 4)), "dtype": TorchName("float32")},  # 4 elements: any element size divides or is divided by 4 bytes
    "_sobol_engine_draw": {"quasi": Fixed([0, 0]), "n": 3, "sobolstate": Full((2, 30), 1, "int64"), "dimension": 2, "num_generated": 0, "dtype": TorchName("float32")},
    # a bound of 2: bool's too (randint_like(x, 3, dtype=torch.bool): 'to - 1 is out of bounds for bool')
    "randint_like.generator": {"self": Data((2, 3)), "high": 2},
    "randint_like.Tensor": {"self": Data((2, 3)), "high": Fixed(2)},
    "randint_like.Tensor_generator": {"self": Data((2, 3)), "high": Fixed(2)},
    "randint_like.low_generator_dtype": {"self": Data((2, 3)), "low": 0, "high": 2},
    "randint.low_generator": {"low": 0, "high": 2, "size": [2, 3], "generator": None},
    "randint.low_generator_out": {"low": 0, "high": 2, "size": [2, 3], "generator": None, "out": Data((2, 3))},
    "to_dense": {"self": Data((2, 3))},
    "norm.ScalarOpt_dtype": {"self": Data((2, 3)), "p": 2, "dtype": TorchName("float32")},
    "norm.ScalarOpt_dim_dtype": {"self": Data((2, 3)), "p": 2, "dim": [1], "keepdim": False, "dtype": TorchName("float32")},
    "norm.dtype_out": {"self": Data((2, 3)), "p": 2, "dim": [1], "keepdim": False, "dtype": TorchName("float32"), "out": Data((2,))},
    "_assert_async.msg": {"self": Fixed(1)},
    "_functional_assert_async.msg": {"self": Fixed(1)},
    "_amp_update_scale_": {
        "self": Full((1,), 1.0), "growth_tracker": Fixed([0], "int32"), "found_inf": Full((1,), 0.0), "scale_growth_factor": 2.0,
        "scale_backoff_factor": 0.5, "growth_interval": 10,
    },  # fmt: skip
    "_fused_adam_": _ADAM,
    "_fused_adamw_": _ADAM,
    "_fused_adam_.tensor_lr": {**_ADAM, "lr": Fixed(0.01, "float32")},
    "_fused_adamw_.tensor_lr": {**_ADAM, "lr": Fixed(0.01, "float32")},
    "_foreach_powsum.Scalar": {"self": [Data((3,)), Data((2,))]},
    # tensor lists: a mixed list is tried too (T[] states one dtype for every element)
    "meshgrid": {"tensors": [Data((2,)), Data((3,))]},
    "broadcast_tensors": {"tensors": [Data((2, 3)), Data((3,))]},
    "_stack": {"tensors": [Data((2, 3)), Data((2, 3))]},
    "_stack.out": {"tensors": [Data((2, 3)), Data((2, 3))], "out": Data((2, 2, 3))},
    "pad_sequence": {"sequences": [Data((3, 2)), Data((2, 2))]},
    "flatten_dense_tensors": {"tensors": [Data((2, 3)), Data((3,))]},
    "_to_cpu": {"tensors": [Data((2, 3)), Data((3,))]},
    "_foreach_copy": {"self": [Data((2, 3)), Data((3,))], "src": [Data((2, 3)), Data((3,))]},
    "_foreach_pow.ScalarAndTensor": {"self": 2, "exponent": [Data((2, 3)), Data((3,))]},
    "chain_matmul": {"matrices": [Data((2, 3)), Data((3, 4)), Data((4, 2))]},
    "chain_matmul.out": {"matrices": [Data((2, 3)), Data((3, 4)), Data((4, 2))], "out": Data((2, 2))},
    # float8 matrix products: the optional bias and scale_result no sample passes
    "_scaled_mm": _SCALED_MM,
    "_scaled_mm.out": {**_SCALED_MM, "out": _FLOAT8},
    "_scaled_mm_v2": _SCALED_MM_V2,
    "_scaled_mm_v2.out": {**_SCALED_MM_V2, "out": _FLOAT8},
    # attention
    "_scaled_dot_product_attention_math": {"query": Data((1, 2, 3, 4)), "key": Data((1, 2, 3, 4)), "value": Data((1, 2, 3, 4)), "attn_mask": Data((3, 3))},
    "_transform_bias_rescale_qkv": {"qkv": Data((2, 3, 12)), "qkv_bias": Data((12,)), "num_heads": 2},
    "_native_multi_head_attention": {"query": Data((2, 3, 4)), "key": Data((2, 3, 4)), "value": Data((2, 3, 4)), "embed_dim": 4, "num_head": 2, **_ATTENTION_WEIGHTS, **_ATTENTION_MASK},
    "_transformer_encoder_layer_fwd": {
        "src": Data((2, 3, 4)), "embed_dim": 4, "num_heads": 2, **_ATTENTION_WEIGHTS, "use_gelu": False, "norm_first": False,
        **_LAYER_NORMS, "ffn_weight_1": Data((8, 4)), "ffn_bias_1": Data((8,)), "ffn_weight_2": Data((4, 8)),
        "ffn_bias_2": Data((4,)), **_ATTENTION_MASK,
    },  # fmt: skip
    "_nested_tensor_from_mask": {"t": Data((2, 3, 4)), "mask": Fixed([[True, True, True], [True, True, False]], "bool")},
    "_nested_tensor_from_mask_left_aligned": {"t": Data((2, 3, 4)), "mask": Fixed([[True, True, True], [True, True, False]], "bool")},
    "_nested_from_padded": {"padded": Data((2, 3, 4)), "cpu_nested_shape_example": Fixed([[3, 4], [2, 4]])},
    "_nested_view_from_buffer": {"self": Data((12,)), "nested_size": Fixed([[2, 3], [2, 3]]), "nested_strides": Fixed([[3, 1], [3, 1]]), "offsets": Fixed([0, 6])},
    "_nested_view_from_buffer_copy": {"self": Data((12,)), "nested_size": Fixed([[2, 3], [2, 3]]), "nested_strides": Fixed([[3, 1], [3, 1]]), "offsets": Fixed([0, 6])},
    "_functional_assert_scalar": {"self": 1},
    "_unique": {"self": Data((2, 3)), "return_inverse": True},
    "_sobol_engine_initialize_state_": {"self": Full((2, 30), 0, "int64"), "dimension": 2},
    "_sobol_engine_scramble_": {"self": Full((2, 30), 1, "int64"), "ltm": Ints((2, 30, 30), 2), "dimension": 2},
    "_convert_weight_to_int4pack_for_cpu": {"self": Ints((16, 64), 16, "int32"), "innerKTiles": 2},
    "_padded_dense_to_jagged_forward": {"dense": Data((2, 3, 4)), "offsets": [Fixed([0, 2, 5])], "total_L": 5},
    "_remove_batch_dim": {"self": Data((2, 3)), "level": 1, "batch_size": 2, "out_dim": 0},
    "set_.source_Storage": {"self": Data((2, 3)), "source": Storage()},
    "set_.source_Storage_storage_offset": {"self": Data((2, 3)), "source": Storage(), "storage_offset": 0, "size": [2, 3]},
    "_ctc_loss_backward.Tensor": {
        "grad": Data((1,)), "log_probs": Data((5, 1, 3)), "targets": Fixed([[1, 2]]), "input_lengths": Fixed([5]),
        "target_lengths": Fixed([2]), "neg_log_likelihood": Data((1,)), "log_alpha": Data((1, 5, 5)), "blank": 0,
    },  # fmt: skip
    "mkldnn_rnn_layer": {
        "input": Data((3, 2, 3)), "weight0": Data((16, 3)), "weight1": Data((16, 4)), "weight2": Data((16,)), "weight3": Data((16,)),
        "hx_": Data((2, 4)), "cx_": Data((2, 4)), "reverse": False, "batch_sizes": [], "mode": 2, "hidden_size": 4, "num_layers": 1,
        "has_biases": True, "bidirectional": False, "train": False,
    },  # fmt: skip
    # packed weights: made by the overload that packs them
    "fbgemm_linear_fp16_weight": _FP16_LINEAR,
    "fbgemm_linear_fp16_weight_fp32_activation": _FP16_LINEAR,
    "fbgemm_linear_fp16_weight.out": {**_FP16_LINEAR, "output": Data((2, 3))},
    "fbgemm_linear_fp16_weight_fp32_activation.out": {**_FP16_LINEAR, "output": Data((2, 3))},
    "_dyn_quant_pack_4bit_weight": {**_PACK_4BIT, "bias": Data((16,))},
    "_dyn_quant_matmul_4bit": {
        "inp": Data((2, 32)), "packed_weights": Made("_dyn_quant_pack_4bit_weight", tuple(_PACK_4BIT.values())), "block_size": 32,
        "in_features": 32, "out_features": 16,
    },  # fmt: skip
    "_weight_int4pack_mm_for_cpu": {
        "self": Data((2, 64)), "mat2": Made("_convert_weight_to_int4pack_for_cpu", (Ints((16, 64), 16, "int32"), 2)), "qGroupSize": 32,
        "qScaleAndZeros": Data((2, 16, 2)),
    },  # fmt: skip
    # out= overloads whose functional overload no evidence ties them to
    "_slow_conv2d_backward.grad_input": {
        "grad_output": Data((1, 2, 3, 3)), "self": Data((1, 2, 4, 4)), "weight": Data((2, 2, 2, 2)), "kernel_size": [2, 2],
        "stride": [1, 1], "padding": [0, 0], "grad_input": Data((1, 2, 4, 4)), "grad_weight": Data((2, 2, 2, 2)), "grad_bias": Data((2,)),
    },  # fmt: skip
    "adaptive_avg_pool3d_backward.grad_input": {"grad_output": Data((1, 2, 1, 1, 1)), "self": Data((1, 2, 2, 2, 2)), "grad_input": Data((1, 2, 2, 2, 2))},
    "rrelu_with_noise.out": {"self": Data((2, 3)), "noise": Data((2, 3)), "out": Data((2, 3))},
    "_native_batch_norm_legit.out": {
        "input": Data((3, 2)), "weight": Data((2,)), "bias": Data((2,)), "running_mean": Data((2,)), "running_var": Full((2,), 1.0),
        "training": True, "out": Data((3, 2)), "save_mean": Data((2,)), "save_invstd": Data((2,)),
    },  # fmt: skip
    # batch norm internals: 2 channels of 3
    "batch_norm_update_stats": {"input": Data((3, 2)), "running_mean": Data((2,)), "running_var": Full((2,), 1.0)},
    "_batch_norm_impl_index_backward": {
        "impl_index": 0, "input": Data((3, 2)), "grad_output": Data((3, 2)), "weight": Data((2,)), "running_mean": Data((2,)),
        "running_var": Full((2,), 1.0), "save_mean": Data((2,)), "save_var_transform": Full((2,), 1.0), "train": True,
        "reservedSpace": Data((1,)),
    },  # fmt: skip
    "batch_norm_backward": {
        "grad_out": Data((3, 2)), "input": Data((3, 2)), "weight": Data((2,)), "running_mean": Data((2,)), "running_var": Full((2,), 1.0),
        "save_mean": Data((2,)), "save_var": Full((2,), 1.0), "update": True,
        "reserve": Data((1,)),
    },  # fmt: skip
    # quantization: a float input, quantized per tensor or per channel
    "quantize_per_tensor": {**_QUANTIZE, "scale": 0.1, "zero_point": 0},
    "quantize_per_tensor.tensor_qparams": {**_QUANTIZE, "scale": Fixed(0.1, "float32"), "zero_point": Fixed(0)},
    "quantize_per_tensor.tensors": {"tensors": [Data((2, 3))], "scales": Fixed([0.1], "float32"), "zero_points": Fixed([0]), "dtype": TorchName("quint8")},
    "quantize_per_tensor_dynamic": {**_QUANTIZE, "reduce_range": False},
    "quantize_per_channel": {**_QUANTIZE, "scales": Fixed([0.1, 0.2], "float64"), "zero_points": Fixed([0, 0]), "axis": 0},
    "_make_per_tensor_quantized_tensor": {"self": Ints((2, 3), 3, "uint8"), "scale": 0.1, "zero_point": 0},
    "_make_per_channel_quantized_tensor": {"self": Ints((2, 3), 3, "uint8"), "scale": Fixed([0.1, 0.2], "float64"), "zero_point": Fixed([0, 0]), "axis": 0},
    "fused_moving_avg_obs_fake_quant": _FAKE_QUANT,
    "_fused_moving_avg_obs_fq_helper": _FAKE_QUANT,
    "fbgemm_pack_quantized_matrix": {"input": Ints((4, 4), 3, "int8")},
    "fbgemm_pack_quantized_matrix.KN": {"input": Ints((4, 4), 3, "int8"), "K": 4, "N": 4},
    "_wrapped_linear_prepack": {"weight": Data((4, 4)), "weight_scale": Fixed([0.1], "float32"), "weight_zero_point": Fixed([0], "int32"), "bias": Data((4,))},
    # sparse tensors: SparseCPU and SparseCsrCPU kernels only
    "coalesce": _COO,
    "is_coalesced": _COO,
    "indices": _COO,
    "values": _COO,
    "crow_indices": _CSR,
    "col_indices": _CSR,
    "crow_indices_copy": _CSR,
    "col_indices_copy": _CSR,
    "ccol_indices": _CSC,
    "row_indices": _CSC,
    "ccol_indices_copy": _CSC,
    "row_indices_copy": _CSC,
    "_sparse_sum": _COO,
    "_sparse_sum.dim": {**_COO, "dim": [0]},
    "_sparse_sum.dtype": {**_COO, "dtype": TorchName("float32")},
    "_sparse_sum.dim_dtype": {**_COO, "dim": [0], "dtype": TorchName("float32")},
    "_sparse_softmax.int": {**_COO, "dim": 1},
    "_sparse_log_softmax.int": {**_COO, "dim": 1},
    "_sparse_mm": {"sparse": Data((2, 3), "coo"), "dense": Data((3, 2))},
    "smm": {"self": Data((2, 3), "coo"), "mat2": Data((3, 2))},
    "sspaddmm": {"self": Data((2, 2), "coo"), "mat1": Data((2, 3), "coo"), "mat2": Data((3, 2))},
    "sparse_coo_tensor.indices": {k: v for k, v in _COO_PARTS.items() if k != "size"},
    "sparse_coo_tensor.indices_size": _COO_PARTS,
    "_sparse_coo_tensor_unsafe": _COO_PARTS,
    "_validate_sparse_coo_tensor_args": _COO_PARTS,
    "_validate_sparse_compressed_tensor_args": {**_COMPRESSED, "layout": TorchName("sparse_csr")},
    "_validate_sparse_csr_tensor_args": _CSR_PARTS,
    "_validate_sparse_csc_tensor_args": _CSC_PARTS,
    "_validate_sparse_bsr_tensor_args": {**_CSR_PARTS, **_BLOCKS},
    "_validate_sparse_bsc_tensor_args": {**_CSC_PARTS, **_BLOCKS},
    # compressed constructors: values of the dtype dtype= names (None: float32), which probing tries as the cast dtype (prober.CAST_DTYPE)
    "sparse_compressed_tensor.comp_plain_value_size": {**_COMPRESSED, "layout": TorchName("sparse_csr")},
    "sparse_compressed_tensor.comp_plain_value": {**_without_size(_COMPRESSED), "layout": TorchName("sparse_csr")},
    "_sparse_compressed_tensor_unsafe": {**_COMPRESSED, "layout": TorchName("sparse_csr")},
    "sparse_csr_tensor.crow_col_value_size": _CSR_PARTS,
    "sparse_csr_tensor.crow_col_value": _without_size(_CSR_PARTS),
    "_sparse_csr_tensor_unsafe": _CSR_PARTS,
    "sparse_csc_tensor.ccol_row_value_size": _CSC_PARTS,
    "sparse_csc_tensor.ccol_row_value": _without_size(_CSC_PARTS),
    "_sparse_csc_tensor_unsafe": _CSC_PARTS,
    "sparse_bsr_tensor.crow_col_value_size": {**_CSR_PARTS, **_BLOCKS},
    "sparse_bsr_tensor.crow_col_value": _without_size({**_CSR_PARTS, **_BLOCKS}),
    "_sparse_bsr_tensor_unsafe": {**_CSR_PARTS, **_BLOCKS},
    "sparse_bsc_tensor.ccol_row_value_size": {**_CSC_PARTS, **_BLOCKS},
    "sparse_bsc_tensor.ccol_row_value": _without_size({**_CSC_PARTS, **_BLOCKS}),
    "_sparse_bsc_tensor_unsafe": {**_CSC_PARTS, **_BLOCKS},
    "_validate_compressed_sparse_indices": {"is_crow": True, "compressed_idx": Fixed([0, 1, 2]), "plain_idx": Fixed([0, 1]), "cdim": 2, "dim": 2, "nnz": 2},
}  # fmt: skip

# Overloads the catalogue leaves uncalled on purpose, with why (``--report`` says it for an entry still untyped).
_PACKED_INT8 = "its packed int8 weight (fbgemm's PackBMatrix wrapped in a tensor) does not survive the copy every probe makes"
_EMPTY_RESERVE = "its CPU kernel returns an empty reserve tensor, so no call of it proves a dtype"
LEFT_OUT: dict[str, str] = {
    "_batch_norm_with_update": _EMPTY_RESERVE,
    "_batch_norm_with_update.out": _EMPTY_RESERVE,
    "_batch_norm_no_update": _EMPTY_RESERVE,
    "_thnn_fused_lstm_cell_backward": "its CPU kernel asserts that grad mode is off, which the probing workers keep on",
    "fbgemm_linear_int8_weight": _PACKED_INT8,
    "fbgemm_linear_int8_weight_fp32_activation": _PACKED_INT8,
    "quantized_lstm_cell": _PACKED_INT8,
    "quantized_gru_cell": _PACKED_INT8,
    "quantized_rnn_relu_cell": _PACKED_INT8,
    "quantized_rnn_tanh_cell": _PACKED_INT8,
}

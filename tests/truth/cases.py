"""Hand-written calls of the ATen overloads real models use most, on small non-empty CPU tensors.

A case names the overload as native_functions.yaml does (``mm``, ``remainder.Scalar``),
the tensor slots it casts to the dtype under test (schema argument names; slots that ATen
needs of one dtype, or promotes to one, are cast together: a diagonal call), the other tensor
slots it holds at one dtype (``given``: the scorer compares with what the yaml declares for that
combination), and one or more calls built from the dtype. The calls are alternatives: the dtype is accepted if
any of them runs (``mean(int64 tensor, dtype=torch.float32)`` is a valid call of ``mean``).
The runner calls ``torch.ops.aten.<name>.<overload>`` itself, so a case never reaches
another overload through a Python wrapper.

Scalar cases (``scalar_case``) call an overload whose promotion takes a Python scalar with one that keeps the
computation at the dtype under test (``le(uint16 tensor, 1)``, never ``le(uint16 tensor, 0.5)``, which runs in
float32), and state what ATen accepts of ``STATED``; tests/test_truth.py checks ATen agrees.

``MIXED`` are single calls whose tensors differ in dtype, in both directions: where ATen promotes
(``add(int64, float32)``, ``where(mask, int32, float64)``, ``cat([float32, int64])``) and where it
refuses (``add(uint16 tensor, uint16 0-dim)``, ``mm(float32, float64)``, ``addcdiv`` of integers).
The scorer judges each by the computation dtype the yaml's ``type_promotion:`` gives it.

``AUTOCAST`` are single calls made under ``torch.autocast("cpu", dtype=...)`` at bfloat16 and at float16
(``linear(float32, float32, float32)``, ``prod(bfloat16)``, ``stack([bfloat16, float32])``): ATen's verdict and the
dtypes the call returned. The scorer hands the call on as the yaml's ``autocast: {CPU: ...}`` policy says and
judges what the kernel gets (docs/truth.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

Call = tuple[tuple[Any, ...], dict[str, Any]]
F32, F16, I64 = torch.float32, torch.float16, torch.int64


@dataclass(frozen=True)
class Case:
    overload: str  # as native_functions.yaml names it
    slots: tuple[str, ...]  # cast together to the dtype under test
    calls: tuple[Callable[[torch.dtype], Call], ...]  # alternatives: accepted if any runs
    given: tuple[tuple[str, str], ...] = ()  # (slot, dtype name) held fixed in every call
    companions: tuple[str, ...] = ()  # slots each call gives a dtype of its own, not judged (``companions``)
    scalars: tuple[str, ...] = ()  # Scalar arguments given a Python number that keeps the computation at the dtype (``scalar_case``)
    accepts: frozenset[str] | None = None  # of ``STATED``, the dtypes ATen accepts (it refuses the rest); None: nothing stated

    @property
    def key(self) -> str:
        """Unique within the suite: ``gather[index | self=float32]``, ``add.Tensor[self other]``, ``searchsorted.Tensor[self ~ sorted_sequence]``,
        ``le.Scalar[self | other=scalar]``."""
        held = ", ".join([f"{slot}={dtype}" for slot, dtype in self.given] + [f"{slot}=scalar" for slot in self.scalars])
        others = " ~ " + " ".join(self.companions) if self.companions else ""
        return f"{self.overload}[{' '.join(self.slots)}{others}{' | ' + held if held else ''}]"


def A(*args: Any, **kwargs: Any) -> Call:
    return args, kwargs


def t(d: torch.dtype, *shape: int) -> torch.Tensor:
    """Values 1..5 (never zero: integer division and log stay defined), cast from float32."""
    n = 1
    for size in shape:
        n *= size
    return (torch.arange(n, dtype=torch.float32) % 5 + 1).reshape(shape).to(d)


def p(d: torch.dtype, *shape: int) -> torch.Tensor:
    """Probabilities in (0, 1), for the losses that need them."""
    return (t(torch.float32, *shape) % 3 + 1).div(4).to(d)


def ix(d: torch.dtype, high: int, *shape: int) -> torch.Tensor:
    """Valid indices below ``high``."""
    n = 1
    for size in shape:
        n *= size
    return (torch.arange(n, dtype=torch.float32) % high).reshape(shape).to(d)


def mask(*shape: int) -> torch.Tensor:
    return torch.ones(shape, dtype=torch.bool)


def c(overload: str, slots: str, *calls: Callable[[torch.dtype], Call], given: dict[str, str] | None = None) -> Case:
    return Case(overload, tuple(slots.split()), calls, tuple(sorted((given or {}).items())))


def _zero_dim(overload: str, slot: str, call: Call) -> Call:
    """The call with ``slot``'s tensor a 0-dim one of its dtype and first value."""
    base, _, name = overload.partition(".")
    names = [a.name for a in getattr(getattr(torch.ops.aten, base), name or "default")._schema.arguments]
    args, kwargs = call
    scalar = lambda value: value.flatten()[0].clone()  # noqa: E731
    if slot in kwargs:
        return args, kwargs | {slot: scalar(kwargs[slot])}
    index = names.index(slot)
    return tuple(scalar(a) if i == index else a for i, a in enumerate(args)), kwargs


def companions(overload: str, slots: str, *builds: Callable[[list[torch.dtype]], Call]) -> list[Case]:
    """Slots an op combines by its own rule, not torch's elementwise promotion (``cosine_similarity`` and ``addr``
    compute in float64 beside a 0-dim float64; ``huber_loss(int64, float32)`` cannot write its float result into
    the input's dtype; ``searchsorted`` compares across dtypes): a case per slot, the dtype accepted
    when some call with the other slots at it, at float32 or at int64 runs, or with the slot a 0-dim tensor
    beside them. The yaml declares such slots apart, each with the dtypes some valid call accepts there."""
    names = slots.split()

    def call(build: Callable[[list[torch.dtype]], Call], index: int, companion: torch.dtype | None) -> Callable[[torch.dtype], Call]:
        return lambda d: build([d if j == index or companion is None else companion for j in range(len(names))])

    def zero_dim(build: Callable[[list[torch.dtype]], Call], index: int, companion: torch.dtype) -> Callable[[torch.dtype], Call]:
        return lambda d: _zero_dim(overload, names[index], call(build, index, companion)(d))

    def calls(index: int) -> tuple[Callable[[torch.dtype], Call], ...]:
        return tuple(
            alternative
            for build in builds
            for alternative in (call(build, index, None), call(build, index, F32), call(build, index, I64))
            + (zero_dim(build, index, F32), zero_dim(build, index, I64))
        )

    return [Case(overload, (name,), calls(i), (), tuple(n for n in names if n != name)) for i, name in enumerate(names)]


def promoting(overload: str, slots: str, *builds: Callable[[list[torch.dtype]], Call], given: dict[str, str] | None = None) -> list[Case]:
    """Slots ATen promotes to a common dtype before its kernel: one diagonal case, every slot cast to the dtype
    under test (``add(uint16, float32)`` runs in float32 and says nothing of uint16; ``add(uint16, uint16)``
    has no kernel). Mixed calls are in ``MIXED``."""
    n = len(slots.split())
    calls = tuple((lambda build: lambda d: build([d] * n))(build) for build in builds)
    return [Case(overload, tuple(slots.split()), calls, tuple(sorted((given or {}).items())))]


def _unary(*names: str) -> list[Case]:
    return [c(name, "self", lambda d: A(t(d, 2, 3))) for name in names]


def _binary(*names: str) -> list[Case]:
    return [case for name in names for case in promoting(name, "self other", lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3)))]


def _binary_out(*names: str) -> list[Case]:
    return [case for name in names for case in promoting(name, "self other out", lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3), out=t(ds[2], 2, 3)))]


def _unary_out(*names: str) -> list[Case]:
    return [case for name in names for case in promoting(name, "self out", lambda ds: A(t(ds[0], 2, 3), out=t(ds[1], 2, 3)))]


def _scalar_other(*names: str) -> list[Case]:
    """``op(tensor, scalar)``: an int and a float scalar are both everyday calls."""
    return [c(name, "self", lambda d: A(t(d, 2, 3), 2), lambda d: A(t(d, 2, 3), 2.0)) for name in names]


def _with_dtype_argument(name: str, *args: Any) -> Case:
    """A reduction whose ``dtype=`` lets more input dtypes in: ``mean(int64 tensor, dtype=torch.float32)``."""
    return c(name, "self", lambda d: A(t(d, 2, 3), *args), lambda d: A(t(d, 2, 3), *args, dtype=F32))


STATED: tuple[str, ...] = ("bool", "int64", "uint16", "uint32", "uint64", "float32", "complex32", "complex64", "float8_e4m3fn", "float8_e8m0fnu")
"""The dtypes a Scalar case states ATen's answer for (``accepts``): where a Python scalar's promotion misleads."""


def kept_scalars(d: torch.dtype) -> tuple[bool | int | float | complex, ...]:
    """Python numbers that leave a promotion at ``d``: its own category first (True, 1, 1.5, 1j), then each lower one
    but bool (``pow(complex32 tensor, 1)`` computes in complex32)."""
    if d == torch.bool:
        return (True,)
    if d.is_complex:
        return (1j, 1.5, 1)
    if d.is_floating_point:
        return (1.5, 1)
    return (1,)


def scalar_case(
    overload: str, slots: str, scalars: str, *builds: Callable[[torch.dtype, Any], Call], accepts: str, given: dict[str, str] | None = None
) -> Case:
    """An overload whose promotion takes a Python scalar, called with a scalar that keeps the computation at the dtype
    under test: ``le(uint16 tensor, 1)`` has no kernel, while ``le(uint16 tensor, 0.5)`` runs in float32 and says
    nothing of uint16. Each ``build(d, scalar)`` makes a call with each of ``kept_scalars(d)``; ``accepts`` states, of
    ``STATED``, what ATen accepts (it refuses the rest), and tests/test_truth.py checks ATen agrees."""
    assert set(accepts.split()) <= set(STATED), accepts

    def call(build: Callable[[torch.dtype, Any], Call], i: int) -> Callable[[torch.dtype], Call]:
        return lambda d: build(d, kept_scalars(d)[min(i, len(kept_scalars(d)) - 1)])

    calls = tuple(call(build, i) for build in builds for i in range(3))
    return Case(overload, tuple(slots.split()), calls, tuple(sorted((given or {}).items())), (), tuple(scalars.split()), frozenset(accepts.split()))


def _scalar_cases(names: str, accepts: str) -> list[Case]:
    """``op(tensor, scalar)`` for overloads whose second argument is ``Scalar other``."""
    return [scalar_case(name, "self", "other", lambda d, s: A(t(d, 2, 3), s), accepts=accepts) for name in names.split()]


_FLOAT32 = {"self": "float32"}
_INDEX = {"index": "int64"}

CASES: tuple[Case, ...] = (
    # matmul family; mixed dtypes are refused, so a second operand held at float32 accepts float32 only
    c("mm", "self mat2", lambda d: A(t(d, 2, 3), t(d, 3, 4))),
    c("mm", "mat2", lambda d: A(t(F32, 2, 3), t(d, 3, 4)), given=_FLOAT32),
    c("bmm", "self mat2", lambda d: A(t(d, 2, 2, 3), t(d, 2, 3, 4))),
    c("matmul", "self other", lambda d: A(t(d, 2, 3), t(d, 3, 4))),
    c("matmul", "other", lambda d: A(t(F32, 2, 3), t(d, 3, 4)), given=_FLOAT32),
    c("addmm", "self mat1 mat2", lambda d: A(t(d, 2, 4), t(d, 2, 3), t(d, 3, 4))),
    c("linear", "input weight bias", lambda d: A(t(d, 2, 3), t(d, 4, 3), t(d, 4))),
    c("baddbmm", "self batch1 batch2", lambda d: A(t(d, 2, 2, 4), t(d, 2, 2, 3), t(d, 2, 3, 4))),
    c("addbmm", "self batch1 batch2", lambda d: A(t(d, 2, 4), t(d, 2, 2, 3), t(d, 2, 3, 4))),
    *companions("addr", "self vec1 vec2", lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2), t(ds[2], 3))),
    c("addmv", "self mat vec", lambda d: A(t(d, 2), t(d, 2, 3), t(d, 3))),
    c("mv", "self vec", lambda d: A(t(d, 2, 3), t(d, 3))),
    c("dot", "self tensor", lambda d: A(t(d, 3), t(d, 3))),
    c("outer", "self vec2", lambda d: A(t(d, 2), t(d, 3))),
    c(
        "einsum",
        "tensors",
        lambda d: A("ij,jk->ik", [t(d, 2, 3), t(d, 3, 4)]),
        lambda d: A("i,i->i", [t(d, 3), t(d, 3)]),
        lambda d: A("ij->ji", [t(d, 2, 3)]),
    ),
    # softmax: dtype= and half_to_float let more inputs in
    c("softmax.int", "self", lambda d: A(t(d, 2, 3), 1), lambda d: A(t(d, 2, 3), 1, F32)),
    c("log_softmax.int", "self", lambda d: A(t(d, 2, 3), 1), lambda d: A(t(d, 2, 3), 1, F32)),
    c("_softmax", "self", lambda d: A(t(d, 2, 3), 1, False), lambda d: A(t(d, 2, 3), 1, True)),
    c("_log_softmax", "self", lambda d: A(t(d, 2, 3), 1, False), lambda d: A(t(d, 2, 3), 1, True)),
    # norms, parameters in the input's dtype
    c("layer_norm", "input weight bias", lambda d: A(t(d, 2, 3), [3], t(d, 3), t(d, 3))),
    c("native_layer_norm", "input weight bias", lambda d: A(t(d, 2, 3), [3], t(d, 3), t(d, 3), 1e-5)),
    c("rms_norm", "input weight", lambda d: A(t(d, 2, 3), [3], t(d, 3))),
    c(
        "batch_norm",
        "input weight bias running_mean running_var",
        lambda d: A(t(d, 2, 3, 2), t(d, 3), t(d, 3), t(d, 3), t(d, 3), False, 0.1, 1e-5, False),
        lambda d: A(t(d, 2, 3, 2), t(d, 3), t(d, 3), t(d, 3), t(d, 3), True, 0.1, 1e-5, False),
    ),
    c(
        "native_batch_norm",
        "input weight bias running_mean running_var",
        lambda d: A(t(d, 2, 3, 2), t(d, 3), t(d, 3), t(d, 3), t(d, 3), True, 0.1, 1e-5),
    ),
    c("group_norm", "input weight bias", lambda d: A(t(d, 2, 4, 3), 2, t(d, 4), t(d, 4))),
    c("native_group_norm", "input weight bias", lambda d: A(t(d, 2, 4, 3), t(d, 4), t(d, 4), 2, 4, 3, 2, 1e-5)),
    c(
        "instance_norm",
        "input weight bias running_mean running_var",
        lambda d: A(t(d, 2, 3, 4), t(d, 3), t(d, 3), t(d, 3), t(d, 3), True, 0.1, 1e-5, False),
    ),
    # activations
    *_unary("relu", "silu", "sigmoid", "tanh", "leaky_relu", "elu", "softplus", "hardswish"),
    c("hardtanh", "self", lambda d: A(t(d, 2, 3)), lambda d: A(t(d, 2, 3), 0, 6)),  # unsigned ints only without negative limits
    *_unary("hardsigmoid", "mish", "relu6", "selu", "celu", "log_sigmoid"),
    c("gelu", "self", lambda d: A(t(d, 2, 3)), lambda d: A(t(d, 2, 3), approximate="tanh")),
    c("glu", "self", lambda d: A(t(d, 2, 4), -1)),
    c("threshold", "self", lambda d: A(t(d, 2, 3), 1, 0), lambda d: A(t(d, 2, 3), 1.5, 0.0)),
    c("prelu", "self weight", lambda d: A(t(d, 2, 3), t(d, 1))),
    # pointwise arithmetic and math
    *_binary("add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor", "maximum", "minimum", "atan2"),
    *_binary("logical_and", "bitwise_and.Tensor", "floor_divide", "remainder.Tensor", "eq.Tensor", "lt.Tensor"),
    *_binary("ge.Tensor", "isclose"),
    *promoting("pow.Tensor_Tensor", "self exponent", lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3))),
    *promoting(
        "div.Tensor_mode",
        "self other",
        lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3), rounding_mode="floor"),
        lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3), rounding_mode=None),  # what torch.div(a, b, rounding_mode=None) calls
    ),
    *_scalar_other("rsub.Scalar", "fmod.Scalar", "clamp_min", "remainder.Scalar"),
    c("pow.Tensor_Scalar", "self", lambda d: A(t(d, 2, 3), 2), lambda d: A(t(d, 2, 3), 2.0), lambda d: A(t(d, 2, 3), 1)),
    *_scalar_other("eq.Scalar", "ne.Scalar", "lt.Scalar", "gt.Scalar", "le.Scalar"),
    *_unary("exp", "log", "sqrt", "rsqrt", "abs", "neg", "reciprocal", "sin", "cos", "erf", "floor", "ceil"),
    *_unary("round", "sign", "logical_not", "bitwise_not", "isnan", "isfinite", "nan_to_num", "triu", "tril"),
    *promoting("addcmul", "self tensor1 tensor2", lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3), t(ds[2], 2, 3))),
    *promoting("addcdiv", "self tensor1 tensor2", lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3), t(ds[2], 2, 3))),
    c("lerp.Scalar", "self end", lambda d: A(t(d, 2, 3), t(d, 2, 3), 0.5)),
    c("lerp.Tensor", "self end weight", lambda d: A(t(d, 2, 3), t(d, 2, 3), p(d, 2, 3))),  # no promotion: one dtype
    c("clamp", "self", lambda d: A(t(d, 2, 3), 0, 3), lambda d: A(t(d, 2, 3), 0.5, 3.5)),
    *promoting("clamp.Tensor", "self min max", lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3), t(ds[2], 2, 3))),
    *promoting("where.self", "self other", lambda ds: A(mask(2, 3), t(ds[0], 2, 3), t(ds[1], 2, 3)), given={"condition": "bool"}),
    c("masked_fill.Scalar", "self", lambda d: A(t(d, 2, 3), mask(2, 3), 0), given={"mask": "bool"}),
    c("fill.Scalar", "self", lambda d: A(t(d, 2, 3), 1)),
    # indexing: the data slot under an int64 index, the index slot under float32 data
    c("gather", "self", lambda d: A(t(d, 2, 3), 1, ix(I64, 3, 2, 2)), given=_INDEX),
    c("gather", "index", lambda d: A(t(F32, 2, 3), 1, ix(d, 3, 2, 2)), given=_FLOAT32),
    c("scatter.src", "self src", lambda d: A(t(d, 2, 3), 1, ix(I64, 3, 2, 2), t(d, 2, 2)), given=_INDEX),
    c("scatter.src", "index", lambda d: A(t(F32, 2, 3), 1, ix(d, 3, 2, 2), t(F32, 2, 2)), given={"self": "float32", "src": "float32"}),
    c("scatter.value", "self", lambda d: A(t(d, 2, 3), 1, ix(I64, 3, 2, 2), 1), given=_INDEX),
    c("scatter_add", "self src", lambda d: A(t(d, 2, 3), 1, ix(I64, 3, 2, 2), t(d, 2, 2)), given=_INDEX),
    c("scatter_reduce.two", "self src", lambda d: A(t(d, 2, 3), 1, ix(I64, 3, 2, 2), t(d, 2, 2), "sum"), given=_INDEX),
    c("index_select", "self", lambda d: A(t(d, 2, 3), 1, ix(I64, 3, 2)), given=_INDEX),
    c("index_select", "index", lambda d: A(t(F32, 2, 3), 1, ix(d, 3, 2)), given=_FLOAT32),
    c("index_add", "self source", lambda d: A(t(d, 2, 3), 1, ix(I64, 3, 2), t(d, 2, 2)), given=_INDEX),
    # a bool or uint8 index of the first dimension's length is a mask, an integer one a list of positions
    c("index.Tensor", "self", lambda d: A(t(d, 2, 3), [ix(I64, 2, 2)]), given={"indices": "int64"}),
    c("index.Tensor", "indices", lambda d: A(t(F32, 2, 3), [ix(d, 2, 2)]), given=_FLOAT32),
    c("index_put", "self values", lambda d: A(t(d, 2, 3), [ix(I64, 2, 2)], t(d, 2, 3)), given={"indices": "int64"}),
    c("embedding", "weight", lambda d: A(t(d, 4, 3), ix(I64, 4, 2, 2)), given={"indices": "int64"}),
    c("embedding", "indices", lambda d: A(t(F32, 4, 3), ix(d, 4, 2, 2)), given={"weight": "float32"}),
    # embedding_bag's outputs after the first (offset2bag, bag_size, max_indices) are index tensors of the indices' dtype
    # (in max mode, where each has elements)
    c("embedding_bag", "weight return.0", lambda d: A(t(d, 5, 3), ix(I64, 5, 4), ix(I64, 3, 2), False, 2), given={"indices": "int64", "offsets": "int64"}),
    c("embedding_bag", "indices offsets return.1 return.2 return.3", lambda d: A(t(F32, 5, 3), ix(d, 5, 4), ix(d, 3, 2), False, 2), given={"weight": "float32"}),
    c("take_along_dim", "self", lambda d: A(t(d, 2, 3), ix(I64, 3, 2, 2), 1), given={"indices": "int64"}),
    c("take_along_dim", "indices", lambda d: A(t(F32, 2, 3), ix(d, 3, 2, 2), 1), lambda d: A(t(F32, 2, 3), ix(d, 6, 4)), given=_FLOAT32),
    c("masked_select", "self", lambda d: A(t(d, 2, 3), mask(2, 3)), given={"mask": "bool"}),
    c("one_hot", "self", lambda d: A(ix(d, 3, 4), 3)),
    c("select.int", "self", lambda d: A(t(d, 2, 3), 0, 1)),
    c("nonzero", "self", lambda d: A(t(d, 2, 3))),
    c("topk", "self", lambda d: A(t(d, 2, 3), 2)),
    c("sort", "self", lambda d: A(t(d, 2, 3))),
    c("argsort", "self", lambda d: A(t(d, 2, 3))),
    # reductions
    _with_dtype_argument("sum"),
    _with_dtype_argument("sum.dim_IntList", [1]),
    _with_dtype_argument("mean"),
    _with_dtype_argument("mean.dim", [1]),
    _with_dtype_argument("prod"),
    _with_dtype_argument("prod.dim_int", 1),
    _with_dtype_argument("cumsum", 1),
    _with_dtype_argument("cumprod", 1),
    c("linalg_vector_norm", "self", lambda d: A(t(d, 2, 3)), lambda d: A(t(d, 2, 3), dtype=F32), lambda d: A(t(d, 1)[0])),
    c("amax", "self", lambda d: A(t(d, 2, 3), [1])),
    c("amin", "self", lambda d: A(t(d, 2, 3), [1])),
    c("max.dim", "self", lambda d: A(t(d, 2, 3), 1)),
    c("min.dim", "self", lambda d: A(t(d, 2, 3), 1)),
    c("argmax", "self", lambda d: A(t(d, 2, 3), 1)),
    c("argmin", "self", lambda d: A(t(d, 2, 3), 1)),
    c("var.correction", "self", lambda d: A(t(d, 2, 3), [1])),
    c("std.correction", "self", lambda d: A(t(d, 2, 3), [1])),
    c("var_mean.correction", "self", lambda d: A(t(d, 2, 3), [1])),
    c("norm.ScalarOpt_dim", "self", lambda d: A(t(d, 2, 3), 2, [1])),
    c("logsumexp", "self", lambda d: A(t(d, 2, 3), [1])),
    c("count_nonzero.dim_IntList", "self", lambda d: A(t(d, 2, 3), [1])),
    *_unary("max", "min", "all", "any"),
    # pooling
    c("max_pool2d", "self", lambda d: A(t(d, 1, 2, 4, 4), [2, 2])),
    c("max_pool2d_with_indices", "self", lambda d: A(t(d, 1, 2, 4, 4), [2, 2])),
    c("avg_pool2d", "self", lambda d: A(t(d, 1, 2, 4, 4), [2, 2])),
    c("adaptive_avg_pool2d", "self", lambda d: A(t(d, 1, 2, 4, 4), [2, 2]), lambda d: A(t(d, 1, 2, 4, 4), [1, 1])),  # global pooling
    c("adaptive_max_pool2d", "self", lambda d: A(t(d, 1, 2, 4, 4), [2, 2]), lambda d: A(t(d, 1, 2, 4, 4), [1, 1])),
    c("max_pool1d", "self", lambda d: A(t(d, 1, 2, 4), [2])),
    c("avg_pool1d", "self", lambda d: A(t(d, 1, 2, 4), [2])),
    c("adaptive_avg_pool1d", "self", lambda d: A(t(d, 1, 2, 4), [2]), lambda d: A(t(d, 1, 2, 4), [1])),
    c("upsample_nearest2d.vec", "input", lambda d: A(t(d, 1, 2, 2, 2), [4, 4], None)),
    c("upsample_bilinear2d.vec", "input", lambda d: A(t(d, 1, 2, 2, 2), [4, 4], False, None)),
    # convolution
    c(
        "convolution",
        "input weight bias",
        lambda d: A(t(d, 1, 2, 4, 4), t(d, 3, 2, 2, 2), t(d, 3), [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
    ),
    c("conv2d", "input weight bias", lambda d: A(t(d, 1, 2, 4, 4), t(d, 3, 2, 2, 2), t(d, 3))),
    c("conv1d", "input weight bias", lambda d: A(t(d, 1, 2, 4), t(d, 3, 2, 2), t(d, 3))),
    c("conv_transpose2d.input", "input weight bias", lambda d: A(t(d, 1, 2, 3, 3), t(d, 2, 3, 2, 2), t(d, 3))),
    # attention: a float mask must be float32 or the query's dtype, so the mask depends on the query
    c("scaled_dot_product_attention", "query key value", lambda d: A(t(d, 1, 2, 3, 4), t(d, 1, 2, 3, 4), t(d, 1, 2, 3, 4))),
    c(
        "scaled_dot_product_attention",
        "attn_mask",
        lambda d: A(t(F32, 1, 2, 3, 4), t(F32, 1, 2, 3, 4), t(F32, 1, 2, 3, 4), attn_mask=t(d, 1, 2, 3, 3)),
        given={"query": "float32", "key": "float32", "value": "float32"},
    ),
    c(
        "scaled_dot_product_attention",
        "attn_mask",
        lambda d: A(t(F16, 1, 2, 3, 4), t(F16, 1, 2, 3, 4), t(F16, 1, 2, 3, 4), attn_mask=t(d, 1, 2, 3, 3)),
        given={"query": "float16", "key": "float16", "value": "float16"},
    ),
    # losses: class indices in int64, or class probabilities in the input's dtype; reduction mean, or none (0)
    c("cross_entropy_loss", "self", lambda d: A(t(d, 2, 3), ix(I64, 3, 2)), given={"target": "int64"}),
    c("cross_entropy_loss", "target", lambda d: A(t(F32, 2, 3), ix(d, 3, 2)), lambda d: A(t(F32, 2, 3), p(d, 2, 3)), given=_FLOAT32),
    c("nll_loss", "self", lambda d: A(t(d, 2, 3), ix(I64, 3, 2)), given={"target": "int64"}),
    c("nll_loss", "target", lambda d: A(t(F32, 2, 3), ix(d, 3, 2)), given=_FLOAT32),
    c("binary_cross_entropy", "self target", lambda d: A(p(d, 2, 3), p(d, 2, 3))),
    c("binary_cross_entropy_with_logits", "self target", lambda d: A(t(d, 2, 3), p(d, 2, 3))),
    *promoting("mse_loss", "self target", lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3)), lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3), 0)),
    *promoting("l1_loss", "self target", lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3)), lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3), 0)),
    *promoting("smooth_l1_loss", "self target", lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3)), lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3), 0)),
    *companions("huber_loss", "self target", lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3)), lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3), 0)),
    c("kl_div", "self target", lambda d: A(t(d, 2, 3), p(d, 2, 3))),
    # joining, searching, shapes and copies
    c("cat", "tensors", lambda d: A([t(d, 2, 3), t(d, 1, 3)])),
    c("stack", "tensors", lambda d: A([t(d, 2, 3), t(d, 2, 3)])),
    *companions("searchsorted.Tensor", "sorted_sequence self", lambda ds: A(t(ds[0], 5), t(ds[1], 2, 3))),
    *companions("bucketize.Tensor", "self boundaries", lambda ds: A(t(ds[0], 2, 3), t(ds[1], 5))),
    c("flip", "self", lambda d: A(t(d, 2, 3), [1]), lambda d: A(t(d, 2, 3), [0])),  # whole rows move without a dtype kernel
    c("roll", "self", lambda d: A(t(d, 2, 3), [1], [1])),
    c("repeat", "self", lambda d: A(t(d, 2, 3), [2, 1])),
    c("transpose.int", "self", lambda d: A(t(d, 2, 3), 0, 1)),
    c("permute", "self", lambda d: A(t(d, 2, 3), [1, 0])),
    c("t", "self", lambda d: A(t(d, 2, 3))),
    c("unsqueeze", "self", lambda d: A(t(d, 2, 3), 0)),
    c("squeeze.dim", "self", lambda d: A(t(d, 1, 3), 0)),
    c("flatten.using_ints", "self", lambda d: A(t(d, 2, 3))),
    c("view", "self", lambda d: A(t(d, 2, 3), [3, 2])),
    c("reshape", "self", lambda d: A(t(d, 2, 3), [3, 2])),
    c("expand", "self", lambda d: A(t(d, 1, 3), [2, 3])),
    c("contiguous", "self", lambda d: A(t(d, 2, 3))),
    c("split.Tensor", "self", lambda d: A(t(d, 4, 3), 2)),
    c("chunk", "self", lambda d: A(t(d, 4, 3), 2)),
    c("unbind.int", "self", lambda d: A(t(d, 2, 3))),
    c("clone", "self", lambda d: A(t(d, 2, 3))),
    c("_to_copy", "self", lambda d: A(t(d, 2, 3)), lambda d: A(t(d, 2, 3), dtype=F32)),
    c("constant_pad_nd", "self", lambda d: A(t(d, 2, 3), [1, 1])),
    c("zeros_like", "self", lambda d: A(t(d, 2, 3))),
    c("ones_like", "self", lambda d: A(t(d, 2, 3))),
    c("full_like", "self", lambda d: A(t(d, 2, 3), 1)),
    c("dropout", "input", lambda d: A(t(d, 2, 3), 0.5, False), lambda d: A(t(d, 2, 3), 0.5, True)),
    c("native_dropout", "input", lambda d: A(t(d, 2, 3), 0.5, True), lambda d: A(t(d, 2, 3), 0.5, False)),
    # more pointwise, reductions, sorting, distances, 3-d pooling and convolution, sampling
    *_binary("bitwise_or.Tensor", "bitwise_xor.Tensor", "logical_or", "ne.Tensor", "le.Tensor", "gt.Tensor"),
    *_binary("fmod.Tensor", "hypot", "copysign.Tensor", "xlogy.Tensor"),
    *_scalar_other("add.Scalar", "mul.Scalar", "div.Scalar", "clamp_max"),
    *_unary("log1p", "expm1", "trunc", "frac", "erfinv", "lgamma", "digamma", "sinh", "asin", "atan", "sgn", "angle"),
    *_unary("exp2", "log2", "signbit", "logit", "median", "mode", "aminmax", "histc", "diag_embed", "pdist"),
    c("index_copy", "self source", lambda d: A(t(d, 2, 3), 1, ix(I64, 3, 2), t(d, 2, 2)), given=_INDEX),
    c("narrow", "self", lambda d: A(t(d, 2, 3), 1, 0, 2)),
    c("slice.Tensor", "self", lambda d: A(t(d, 2, 3), 1, 0, 2)),
    c("repeat_interleave.self_int", "self", lambda d: A(t(d, 2, 3), 2)),
    c("tile", "self", lambda d: A(t(d, 2, 3), [2, 1])),
    c("unfold", "self", lambda d: A(t(d, 2, 4), 1, 2, 1)),
    c("cummax", "self", lambda d: A(t(d, 2, 3), 1)),
    c("kthvalue", "self", lambda d: A(t(d, 2, 3), 1)),
    c("logcumsumexp", "self", lambda d: A(t(d, 2, 3), 1)),
    c("std_mean.correction", "self", lambda d: A(t(d, 2, 3), [1])),
    _with_dtype_argument("nansum"),
    c("bincount", "self", lambda d: A(ix(d, 3, 5))),
    c("renorm", "self", lambda d: A(t(d, 2, 3), 2, 0, 1.0)),
    c("cdist", "x1 x2", lambda d: A(t(d, 2, 3), t(d, 4, 3))),
    *companions("cosine_similarity", "x1 x2", lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3))),
    *companions("pairwise_distance", "x1 x2", lambda ds: A(t(ds[0], 2, 3), t(ds[1], 2, 3))),
    c("pixel_shuffle", "self", lambda d: A(t(d, 1, 4, 2, 2), 2)),
    c("upsample_bicubic2d.vec", "input", lambda d: A(t(d, 1, 2, 2, 2), [4, 4], False, None)),
    c("avg_pool3d", "self", lambda d: A(t(d, 1, 1, 4, 4, 4), [2, 2, 2])),
    c("max_pool3d", "self", lambda d: A(t(d, 1, 1, 4, 4, 4), [2, 2, 2])),
    c("conv3d", "input weight bias", lambda d: A(t(d, 1, 2, 4, 4, 4), t(d, 3, 2, 2, 2, 2), t(d, 3))),
    c("bilinear", "input1 input2 weight bias", lambda d: A(t(d, 2, 3), t(d, 2, 4), t(d, 5, 3, 4), t(d, 5))),
    c("grid_sampler_2d", "input grid", lambda d: A(t(d, 1, 1, 3, 3), p(d, 1, 2, 2, 2), 0, 0, False)),
    # out= and in-place overloads: the written tensor (``out``, the mutated ``self``) beside inputs of the dtype
    # under test, float32 or int64 (ATen casts the result into it where it can: ``result type Float can't be
    # cast to the desired output type Long``)
    *_binary_out("add.out", "sub.out", "mul.out", "div.out"),
    *_binary("add_.Tensor", "sub_.Tensor", "mul_.Tensor", "div_.Tensor"),
    c("mm.out", "self mat2 out", lambda d: A(t(d, 2, 3), t(d, 3, 4), out=t(d, 2, 4))),
    c("bmm.out", "self mat2 out", lambda d: A(t(d, 2, 2, 3), t(d, 2, 3, 4), out=t(d, 2, 2, 4))),
    c("addmm.out", "self mat1 mat2 out", lambda d: A(t(d, 2, 4), t(d, 2, 3), t(d, 3, 4), out=t(d, 2, 4))),
    c("addmm_", "self mat1 mat2", lambda d: A(t(d, 2, 4), t(d, 2, 3), t(d, 3, 4))),
    *_unary_out("abs.out", "neg.out", "exp.out", "sqrt.out", "sigmoid.out", "floor.out"),
    *_unary("abs_", "neg_", "exp_", "relu_", "sigmoid_", "tanh_", "zero_"),
    c("index_put_", "self values", lambda d: A(t(d, 2, 3), [ix(I64, 2, 2)], t(d, 2, 3)), given={"indices": "int64"}),
    c("clamp_", "self", lambda d: A(t(d, 2, 3), 0, 3), lambda d: A(t(d, 2, 3), 0.5, 3.5)),
    c("fill_.Scalar", "self", lambda d: A(t(d, 2, 3), 1)),
    c("masked_fill_.Scalar", "self", lambda d: A(t(d, 2, 3), mask(2, 3), 0), given={"mask": "bool"}),
    c("mul_.Scalar", "self", lambda d: A(t(d, 2, 3), 2), lambda d: A(t(d, 2, 3), 2.0)),
    c("copy_", "self src", lambda d: A(t(d, 2, 3), t(d, 2, 3))),
    # summing two dimensions apart (a broadcast's backward, ``kron``'s) takes a path that runs the float8 dtypes
    c("sum.IntList_out", "self out", lambda d: A(t(d, 2, 3), [1], out=t(d, 2)), lambda d: A(t(d, 2, 3, 2, 3), [0, 2], out=t(d, 3, 3))),
    c("cat.out", "tensors out", lambda d: A([t(d, 2, 3), t(d, 2, 3)], out=t(d, 4, 3))),
    *promoting("where.self_out", "self other out", lambda ds: A(mask(2, 3), t(ds[0], 2, 3), t(ds[1], 2, 3), out=t(ds[2], 2, 3)), given={"condition": "bool"}),
    # issue 33 (slots): out= and in-place overloads of int_to_float ops, whose written tensor cannot hold the float
    # result of an integer input (``acos_(int64)``), and out= overloads that write several tensors, the values
    # judged beside int64 indices
    *_unary_out("acos.out", "sin.out", "log.out", "rsqrt.out", "erf.out"),
    *_unary("acos_", "sin_", "log_", "rsqrt_", "erf_", "sgn_"),
    *_binary_out("atan2.out"),
    *_binary("atan2_"),
    # issue 52: an alias is its target (arccos is acos, clip is clamp), in-place and out= included
    *_unary("arccos", "arccos_"),
    *_unary_out("arccos.out"),
    c("clip", "self", lambda d: A(t(d, 2, 3), 0, 3), lambda d: A(t(d, 2, 3), 0.5, 3.5)),
    c("clip_", "self", lambda d: A(t(d, 2, 3), 0, 3), lambda d: A(t(d, 2, 3), 0.5, 3.5)),
    c("max.dim_max", "self max", lambda d: A(t(d, 2, 3), 1, max=t(d, 2), max_values=ix(I64, 1, 2)), given={"max_values": "int64"}),
    c("min.dim_min", "self min", lambda d: A(t(d, 2, 3), 1, min=t(d, 2), min_indices=ix(I64, 1, 2)), given={"min_indices": "int64"}),
    c("sort.values", "self values", lambda d: A(t(d, 2, 3), values=t(d, 2, 3), indices=ix(I64, 1, 2, 3)), given={"indices": "int64"}),
    c("topk.values", "self values", lambda d: A(t(d, 2, 3), 2, values=t(d, 2, 2), indices=ix(I64, 1, 2, 2)), given={"indices": "int64"}),
    c("cummax.out", "self values", lambda d: A(t(d, 2, 3), 1, values=t(d, 2, 3), indices=ix(I64, 1, 2, 3)), given={"indices": "int64"}),
    c("aminmax.out", "self min max", lambda d: A(t(d, 2, 3), min=t(d), max=t(d))),
    # overloads whose promotion takes a Python scalar (issue 33): a scalar that keeps the computation at the dtype
    # (``le(uint16, 1)``, ``add(bool, True)``), and what ATen says, of ``STATED``
    *_scalar_cases("add.Scalar add_.Scalar", "bool int64 float32 complex32 complex64"),
    *_scalar_cases("sub.Scalar rsub.Scalar sub_.Scalar", "int64 float32 complex32 complex64"),
    *_scalar_cases("mul.Scalar", "bool int64 uint16 uint32 uint64 float32 complex32 complex64"),
    *_scalar_cases("mul_.Scalar eq.Scalar ne.Scalar", " ".join(STATED)),
    *(scalar_case(name, "self", "value", lambda d, s: A(t(d, 2, 3), s), accepts=" ".join(STATED)) for name in ("fill.Scalar", "fill_.Scalar")),
    *_scalar_cases("div.Scalar", "bool int64 uint16 uint32 uint64 float32 complex64"),
    *_scalar_cases("xlogy.Scalar_Other copysign.Scalar", "bool int64 uint16 uint32 uint64 float32"),
    *_scalar_cases("lt.Scalar le.Scalar gt.Scalar ge.Scalar le_.Scalar", "bool int64 float32"),
    *_scalar_cases("fmod.Scalar remainder.Scalar floor_divide.Scalar", "int64 float32"),
    *_scalar_cases("bitwise_and.Scalar bitwise_or.Scalar bitwise_xor.Scalar", "bool int64 uint16 uint32 uint64"),
    *_scalar_cases("bitwise_left_shift.Tensor_Scalar", "int64"),
    # kernels that forward to the bitwise ones: they promote as their target does
    *_scalar_cases("__and__.Scalar __or__.Scalar __xor__.Scalar", "bool int64 uint16 uint32 uint64"),
    *_scalar_cases("__lshift__.Scalar __rshift__.Scalar bitwise_right_shift.Tensor_Scalar", "int64"),
    scalar_case("clamp_min", "self", "min", lambda d, s: A(t(d, 2, 3), s), accepts="int64 float32"),
    scalar_case("clamp_min_", "self", "min", lambda d, s: A(t(d, 2, 3), s), accepts="int64 float32"),
    scalar_case("clamp_max", "self", "max", lambda d, s: A(t(d, 2, 3), s), accepts="int64 float32"),
    scalar_case("clamp", "self", "min max", lambda d, s: A(t(d, 2, 3), s, s), accepts="int64 float32"),
    scalar_case("remainder.Scalar_Tensor", "other", "self", lambda d, s: A(s, t(d, 2, 3)), accepts="int64 float32"),
    scalar_case(
        "div.Scalar_mode",
        "self",
        "other",
        lambda d, s: A(t(d, 2, 3), s, rounding_mode="floor"),
        lambda d, s: A(t(d, 2, 3), s, rounding_mode=None),  # a true division, as ``div.Tensor_mode[self other]`` counts it
        accepts="bool int64 uint16 uint32 uint64 float32 complex64",
    ),
    # ``pow(x, 1)`` copies without the dtype's kernel, as ``pow.Tensor_Scalar[self]`` counts it
    scalar_case("pow.Tensor_Scalar", "self", "exponent", lambda d, s: A(t(d, 2, 3), s), accepts="bool int64 uint16 uint32 uint64 float32 complex32 complex64 float8_e4m3fn float8_e8m0fnu"),
    scalar_case("where.ScalarOther", "self", "other", lambda d, s: A(mask(2, 3), t(d, 2, 3), s), accepts=" ".join(STATED), given={"condition": "bool"}),
    scalar_case("where.ScalarSelf", "other", "self", lambda d, s: A(mask(2, 3), s, t(d, 2, 3)), accepts=" ".join(STATED), given={"condition": "bool"}),
    scalar_case("masked_fill.Scalar", "self", "value", lambda d, s: A(t(d, 2, 3), mask(2, 3), s), accepts="bool int64 float32 complex32 complex64", given={"mask": "bool"}),
    scalar_case("masked_fill_.Scalar", "self", "value", lambda d, s: A(t(d, 2, 3), mask(2, 3), s), accepts="bool int64 float32 complex32 complex64", given={"mask": "bool"}),
    scalar_case("lerp.Scalar", "self end", "weight", lambda d, s: A(t(d, 2, 3), t(d, 2, 3), s), accepts="float32 complex64"),
    scalar_case("addcmul", "self tensor1 tensor2", "value", lambda d, s: A(t(d, 2, 3), t(d, 2, 3), t(d, 2, 3), value=s), accepts="int64 float32 complex32 complex64"),
    scalar_case("addcdiv", "self tensor1 tensor2", "value", lambda d, s: A(t(d, 2, 3), t(d, 2, 3), t(d, 2, 3), value=s), accepts="float32 complex64"),
    scalar_case("threshold", "self", "threshold value", lambda d, s: A(t(d, 2, 3), s, s), accepts="int64 float32"),
    scalar_case("hardtanh", "self", "min_val max_val", lambda d, s: A(t(d, 2, 3), s, s), accepts="int64 float32"),
    scalar_case("leaky_relu", "self", "negative_slope", lambda d, s: A(t(d, 2, 3), s), accepts="float32"),
    # returns a ScalarType argument sets: the dtype under test passed as ``dtype`` and wanted back at ``return.0``
    c("to.dtype", "dtype return.0", lambda d: A(t(F32, 2, 3), d), given=_FLOAT32),
    c("to.device", "dtype return.0", lambda d: A(t(F32, 2, 3), torch.device("cpu"), d), given=_FLOAT32),
    c("to.dtype_layout", "dtype return.0", lambda d: A(t(F32, 2, 3), dtype=d), given=_FLOAT32),
    c("_to_copy", "dtype return.0", lambda d: A(t(F32, 2, 3), dtype=d), given=_FLOAT32),
    c("ones_like", "dtype return.0", lambda d: A(t(F32, 2, 3), dtype=d), given=_FLOAT32),
    c("zeros_like", "dtype return.0", lambda d: A(t(F32, 2, 3), dtype=d), given=_FLOAT32),
    c("sum", "dtype return.0", lambda d: A(t(F32, 2, 3), dtype=d), given=_FLOAT32),
    c("sum.dim_IntList", "dtype return.0", lambda d: A(t(F32, 2, 3), [1], dtype=d), lambda d: A(t(F32, 2, 3, 2, 3), [0, 2], dtype=d), given=_FLOAT32),
    c("zeros", "dtype return.0", lambda d: A([2, 3], dtype=d)),
    c("ones", "dtype return.0", lambda d: A([2, 3], dtype=d)),
    c("full", "dtype return.0", lambda d: A([2, 3], 1, dtype=d)),
    c("empty.memory_format", "dtype return.0", lambda d: A([2, 3], dtype=d)),
    c("arange", "dtype return.0", lambda d: A(5, dtype=d)),
    c("arange.start", "dtype return.0", lambda d: A(0, 5, dtype=d)),
    c("randn", "dtype return.0", lambda d: A([2, 3], dtype=d)),
    # the same returns with the argument left None: the input's dtype (``_to_copy``), int64 for an integer sum, the
    # default dtype for a factory
    c("_to_copy", "self return.0", lambda d: A(t(d, 2, 3))),
    c("zeros_like", "self return.0", lambda d: A(t(d, 2, 3))),
    c("sum", "self return.0", lambda d: A(t(d, 2, 3))),
    c("sum.dim_IntList", "self return.0", lambda d: A(t(d, 2, 3), [1]), lambda d: A(t(d, 2, 3, 2, 3), [0, 2])),
    c("cumsum", "self return.0", lambda d: A(t(d, 2, 3), 1)),
    c("prod", "self return.0", lambda d: A(t(d, 2, 3))),
    c("prod.dim_int", "self return.0", lambda d: A(t(d, 2, 3), 1)),
    c("cumprod", "self return.0", lambda d: A(t(d, 2, 3), 1)),
    # their in-place and out= siblings compute in the tensor they write: cumsum_ of int8 stays int8
    c("cumsum_", "self", lambda d: A(t(d, 2, 3), 1)),
    c("cumsum.out", "self out", lambda d: A(t(d, 2, 3), 1, out=t(d, 2, 3))),
    c("zeros", "return.0", lambda d: A([2, 3])),
    c("randn", "return.0", lambda d: A([2, 3])),
    # numbers alone set the return: ``where(c, True, False)`` is bool, ``where(c, 1j, 2j)`` complex64
    c("where.Scalar", "return.0", lambda d: A(mask(2, 3), kept_scalars(d)[0], kept_scalars(d)[0]), given={"condition": "bool"}),
    # returns of one dtype whatever the input's: ``_cast_Byte`` of a float32 tensor returns uint8, no other dtype
    *(c(f"_cast_{name}", "return.0", lambda d: A(t(F32, 2, 3)), given=_FLOAT32) for name in ("Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double")),
)


@dataclass(frozen=True)
class Mixed:
    """One call with tensors (or a Python number) of different dtypes; ``spelled`` names them in argument order."""

    overload: str
    spelled: str  # 'int64, float32:0' (':0' a 0-dim tensor)
    call: Callable[[], Call]

    @property
    def key(self) -> str:
        return f"{self.overload}({self.spelled})"


def v(spec: str, *shape: int) -> Any:
    """A value from its spelling: 'int64' a tensor of ``shape``, 'float64:0' a 0-dim tensor, '0.5' a Python float,
    '1' a Python int."""
    if spec[0].isdigit():
        return float(spec) if "." in spec else int(spec)
    name, _, zero_dim = spec.partition(":")
    return t(getattr(torch, name), *(() if zero_dim else shape))


def mixed(overload: str, build: Callable[[list[str]], Call], *combinations: str) -> list[Mixed]:
    """A mixed call per combination ('int64 float32'), ``build`` making the call from the values' spellings."""
    return [Mixed(overload, ", ".join(specs.split()), (lambda specs: lambda: build(specs.split()))(specs)) for specs in combinations]


_BOTH_WAYS = ("int64 float32", "float32 int64", "bool float16", "float16 bool", "float32 float64:0", "int8 float32", "uint16 uint16:0")


def _binary_mixed(*names: str, combinations: tuple[str, ...] = _BOTH_WAYS) -> list[Mixed]:
    return [m for name in names for m in mixed(name, lambda s: A(v(s[0], 2, 3), v(s[1], 2, 3)), *combinations)]


MIXED: tuple[Mixed, ...] = (
    *_binary_mixed("add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor", "maximum", "minimum", "atan2"),
    *_binary_mixed("add.Tensor", "mul.Tensor", "div.Tensor", combinations=("int64 0.5", "int64 int64", "uint8 int8")),
    *_binary_mixed("logical_and", "logical_or", "bitwise_and.Tensor", "floor_divide", "remainder.Tensor", "fmod.Tensor"),
    *_binary_mixed("eq.Tensor", "ne.Tensor", "lt.Tensor", "le.Tensor", "gt.Tensor", "ge.Tensor"),
    *_binary_mixed("pow.Tensor_Tensor", "hypot", "copysign.Tensor", "xlogy.Tensor"),
    *mixed("div.Tensor_mode", lambda s: A(v(s[0], 2, 3), v(s[1], 2, 3), rounding_mode="trunc"), *_BOTH_WAYS),
    *mixed("where.self", lambda s: A(mask(2, 3), v(s[0], 2, 3), v(s[1], 2, 3)), "int32 float64", "float64 int32", "bool float16", "uint16 uint16:0"),
    *mixed("cat", lambda s: A([v(s[0], 2, 3), v(s[1], 2, 3)]), "float32 int64", "int64 float32", "bool float16", "uint16 int8"),
    *mixed("clamp.Tensor", lambda s: A(v(s[0], 2, 3), v(s[1], 2, 3), v(s[2], 2, 3)), "int64 float32 float32", "float32 int64 int64", "uint16 uint16 uint16:0"),
    *mixed("addcdiv", lambda s: A(v(s[0], 2, 3), v(s[1], 2, 3), v(s[2], 2, 3)), "float32 int64 float32", "int64 int64 int64", "int32 int64 int32", "float16 float32 float32"),
    *mixed("addcmul", lambda s: A(v(s[0], 2, 3), v(s[1], 2, 3), v(s[2], 2, 3)), "float32 int64 float32", "int64 int32 int64", "bool float16 float16"),
    *mixed("mse_loss", lambda s: A(v(s[0], 2, 3), v(s[1], 2, 3)), "float32 int64", "float16 float32", "int64 int64"),
    *mixed("mm", lambda s: A(v(s[0], 2, 3), v(s[1], 3, 4)), "float32 float64", "int64 float32"),
    # a Python int beside a bool tensor computes in int64, though the shifts have no bool kernel
    *_binary_mixed("bitwise_left_shift.Tensor_Scalar", "__lshift__.Scalar", "__and__.Scalar", combinations=("bool 1",)),
    # out= of a promoting overload: torch casts the result into ``out`` where it can (``add(float32, float32,
    # out=int64)``: ``result type Float can't be cast to the desired output type Long``; ``add(int64, int64, out=float32)`` runs)
    *mixed("add.out", lambda s: A(v(s[0], 2, 3), v(s[1], 2, 3), out=v(s[2], 2, 3)), "float32 float32 int64", "int64 int64 float32", "float32 float32 float16", "float32 float32 bool"),
    *mixed("mul.out", lambda s: A(v(s[0], 2, 3), v(s[1], 2, 3), out=v(s[2], 2, 3)), "float32 float32 int32", "int32 int32 float64", "int64 float32 float32"),
    *mixed("sin.out", lambda s: A(v(s[0], 2, 3), out=v(s[1], 2, 3)), "int64 int64", "int64 float64"),
    *mixed("lerp.Tensor", lambda s: A(v(s[0], 2, 3), v(s[1], 2, 3), v(s[2], 2, 3)), "float32 float64 float32", "float64 float32 float32"),
    # the norms' weight and bias: the input's dtype, or float32 beside a half input (``mixed dtype (CPU): expect parameter
    # to have scalar type of Float``); float32 beside a float64 input is refused too (``all inputs must share same datatype``)
    *mixed("native_layer_norm", lambda s: A(v(s[0], 2, 4), [4], v(s[1], 4), v(s[2], 4), 1e-5), "float64 float16 float16", "float32 bfloat16 bfloat16", "bfloat16 float32 float32", "float64 float32 float32"),
    *mixed("layer_norm", lambda s: A(v(s[0], 2, 4), [4], v(s[1], 4), v(s[2], 4)), "float64 float16 float16", "float16 float32 float32", "float64 float32 float32"),
    *mixed(
        "native_group_norm",
        lambda s: A(v(s[0], 2, 4, 3), v(s[1], 4), v(s[2], 4), 2, 4, 3, 2, 1e-5),
        "float32 float16 float16",
        "float16 float32 float32",
        "float64 float32 float32",
        "float16 float16 float16",
    ),
    *mixed(
        "native_batch_norm",
        lambda s: A(v(s[0], 2, 3, 4), *(v(x, 3) for x in s[1:]), True, 0.1, 1e-5),
        "float32 bfloat16 bfloat16 bfloat16 bfloat16",
        "float64 float32 float32 float32 float32",
        "bfloat16 float32 float32 float32 float32",
    ),
    # index_put's values are self's dtype, but where one bool mask and a one-element value take masked_fill
    *mixed(
        "index_put",
        lambda s: A(v(s[0], 3, 4), [t(torch.bool, 3) if s[1] == "bool" else torch.tensor([0, 2])], v(s[2], 4), s[3] == "True"),
        "float32 bool float64:0 False",
        "float32 bool int64:0 False",
        "int64 bool float32:0 False",
        "float32 int64 float64:0 False",
        "float32 bool float64 False",
        "float32 bool float64:0 True",
        "float32 int64 float32 False",
    ),
    *(
        case
        for overload in ("index_put_", "_index_put_impl_", "_unsafe_index_put")  # one kernel: index_put's path and rule
        for case in mixed(
            overload,
            lambda s: A(v(s[0], 3, 4), [t(torch.bool, 3) if s[1] == "bool" else torch.tensor([0, 2])], v(s[2], 4), False),
            "float32 bool float64:0",
            "float32 int64 float64:0",
        )
    ),
    # a norm's weight is the input's dtype or the dtype ATen computes it in: float32 beside half, float64 beside float64
    *mixed("batch_norm", lambda s: A(v(s[0], 2, 3, 4), *(v(x, 3) for x in s[1:]), True, 0.1, 1e-5, False), "float64 float32 float32 float32 float32"),
    *mixed("group_norm", lambda s: A(v(s[0], 2, 4, 3), 2, v(s[1], 4), v(s[2], 4)), "float64 float32 float32", "bfloat16 float32 float32"),
    *mixed(
        "native_layer_norm_backward",
        lambda s: A(v(s[0], 2, 4), v(s[1], 2, 4), [4], v(s[2], 2, 1), v(s[3], 2, 1), v(s[4], 4), v(s[5], 4), [True, True, True]),
        "float64 float64 float32 float32 float32 float32",
        "float16 float16 float32 float32 float32 float32",
    ),
    # out= of a computation in the input's complex counterpart: ``out`` is exactly that dtype
    *mixed("fft_ifft.out", lambda s: A(v(s[0], 4), out=v(s[1], 4)), "complex128 complex128", "float64 complex128", "float32 complex64", "float32 complex128"),
)


@dataclass(frozen=True)
class Autocast:
    """One call made under CPU autocast at ``dtype``; ``spelled`` names its values in argument order, as ``Mixed`` does."""

    overload: str
    dtype: str  # the autocast dtype: 'bfloat16', 'float16'
    spelled: str
    call: Callable[[], Call]

    @property
    def key(self) -> str:
        return f"{self.overload}({self.spelled}) under autocast {self.dtype}"


def under_autocast(overload: str, build: Callable[[list[str]], Call], *combinations: str) -> list[Autocast]:
    """A call per combination ('float32 float32') under CPU autocast at bfloat16 and at float16."""
    return [
        Autocast(overload, dtype, ", ".join(specs.split()), (lambda specs: lambda: build(specs.split()))(specs))
        for dtype in ("bfloat16", "float16")
        for specs in combinations
    ]


def _classes(spec: str) -> torch.Tensor:
    """Class indices below 5, for a loss's target."""
    return ix(getattr(torch, spec), 5, 2)


AUTOCAST: tuple[Autocast, ...] = (
    # lower_precision_fp on CPU: every floating tensor but a float64 one reaches the kernel at the autocast dtype
    *under_autocast("linear", lambda s: A(v(s[0], 2, 4), v(s[1], 3, 4), v(s[2], 3)), "float32 float32 float32", "float64 float64 float64"),
    *under_autocast("addmm", lambda s: A(v(s[0], 2, 3), v(s[1], 2, 4), v(s[2], 4, 3)), "float32 float32 float32", "bfloat16 float16 float32"),
    *under_autocast("conv1d", lambda s: A(v(s[0], 1, 2, 5), v(s[1], 3, 2, 3), v(s[2], 3)), "float32 float32 float32"),
    *under_autocast("conv2d", lambda s: A(v(s[0], 1, 2, 4, 4), v(s[1], 3, 2, 3, 3), v(s[2], 3)), "float32 float32 float32"),
    *under_autocast("mm", lambda s: A(v(s[0], 2, 3), v(s[1], 3, 4)), "float32 float32", "float32 float64"),
    *under_autocast("bmm", lambda s: A(v(s[0], 2, 2, 3), v(s[1], 2, 3, 4)), "float32 float32", "float16 float32"),
    *under_autocast("baddbmm", lambda s: A(v(s[0], 2, 2, 4), v(s[1], 2, 2, 3), v(s[2], 2, 3, 4)), "float32 float32 float32"),
    *under_autocast("matmul", lambda s: A(v(s[0], 2, 3), v(s[1], 3, 4)), "float32 float32"),
    *under_autocast(
        "scaled_dot_product_attention", lambda s: A(v(s[0], 1, 2, 4, 8), v(s[1], 1, 2, 4, 8), v(s[2], 1, 2, 4, 8)), "float32 float32 float32"
    ),
    # no CPU policy: the kernel gets the tensors as given
    *under_autocast("layer_norm", lambda s: A(v(s[0], 2, 4), [4], v(s[1], 4), v(s[2], 4)), "float32 float32 float32", "bfloat16 float32 float32"),
    *under_autocast("softmax.int", lambda s: A(v(s[0], 2, 3), -1), "float32", "bfloat16"),
    *under_autocast("log_softmax.int", lambda s: A(v(s[0], 2, 3), -1), "float32", "bfloat16"),
    *under_autocast("gelu", lambda s: A(v(s[0], 2, 3)), "float32", "bfloat16"),
    # fp32 on CPU: float32
    *under_autocast("prod", lambda s: A(v(s[0], 2, 3)), "bfloat16", "float16"),
    *under_autocast("mse_loss", lambda s: A(v(s[0], 2, 3), v(s[1], 2, 3)), "bfloat16 float32", "bfloat16 bfloat16"),
    *under_autocast("cross_entropy_loss", lambda s: A(v(s[0], 2, 5), _classes(s[1])), "bfloat16 int64"),
    *under_autocast("binary_cross_entropy_with_logits", lambda s: A(v(s[0], 2, 3), p(getattr(torch, s[1]), 2, 3)), "bfloat16 bfloat16"),
    # promote on CPU: float32 where a tensor is float32, else the autocast dtype
    *under_autocast("stack", lambda s: A([v(s[0], 2, 3), v(s[1], 2, 3)]), "bfloat16 float32", "bfloat16 bfloat16"),
    *under_autocast("cat", lambda s: A([v(s[0], 2, 3), v(s[1], 2, 3)]), "bfloat16 float32"),
)


def _lower(overload: str, build: Callable[[list[str]], Call], *templates: str) -> list[Mixed]:
    """A mixed call per template at bfloat16 and at float16 (``L`` in a template): a mixed-precision training step's."""
    return [m for lower in ("bfloat16", "float16") for m in mixed(overload, build, *(template.replace("L", lower) for template in templates))]


_KEEP_ALL = [True, True, True]

BACKWARD: tuple[Mixed, ...] = (
    # norms keep float32 statistics (mean, rstd, running stats) beside half activations, and may take a float32 weight
    *_lower("native_layer_norm", lambda s: A(v(s[0], 2, 4), [4], v(s[1], 4), v(s[2], 4), 1e-5), "L float32 float32", "L L L"),
    *_lower(
        "native_layer_norm_backward",
        lambda s: A(v(s[0], 2, 4), v(s[1], 2, 4), [4], v(s[2], 2, 1), v(s[3], 2, 1), v(s[4], 4), v(s[5], 4), _KEEP_ALL),
        "L L float32 float32 float32 float32",
        "L L float32 float32 L L",
        "L L L L L L",
    ),
    *_lower("native_batch_norm", lambda s: A(v(s[0], 2, 3, 4), *(v(x, 3) for x in s[1:]), True, 0.1, 1e-5), "L float32 float32 float32 float32"),
    *_lower(
        "native_batch_norm_backward",
        lambda s: A(v(s[0], 2, 3, 4), v(s[1], 2, 3, 4), *(v(x, 3) for x in s[2:]), True, 1e-5, _KEEP_ALL),
        "L L float32 float32 float32 float32 float32",
        "L L L L L L L",
    ),
    *_lower("native_group_norm", lambda s: A(v(s[0], 2, 4, 3), v(s[1], 4), v(s[2], 4), 2, 4, 3, 2, 1e-5), "L float32 float32"),
    *_lower(
        "native_group_norm_backward",
        lambda s: A(v(s[0], 2, 4, 3), v(s[1], 2, 4, 3), v(s[2], 2, 2), v(s[3], 2, 2), v(s[4], 4), 2, 4, 3, 2, _KEEP_ALL),
        "L L float32 float32 float32",
        "L L L L L",
    ),
    # attention: the forward returns a float32 logsumexp beside half outputs, which the backward takes back
    *_lower("_scaled_dot_product_flash_attention_for_cpu", lambda s: A(*(v(x, 1, 2, 4, 8) for x in s)), "L L L"),
    *_lower(
        "_scaled_dot_product_flash_attention_for_cpu_backward",
        lambda s: A(*(v(x, 1, 2, 4, 8) for x in s[:5]), v(s[5], 1, 2, 4), 0.0, False),
        "L L L L L float32",
    ),
    # softmax's backward names the forward's input dtype (the last spelling: a ScalarType, not a tensor)
    *_lower("_softmax_backward_data", lambda s: A(v(s[0], 2, 4), p(getattr(torch, s[1]), 2, 4), -1, getattr(torch, s[2])), "L L float32", "float32 float32 L"),
    *_lower("_log_softmax_backward_data", lambda s: A(v(s[0], 2, 4), p(getattr(torch, s[1]), 2, 4).log(), -1, getattr(torch, s[2])), "L L float32", "float32 float32 L"),
    *_lower("embedding_dense_backward", lambda s: A(v(s[0], 3, 4), ix(getattr(torch, s[1]), 5, 3), 5, -1, False), "L int64"),
    *_lower("nll_loss_forward", lambda s: A(p(getattr(torch, s[0]), 2, 5).log(), _classes(s[1]), None, 1, -100), "L int64"),
    *_lower(
        "nll_loss_backward",
        lambda s: A(v(s[0]), p(getattr(torch, s[1]), 2, 5).log(), _classes(s[2]), None, 1, -100, v(s[3])),
        "L:0 L int64 L:0",
        "L:0 L int64 float32:0",
    ),
    *_lower(
        "convolution_backward",
        lambda s: A(v(s[0], 1, 3, 3, 3), v(s[1], 1, 2, 5, 5), v(s[2], 3, 2, 3, 3), [3], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, _KEEP_ALL),
        "L L L",
    ),
    *(m for name in ("gelu_backward", "silu_backward", "tanh_backward", "sigmoid_backward") for m in _lower(name, lambda s: A(v(s[0], 2, 4), v(s[1], 2, 4)), "L L")),
    *_lower("threshold_backward", lambda s: A(v(s[0], 2, 4), v(s[1], 2, 4), 0), "L L"),
    *_lower("native_dropout_backward", lambda s: A(v(s[0], 2, 4), mask(2, 4), 2.0), "L bool"),
    *_lower("mse_loss_backward", lambda s: A(v(s[0]), v(s[1], 2, 4), v(s[2], 2, 4), 1), "L:0 L L"),
    # a step without autocast that mixes a half activation with a float32 weight: mm refuses it
    *_lower("mm", lambda s: A(v(s[0], 2, 3), v(s[1], 3, 4)), "L float32"),
    *_lower("sum.dim_IntList", lambda s: A(v(s[0], 2, 3), [0], True, dtype=torch.float32), "L"),
)
"""Calls a mixed-precision training step makes (forward and backward), at bfloat16 and at float16: the norms'
float32 statistics and weights beside half activations, attention's float32 logsumexp, the backward kernels'
gradients; each judged as a mixed call."""


@dataclass(frozen=True)
class Valued(Mixed):
    """A single call with every tensor at ``dtype`` and one argument at a value: ``div(complex64, complex64, rounding_mode='floor')``."""

    dtype: str = ""
    argument: str = ""
    value: str | None = None


def _valued(overload: str, build: Callable[[torch.dtype, Any], Call], argument: str, pairs: str) -> list[Valued]:
    """A call per 'dtype=value' pair ('complex64=floor', 'bool=None'): every tensor at the dtype, the argument at the value."""
    found = []
    for pair in pairs.split():
        name, _, value = pair.partition("=")
        given = None if value == "None" else value
        call = (lambda d, given: lambda: build(d, given))(getattr(torch, name), given)
        found.append(Valued(overload, f"{name}, {argument}={given!r}", call, name, argument, given))
    return found


VALUES: tuple[Valued, ...] = (
    *_valued("div.Tensor_mode", lambda d, mode: A(t(d, 2, 3), t(d, 2, 3), rounding_mode=mode), "rounding_mode",
             "complex64=None complex64=floor complex64=trunc bool=floor bool=trunc uint16=None uint16=floor uint16=trunc int64=floor"),
    *_valued("div.Scalar_mode", lambda d, mode: A(t(d, 2, 3), 2, rounding_mode=mode), "rounding_mode", "complex64=None complex64=floor complex64=trunc uint16=floor"),
    *_valued("scatter_reduce.two", lambda d, how: A(t(d, 3, 4), 0, ix(torch.int64, 3, 1, 4), t(d, 1, 4), how), "reduce",
             "complex64=sum complex64=amax complex64=amin bool=amax bool=mean float32=mean"),
    *_valued("index_reduce", lambda d, how: A(t(d, 3, 4), 0, ix(torch.int64, 3, 2), t(d, 2, 4), how), "reduce",
             "complex64=prod complex64=amax bool=mean bool=amin uint16=prod uint16=mean"),
)
"""Single calls whose verdict depends on an argument's value: ``div(complex64, complex64, rounding_mode='floor')`` is
refused where ``rounding_mode=None`` runs (``"div_floor_cpu" not implemented for 'ComplexFloat'``). A set is the union
over the values, so a refused value's call is declared: these measure what the yaml's sets cannot say."""

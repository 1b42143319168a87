"""The checker under autocast: a call is judged as its declared ``autocast:`` policy hands it to the kernel."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from migrate.check.autocast import AutocastPolicy, handed
from migrate.check.checker import AUTOCAST_POLICY, Declarations, DtypeViolation, checking

FLOATS = "[torch.float16, torch.bfloat16, torch.float32, torch.float64]"

# What ATen's CPU kernels take, with torch 2.13's CPU autocast policies (the full run writes the same lines).
DECLARED = f"""\
- func: linear(T input, T weight, T? bias=None) -> T
  type_constraints: {{T: {FLOATS}}}
  autocast: {{CPU: lower_precision_fp, CUDA: lower_precision_fp}}

- func: conv2d(T input, T weight, T? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> T
  type_constraints: {{T: {FLOATS}}}
  autocast: {{CPU: lower_precision_fp, CUDA: lower_precision_fp}}

- func: scaled_dot_product_attention(T query, T key, T value, T? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> T
  type_constraints: {{T: {FLOATS}}}
  autocast: {{CPU: lower_precision_fp, CUDA: lower_precision_fp}}

- func: layer_norm(T input, SymInt[] normalized_shape, U? weight=None, U? bias=None, float eps=1e-05, bool cudnn_enable=True) -> T
  type_constraints: {{T: {FLOATS}, U: {FLOATS}}}
  autocast: {{CUDA: fp32}}

- func: gelu(T self, *, str approximate='none') -> T
  type_constraints: {{T: {FLOATS}}}

- func: cross_entropy_loss(T self, U target, T? weight=None, int reduction=Mean, SymInt ignore_index=-100, float label_smoothing=0.0) -> T
  type_constraints: {{T: {FLOATS}, U: [torch.int64]}}
  autocast: {{CPU: fp32}}

- func: nll_loss_nd(T self, U target, T? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> T
  type_constraints: {{T: {FLOATS}, U: [torch.int64]}}

- func: nll_loss(T self, U target, T? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> T
  type_constraints: {{T: {FLOATS}, U: [torch.int64]}}
  autocast: {{CPU: fp32}}

- func: mm(T self, T mat2) -> T
  type_constraints: {{T: [torch.bfloat16, torch.float64]}}
  autocast: {{CPU: lower_precision_fp}}

- func: prod(T self, *, ScalarType? dtype=None) -> T
  type_constraints: {{T: [torch.float32, torch.float64]}}
  autocast: {{CPU: fp32}}

- func: stack(T[] tensors, int dim=0) -> T
  type_constraints: {{T: [torch.float32, torch.float64]}}
  autocast: {{CPU: promote}}

- func: bmm(Tensor self, Tensor mat2) -> Tensor
  autocast: {{CPU: lower_precision_fp}}
"""


def declare(folder: Path, text: str = DECLARED) -> Path:
    path = folder / "native_functions.yaml"
    path.write_text(text)
    return path


class Net(nn.Module):
    """Conv2d, Linear, LayerNorm, GELU and attention: the calls CPU autocast casts, and some it leaves."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.embed = nn.Linear(16, 16)
        self.norm = nn.LayerNorm(16)
        self.qkv = nn.Linear(16, 48)
        self.head = nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.gelu(self.norm(self.embed(self.conv(x).flatten(2))))
        q, k, v = self.qkv(x).unsqueeze(1).chunk(3, dim=-1)
        x = x + F.scaled_dot_product_attention(q, k, v).squeeze(1)
        return self.head(x.mean(1))


def train_step(path: Path, collect: bool = True):
    """One forward under CPU autocast (bfloat16), backward and optimizer step, all under the checker."""
    torch.manual_seed(0)
    net = Net()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    with checking(path, collect=collect) as checker:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits, target = net(torch.randn(2, 3, 4, 4)), torch.tensor([1, 3])
            # nll_loss_nd is no autocast kernel: it decomposes, and its nll_loss returns float32 of bfloat16
            loss = F.cross_entropy(logits, target) + F.nll_loss(F.log_softmax(logits, -1), target)
        loss.backward()
        optimizer.step()
    return checker


def test_a_training_step_under_cpu_autocast_is_judged_as_the_kernels_take_it(tmp_path):
    checker = train_step(declare(tmp_path))
    assert checker.violations == ()
    # the autocast-wrapped calls were judged, not skipped: float32 in, bfloat16 out at the level above autocast
    for overload in ("aten::linear", "aten::conv2d", "aten::scaled_dot_product_attention", "aten::cross_entropy_loss", "aten::layer_norm", "aten::nll_loss_nd"):
        assert checker.judged[overload] >= 1, overload
    assert checker.judged["aten::linear"] == 3


def test_raise_mode_judges_the_arguments_autocast_hands_on(tmp_path):
    train_step(declare(tmp_path), collect=False)  # raises at the first violation


def test_a_mis_declared_policy_names_the_policy_its_line_and_what_the_kernel_returned(tmp_path):
    text = DECLARED.replace("-> T\n  type_constraints: {T: " + FLOATS + "}\n  autocast: {CPU: lower_precision_fp, CUDA", "-> T\n  type_constraints: {T: " + FLOATS + "}\n  autocast: {CPU: fp32, CUDA", 1)
    assert text.index("{CPU: fp32, CUDA") < text.index("- func: conv2d")  # linear's line was edited
    checker = train_step(declare(tmp_path, text))
    (violation,) = checker.violations
    assert violation.kind == AUTOCAST_POLICY and violation.overload == "aten::linear"
    assert (violation.slot, violation.dtype.name) == ("return.0", "bfloat16")
    assert str(violation).startswith(
        "aten::linear: autocast {CPU: fp32}, declared at native_functions.yaml:3, hands the kernel input as torch.float32, "
        "but the kernel returned return.0 as torch.bfloat16 (T = "
    )
    assert checker.counts[violation] == 3


def test_a_policy_missing_where_autocast_casts_is_blamed(tmp_path):
    text = DECLARED.replace("  autocast: {CPU: lower_precision_fp, CUDA: lower_precision_fp}\n", "", 1)  # linear's
    (violation,) = train_step(declare(tmp_path, text)).violations
    assert violation.kind == AUTOCAST_POLICY and violation.overload == "aten::linear"
    assert "AutocastCPU casts this overload's arguments, but the entry at native_functions.yaml:2 declares no autocast policy for CPU" in str(violation)


def test_without_autocast_the_same_calls_are_judged_as_given(tmp_path):
    path = declare(tmp_path)
    x = torch.ones(2, 2, dtype=torch.bfloat16)
    with pytest.raises(DtypeViolation, match="argument self has dtype torch.bfloat16, not in T"):
        with checking(path):
            torch.prod(x)
    with checking(path), torch.autocast("cpu", dtype=torch.bfloat16):
        torch.prod(x)  # fp32: the kernel gets float32
        torch.stack([x, torch.ones(2, 2)])  # promote: both at float32
        torch.mm(torch.ones(2, 2, dtype=torch.float64), torch.ones(2, 2, dtype=torch.float64))  # float64 is never cast
        torch.mm(torch.ones(2, 2), torch.ones(2, 2))


def test_a_set_the_policy_hands_outside_is_described_with_the_policy(tmp_path):
    path = declare(tmp_path, DECLARED.replace("- func: mm(T self, T mat2) -> T\n  type_constraints: {T: [torch.bfloat16,", "- func: mm(T self, T mat2) -> T\n  type_constraints: {T: ["))
    with pytest.raises(DtypeViolation) as raised, checking(path), torch.autocast("cpu", dtype=torch.bfloat16):
        torch.mm(torch.ones(2, 2), torch.ones(2, 2))
    assert "argument self has dtype torch.bfloat16, not in T = [torch.float64]" in str(raised.value)
    assert "(at the kernel, under autocast {CPU: lower_precision_fp}, declared at native_functions.yaml:" in str(raised.value)


def test_declarations_carry_every_policy_also_without_variables(tmp_path):
    declarations = Declarations.load(declare(tmp_path))
    bmm = declarations.by_name["bmm"]
    assert (bmm.variables, bmm.autocast, bmm.autocast_line) == ((), (("CPU", "lower_precision_fp"),), len(DECLARED.splitlines()))  # its line is the last
    assert declarations.by_name["linear"].autocast == (("CPU", "lower_precision_fp"), ("CUDA", "lower_precision_fp"))
    assert pickle.loads(pickle.dumps(declarations)) == declarations


@pytest.mark.parametrize(
    ("policy", "given", "expected"),
    [
        ("lower_precision_fp", {"self": torch.float32, "other": torch.float64}, {"self": torch.bfloat16, "other": torch.float64}),
        ("fp32", {"self": torch.bfloat16, "other": torch.float16}, {"self": torch.float32, "other": torch.float32}),
        ("promote", {"self": torch.bfloat16, "other": torch.float32}, {"self": torch.float32, "other": torch.float32}),
        ("promote", {"self": torch.bfloat16, "other": torch.int64}, {"self": torch.bfloat16, "other": torch.int64}),
    ],
)
def test_each_casting_policy_hands_the_dtypes_autocast_mode_h_casts_to(policy, given, expected):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        call = handed(torch.ops.aten.add.Tensor, AutocastPolicy("CPU", policy, "here"), (), {k: torch.ones(2, dtype=d) for k, d in given.items()}, _meta)
    assert {k: v.dtype for k, v in call.kwargs.items()} == expected


def test_fp32_set_opt_dtype_passes_float32_unless_the_call_names_a_dtype():
    softmax = torch.ops.aten.softmax.int
    policy = AutocastPolicy("CPU", "fp32_set_opt_dtype", "here")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert handed(softmax, policy, (torch.ones(2, dtype=torch.bfloat16), 0), {}, _meta).kwargs == {"dtype": torch.float32}
        assert handed(softmax, policy, (torch.ones(2, dtype=torch.bfloat16), 0, torch.float64), {}, _meta).args[2] == torch.float64
        assert handed(softmax, policy, (torch.ones(2, dtype=torch.int64), 0), {}, _meta).kwargs == {}  # an integer first argument: unaltered


def _meta(shape: torch.Size, dtype: torch.dtype) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device="meta")

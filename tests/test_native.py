"""native_functions.yaml's structure: overload groups agree with torchgen's own grouping."""

from migrate.model.native import NativeFunctions
from tests.conftest import REAL_NATIVE_FUNCTIONS


def test_groups_equal_torchgens_grouping_by_signature():
    native = NativeFunctions.load(REAL_NATIVE_FUNCTIONS)
    by_signature: dict[str, set[str]] = {}
    for entry in native.entries:
        by_signature.setdefault(str(entry.schema.torchgen().signature()), set()).add(entry.name)
    for names in by_signature.values():
        for name in names:
            assert set(native.groups[name].names) == names
    assert native.groups["add.Tensor"].of_kind("inplace") == ("add_.Tensor",)
    assert native.groups["__and__.Tensor"].of_kind("inplace") == ("__iand__.Tensor",)


def test_a_backend_has_a_kernel_by_dispatch_its_delegate_or_a_ufunc_loop():
    """``dispatch:`` names the keys with a kernel; a composite key serves every backend; ``add.out`` lists only sparse
    keys, yet its ``ufunc_inner_loop:`` makes torchgen generate its CPU and CUDA kernels, which ``add.Tensor`` delegates to."""
    native = NativeFunctions.load(REAL_NATIVE_FUNCTIONS)
    kernels = {name: tuple(native.has_kernel(native.by_name[name], key) for key in ("CPU", "CUDA")) for name in (
        "histogram.bins_tensor", "add.Tensor", "add_.Tensor", "add.out", "matmul", "cudnn_convolution", "cos")}
    assert kernels == {
        "histogram.bins_tensor": (True, False),  # CPU, MPS: histogram
        "add.Tensor": (True, True),
        "add_.Tensor": (True, True),
        "add.out": (True, True),
        "matmul": (True, True),  # CompositeImplicitAutograd
        "cudnn_convolution": (False, True),
        "cos": (True, True),
    }

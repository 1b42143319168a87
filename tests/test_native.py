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

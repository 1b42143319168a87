"""Overload names: every spelling parses to one value, which prints the yaml's and the dispatcher's spelling."""

import pytest

from migrate.model.names import OverloadName


@pytest.mark.parametrize("text", ["aten::add.Tensor", "add.Tensor"])
def test_an_overload_parses_from_either_spelling(text):
    name = OverloadName.parse(text)
    assert (name.operator, name.overload) == ("add", "Tensor")
    assert str(name) == "add.Tensor" and name.qualified == "aten::add.Tensor"


@pytest.mark.parametrize("text", ["aten::relu", "relu", "relu.default", "aten::relu.default"])
def test_the_default_overload_has_no_overload_name(text):
    name = OverloadName.parse(text)
    assert name == OverloadName("relu") and str(name) == "relu" and name.qualified == "aten::relu"


def test_other_namespaces_are_not_aten_overloads():
    assert OverloadName.qualified_or_none("prims::add") is None
    assert OverloadName.qualified_or_none("aten::_foo.out") == OverloadName("_foo", "out")
    assert str(OverloadName.parse(str(OverloadName("__and__", "Tensor")))) == "__and__.Tensor"

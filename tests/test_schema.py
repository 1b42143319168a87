"""Typed schemas: slot spans, modifiers, lowering, and agreement with torchgen on the real file."""

import pytest

from migrate.model.native import NativeFunctions
from migrate.model.schema import Container, SchemaError, TypedSchema
from tests.conftest import REAL_NATIVE_FUNCTIONS


def test_typed_schema_keeps_every_modifier_of_the_word_it_replaced():
    text = "foo.out(T(a!) self, M?[] masks, U[] xs, V? w, int n, *, T(b!) out) -> (T(a!), U[] ys)"
    schema = TypedSchema.parse(text)
    assert schema.name == "foo.out"
    assert schema.variables() == {"T": ("self", "out", "return.0"), "M": ("masks",), "U": ("xs", "return.1"), "V": ("w",)}
    assert schema.slot("masks").container is Container.OPTIONAL_LIST
    assert schema.slot("w").container is Container.OPTIONAL
    assert schema.slot("xs").container is Container.LIST
    assert schema.slot("self").alias == "(a!)"
    assert not schema.slot("n").is_tensor
    assert schema.lowered() == "foo.out(Tensor(a!) self, Tensor?[] masks, Tensor[] xs, Tensor? w, int n, *, Tensor(b!) out) -> (Tensor(a!), Tensor[] ys)"


def test_with_words_replaces_only_the_named_spans():
    schema = TypedSchema.parse('f(Tensor self, str mode="a, b (c)", Tensor(a -> *) x) -> Tensor(a)[]')
    assert schema.with_words({"x": "T", "return.0": "T"}) == 'f(Tensor self, str mode="a, b (c)", T(a -> *) x) -> T(a)[]'


@pytest.mark.parametrize("text", ["f(Tensor self", "f Tensor self) -> Tensor", "f(Tensor self) Tensor", "f(Tensor self, Tensor self) -> Tensor"])
def test_malformed_schemas_are_refused(text):
    with pytest.raises(SchemaError):
        TypedSchema.parse(text)


def test_every_real_schema_agrees_with_torchgen():
    """Tensor-ness of every argument and return matches torchgen's own model; lowering a plain schema is the identity."""
    native = NativeFunctions.load(REAL_NATIVE_FUNCTIONS)
    assert native.entries
    for entry in native.entries:
        schema = entry.schema
        assert schema.lowered() == schema.text
        parsed = schema.torchgen()
        assert str(parsed.name) == entry.name
        arguments = {a.name: a for a in parsed.arguments.flat_all}
        assert set(arguments) == {s.name for s in schema.slots if not s.is_return}
        for slot in schema.slots:
            if slot.is_return:
                assert parsed.returns[int(slot.name.split(".")[1])].type.is_tensor_like() == slot.is_tensor
            else:
                assert arguments[slot.name].type.is_tensor_like() == slot.is_tensor, (entry.name, slot)

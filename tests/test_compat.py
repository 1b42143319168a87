"""torchgen reads annotated files through lowering, and sees exactly the model of the original."""

from __future__ import annotations

import shutil

import pytest
import yaml
from torchgen.gen import LineLoader, parse_native_yaml_struct, parse_tags_yaml

from migrate.check.torchgen import parse_native_yaml
from migrate.errors import InputError
from migrate.model.native import NativeFunctions
from tests.conftest import REAL_NATIVE_FUNCTIONS


@pytest.mark.slow  # a full real run
def test_torchgen_model_of_the_migrated_real_file_equals_the_original(full_run, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    for name in ("native_functions.yaml", "type_constraints.yaml"):
        shutil.copyfile(full_run / name, out / name)
    annotated = out / "native_functions.yaml"
    shutil.copyfile(REAL_NATIVE_FUNCTIONS.with_name("tags.yaml"), out / "tags.yaml")
    assert sum(len(e.schema.variables()) > 0 for e in NativeFunctions.load(annotated).entries) > 0

    tags = parse_tags_yaml(str(REAL_NATIVE_FUNCTIONS.with_name("tags.yaml")))
    original = parse_native_yaml_struct(yaml.load(REAL_NATIVE_FUNCTIONS.read_text(), Loader=LineLoader), tags, path=str(annotated))
    migrated = parse_native_yaml(annotated)
    assert len(migrated.native_functions) == len(original.native_functions) >= len(NativeFunctions.load(annotated).entries)
    for ours, theirs in zip(migrated.native_functions, original.native_functions):
        assert ours == theirs
    assert migrated.backend_indices == original.backend_indices


def test_an_unresolved_variable_is_refused(tmp_path):
    path = tmp_path / "native_functions.yaml"
    path.write_text("- func: abs(TNowhere self) -> Tensor\n")
    with pytest.raises(InputError, match="unresolved type variable TNowhere"):
        parse_native_yaml(path, REAL_NATIVE_FUNCTIONS.with_name("tags.yaml"))

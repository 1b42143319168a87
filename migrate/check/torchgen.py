"""torchgen compatibility: annotated files load into torchgen's own model through lowering.

Generators keep reading ``ParsedYaml`` as they always did; the annotations are
checked (every variable resolves) and then lowered in memory, so the model, source
locations included, is the one torchgen builds from the plain file.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from migrate.model.declared import declared_variables
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions, sibling_constraints_path
from migrate.write.native_functions import lower


def parse_native_yaml(path: Path | str, tags_yaml_path: Path | str | None = None, ignore_keys=None, *, skip_native_fns_gen: bool = False):
    """torchgen's ``parse_native_yaml`` for an annotated (or plain) file; tags.yaml defaults to the sibling file."""
    from torchgen.gen import LineLoader, parse_native_yaml_struct, parse_tags_yaml

    path = Path(path)
    native = NativeFunctions.load(path)
    sets = GlobalSetsFile.load(sibling_constraints_path(path)).by_name
    for entry in native.entries:
        declared_variables(native, entry, sets)  # an unresolved variable is an error here too
    tags = Path(tags_yaml_path) if tags_yaml_path is not None else path.with_name("tags.yaml")
    loaded = yaml.load(lower(native), Loader=LineLoader)
    return parse_native_yaml_struct(loaded, parse_tags_yaml(str(tags)), ignore_keys, path=str(path), skip_native_fns_gen=skip_native_fns_gen)

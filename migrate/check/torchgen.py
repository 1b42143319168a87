"""torchgen compatibility: annotated files load into torchgen's own model through lowering.

Generators keep reading ``ParsedYaml`` as they always did; the annotations are
checked (every variable resolves, every ``type_promotion`` line fits its schema) and then lowered in memory, so the model, source
locations included, is the one torchgen builds from the plain file. A file of another
release needs that release's torchgen imported (a source tree's, with its root on the
path); with another torchgen the first schema it cannot read is a clear error saying so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torchgen
import yaml

from migrate.errors import InputError
from migrate.model.declared import check_declarations
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions, sibling_constraints_path, source_tree_root
from migrate.model.schema import SchemaError
from migrate.write.native_functions import lower


def parse_native_yaml(path: Path | str, tags_yaml_path: Path | str | None = None, ignore_keys=None, *, skip_native_fns_gen: bool = False):
    """torchgen's ``parse_native_yaml`` for an annotated (or plain) file; tags.yaml defaults to the sibling file."""
    from torchgen.gen import LineLoader, parse_native_yaml_struct, parse_tags_yaml  # here: 0.17 s with torchgen.model, which no run's path needs

    path = Path(path)
    native = NativeFunctions.load(path)
    sets = GlobalSetsFile.load(sibling_constraints_path(path)).by_name
    check_declarations(native, sets)  # an unresolved variable, a malformed type_promotion line are errors here too
    for entry in native.entries:
        _installed_torchgen_fits(native, entry)
    tags = Path(tags_yaml_path) if tags_yaml_path is not None else path.with_name("tags.yaml")
    loaded = yaml.load(lower(native), Loader=LineLoader)
    return parse_native_yaml_struct(loaded, parse_tags_yaml(str(tags)), ignore_keys, path=str(path), skip_native_fns_gen=skip_native_fns_gen)


def _installed_torchgen_fits(native: NativeFunctions, entry) -> None:
    """A file of another release whose type words the imported torchgen does not know needs that release's torchgen."""
    try:
        entry.schema.torchgen()
    except SchemaError as exc:
        tree = source_tree_root(native.path)
        where = f"its source tree's, on the path with PYTHONPATH={tree}" if tree is not None else "the release it comes from"
        raise InputError(
            f"{exc}; this file needs the torchgen of {where} (the one imported is {Path(torchgen.__file__).parent})",
            native.path, entry.func_line + 1, entry.name,
        ) from exc


_TREE_PARSE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from torchgen.model import FunctionSchema
refused = []
for name, text in json.load(sys.stdin):
    try:
        FunctionSchema.parse(text)
    except Exception as exc:
        refused.append([name, str(exc)])
json.dump(refused, sys.stdout)
"""


def validate_with_tree_torchgen(native: NativeFunctions, root: Path) -> None:
    """Every lowered schema parsed by the tree's own torchgen, in a subprocess (never the installed module)."""

    schemas = [(entry.name, entry.schema.lowered()) for entry in native.entries]
    done = subprocess.run([sys.executable, "-c", _TREE_PARSE, str(root)], input=json.dumps(schemas), capture_output=True, text=True)
    if done.returncode != 0:
        raise InputError(f"the source tree's torchgen failed: {done.stderr.strip().splitlines()[-1:]}", root / "torchgen")
    for name, message in json.loads(done.stdout)[:1]:
        entry = native.by_name[name]
        raise InputError(f"the tree's torchgen cannot parse the schema: {message}", native.path, entry.func_line + 1, name)

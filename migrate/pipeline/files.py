"""The commands on one written file, which need no session: ``lower``, ``autocast-gen``, ``promotion-gen`` and ``docs``
(``accepts`` asks the public API, ``migrate.api``, beside the pipeline)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from migrate.autocast_source import installed_header
from migrate.model.autocast import KEYS as AUTOCAST_KEYS
from migrate.model.declared import check_declarations
from migrate.model.global_sets import GlobalSetsFile
from migrate.model.native import NativeFunctions, sibling_constraints_path
from migrate.write import autocast_gen, promotion_gen
from migrate.write.native_functions import lower
from migrate.write.reference import reference_outputs

if TYPE_CHECKING:
    from migrate.write.outputs import Output

__all__ = ["AUTOCAST_KEYS", "autocast_registrations", "lowered", "promotion_comparison", "promotion_rules", "reference"]


def _checked(path: Path) -> NativeFunctions:
    """The file, refused whole as a run refuses it when a declaration of any entry does not resolve or its
    type_constraints.yaml names an unknown dtype."""
    native = NativeFunctions.load(path)
    check_declarations(native, GlobalSetsFile.load(sibling_constraints_path(native.path)).by_name)
    return native


def lowered(path: Path) -> tuple[bytes, bool]:
    """The plain yaml of a written file (every type variable back to Tensor, no type_constraints), and whether the file
    declared anything (a plain file lowers to its own bytes)."""
    native = _checked(path)
    plain = lower(native).encode("utf-8")
    return plain, plain != native.data


def autocast_registrations(path: Path, header: Path | None, keys: list[str] | None) -> tuple[str, tuple[str, ...]]:
    """The C++ autocast registration blocks of the file's autocast lines (the header's shared lists: the installed
    torch's by default), and the entries not generated."""
    text, skipped = autocast_gen.generate(_checked(path), (header or installed_header()).read_text(), keys)
    return text, tuple(skipped)


def promotion_rules(path: Path) -> tuple[str, tuple[str, ...]]:
    """The file's type_promotion lines as torch.onnx's rule set (one rule per op name), and a line for each op name
    whose overloads disagree (the rule most of them give is written)."""
    text, disagreeing = promotion_gen.generate(_checked(path))
    return text, tuple(f"{found.rule.op_name}: its overloads disagree ({found.disagreement}); wrote {found.rule.brief()}" for found in disagreeing)


def promotion_comparison(path: Path) -> str:
    """The file's rules against the installed torch.onnx's table: equal, different, only on one side, with the calls
    that show ATen's side."""
    from migrate.audit.promotion_rules import compare, report  # here: imports torch (the other commands on a file need none)

    return report(compare(_checked(path)))


def reference(path: Path, report: Path | None, out: Path) -> list[Output]:
    """The dtype reference of an annotated yaml (OperatorDtypes.md, autocast.md, index.html) for ``out``, each with what
    ``out`` holds now; ``report`` (a run's --report) gives each dtype's verdict and evidence."""
    return reference_outputs(_checked(path), report, out)

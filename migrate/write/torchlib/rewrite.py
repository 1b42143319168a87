"""The torchlib writer: a plan applied to a torchlib tree, so its annotations are the declared variables.

It decides everything from the plan, the scan's evidence and the tree's own
annotations, then runs one libcst transformer per concern (``codemods``):

- **annotations**: the tensor parameters and returns of each ``@torch_op`` function
  registered for a planned overload take the TypeVar of their declared variable,
  inside their ``Optional[...]``/``Sequence[...]`` wrappers. Slots one variable binds
  share one TypeVar. A function registered for several planned overloads takes, per
  slot, the union of their sets; slots tied in any of them stay tied.
- **TypeVars**: a variable named after a global set (with that set's dtypes) is the
  global TypeVar of that name from ``tensor_typing.py``, added there when new and
  never re-bound in the modules using it; any other variable is a generated
  ``T_<overload>_<variable>`` in the module's marked block (``T_<function>_<slot>``
  for a union). Bounds are Unions of onnxscript types; dtypes with no ONNX type drop.
- **safety**: a rewrite must not tell the exporter that a function takes a dtype it
  does not. So a function keeps its annotations where they are narrower than the
  declaration (a dtype it lacks, or two slots it ties that the declaration does
  not), and ``complex=True`` functions keep their real-view annotations. Parameters
  the schema does not call tensors (Scalar, SymInt) are never touched.
- **narrowing** (``narrowing``): a dtype leaves an annotation only when ATen rejects it
  or its export fails (export-check's results, when given), and joins only when its
  export works; each change is a note (``dtype-removed``, ``dtype-added``).
- **parameter names** (``parameters``), first: a parameter the yaml names otherwise takes the
  yaml's name, with its uses in the body and its docstring's schema line, where every
  overload the function serves names it alike and the new name shadows nothing; the others
  are listed with why (``TorchlibRewrite.parameters``). Everything after sees the new names.
- **docstrings** opening with the old schema get the typed one;
- **imports** through ``AddImportsVisitor``/``RemoveImportsVisitor``.

Every such decision the caller should know about is a note. Nothing is inferred
here: the writer applies the plan as given, deterministically, and a second run
over its own output changes nothing.
"""


from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from migrate.cache import StageCache, made_once, without_cyclic_gc
from migrate.errors import InputError
from migrate.torchlib_source.resolve import TorchlibEvidence
from migrate.model.dtypes import DType
from migrate.model.native import NativeFunctions
from migrate.model.plan import Plan, Variable
from migrate.write.outputs import Output, read_or_none
from migrate.write.torchlib.narrowing import rejected_dtypes
from migrate.write.torchlib.parameter_names import RENAMED, ParameterName

if TYPE_CHECKING:  # libcst and the transformers load only when a rewrite is not in the cache
    from migrate.write.torchlib.narrowing import ExportStatus
    from migrate.write.torchlib.decide import FunctionDecision
    from migrate.write.torchlib.naming import ModuleWork

OUTPUT_FOLDER = "torch_lib"
"""The folder the rewritten tree is shown (and written, under ``--out``) as."""


@dataclass(frozen=True)
class SlotTypeVar:
    """A slot of a function annotated with its declared variable's TypeVar, and that variable's ONNX dtypes."""

    slot: str  # parameter name or 'return.N'
    typevar: str
    dtypes: tuple[DType, ...]


@dataclass(frozen=True)
class RewrittenFunction:
    """A function whose tensor annotations (some or all) are the declared TypeVars after the run."""

    path: str
    function: str
    line: int
    overloads: tuple[str, ...]
    slots: tuple[SlotTypeVar, ...]
    changed: bool  # whether its annotation text changed in this run


@dataclass(frozen=True)
class TorchlibRewrite:
    """What a run writes into torchlib, and what the report should say about it."""

    files: tuple[tuple[str, bytes, bytes], ...]  # (path relative to the torchlib root, before, after), changed only
    notes: tuple[str, ...]  # 'kind: message' lines, kinds in NOTE_KINDS order
    functions: tuple[RewrittenFunction, ...] = ()
    narrowed: int = 0  # rewritten annotations that lost a dtype the original had
    widened: int = 0  # rewritten annotations that gained a dtype a real export proved
    parameters: tuple[ParameterName, ...] = ()  # parameters the yaml names otherwise: renamed, or left alone and why
    docstrings: tuple[str, ...] = ()  # 'path:function' of each function whose docstring's schema line the run rewrote

    def notes_of(self, kind: str) -> tuple[str, ...]:
        return tuple(n for n in self.notes if n.startswith(kind + ": "))

    def summary(self) -> TorchlibSummary:
        notes: dict[str, int] = {}
        for note in self.notes:
            kind = note.split(":", 1)[0]
            notes[kind] = notes.get(kind, 0) + 1
        renamed = [p for p in self.parameters if p.outcome == RENAMED]
        left: dict[str, int] = {}
        for p in self.parameters:
            if p.outcome != RENAMED:
                left[p.outcome] = left.get(p.outcome, 0) + 1
        parameters = {  # parameters the yaml names otherwise: renamed, left alone by why, each as a line
            "renamed": len(renamed),
            "functions_renamed": len({(p.path, p.line, p.function) for p in renamed}),
            "left_alone": dict(sorted(left.items())),
            "lines": [str(p) for p in self.parameters],
        }
        annotated = {f"{f.path}:{f.function}" for f in self.functions if f.changed}
        edited = len(annotated | set(self.docstrings))
        return TorchlibSummary(len(self.files), edited, len(annotated), len(self.docstrings), self.narrowed, self.widened, notes, self.notes, parameters)


@dataclass(frozen=True)
class TorchlibSummary:
    """What the run's summary says about the torchlib rewrite (its ``torchlib`` section)."""

    modules_changed: int
    functions_changed: int  # their annotations, their docstring's schema line, or both
    annotations_changed: int  # functions whose annotations changed
    docstrings_changed: int  # functions whose docstring's schema line changed
    annotations_narrowed: int
    annotations_widened: int
    notes: dict[str, int]  # per kind
    note_lines: tuple[str, ...]
    parameters: dict  # renamed, functions_renamed, left_alone (by why), lines

    def to_json(self) -> dict:
        return {
            "modules_changed": self.modules_changed,
            "functions_changed": self.functions_changed,
            "annotations_changed": self.annotations_changed,
            "docstrings_changed": self.docstrings_changed,
            "annotations_narrowed": self.annotations_narrowed,
            "annotations_widened": self.annotations_widened,
            "notes": dict(self.notes),
            "note_lines": list(self.note_lines),
            "parameters": {**self.parameters, "left_alone": dict(self.parameters["left_alone"]), "lines": list(self.parameters["lines"])},
        }

    def lines(self) -> list[str]:
        notes = ", ".join(f"{k} {n}" for k, n in self.notes.items())
        names = self.parameters
        left = ", ".join(f"{why} {n}" for why, n in names["left_alone"].items())
        return [
            f"torchlib: {self.functions_changed} functions rewritten in {self.modules_changed} modules "
            f"({self.annotations_changed} annotations, {self.docstrings_changed} docstrings); "
            f"{self.annotations_narrowed} annotations narrowed, {self.annotations_widened} widened" + (f"; notes: {notes}" if notes else ""),
            f"torchlib parameter names: {names['renamed']} renamed to the yaml's in {names['functions_renamed']} functions; "
            f"{sum(names['left_alone'].values())} left alone" + (f": {left}" if left else "") + " (each listed in --report)",
        ]


def torchlib_outputs(rewrite: TorchlibRewrite, root: Path, out: Path | None, mirror: bool = False) -> list[Output]:
    """The run's outputs for the rewritten files: shown as ``torch_lib/<path>``, written under ``out`` if given,
    where each is compared with what the folder holds (``before`` None when it holds no such file).

    With ``mirror``, every other file of the tree comes too, unchanged, so that
    ``out/torch_lib`` is a whole tree that imports (``commit(..., write_unchanged=True)`` writes them).
    """
    changed = {path: (before, after) for path, before, after in rewrite.files}
    paths = set(changed)
    if mirror:
        paths |= {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    outputs = []
    for path in sorted(paths):
        source = root / path
        before, after = changed[path] if path in changed else (source.read_bytes(),) * 2
        if out is not None:
            source = out / OUTPUT_FOLDER / path
            before = read_or_none(source)
        outputs.append(Output(f"{OUTPUT_FOLDER}/{path}", source, source, before, after))
    return outputs


def rewrite_torchlib(
    evidence: TorchlibEvidence,
    plan: Plan,
    native: NativeFunctions,
    cache: StageCache,
    only: set[str] | None = None,
    reuse: bool = True,
    exported: dict[str, tuple[ExportStatus, ...]] | None = None,
    written: str | None = None,
) -> TorchlibRewrite:
    """Apply ``plan`` to the torchlib tree the evidence was scanned from (``only``: those overloads' functions).

    Only modules registering a planned overload are parsed; the rest are known from the scan's cache.
    The result is cached by the scan's key (the code, the tree's files, the yaml), what the plan
    says to write and ``only``: a run whose inputs did not change parses no module
    (``reuse=False`` does the work regardless, for benchmarks). ``exported``: export-check's
    cases per overload, for the narrowing rule. ``written``: the plan's ``written_form``, when the
    caller kept it from an earlier run of the same plan.
    """
    stage = cache.stage("rewrites")
    scope = ",".join(sorted(only)) if only is not None else "\0all"
    inputs = (evidence.key, written_form(plan) if written is None else written, scope, _exported_form(exported or {}))

    def make() -> TorchlibRewrite:
        with without_cyclic_gc():
            return _rewrite(evidence, plan, native, only, cache, exported or {})

    if evidence.key and reuse:
        return made_once(stage, inputs, make, kind=TorchlibRewrite)
    rewrite = make()
    if evidence.key:
        stage.write(rewrite, *inputs)
    return rewrite


def written_form(plan: Plan) -> str:
    """All of the plan the writer reads: each overload's variables (names, dtypes, slots, those they follow, their sets
    on a path a condition names, dtypes ATen rejects) and the global sets.

    The rest of the evidence and the conflicts are for the report; they never change what is written.
    """
    def spelled(dtypes: tuple[DType, ...]) -> str:
        return ",".join(map(str, dtypes))

    def variable(v: Variable) -> str:
        follows = f":{','.join(v.follows)}" if v.follows else ""
        if v.opmath:
            follows += f":opmath={','.join(v.opmath)}"
        if v.argument is not None:
            follows += f":{v.argument.name}={spelled(v.argument.dtypes)}"
        follows += "".join(f":{e.condition}={spelled(e.dtypes)}" for e in v.exceptions)
        return f"\0{v.name}:{spelled(v.dtypes)}:{','.join(v.binds)}{follows}:{list(rejected_dtypes(v).items())}"

    lines = [f"{g.name}\0{spelled(g.dtypes)}\0{g.desc}" for g in plan.global_sets]
    for overload in plan.overloads:
        lines.append(overload.name + "".join(variable(v) for v in overload.variables))
    return "\n".join(lines)


def _exported_form(exported: dict[str, tuple[ExportStatus, ...]]) -> str:
    return "\n".join(f"{o}\0{v.cast}\0{v.dtype}\0{v.status}\0{v.message}\0{v.calls}" for o in sorted(exported) for v in exported[o])


def _rewrite(
    evidence: TorchlibEvidence, plan: Plan, native: NativeFunctions, only: set[str] | None, cache: StageCache, exported: dict[str, tuple[ExportStatus, ...]]
) -> TorchlibRewrite:
    from migrate.write.torchlib.apply import Applier  # here: libcst (0.6 s) loads only when the rewrite is not cached
    from migrate.write.torchlib.decide import NOTE_KINDS, AnnotationDecider  # as above
    from migrate.write.torchlib.naming import ModuleWork, Namer  # as above
    from migrate.write.torchlib.parameters import rename_parameters  # as above
    from migrate.write.torchlib.tree import TorchlibTree  # as above

    tree = TorchlibTree(Path(evidence.root), cache)
    if not tree.modules:
        raise InputError("no Python modules to rewrite", evidence.root)
    parameters = rename_parameters(tree, evidence, native, only)
    decider = AnnotationDecider(tree, evidence, plan, native, only, exported)
    planned = {o.name for o in plan.overloads if only is None or o.name in only}
    touched = {r.path for name in planned for r in evidence.by_overload.get(name, ())}
    works = []
    for module in tree.modules.values():
        if module.path not in touched:
            continue
        functions = [f for f in (decider.function(module, info) for info in module.index.defs) if f is not None]
        if functions:
            works.append(ModuleWork(module, functions))
    namer = Namer(decider, tree)
    for work in works:
        namer.name_module(work)
        for function in work.functions:
            decider.note_changes(function)
    applier = Applier(tree)
    files = []
    after_of = {}
    for work in works:
        after_of[work.module.path] = applier.apply(work, decider.new_globals if work.module is tree.tensor_typing else None)
    typing_module = tree.tensor_typing
    if decider.new_globals and typing_module is not None and typing_module.path not in after_of:
        after_of[typing_module.path] = applier.apply(ModuleWork(typing_module, []), decider.new_globals)
    for module in tree.modules.values():
        if module.edited and module.path not in after_of:
            after_of[module.path] = applier.apply(ModuleWork(module, []))
    for path in sorted(after_of):
        before = tree.modules[path].data
        if after_of[path] != before:
            files.append((path, before, after_of[path]))
    functions = tuple(_record(w, f) for w in works for f in w.functions if f.rewrite)
    notes = tuple(f"{kind}: {message}" for kind in NOTE_KINDS for message in decider.notes[kind])
    classes = [cls for w in works for f in w.functions for cls in f.rewrite]
    narrowed, widened = sum(1 for c in classes if c.removed), sum(1 for c in classes if c.added)
    docstrings = tuple(f"{w.module.path}:{f.info.key.name}" for w in works for f in w.functions if f.docstring is not None)
    return TorchlibRewrite(tuple(files), notes, functions, narrowed, widened, parameters, docstrings)


def _record(work: ModuleWork, function: FunctionDecision) -> RewrittenFunction:
    annotated = [(cls, slot) for cls in function.rewrite for slot in cls.slots if function.annotations.get(slot) is not None]
    slots = tuple(SlotTypeVar(slot, cls.typevar, cls.onnx) for cls, slot in annotated)
    return RewrittenFunction(work.module.path, function.info.key.name, function.line, function.overloads, slots, function.changed)

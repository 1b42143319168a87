"""Evidence from torchlib: its ``@torch_op`` annotations as dtype constraints per ATen overload.

torchlib is read statically (``migrate.torchlib_source.scan``), never imported: importing
compiles every function and would tie the tool to one onnxscript release. This
module turns the per-module facts into evidence:

- **types**: every annotation resolves, across modules and imports, to a dtype set
  (onnxscript type names via ``DType.from_onnx``; ``TensorType`` means any dtype;
  ONNX types with no torch dtype, such as STRING, drop out); a TypeVar also ties the
  slots it annotates to one dtype per call;
- **mapping**: each ``aten::`` name to its native_functions.yaml overload (autogen-only
  names included) and each parameter to the schema argument of the same name; only
  the schema's tensor slots take dtypes;
- **inference**: per overload, one Variable per class of slots tied in every real
  variant registered under the name, over the union of the variants' dtypes (each
  variant's subset kept as its own Evidence); ``complex=True`` variants add the complex
  dtypes to the real variant's variables, since their annotations describe a real view;
- **bodies**: dtypes a real trace-only variant's body compares a parameter's dtype with
  are evidence that it handles them there (``handled``), with file and line; they
  constrain nothing (the annotation may well say ``TensorType``).
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from migrate.cache import Stage, StageCache
from migrate.errors import InputError
from migrate.torchlib_source.facts import (
    BitOr,
    Definition,
    ModuleFacts,
    Opaque,
    Ref,
    Registration,
    Subscript,
    TypeExpr,
    TypeVarCall,
    facts_stage,
)
from migrate.model.dtypes import COMPLEX, DType, canonical
from migrate.model.names import NAMESPACE, OverloadName
from migrate.model.native import Entry, NativeFunctions
from migrate.model.plan import TORCHLIB, Evidence, GlobalSet, OverloadPlan, Variable
from migrate.model.schema import SchemaError, TypedSchema


# Annotation names that are Python values, not tensors: a TypeVar or tensor type never resolves to these.
_NOT_TENSOR = frozenset({"None", "bool", "int", "float", "complex", "str", "bytes"})
# ONNX tensor types torch has no dtype for: they drop out of every set.
_ONNX_WITHOUT_TORCH_DTYPE = frozenset({"STRING"})
_ANY_TENSOR = frozenset({"TensorType", "Any"})
_OPTIONAL, _UNION = "Optional", "Union"
_CONTAINERS = frozenset({"Sequence", "List", "list", "Tuple", "tuple", "Iterable", "Collection"})


def installed_torchlib() -> Path:
    """The installed onnxscript's torch_lib directory, found without importing onnxscript."""
    spec = importlib.util.find_spec("onnxscript")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("onnxscript is not installed: pass --torchlib DIR")
    return Path(next(iter(spec.submodule_search_locations))) / "function_libs" / "torch_lib"


# -- types ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Constraint:
    """What an annotation says about a tensor: its dtypes (None: any) and whether it is a shared TypeVar."""

    label: str  # the TypeVar, alias or type name it was written as
    dtypes: tuple[DType, ...] | None
    shared: bool = False  # a TypeVar: every slot it annotates has one dtype per call


class TypeResolver:
    """Resolves annotations of any scanned module, following imports and aliases between modules."""

    def __init__(self, modules: dict[str, ModuleFacts], packages: frozenset[str]):
        self.packages = packages  # modules that are packages (__init__.py)
        self.definitions = {m: {d.name: d for d in reversed(f.definitions)} for m, f in modules.items()}
        self.imports = {m: dict(reversed(f.imports)) for m, f in modules.items()}
        self._memo: dict[tuple[str, str], Constraint | None] = {}
        self.unknown: set[str] = set()

    def resolve(self, module: str, expr: TypeExpr | None) -> Constraint | None:
        """The tensor constraint of ``expr`` read in ``module``; None when it names no tensor."""
        if expr is None or isinstance(expr, Opaque):
            return None
        if isinstance(expr, Ref):
            return self._ref(module, expr.parts)
        if isinstance(expr, BitOr):
            return self._union(module, expr.members)
        if isinstance(expr, TypeVarCall):
            return self._typevar(module, expr.name, expr)
        form = expr.base.parts[-1]
        if form == _OPTIONAL:
            return self.resolve(module, expr.args[0])
        if form == _UNION:
            return self._union(module, expr.args)
        if form in _CONTAINERS:
            return self.resolve(module, element_type(expr))
        return self._ref(module, expr.base.parts)

    def _union(self, module: str, members: tuple[TypeExpr, ...]) -> Constraint | None:
        tensors = [c for c in (self.resolve(module, m) for m in members) if c is not None]
        if len(tensors) <= 1:
            return tensors[0] if tensors else None
        label = "_or_".join(c.label for c in tensors)
        if any(c.dtypes is None for c in tensors):
            return Constraint(label, None)
        return Constraint(label, canonical(d for c in tensors for d in c.dtypes or ()))

    def _typevar(self, module: str, name: str, call: TypeVarCall) -> Constraint:
        bounds = (call.bound,) if call.bound is not None else call.constraints
        bound = self._union(module, bounds) if bounds else None
        return Constraint(name, None if bound is None else bound.dtypes, shared=True)

    def _ref(self, module: str, parts: tuple[str, ...]) -> Constraint | None:
        key = (module, ".".join(parts))
        if key not in self._memo:
            self._memo[key] = None  # an alias cycle resolves to nothing
            self._memo[key] = self._lookup(module, parts)
        return self._memo[key]

    def _lookup(self, module: str, parts: tuple[str, ...]) -> Constraint | None:
        head = parts[0]
        if len(parts) == 1:
            definition = self.definitions[module].get(head)
            if definition is not None:
                return self._definition(module, definition)
            imported = self.imports[module].get(head)
            if imported is not None and imported.name is not None:
                source = self.tree_module(module, imported.module, imported.level)
                if source is not None and self._binds(source, imported.name):
                    return self._ref(source, (imported.name,))
                return self._builtin(imported.name)
            return self._builtin(head)
        imported = self.imports[module].get(head)
        if imported is not None:
            dotted = ".".join(p for p in (imported.module, imported.name, *parts[1:-1]) if p)
            source = self.tree_module(module, dotted, imported.level)
            if source is not None:
                return self._ref(source, parts[-1:])
        return self._builtin(parts[-1])

    def _binds(self, module: str, name: str) -> bool:
        return name in self.definitions[module] or name in self.imports[module]

    def _definition(self, module: str, definition: Definition) -> Constraint | None:
        if isinstance(definition.value, TypeVarCall):
            return self._typevar(module, definition.name, definition.value)
        value = self.resolve(module, definition.value)
        if value is None or value.shared:
            return value
        return Constraint(definition.name, value.dtypes)

    def _builtin(self, name: str) -> Constraint | None:
        if name in _NOT_TENSOR:
            return None
        if name in _ANY_TENSOR:
            return Constraint(name, None)
        if name in _ONNX_WITHOUT_TORCH_DTYPE:
            return Constraint(name, ())
        dtype = DType.from_onnx(name)
        if dtype is None:
            self.unknown.add(name)
            return Constraint(name, None)
        return Constraint(name, (dtype,))

    def tree_module(self, importer: str, dotted: str, level: int) -> str | None:
        """The scanned module an import refers to: relative imports exactly, absolute ones by longest suffix."""
        if level:
            base = importer if importer in self.packages else importer.rpartition(".")[0]
            for _ in range(level - 1):
                if not base:
                    return None
                base = base.rpartition(".")[0]
            name = ".".join(p for p in (base, dotted) if p)
            return name if name in self.definitions else None
        parts = dotted.split(".")
        return next((c for c in (".".join(parts[i:]) for i in range(len(parts))) if c in self.definitions), None)


def element_type(expr: Subscript) -> TypeExpr | None:
    """The element of ``Sequence[X]``, ``Tuple[X, ...]``; a ``Tuple[A, B]`` as the union of its elements."""
    args = expr.args
    if len(args) == 2 and isinstance(args[1], Opaque) and args[1].text == "...":
        return args[0]
    if len(args) == 1:
        return args[0]
    return Subscript(Ref((_UNION,)), args) if args else None


# -- mapping --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlotMapping:
    """One registration read against one overload's schema."""

    constraints: dict[str, Constraint]  # tensor slot -> what the registration says about it
    unmatched: tuple[str, ...]  # annotated tensor parameters with no schema argument of that name


def map_slots(registration: Registration, module: str, schema: TypedSchema, types: TypeResolver) -> SlotMapping:
    """Parameters to schema arguments by name, returns by position; only the schema's tensor slots count."""
    constraints: dict[str, Constraint] = {}
    unmatched = []
    for param in registration.params:
        constraint = types.resolve(module, param.annotation)
        if constraint is None:
            continue
        slot = schema.slot(param.name)
        if slot is None:
            unmatched.append(param.name)
        elif slot.is_tensor and not slot.is_return:
            constraints[slot.name] = constraint
    returns = [s for s in schema.slots if s.is_return]
    annotated = _return_types(registration.returns, len(returns))
    if annotated is None:
        unmatched.append("return")
    else:
        for slot, expr in zip(returns, annotated):
            constraint = types.resolve(module, expr)
            if constraint is not None and slot.is_tensor:
                constraints[slot.name] = constraint
    return SlotMapping(constraints, tuple(unmatched))


def _return_types(expr: TypeExpr | None, count: int) -> tuple[TypeExpr | None, ...] | None:
    """The annotation of each of ``count`` returns, or None when the annotation does not have that shape."""
    if expr is None:
        return (None,) * count
    tupled = isinstance(expr, Subscript) and expr.base.parts[-1] in ("Tuple", "tuple")
    if tupled and not (len(expr.args) == 2 and str(expr.args[1]) == "..."):
        return expr.args if len(expr.args) == count else None
    return (expr,) if count == 1 else None


class OverloadIndex:
    """Overload names and schemas of a native_functions.yaml, autogen-only names included."""

    def __init__(self, native: NativeFunctions):
        self.native = native
        self.bases = frozenset(n.split(".")[0] for n in native.by_name)
        self._autogen: dict[str, TypedSchema | None] = {}

    def schema(self, overload: str) -> TypedSchema | None:
        entry = self.native.by_name.get(overload)
        if entry is not None:
            return entry.schema
        if overload not in self._autogen:
            declaring = self._declaring_entry(overload)
            self._autogen[overload] = None if declaring is None else _autogen_schema(declaring.schema, overload)
        return self._autogen[overload]

    def _declaring_entry(self, overload: str) -> Entry | None:
        """The entry whose ``autogen:`` names ``overload``; only entries whose text mentions it are parsed."""
        mention = re.compile(rf"(?<![\w.]){re.escape(overload)}(?![\w.])")
        for entry, line in self._autogen_lines:
            if mention.search(line) and overload in self.native.autogen_names(entry):
                return entry
        return None

    @functools.cached_property
    def _autogen_lines(self) -> tuple[tuple[Entry, str], ...]:
        """Each entry's lines that hold an ``autogen:`` key (native.autogen_index would parse every entry's yaml)."""
        lines = self.native.lines
        return tuple(
            (entry, lines[i]) for entry in self.native.entries for i in range(entry.start, entry.end) if "autogen:" in lines[i]
        )


def _autogen_schema(declaring: TypedSchema, overload: str) -> TypedSchema | None:
    """The schema torchgen generates for an autogen overload (its functional or out= variant)."""
    from torchgen.model import BaseOperatorName, OperatorName, SchemaKind  # here: torchgen.model (40 ms) loads only when a schema is parsed, never on a warm --op run
    from torchgen.native_function_generation import (  # as above
        functional_to_out_signature,
        mutable_to_out_signature,
        self_to_out_signature,
    )

    func = declaring.torchgen()
    kind = func.kind()
    candidates = []
    if kind != SchemaKind.functional:  # as torchgen's generate_function builds the functional variant
        base = func.name.name
        name = BaseOperatorName(base.base, False, base.dunder_method, functional_overload=kind == SchemaKind.mutable)
        candidates.append(lambda: func.signature(keep_return_names=True).with_name(OperatorName(name, func.name.overload_name)))
    to_out = {
        SchemaKind.inplace: self_to_out_signature,
        SchemaKind.mutable: mutable_to_out_signature,
        SchemaKind.functional: functional_to_out_signature,
    }.get(kind)
    if to_out is not None:
        candidates.append(lambda: to_out(func))
    for build in candidates:
        try:
            generated = build()
        except (AssertionError, ValueError):
            continue
        if str(generated.name) == overload:
            try:
                return TypedSchema.parse(str(generated))
            except SchemaError:
                return None
    return None


def unresolved_category(name: str, index: OverloadIndex) -> str | None:
    """Why a registered name has no overload in native_functions.yaml, or None when it has one."""
    namespace, _, overload = name.partition("::")
    if namespace + "::" != NAMESPACE:
        return f"other namespace: {namespace}"
    if index.schema(overload) is not None:
        return None
    base, dot, _ = overload.partition(".")
    if base not in index.bases:
        return "aten: unknown operator"
    return "aten: unknown overload" if dot else "aten: no default overload"


# -- inference ------------------------------------------------------------------------------------


def _tie(slot: str, constraint: Constraint) -> tuple[str, str]:
    """Slots with one tie key carry one dtype per call: a shared TypeVar, or the same single dtype."""
    if constraint.shared:
        return ("typevar", constraint.label)
    if constraint.dtypes is not None and len(constraint.dtypes) == 1:
        return ("dtype", constraint.dtypes[0].name)
    return ("slot", slot)


def complex_dtypes(real_view: Constraint) -> tuple[DType, ...]:
    """The complex dtypes a complex=True annotation stands for: complex64 is viewed as float32, complex128 as float64."""
    if real_view.dtypes is None:
        return COMPLEX
    viewed = {DType("float32"): DType("complex64"), DType("float64"): DType("complex128")}
    return canonical(viewed[d] for d in real_view.dtypes if d in viewed)


Variant = tuple[Registration, SlotMapping]


def infer_overload(overload: str, slot_order: tuple[str, ...], real: list[Variant], complex_: list[Variant]) -> OverloadPlan:
    """Variables from the real variants (their slot ties met, their dtypes united), widened by the complex ones.

    Without a real variant there are no variables: complex=True annotations describe a real view of the
    tensors, which cannot tell a complex slot from a real one (``view_as_real`` returns a real tensor).
    """
    constrained = [(r, {s: c for s, c in m.constraints.items() if c.dtypes}) for r, m in real]
    common = [s for s in slot_order if constrained and all(s in c for _, c in constrained)]
    classes: dict[tuple, list[str]] = {}
    for slot in common:
        classes.setdefault(tuple(_tie(slot, c[slot]) for _, c in constrained), []).append(slot)
    variables, taken = [], set()
    for binds in classes.values():
        evidence = [Evidence(TORCHLIB, r.where, canonical(c[binds[0]].dtypes or ()), tuple(binds)) for r, c in constrained]
        for registration, mapping in complex_:
            slots = tuple(s for s in binds if s in mapping.constraints)
            added = canonical(d for s in slots for d in complex_dtypes(mapping.constraints[s]))
            if added:
                evidence.append(Evidence(TORCHLIB, registration.where, added, slots))
        name = _variable_name([c[binds[0]].label for _, c in constrained], binds, taken)
        taken.add(name)
        variables.append(Variable(name, tuple(d for e in evidence for d in e.dtypes), tuple(binds), tuple(evidence)))
    return OverloadPlan(overload, tuple(variables))


def _variable_name(labels: list[str], binds: list[str], taken: set[str]) -> str:
    """The TypeVar (or type) name the variants wrote; final naming is the decider's job."""
    name = "_or_".join(sorted(set(labels)))
    return name if name not in taken else f"{name}_{binds[0].replace('.', '')}"


def body_evidence(registrations: list[Registration], inputs: set[str]) -> Iterator[Evidence]:
    """Per dtype comparison in a trace-only body on a tensor input: the dtypes it shows the function handles there."""
    for registration in registrations:
        for check in registration.dtype_checks:
            dtypes = canonical(d for d in map(DType.from_onnx, check.dtypes) if d is not None)
            if check.param in inputs and dtypes:
                where = f"{registration.path}:{check.line} {registration.function}: {check.text}"
                yield Evidence(TORCHLIB, where, dtypes, (check.param,))


def is_informative(variable: Variable, inputs: set[str], universe: frozenset[DType]) -> bool:
    """Says something about an input: ties it to another slot, or excludes a dtype torchlib can express."""
    return bool(inputs & set(variable.binds)) and (len(variable.binds) > 1 or not universe <= set(variable.dtypes))


# -- the scan -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TorchlibEvidence:
    """What torchlib says, per overload, with the registrations and problems behind it."""

    root: Path
    registrations: tuple[Registration, ...]  # every @torch_op, private ones included, by path and line
    by_overload: dict[str, tuple[Registration, ...]]  # non-private registrations per resolved overload
    overloads: dict[str, OverloadPlan]
    unmatched: dict[str, tuple[str, ...]]  # overload -> 'function.param' with no schema argument of that name
    resolved: dict[str, str]  # registered aten:: name -> overload
    unresolved: dict[str, tuple[str, ...]]  # category -> registered names
    global_sets: tuple[GlobalSet, ...]
    errors: tuple[InputError, ...]
    unknown_annotations: tuple[str, ...]  # annotation names resolved to nothing known, read as any dtype
    with_tensor_inputs: tuple[str, ...]  # resolved overloads that have a tensor input
    informative: tuple[str, ...]  # of those, the ones with an informative constraint (see is_informative)
    files: int
    cached_files: int
    handled: dict[str, tuple[Evidence, ...]]  # per overload: dtypes trace-only bodies test a tensor input for
    key: str = ""  # digest of the code, the tree's files and the yaml this was scanned from; "" when a file was unreadable

    @property
    def registered(self) -> tuple[str, ...]:
        """Every name torchlib registers (private registrations are not registered)."""
        return tuple(sorted({n for r in self.registrations if not r.private for n in r.names}))

    @property
    def informative_share(self) -> float:
        return len(self.informative) / len(self.with_tensor_inputs) if self.with_tensor_inputs else 0.0


def _module_name(relative: Path) -> str:
    parts = relative.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _global_sets(
    root: Path, modules: dict[str, tuple[str, ModuleFacts]], types: TypeResolver
) -> tuple[list[GlobalSet], list[InputError]]:
    """One global set per torchlib TypeVar with torch dtypes; a name bound to two different sets is an error."""
    sets: dict[str, tuple[GlobalSet, str]] = {}
    errors = []
    for module, (path, facts) in modules.items():
        for definition in facts.definitions:
            if not isinstance(definition.value, TypeVarCall):
                continue
            dtypes = types.resolve(module, Ref((definition.name,)))
            if dtypes is None or not dtypes.dtypes:
                continue
            where = f"{path}:{definition.line}"
            desc = definition.comment or f"torchlib's {definition.name} ({where}): {definition.value}."
            found = GlobalSet(definition.name, dtypes.dtypes, desc)
            first = sets.setdefault(definition.name, (found, where))
            if first[0].dtypes != found.dtypes:
                message = f"TypeVar {definition.name} has other dtypes than at {first[1]}; its global set keeps those"
                errors.append(InputError(message, root / path, definition.line, definition.name))
    return [s for s, _ in sorted(sets.values(), key=lambda item: item[0].name)], errors


def scan_torchlib(torchlib_dir: Path | str | None, native: NativeFunctions, cache: StageCache) -> TorchlibEvidence:
    """Scan every module under ``torchlib_dir`` (default: the installed one) into per-overload evidence.

    Cached in two stages: each module's facts by its bytes, and the whole evidence by the tree and the yaml.
    """
    root = Path(torchlib_dir) if torchlib_dir is not None else installed_torchlib()
    paths = sorted(p for p in root.rglob("*.py") if p.is_file())
    if not paths:
        raise InputError("no Python modules to scan", root)
    contents: dict[Path, bytes] = {}
    errors: list[InputError] = []
    for path in paths:
        try:
            contents[path] = path.read_bytes()
        except OSError as exc:
            errors.append(InputError(f"cannot read: {exc.strerror}", path))
    # The whole evidence of this tree against this yaml, when both were scanned before (by content, wherever the tree
    # lies: a copy reads what the original's run derived; only the root is the copy's own).
    stage = cache.stage("torchlib-evidence")
    inputs = (native.data, *(p.relative_to(root).as_posix() for p in contents), *contents.values())
    whole = stage.read(*inputs, kind=TorchlibEvidence)
    if whole is not None and not errors:
        return replace(whole, root=root, errors=_rerooted(whole.errors, whole.root, root), cached_files=whole.files)
    evidence = _scan(root, paths, contents, errors, native, facts_stage(cache))
    if errors:
        return evidence
    evidence = replace(evidence, key=stage.path(*inputs).stem)
    stage.write(evidence, *inputs)
    return evidence


def _rerooted(errors: tuple[InputError, ...], scanned: Path, root: Path) -> tuple[InputError, ...]:
    """The errors of a tree scanned at ``scanned``, naming the same files under ``root``."""

    def moved(path: Path | str | None) -> Path | str | None:
        return root / Path(path).relative_to(scanned) if path is not None and Path(path).is_relative_to(scanned) else path

    return tuple(InputError(e.message, moved(e.path), e.line, e.op) for e in errors)


def _modules(
    root: Path, contents: dict[Path, bytes], facts: Stage
) -> tuple[dict[str, tuple[str, ModuleFacts]], frozenset[str], int, list[InputError]]:
    """Each module's facts by dotted name (with its path under ``root``), the packages, how many facts the cache
    held, and the problems the scan found."""
    from migrate.torchlib_source.scan import module_facts  # here: libcst loads only when the whole evidence is not cached

    modules: dict[str, tuple[str, ModuleFacts]] = {}
    packages, cached, errors = set(), 0, []
    for path, data in contents.items():
        relative = path.relative_to(root)
        found, hit = module_facts(data, facts)
        cached += hit
        module = _module_name(relative)
        modules[module] = (relative.as_posix(), found)
        if relative.name == "__init__.py":
            packages.add(module)
        errors.extend(InputError(p.message, path, p.line, p.op) for p in found.problems)
    return modules, frozenset(packages), cached, errors


def _resolved(
    registrations: list[tuple[str, Registration]], index: OverloadIndex
) -> tuple[dict[str, str], dict[str, set[str]], dict[str, list[tuple[str, Registration]]]]:
    """Every registered name's overload, the names no overload of the file has (by category), and each overload's
    registrations (with their modules)."""
    resolved: dict[str, str] = {}
    unresolved: dict[str, set[str]] = {}
    variants: dict[str, list[tuple[str, Registration]]] = {}
    for module, registration in registrations:
        if registration.private:
            continue
        for name in registration.names:
            category = unresolved_category(name, index)
            if category is not None:
                unresolved.setdefault(category, set()).add(name)
                continue
            overload = str(OverloadName.parse(name))
            resolved[name] = overload
            variants.setdefault(overload, []).append((module, registration))
    return resolved, unresolved, variants


def _scan(
    root: Path, paths: list[Path], contents: dict[Path, bytes], errors: list[InputError], native: NativeFunctions, facts: Stage
) -> TorchlibEvidence:
    modules, packages, cached, problems = _modules(root, contents, facts)
    errors = list(errors) + problems
    types = TypeResolver({m: f for m, (_, f) in modules.items()}, packages)
    global_sets, set_errors = _global_sets(root, modules, types)

    registrations: list[tuple[str, Registration]] = []
    for module, (relative_path, module_facts) in modules.items():
        registrations.extend((module, replace(r, path=relative_path)) for r in module_facts.registrations)
    registrations.sort(key=lambda item: (item[1].path, item[1].line))

    index = OverloadIndex(native)
    resolved, unresolved, variants = _resolved(registrations, index)

    universe = frozenset(d for s in global_sets for d in s.dtypes)
    overloads, unmatched, with_inputs, informative, handled = {}, {}, [], [], {}
    for overload in sorted(variants):
        schema = index.schema(overload)
        assert schema is not None  # resolved above
        mapped = [(r, map_slots(r, m, schema, types)) for m, r in variants[overload]]
        real = [v for v in mapped if not v[0].complex]
        plan = infer_overload(overload, tuple(s.name for s in schema.tensor_slots), real, [v for v in mapped if v[0].complex])
        overloads[overload] = plan
        lost = tuple(f"{r.function}.{p}" for r, m in mapped for p in m.unmatched)
        if lost:
            unmatched[overload] = lost
        inputs = {s.name for s in schema.tensor_slots if not s.is_return}
        if inputs:
            with_inputs.append(overload)
            if any(is_informative(v, inputs, universe) for v in plan.variables):
                informative.append(overload)
        checks = tuple(body_evidence([r for r, _ in real], inputs))
        if checks:
            handled[overload] = checks

    return TorchlibEvidence(
        root=root,
        registrations=tuple(r for _, r in registrations),
        by_overload={o: tuple(r for _, r in v) for o, v in sorted(variants.items())},
        overloads=overloads,
        unmatched=unmatched,
        resolved=dict(sorted(resolved.items())),
        unresolved={c: tuple(sorted(n)) for c, n in sorted(unresolved.items())},
        global_sets=tuple(global_sets),
        errors=tuple(errors + set_errors),
        unknown_annotations=tuple(sorted(types.unknown)),
        with_tensor_inputs=tuple(with_inputs),
        informative=tuple(informative),
        files=len(paths),
        cached_files=cached,
        handled=handled,
    )

"""The export check inside a worker: calls from OpInfo samples, cast, exported in batches and run in onnxruntime.

A job gets a torch_lib folder and groups of overloads, each group with the OpInfo (and
sample dtype) whose samples reach them. The worker loads that folder as
``onnxscript.function_libs.torch_lib`` (a fresh process per job: the exporter reads
whatever that package registers), captures a few distinct calls of each overload while
the samples of every OpInfo the job names for it run, and gives each case up to
``CALLS_PER_CASE`` of them per value (``call_value``: the arguments that change the graph a
torchlib function builds, such as ``reduce='amax'`` or ``min=None``): sampled calls with the
case's slots cast to its dtype that eager PyTorch runs (its outputs are the expected ones),
and, for a value no sampled call reaches that the schema does (an argument's default, a
Scalar's number of the other kind), the sampled calls with that value. Many calls go into
one module (one submodule per call) and one export; a batch that fails is split: when the
error names an ONNX node, its metadata (the submodule ``case_N`` it came from) says which
call failed, else the batch is halved. A case reports one result per value: ``ok`` when
all the value's calls are, ``partial`` when some are. Reports go to the parent one result
at a time.

Importing this module imports torch, onnx and onnxruntime: only workers do (``migrate.audit.export`` imports it where it
starts them); onnxscript loads when a job runs (``use_torchlib``).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx
import onnx_ir
import onnxruntime
import torch
from onnx_ir.passes.common import RemoveUnusedNodesPass

from migrate.runtime import recorders, torch_private
from migrate.runtime.processes import one_line
from migrate.runtime.runs import OpInfoId
from migrate.runtime.samples import call_samples, find_opinfo, samples_by_dtype

from migrate.model.export_status import (
    DECOMPOSED,
    EXPORT_ERROR,
    INVALID_MODEL,
    MISMATCH,
    NO_KERNEL,
    NO_SAMPLE,
    OK,
    RUNTIME_ERROR,
    combined,
    load_failure_status,
)

CALLS_PER_CASE = 3  # distinct sampled calls a case runs per value (with and without optional tensors, other shapes)
CALLS_CAPTURED = 8  # sampled calls kept per overload and OpInfo, and one more for each other value: eager PyTorch may refuse some of them cast
BATCH = 64  # calls per exported graph


def use_torchlib(folder: str) -> None:
    """Make ``folder`` the ``onnxscript.function_libs.torch_lib`` package of this process (before the exporter reads it)."""
    import onnxscript  # noqa: F401  (the parent package must exist first)

    name = "onnxscript.function_libs.torch_lib"
    if name in sys.modules:
        raise RuntimeError(f"{name} was imported before the torch_lib to check could be loaded")
    root = Path(folder)
    spec = importlib.util.spec_from_file_location(name, root / "__init__.py", submodule_search_locations=[str(root)])
    if spec is None or spec.loader is None:
        raise RuntimeError(f"{root} is not a torch_lib package (no __init__.py)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    ops = importlib.import_module(f"{name}.ops")
    if not Path(ops.__file__).resolve().is_relative_to(root.resolve()):
        raise RuntimeError(f"the exporter would read {ops.__file__}, not {root}")


@dataclass
class Run:
    """One sampled call of a case, cast: its expected outputs (eager PyTorch) and its outcome."""

    overload: str  # 'add.Tensor'
    func: Any = None
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)
    dtypes: dict = field(default_factory=dict)  # every tensor input slot's dtype in the call
    expected: list = field(default_factory=list)  # eager outputs (tensors only, flattened)
    values: bool = True  # compare values (not for random or uninitialised outputs)
    value: str = ""  # the call's arguments that change the graph (``call_value``): "reduce='amax'", 'min=int, max=None'
    status: str = ""
    message: str = ""
    ran: set = field(default_factory=set)  # the torchlib functions the exporter dispatched the call's overload to
    used: set = field(default_factory=set)  # every torchlib function the exporter dispatched the call's nodes to
    lowered: bool = False  # the exporter got as far as the program it translates (decompositions applied)
    reached: bool = False  # ... and the call's overload is still in it

    @property
    def decomposed(self) -> bool:
        """The exporter decomposed the overload before dispatch: whatever the export did, its function never ran."""
        return self.lowered and not self.reached

    def report(self) -> dict[str, Any]:
        found = {"dtypes": self.dtypes, "status": self.status, "message": self.message, "ran": sorted(self.ran), "used": sorted(self.used)}
        return {**found, "decomposed": True} if self.decomposed else found


@dataclass
class Case:
    """One case: an overload with some slots cast to one dtype, and the distinct sampled calls it runs."""

    overload: str  # 'add.Tensor'
    cast: tuple[str, ...]  # the slots cast
    dtype: str  # 'int64'
    runs: list[Run] = field(default_factory=list)
    status: str = ""  # set when no call could be run (no-sample)
    message: str = ""

    def reports(self, function: str) -> list[dict[str, Any]]:
        """One report per value the case's calls take (in the order of its calls; one for a case without calls)."""
        values = list(dict.fromkeys(run.value for run in self.runs)) or [""]
        return [self.report(function, value) for value in values]

    def report(self, function: str, value: str = "") -> dict[str, Any]:
        """The case's status at one value: its calls' of that value together, of those that reached the overload's
        function (``decomposed`` when none did: the function never ran), and apart, what the user's export did (``export``)."""
        runs = [r for r in self.runs if r.value == value]
        status, message = (self.status, self.message) if self.status else combined((r.status, r.message) for r in runs)
        export = {"status": status, "message": message}
        dispatched = [r for r in runs if not r.decomposed]
        if runs and not dispatched:
            used = sorted({f for r in runs for f in r.used})
            outcome = f"{status}: {message}" if message else status
            status, message = DECOMPOSED, f"the exporter decomposed it before dispatch (ran {', '.join(used) or 'no torchlib function'}); the export: {outcome}"
        elif len(dispatched) < len(runs):
            status, message = combined((r.status, r.message) for r in dispatched)
        return {
            "overload": self.overload,
            "cast": list(self.cast),
            "dtype": self.dtype,
            "value": value,
            "dtypes": runs[0].dtypes if runs else {},
            "function": function,
            "status": status,
            "message": message,
            "export": export,
            "calls": [run.report() for run in runs],
        }


def _capture(wanted: set[str]) -> Any:
    """A ``CallCapture`` of the wanted overloads that keeps calls distinct by every argument (dtypes, shapes,
    other values), not by input dtypes alone: a case runs calls of other shapes and options, all from one sample dtype."""
    class VariedCapture(recorders.CallCapture):
        def before(self, key, slots, args, kwargs, direct):
            return (recorders.cloned(args), recorders.cloned(kwargs)) if self._open(key, slots, direct) else None

        def wants(self, key, slots, direct):
            """Whether calls of this overload are kept at all, and there is room for one more."""
            return self._open(key, slots, direct)

        def keep(self, func, key, slots, call, values, direct, nonempty):
            args, kwargs = call
            if not self._open(key, slots, direct) or all(v is None for v in values[: len(slots.arguments)]):
                return
            signature = (key, _signature(args, kwargs))
            if signature in self._signatures:
                return
            if not slots.mutates:
                try:
                    args, kwargs = recorders.cloned(args), recorders.cloned(kwargs)
                except Exception:  # a tensor that cannot be copied: not checked
                    return
            self._signatures.add(signature)
            self._kept.setdefault(key, []).append(recorders.CapturedCall(func, slots, args, kwargs, values, direct, self.sample_dtype, nonempty))

        def chosen(self):
            """The calls the capture picks (varied by absent slots and sample dtypes), then the first kept call of every
            value none of them takes: each value the samples reach gets a case."""
            picked = super().chosen()
            taken = {(call.slots.name, call_value(call.func, call.args, call.kwargs)) for call in picked}
            for call in (call for calls in self._kept.values() for call in calls):
                value = (call.slots.name, call_value(call.func, call.args, call.kwargs))
                if value not in taken:
                    taken.add(value)
                    picked.append(call)
            return picked

    return VariedCapture(lambda overload, direct: CALLS_CAPTURED if overload in wanted else 0)


def _recording(capture: Any) -> Any:
    """A Recording that offers the capture every call, not only the first of each input dtypes (as the sweep's
    recorders do): calls of the same dtypes may differ in shape or value (gelu's ``approximate``)."""
    class EveryCall(recorders.Recording):
        def add(self, func, args, kwargs, out, direct, before=None):
            super().add(func, args, kwargs, out, direct, before)  # the first call of its dtypes is offered here
            slots = self._slots_of(func)
            call = before if slots.mutates else (args, kwargs)
            if call is not None and capture.wants(id(func), slots, direct):
                values = recorders.slot_dtypes(slots, args, kwargs, out)
                nonempty = recorders.call_has_elements(slots, args, kwargs, out)
                capture.keep(func, id(func), slots, call, values, direct, nonempty)  # kept once: the capture tells calls apart

    return EveryCall(capture)


def _signature(args: Any, kwargs: Any) -> str:
    """A call as text: tensors by dtype and shape, other arguments by value."""
    described = torch.utils._pytree.tree_map(
        lambda v: f"<{v.dtype} {tuple(v.shape)}>" if isinstance(v, torch.Tensor) else v, (tuple(args), dict(kwargs))
    )
    return repr(described)[:2000]


def export_reports(argument: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The job: a report per case and value, and a ``{"phase": ...}`` report before each batch (what a crash was doing)."""
    use_torchlib(argument["torchlib"])
    functions = _dispatched_functions()
    torch_private.memoise_export_tables()
    torch_private.record_onnx_lowering(_LOWERED)
    cases = []
    for request, found, why_none in gathered_calls(argument["groups"]):
        for cast, dtype in request["cases"]:
            case = Case(request["overload"], tuple(cast), dtype)
            _prepare(case, found, why_none)
            cases.append(case)
    for case in cases:
        if case.status:
            yield from case.reports(functions.get(case.overload, ""))
    ready = [case for case in cases if not case.status]
    for start in _batches(ready):
        batch = ready[start[0] : start[1]]
        runs = [run for case in batch for run in case.runs]
        yield {"phase": "exporting and running " + ", ".join(sorted({c.overload for c in batch}))}
        try:
            _check(runs)
        except Exception:  # the check itself failed: each call left alone, so that only its own failure is said
            for run in runs:
                try:
                    _check([run])
                except Exception as exc:
                    run.status, run.message = EXPORT_ERROR, f"checking the call failed: {_first_line(exc)}"
        for case in batch:
            yield from case.reports(functions.get(case.overload, ""))


def gathered_calls(groups: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[Any], str]]:
    """Per overload the groups ask for (an overload may be in several: one per OpInfo whose samples reach it, such as
    scatter_reduce's ``sum`` and ``amax`` variants), its request, the calls of it all their samples made, and why there
    are none when there are none (the first group's reason)."""
    found: dict[str, tuple[dict[str, Any], list[Any], str]] = {}
    for group in groups:
        for request, calls, why_none in sampled_calls(group):
            if request["overload"] in found:
                found[request["overload"]][1].extend(calls)
            else:
                found[request["overload"]] = (request, list(calls), why_none)
    return list(found.values())


def sampled_calls(group: dict[str, Any]) -> Iterator[tuple[dict[str, Any], list[Any], str]]:
    """Per overload the group asks for: its request, the distinct calls of it the group's OpInfo samples (of the
    group's sample dtype) made, and why there are none when there are none."""
    opinfo = OpInfoId(*group["opinfo"])
    capture = _capture({f"aten::{o['overload']}".removesuffix(".default") for o in group["overloads"]})
    problem = ""
    try:
        op = find_opinfo(opinfo)
        for name, samples, errors in samples_by_dtype(op, opinfo, only=group["sample_dtype"]):
            capture.sample_dtype = name
            with _recording(capture) as recording, recording.active():
                call_samples(op, samples, errors)
    except Exception as exc:
        problem = f"the samples of {opinfo} failed: {one_line(exc)}"
    calls: dict[str, list[Any]] = {}
    for call in capture.chosen():
        calls.setdefault(call.slots.name.removeprefix("aten::"), []).append(call)
    for request in group["overloads"]:
        found = calls.get(request["overload"].removesuffix(".default"), [])
        yield request, found, problem or f"no sample of {opinfo} ({group['sample_dtype']}) called it"


def _batches(cases: list[Case]) -> Iterator[tuple[int, int]]:
    """Ranges of whole cases of at most ``BATCH`` calls (a case of more calls alone)."""
    start, count = 0, 0
    for index, case in enumerate(cases):
        if count and count + len(case.runs) > BATCH:
            yield start, index
            start, count = index, 0
        count += len(case.runs)
    if start < len(cases):
        yield start, len(cases)


def _dispatched_functions() -> dict[str, str]:
    """Per overload ('add.Tensor'), the torchlib function the exporter dispatches a real-valued call to."""
    registry = torch_private.memoise_onnx_registry()
    found = {}
    for target, decompositions in registry.functions.items():
        if isinstance(target, str) and target.startswith("aten::"):
            real = [d for d in decompositions if not d.is_complex]
            if real:
                found[target.removeprefix("aten::")] = torch_private.onnx_function_name(real[0].onnx_function)
    return found


_LOWERED: list[Any] = []  # per export of this worker, the nodes of the program it translated (torch_private.LoweredNode)


def _record_lowering(cases: list[Run], exports: list[Any]) -> None:
    """Which torchlib functions each case's call reached in these exports' translated programs (the
    submodule ``case_N`` of a node's module stack is its call): the overload's own, and all."""
    for nodes in exports:
        for case in cases:
            case.lowered = True
        for node in nodes:
            for index in {int(n) for scope in node.scopes for n in _CASE.findall(scope)}:
                if index >= len(cases):
                    continue
                case = cases[index]
                if node.function:
                    case.used.add(node.function)
                if node.target is case.func or node.target == case.func:
                    case.reached = True
                    if node.function:
                        case.ran.add(node.function)


# --- building a case's calls --------------------------------------------------------------------


def _prepare(case: Case, calls: list[Any], why_none: str) -> None:
    """Give the case, for each value its calls reach, up to ``CALLS_PER_CASE`` distinct sampled calls eager PyTorch runs
    with its slots cast (then, for each value the schema reaches from them and no sampled call does, the sampled calls
    with that value: ``derived_calls``), or the status no-sample."""
    dtype = getattr(torch, case.dtype)
    first_error = ""
    usable = [call for call in calls if any(_holds_tensor(call, slot) for slot in case.cast)]
    if calls and not usable:
        why_none = f"no sampled call passes a tensor at {', '.join(case.cast)}"
    # The calls with the most tensor inputs first (a mask passed, every optional tensor given), then the others.
    ordered = sorted(usable, key=lambda call: sum(d is None for d in call.dtypes[: len(call.slots.arguments)]))
    sampled = {call_value(call.func, call.args, call.kwargs) for call in ordered}
    defaults = [d for call in ordered for d in derived_calls(call) if call_value(d.func, d.args, d.kwargs) not in sampled]
    defaults = [d for d in defaults if any(_holds_tensor(d, slot) for slot in case.cast)]
    seen = set()
    taken: dict[str, int] = {}
    for call in ordered + defaults:
        value = call_value(call.func, call.args, call.kwargs)
        if taken.get(value, 0) == CALLS_PER_CASE:
            continue
        args, kwargs = _cast_arguments(call, case.cast, dtype)
        signature = _signature(args, kwargs)
        if signature in seen:
            continue
        try:
            out = call.func(*_fresh(args), **_fresh(kwargs))
        except Exception as exc:
            first_error = first_error or one_line(exc)
            continue
        expected = [t.detach() for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        if not expected:
            first_error = first_error or "the call returns no tensor"
            continue
        seen.add(signature)
        taken[value] = taken.get(value, 0) + 1
        tags = set(getattr(call.func, "tags", ()))
        values = torch.Tag.nondeterministic_seeded not in tags and "empty" not in case.overload
        dtypes = _input_dtypes(call.slots, args, kwargs)
        case.runs.append(Run(case.overload, call.func, args, kwargs, dtypes, expected, values, value))
    order = list(taken)
    case.runs.sort(key=lambda run: order.index(run.value))  # stable: a value's calls together, values as first reached
    if not case.runs:
        case.status = NO_SAMPLE
        case.message = f"eager PyTorch refused it in every sampled call: {first_error}" if first_error else why_none


# --- the argument values that change the graph --------------------------------------------------


def value_arguments(func: Any) -> list[tuple[int, Any, str]]:
    """The schema arguments whose value changes the graph a torchlib function builds, each with its position and
    how its value is told: ``option`` by the value itself (a ``str`` such as ``reduce``, ``approximate``,
    ``rounding_mode``; an int ``reduction``), ``presence`` by what is given (an optional Tensor: ``None`` or a
    ``tensor``; an optional Scalar: ``None``, an ``int``, a ``float``, a ``bool``, ... by the number's type: a
    float bound makes an integer tensor's result float)."""
    found = []
    for position, argument in enumerate(torch_private.overload_schema(func).arguments):
        kind = argument.type.kind()
        optional = kind == "OptionalType"
        inner = argument.type.getElementType().kind() if optional else kind
        if inner == "StringType" or (argument.name == "reduction" and inner == "IntType"):
            found.append((position, argument, "option"))
        elif optional and inner in ("TensorType", "NumberType"):
            found.append((position, argument, "presence"))
    return found


def call_value(func: Any, args: Any, kwargs: Any) -> str:
    """A call's value: its arguments that change the graph (``value_arguments``) as text, in schema order
    ("reduce='amax'", 'min=int, max=None'); '' for an overload without such arguments."""
    parts = []
    for position, argument, how in value_arguments(func):
        given = _argument(argument, position, args, kwargs)
        if how == "option":
            parts.append(f"{argument.name}={given!r}")
        else:
            said = "None" if given is None else "tensor" if isinstance(given, torch.Tensor) else type(given).__name__
            parts.append(f"{argument.name}={said}")
    return ", ".join(parts)


def _argument(argument: Any, position: int, args: Any, kwargs: Any) -> Any:
    """The value a call passed for a schema argument: positional, by keyword, else its default."""
    if not argument.kwarg_only and position < len(args):
        return args[position]
    if argument.name in kwargs:
        return kwargs[argument.name]
    return argument.default_value if argument.has_default_value() else None


def derived_calls(call: Any) -> list[Any]:
    """Other values the schema reaches from a sampled call, one argument at a time: a value argument set to its
    default where the call gives another (``clamp(x, -1, 1)``: ``clamp(x, None, 1)``), and an optional Scalar's number
    of the other kind (an int as a float, an integral float as an int: ``clamp(x, -1.0, 1)``). A slot a default
    leaves without a tensor records no dtype."""
    found = []
    names = [name for _, name, _, _ in call.slots.arguments]
    for position, argument, how in value_arguments(call.func):
        given = _argument(argument, position, call.args, call.kwargs)
        others = []
        if argument.has_default_value():
            default = argument.default_value
            if not (given is default or (type(given) is type(default) and given == default)):
                others.append(default)
        if how == "presence" and type(given) is int:
            others.append(float(given))
        elif how == "presence" and type(given) is float and given.is_integer():
            others.append(int(given))
        for other in others:
            args, kwargs = list(call.args), dict(call.kwargs)
            if not argument.kwarg_only and position < len(args):
                args[position] = other
            else:
                kwargs[argument.name] = other
            gone = other is None and isinstance(given, torch.Tensor)
            dtypes = tuple(None if gone and index < len(names) and names[index] == argument.name else d for index, d in enumerate(call.dtypes))
            found.append(dataclasses.replace(call, args=tuple(args), kwargs=kwargs, dtypes=dtypes))
    return found


def _holds_tensor(call: Any, slot: str) -> bool:
    names = [name for _, name, _, _ in call.slots.arguments]
    return slot in names and call.dtypes[names.index(slot)] is not None


def _cast_arguments(call: Any, cast: tuple[str, ...], dtype: Any) -> tuple[list, dict]:
    args, kwargs = list(call.args), dict(call.kwargs)
    for position, name, keyword_only, _ in call.slots.arguments:
        if name not in cast:
            continue
        if keyword_only or position >= len(args):
            if name in kwargs:
                kwargs[name] = _to(kwargs[name], dtype)
        else:
            args[position] = _to(args[position], dtype)
    return args, kwargs


def _to(value: Any, dtype: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().to(dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_to(v, dtype) for v in value)
    return value


def _fresh(value: Any) -> Any:
    """Copies of every tensor (eager calls must not change the tensors the export gets)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_fresh(v) for v in value)
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    return value


def _input_dtypes(slots: Any, args: list, kwargs: dict) -> dict[str, str]:
    found = {}
    for position, name, keyword_only, _ in slots.arguments:
        value = kwargs.get(name) if keyword_only or position >= len(args) else args[position]
        dtypes = {str(t.dtype) for t in (value if isinstance(value, (list, tuple)) else [value]) if isinstance(t, torch.Tensor)}
        if len(dtypes) == 1:
            found[name] = dtypes.pop()
        elif dtypes:
            found[name] = "mixed"
    return found


# --- exporting and running batches --------------------------------------------------------------


def _module(cases: list[Run]) -> tuple[Any, tuple]:
    """One module making every call (one submodule ``case_N`` each), and its flat tensor inputs."""
    class CaseCall(torch.nn.Module):
        def __init__(self, case: Run):
            super().__init__()
            self.func = case.func
            self.template = torch.utils._pytree.tree_map(lambda v: _SLOT if isinstance(v, torch.Tensor) else v, (case.args, case.kwargs))
            self.count = len(_tensors(case))

        def forward(self, *tensors):
            supply = iter(tensors)
            args, kwargs = torch.utils._pytree.tree_map(lambda v: next(supply) if v is _SLOT else v, self.template)
            out = self.func(*args, **kwargs)
            return tuple(t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor))

    class Batch(torch.nn.Module):
        def __init__(self, calls: list[CaseCall]):
            super().__init__()
            self.calls = len(calls)
            for index, call in enumerate(calls):
                setattr(self, f"case_{index}", call)

        def forward(self, *tensors):
            outputs, start = [], 0
            for index in range(self.calls):
                call = getattr(self, f"case_{index}")
                outputs.extend(call(*tensors[start : start + call.count]))
                start += call.count
            return tuple(outputs)

    inputs = tuple(t for case in cases for t in _tensors(case))
    return Batch([CaseCall(case) for case in cases]), inputs


class _Slot:
    def __repr__(self) -> str:
        return "<tensor>"


_SLOT = _Slot()


def _tensors(case: Run) -> list[Any]:
    return [t.detach().clone() for t in torch.utils._pytree.tree_leaves((case.args, case.kwargs)) if isinstance(t, torch.Tensor)]


_CASE = re.compile(r"\bcase_(\d+)\b")


def _check(cases: list[Run]) -> None:
    """Export, load and run ``cases`` together; on a failure no case can be blamed for, halve the batch."""
    pending = [case for case in cases if not case.status]
    while pending:
        failure = _attempt(pending)
        remaining = [case for case in pending if not case.status]
        if failure is None or not remaining:
            return
        if len(remaining) < len(pending):  # the failure was pinned on some cases: the rest again
            pending = remaining
            continue
        if len(pending) == 1:
            pending[0].status, pending[0].message = failure
            return
        half = len(pending) // 2
        _check(pending[:half])
        _check(pending[half:])
        return


def _attempt(cases: list[Run]) -> tuple[str, str] | None:
    """Check a batch; None when every case got its status, else the (status, message) of a failure.

    The cases a failure can be pinned on get that status. The module is captured with
    torch.export first (as the exporter does), so that a conversion error naming an FX
    node leads to the submodule of its case. A model onnxruntime refuses (or fails to
    run) loses the failing case's outputs and the nodes only they need, and is tried
    again without exporting anew: the cases' subgraphs share no inputs.
    """
    module, inputs = _module(cases)
    try:
        exported = torch.export.export(module, inputs, strict=False)
    except Exception:  # the exporter's other capture strategies may still manage: its error is the one to report
        exported = None
    start = len(_LOWERED)
    try:
        program = torch.onnx.export(exported if exported is not None else module, inputs, dynamo=True, verbose=False)
    except Exception as exc:
        return _fail(cases, _blame_fx(str(exc), exported, [len(_tensors(case)) for case in cases]), EXPORT_ERROR, _first_line(exc))
    finally:
        _record_lowering(cases, _LOWERED[start:])
        del _LOWERED[start:]
    model = program.model
    outputs, start = [], 0
    for case in cases:
        outputs.append(list(model.graph.outputs[start : start + len(case.expected)]))
        start += len(case.expected)
    names = [value.name for value in model.graph.inputs]
    if len(names) != len(inputs):
        return _fail(cases, [], EXPORT_ERROR, f"the model has {len(names)} inputs for {len(inputs)} tensors")
    feeds = {}
    for index, case in enumerate(cases):  # an input onnxruntime cannot take fails its case at run time
        start = sum(len(_tensors(c)) for c in cases[:index])
        try:
            feeds.update({names[start + i]: _ort_value(t) for i, t in enumerate(_tensors(case))})
        except Exception as exc:
            _fail(cases, [index], RUNTIME_ERROR, _first_line(exc))
            _drop_outputs(model, outputs[index])
    while True:
        live = [index for index, case in enumerate(cases) if not case.status]
        if not live:
            return None
        failure = _run(onnx_ir.serde.serialize_model(model).SerializeToString(), feeds, [outputs[i] for i in live])
        if isinstance(failure, list):
            for index, got in zip(live, failure):
                cases[index].status, cases[index].message = _compare(cases[index], got)
            return None
        status, text, message = failure
        blamed = [index for index in _blame_onnx(text, model) if index in live]
        if not blamed:
            return status, message
        for index in blamed:
            spec_error = _spec_error(model, outputs[index]) if status == NO_KERNEL else ""
            if spec_error:  # onnxruntime named a missing kernel, but the ONNX checker finds the model invalid
                _fail(cases, [index], INVALID_MODEL, f"{message} (onnx.checker: {spec_error})")
            else:
                _fail(cases, [index], status, message)
        _drop_outputs(model, [value for index in blamed for value in outputs[index]])


def _run(model: bytes, feeds: dict[str, Any], outputs: list[list[Any]]) -> list[list[Any]] | tuple[str, str, str]:
    """Each case's outputs from onnxruntime, or (status, full error text, first line) when it refuses the model or fails."""
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    try:
        session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        return load_failure_status(str(exc)), str(exc), _first_line(exc)
    try:
        values = session.run_with_ort_values([value.name for values in outputs for value in values], _used(session, feeds))
        flat = [_from_ort(value) for value in values]
    except Exception as exc:
        return RUNTIME_ERROR, str(exc), _first_line(exc)
    got, start = [], 0
    for values in outputs:
        got.append(flat[start : start + len(values)])
        start += len(values)
    return got


def _used(session: Any, feeds: dict[str, Any]) -> dict[str, Any]:
    """The feeds of the session's inputs (those of cases dropped for an input onnxruntime cannot take are left out)."""
    wanted = {value.name for value in session.get_inputs()}
    return {name: value for name, value in feeds.items() if name in wanted}


def _fail(cases: list[Run], blamed: list[int], status: str, message: str) -> tuple[str, str]:
    for index in blamed:
        cases[index].status, cases[index].message = status, message
    return status, message


_TYPE_OBJECTION = re.compile(r"unsupported type|TypeInferenceError|Type Error|different types")


def _spec_error(model: Any, outputs: list[Any]) -> str:
    """The ONNX checker's objection to a type (``full_check``: strict shape and type inference) in the part of
    the model these outputs need, or '' when the spec takes its types: then a missing kernel is onnxruntime's
    gap. A shape objection is not the dtype's: unique_dim's Identity shape bug is there for every dtype."""
    proto = onnx_ir.serde.serialize_model(model)
    wanted = {value.name for value in outputs}
    part = onnx_ir.serde.deserialize_model(proto)
    _drop_outputs(part, [value for value in part.graph.outputs if value.name not in wanted])
    try:
        onnx.checker.check_model(onnx_ir.serde.serialize_model(part), full_check=True)
    except Exception as exc:
        objection = _first_line(exc)
        return objection if _TYPE_OBJECTION.search(objection) else ""
    return ""


def _drop_outputs(model: Any, values: list[Any]) -> None:
    """Remove these graph outputs and every node no remaining output needs."""
    dropped = {id(value) for value in values}
    kept = [value for value in model.graph.outputs if id(value) not in dropped]
    model.graph.outputs.clear()
    model.graph.outputs.extend(kept)
    RemoveUnusedNodesPass()(model)


_FX_NODE = re.compile(r"translating node %([A-Za-z0-9_]+)([^\n]*)")
_FX_ARGUMENT = re.compile(r"%([A-Za-z0-9_]+)")


def _blame_fx(text: str, exported: Any, counts: list[int]) -> list[int]:
    """The cases a conversion error names: an input among the arguments of the FX node it was translating (a
    placeholder: the exporter cannot take a float8_e8m0fnu tensor), by the case it feeds (``counts``: each case's
    number of inputs, in order); else the node, by the submodule of its module stack; else a node the exporter's
    decompositions made (a type promotion's ``convert_element_type``), by the first of its arguments that names a
    case. Unnamed: no case (the batch is halved). Inputs come first because their names are the program's own,
    while the exporter's decompositions renumber the other nodes: with two ``atleast_1d.default`` calls decomposed
    away, the third ``atleast_1d.Sequence`` node is named as the first was in ``exported``."""
    if exported is None:
        return []
    nodes = {node.name: node for node in exported.graph.nodes}
    inputs = [node.name for node in exported.graph.nodes if node.op == "placeholder"]
    feeds = [index for index, count in enumerate(counts) for _ in range(count)]
    found: set[int] = set()
    for name, rest in _FX_NODE.findall(text):
        arguments = _FX_ARGUMENT.findall(rest)
        for candidate in (*(a for a in arguments if a in inputs), name, *arguments):
            node = nodes.get(candidate)
            if node is None:
                continue
            if node.op == "placeholder":
                owners = {feeds[inputs.index(candidate)]} if len(inputs) == len(feeds) else set()
            else:
                owners = {int(n) for path, _ in (node.meta.get("nn_module_stack") or {}).values() for n in _CASE.findall(path)}
            if owners:
                found |= owners
                break
    return sorted(found)


def _blame_onnx(text: str, model: Any) -> list[int]:
    """The cases whose submodules hold the ONNX nodes an onnxruntime error names (by the nodes' metadata)."""
    names = set(re.findall(r"node_[A-Za-z0-9_]+", text))
    found = set()
    for node in model.graph.all_nodes():
        if node.name in names:
            found.update(int(n) for n in _CASE.findall(node.metadata_props.get("namespace", "")))
    return sorted(found)


def _first_line(exc: BaseException) -> str:
    """The first line of the innermost cause (the exporter wraps the torchlib function's own error twice)."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    for line in str(exc).splitlines():
        if line.strip():
            text = re.sub(r"\x1b\[[0-9;]*m", "", f"{type(exc).__name__}: {line.strip()}")
            return re.sub(r"0x[0-9a-fA-F]+", "0x…", text)[:300]
    return type(exc).__name__


def _ort_value(tensor: Any) -> Any:
    tensor = tensor.contiguous()
    if tensor.is_complex():  # the exporter's form of a complex tensor: its real view
        tensor = torch.view_as_real(tensor)
    if tensor.dtype == torch.bfloat16 or (tensor.dtype.itemsize == 1 and tensor.dtype.is_floating_point):
        bits = torch.uint16 if tensor.dtype == torch.bfloat16 else torch.uint8  # numpy has no such dtype: the bits, typed
        return onnxruntime.OrtValue.ortvalue_from_numpy_with_onnx_type(
            tensor.view(bits).numpy(), onnx_element_type=torch_private.onnx_dtype_of(tensor.dtype)
        )
    return onnxruntime.OrtValue.ortvalue_from_numpy(tensor.numpy())


def _from_ort(value: Any) -> Any:
    if value.data_type() == "tensor(bfloat16)" or value.data_type().startswith("tensor(float8"):
        return torch.from_dlpack(value._get_c_value())
    array = value.numpy()
    if array.dtype.kind == "u" and array.dtype.itemsize > 1:  # torch.from_numpy takes no uint16/32/64: their bits
        return torch.from_numpy(array.view(f"int{8 * array.dtype.itemsize}")).view(getattr(torch, f"uint{8 * array.dtype.itemsize}"))
    return torch.from_numpy(array)


def _compare(case: Run, got: list[Any]) -> tuple[str, str]:
    """OK when every output has eager's dtype and shape, and close values (OpInfo's default tolerances per dtype)."""
    if len(got) != len(case.expected):
        return MISMATCH, f"{len(got)} outputs, eager PyTorch gives {len(case.expected)}"
    for index, (actual, expected) in enumerate(zip(got, case.expected)):
        if expected.is_complex() and not actual.is_complex() and actual.shape[-1:] == (2,):
            actual = torch.complex(actual[..., 0], actual[..., 1]).to(expected.dtype)
        if actual.dtype != expected.dtype:
            return MISMATCH, f"output {index}: dtype {actual.dtype}, eager PyTorch gives {expected.dtype}"
        if tuple(actual.shape) != tuple(expected.shape):
            return MISMATCH, f"output {index}: shape {tuple(actual.shape)}, eager PyTorch gives {tuple(expected.shape)}"
        if case.values:
            try:
                torch.testing.assert_close(actual, expected, equal_nan=True, check_stride=False)
            except AssertionError as exc:
                if _ties_broken_otherwise(index, got, case):
                    continue
                lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
                return MISMATCH, f"output {index}: " + "; ".join(lines[:2])[:280]
    return OK, ""


def _ties_broken_otherwise(index: int, got: list[Any], case: Run) -> bool:
    """Output ``index``, an index output, differs from eager's only where the input holds equal values
    (topk, sort, max.dim of integers): it picks, from the call's first tensor along some dimension,
    exactly another output that equals eager's own (the values). Which of equal elements comes first
    is not a dtype's fault: ATen's CPU kernels and onnxruntime break ties differently."""
    indices = got[index]
    source = next(iter(_tensors(case)), None)
    if indices.dtype != torch.int64 or source is None or source.dim() == 0 or indices.numel() == 0:
        return False
    for position, values in enumerate(got):
        if position == index or values.shape != indices.shape or values.dtype != source.dtype:
            continue
        if not torch.equal(values, case.expected[position]):
            continue
        for dim in range(source.dim()):
            picks, picked = (indices, values) if indices.dim() == source.dim() else (indices.unsqueeze(dim), values.unsqueeze(dim))
            if picks.dim() != source.dim():
                continue
            try:
                if torch.equal(torch.gather(source, dim, picks), picked):
                    return True
            except RuntimeError:  # the indices do not fit this dimension
                continue
    return False

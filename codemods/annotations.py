"""Tensor annotations: find the part that names the tensor type, and replace it by a TypeVar.

``Optional[Sequence[TFloat]]`` names its tensor type in ``TFloat``; the wrappers say
how the tensors are held (``Tensor?[]``) and stay. A rewrite replaces that one part
and no other byte of the annotation.
"""

from __future__ import annotations

from typing import Mapping

import libcst as cst

from codemods.toplevel import DefKey, ReplaceNodes, TopLevelTransformer

RETURN_PREFIX = "return."

_OPTIONAL = frozenset({"Optional"})
_UNION = frozenset({"Union"})
_SEQUENCES = frozenset({"Sequence", "List", "list", "Iterable", "Collection"})
_TUPLES = frozenset({"Tuple", "tuple"})
# Names that never denote a tensor type.
_NOT_TENSOR = frozenset({"None", "bool", "int", "float", "complex", "str", "bytes"})


def _last_name(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _subscript_args(node: cst.Subscript) -> list[cst.BaseExpression] | None:
    if not all(isinstance(e.slice, cst.Index) for e in node.slice):
        return None
    return [e.slice.value for e in node.slice]  # type: ignore[union-attr]


def _bit_or_members(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        return _bit_or_members(node.left) + _bit_or_members(node.right)
    return [node]


def tensor_core(annotation: cst.BaseExpression) -> cst.BaseExpression | None:
    """The node naming the tensor type of one tensor (or tensors of one list); None when there is none.

    ``TFloat``, ``onnxscript.FLOAT``, ``Union[FLOAT, DOUBLE]`` are cores; ``Optional[X]``,
    ``X | None``, ``Sequence[X]`` and ``Tuple[X, ...]`` are wrappers around the core of X.
    """
    if isinstance(annotation, (cst.Name, cst.Attribute)):
        return None if _last_name(annotation) in _NOT_TENSOR else annotation
    if isinstance(annotation, cst.Subscript):
        base, args = _last_name(annotation.value), _subscript_args(annotation)
        if args is None:
            return None
        if base in _OPTIONAL and len(args) == 1:
            return tensor_core(args[0])
        if base in _SEQUENCES and len(args) == 1:
            return tensor_core(args[0])
        if base in _TUPLES and len(args) == 2 and isinstance(args[1], cst.Ellipsis):
            return tensor_core(args[0])
        if base in _UNION:
            return _union_core(annotation, args)
        return None
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        return _union_core(annotation, _bit_or_members(annotation))
    return None


def _union_core(whole: cst.BaseExpression, members: list[cst.BaseExpression]) -> cst.BaseExpression | None:
    """``Union[X, None]`` wraps X; a union of tensor types is itself the core; a mix of both has none."""
    tensors = [m for m in members if not _is_none(m)]
    if len(tensors) == 1:
        return tensor_core(tensors[0])
    if len(tensors) == len(members) and all(tensor_core(m) is m for m in members):
        return whole
    return None


def return_annotations(returns: cst.BaseExpression | None, count: int) -> tuple[cst.BaseExpression | None, ...] | None:
    """The annotation of each of ``count`` schema returns; None when the annotation has another shape.

    ``Tuple[A, B]`` annotates two returns; any other annotation annotates exactly one.
    """
    if returns is None:
        return (None,) * count
    if isinstance(returns, cst.Subscript) and _last_name(returns.value) in _TUPLES:
        args = _subscript_args(returns)
        if args is not None and not (len(args) == 2 and isinstance(args[1], cst.Ellipsis)):
            return tuple(args) if len(args) == count else None
    return (returns,) if count == 1 else None


def retyped(annotation: cst.BaseExpression, typevar: str) -> cst.BaseExpression:
    """The annotation with its tensor core replaced by the name ``typevar`` (itself when already so)."""
    core = tensor_core(annotation)
    if core is None:
        raise ValueError("the annotation names no tensor type")
    if isinstance(core, cst.Name) and core.value == typevar:
        return annotation
    replacement = cst.Name(typevar, lpar=getattr(core, "lpar", ()), rpar=getattr(core, "rpar", ()))
    return annotation.deep_replace(core, replacement)  # type: ignore[return-value]


class AnnotationRewriter(TopLevelTransformer):
    """Gives the tensor parameters and returns of the named functions their TypeVars.

    ``typevars`` maps a function to ``{slot: TypeVar name}``, slots being parameter
    names and ``return.N``; ``return_counts`` gives each such function's number of
    schema returns. Every listed slot must have an annotation with a tensor core.
    """

    def __init__(self, typevars: Mapping[DefKey, Mapping[str, str]], return_counts: Mapping[DefKey, int]):
        super().__init__()
        self.typevars = typevars
        self.return_counts = return_counts

    def leave_def(self, key: DefKey, node: cst.FunctionDef) -> cst.FunctionDef:
        wanted = self.typevars.get(key)
        if not wanted:
            return node
        params = node.params
        changes = {}
        for field in ("posonly_params", "params", "kwonly_params"):
            group = getattr(params, field)
            new = tuple(self._param(p, wanted.get(p.name.value)) for p in group)
            if any(a is not b for a, b in zip(new, group)):
                changes[field] = new
        new_params = params.with_changes(**changes) if changes else params
        new_returns = self._returns(node.returns, wanted, self.return_counts.get(key, 0))
        if new_params is params and new_returns is node.returns:
            return node
        return node.with_changes(params=new_params, returns=new_returns)

    @staticmethod
    def _param(param: cst.Param, typevar: str | None) -> cst.Param:
        if typevar is None or param.annotation is None:
            return param
        annotation = retyped(param.annotation.annotation, typevar)
        if annotation is param.annotation.annotation:
            return param
        return param.with_changes(annotation=param.annotation.with_changes(annotation=annotation))

    @staticmethod
    def _returns(returns: cst.Annotation | None, wanted: Mapping[str, str], count: int) -> cst.Annotation | None:
        slots = {int(s[len(RETURN_PREFIX) :]): v for s, v in wanted.items() if s.startswith(RETURN_PREFIX)}
        if returns is None or not slots:
            return returns
        whole = returns.annotation
        parts = return_annotations(whole, count)
        if parts is None:
            return returns
        replacements: dict[cst.CSTNode, cst.CSTNode] = {}
        for index, typevar in sorted(slots.items()):
            part = parts[index]
            new_part = part if part is None else retyped(part, typevar)
            if new_part is not part:
                replacements[part] = new_part
        if not replacements:
            return returns
        if whole in replacements:
            return returns.with_changes(annotation=replacements[whole])
        return returns.with_changes(annotation=whole.visit(ReplaceNodes(replacements)))

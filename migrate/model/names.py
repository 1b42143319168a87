"""An ATen overload's name, read and printed one way everywhere (as torchgen's ``OperatorName``)."""

from __future__ import annotations

from dataclasses import dataclass

NAMESPACE = "aten::"
_DEFAULT = "default"  # the dispatcher's name of an overload with no overload name


@dataclass(frozen=True, order=True)
class OverloadName:
    """``add.Tensor`` as native_functions.yaml spells it; ``add`` for the default overload.

    ``parse`` reads every spelling a user or torch gives: ``aten::add.Tensor``, ``add.Tensor``,
    ``add``, ``aten::add.default``; ``str`` prints the yaml's and ``qualified`` the dispatcher's
    (``aten::add.Tensor``, ``aten::add``), as the recorders and torchlib registrations spell it.
    """

    operator: str  # 'add'
    overload: str = ""  # 'Tensor'; '' for the default overload

    @classmethod
    def parse(cls, text: str) -> OverloadName:
        name = text.removeprefix(NAMESPACE)
        operator, _, overload = name.partition(".")
        return cls(operator, "" if overload == _DEFAULT else overload)

    @classmethod
    def qualified_or_none(cls, text: str) -> OverloadName | None:
        """The name of an ``aten::`` operator as torch spells it; None for other namespaces (``prims::``)."""
        return cls.parse(text) if text.startswith(NAMESPACE) else None

    def __str__(self) -> str:
        return f"{self.operator}.{self.overload}" if self.overload else self.operator

    @property
    def qualified(self) -> str:
        return NAMESPACE + str(self)

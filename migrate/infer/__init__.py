"""Inference: the evidence of every source merged into one plan, and the variables' names.

Entered once per run, with the whole ``Sources`` (``migrate.evidence.gather``): ``run.infer`` returns an
``Inference``. Inside, one module per rule, applied by ``run`` in order: ``merge`` (each overload's evidence
merged into variables, with ``probe_conflicts``), ``dtype_arguments`` (returns a ``ScalarType`` argument sets),
``promotion_findings`` and ``promotion_sets`` (whether ATen promotes, and the promoted tensors' one variable),
``verdicts`` (a verdict per dtype), ``aliases`` and ``structure`` with ``own_calls`` (overloads tied to another),
``backends`` (sets per backend), ``naming`` (global sets, the line limit, each variable's name). Each source speaks per overload in plan terms (``OverloadPlan``s), so the merge is
plain data work; its rules, and what counts as evidence, are stated once, in docs/evidence.md.
"""

from migrate.infer.run import Inference, infer, infer_plan, verdict_plan

__all__ = ["Inference", "infer", "infer_plan", "verdict_plan"]

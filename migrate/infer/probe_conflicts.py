"""Where probing and the observations disagree on which slots share a variable: a conflict for each observed
variable probing split and each probed variable that joins observed ones (the merge keeps the probe's variables,
``migrate.infer.merge``).
"""

from __future__ import annotations

from migrate.model.plan import Conflict, Variable

SPLIT = "probe-split"  # conflict: probing split a variable the observations alone would have declared
JOINED = "probe-joined"  # conflict: probing joined variables the observations alone would have kept apart


def split_and_joined(observed: tuple[Variable, ...], probed: tuple[Variable, ...]) -> list[Conflict]:
    """Conflicts for each observed variable probing split, and each probed variable that joins observed ones."""
    conflicts = []
    for variable in observed:
        parts = [p for p in probed if set(p.binds) & set(variable.binds)]
        if len(parts) > 1:
            pieces = "; ".join(", ".join(s for s in p.binds if s in variable.binds) for p in parts)
            message = (
                f"observations alone would tie {', '.join(variable.binds)}; ATen accepted them with different dtypes "
                f"when probed, so they are split: {pieces}"
            )
            conflicts.append(Conflict(SPLIT, variable.binds, (), message))
    for variable in probed:
        parts = [o for o in observed if set(o.binds) & set(variable.binds)]
        if len(parts) > 1:
            pieces = "; ".join(", ".join(o.binds) for o in parts)
            message = f"probed and observed calls together tie {', '.join(variable.binds)}, which observations alone kept apart: {pieces}"
            conflicts.append(Conflict(JOINED, variable.binds, (), message))
    return conflicts

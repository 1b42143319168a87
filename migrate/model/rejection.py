"""How probe evidence spells the dtypes ATen refused, read back by the verdicts, ``show`` and the torchlib writer.

The probe's merge (``migrate.evidence.probe.merge``) writes a rejection's ``where`` as its subject, ``REJECTED``
and ATen's message; messages that differ only in the dtype they name share one piece, the differing part listed
per dtype in the evidence's order (``... with dtype {Char|Short|Float}``).
"""

from __future__ import annotations

import functools
import re

from migrate.model.dtypes import DType
from migrate.model.plan import PROBE, Evidence

REJECTED = ": rejected: "  # precedes ATen's message in the ``where`` of probe evidence for dtypes it refused
_ALTERNATIVES = re.compile(r"\{([^{}]*)\}")

# Spellings of dtypes in ATen's messages (C++ type names, ScalarType names, Python names).
DTYPE_SPELLING = re.compile(
    r"c10::complex<[^>]*>|c10::\w+|torch\.\w+"
    r"|\b(?:(?:unsigned|signed|short|long)\s+)*(?:char|short|int|long)\b(?:\s+int\b)?"
    r"|\b(?:Byte|Char|Short|Int|Long|Half|Float|Double|Complex\w*|Bool|BFloat16|U?Int\d+|Float\d\w*|Q\w*Int\w*|Bits\w+"
    r"|bool|float|double|half|bfloat16|u?int\d+|float\d\w*|complex\d*)\b"
)


@functools.lru_cache(maxsize=4096)
def names_a_dtype(message: str) -> bool:
    """Whether ATen's refusal names a dtype: a check of dtypes, which the same dtypes meet the same way whatever the
    values (``"le_cpu" not implemented for 'UInt16'``), not of the call's data (an index out of range)."""
    return DTYPE_SPELLING.search(message) is not None


def is_rejection(evidence: Evidence) -> bool:
    """Probe evidence whose dtypes ATen refused (its message in ``where``), not accepted."""
    return evidence.source == PROBE and REJECTED in evidence.where


def rejection_messages(evidence: Evidence) -> dict[DType, str]:
    """Each refused dtype's own message, from a rejection's shared text (the merge's ``_one_per_dtype``'s inverse)."""
    text = evidence.where.split(REJECTED, 1)[1]
    for match in reversed(list(_ALTERNATIVES.finditer(text))):
        alternatives = match.group(1).split("|")
        if len(evidence.dtypes) > 1 and len(alternatives) == len(evidence.dtypes):
            return {d: text[: match.start()] + a + text[match.end() :] for d, a in zip(evidence.dtypes, alternatives)}
    return dict.fromkeys(evidence.dtypes, text)

"""Issue 31's entries as a run wrote them, each with a diagonal dtype ATen refuses that the entry does not declare
and a mixed call ATen accepts that it declares (and a refused mixed call it does not), from the truth suite.

    PYTHONPATH=$PWD python -m bench.promotion_entries OUT
"""

import sys
import warnings
from pathlib import Path

warnings.simplefilter("ignore")
from bench.bench_truth import score, truth_verdicts, mixed_verdicts
from migrate.cache import StageCache
out = Path(sys.argv[1])
cache = StageCache.at()
result = score(out / "native_functions.yaml", truth_verdicts(cache), mixed=mixed_verdicts(cache))
text = (out / "native_functions.yaml").read_text().splitlines()
for name in ["add.Tensor", "addcdiv", "lt.Tensor", "logical_and", "div.Tensor", "eq.Tensor", "abs", "where.self", "cat", "clamp.Tensor", "pow.Tensor_Tensor", "mse_loss", "mm", "lerp.Tensor"]:
    i = next(i for i, l in enumerate(text) if l.startswith(f"- func: {name}("))
    print("\n".join(l for l in text[i:i + 4] if l.startswith("- func") or "type_constraints" in l or "type_promotion" in l))
    refused = [r for r in result.rows if r.case.overload == name and not r.verdict.accepted and not r.declared]
    print(f"    refused diagonal, undeclared: {refused[0].case.key} {refused[0].dtype}: {refused[0].verdict.message[:80]}" if refused else "    refused diagonal, undeclared: (no truth case)")
    accepted = [r for r in result.mixed if r.call.overload == name and r.verdict.accepted and r.declared]
    refusedm = [r for r in result.mixed if r.call.overload == name and not r.verdict.accepted and not r.declared]
    print(f"    accepted mixed, declared: {accepted[0].call.key}" if accepted else "    accepted mixed, declared: (none)")
    if refusedm:
        print(f"    refused mixed, undeclared: {refusedm[0].call.key}: {refusedm[0].verdict.message[:80]}")

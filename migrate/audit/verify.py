"""``dtype-migrate verify``: the OpInfo samples run under the dtype checker; violations grouped by overload.

Each OpInfo runs in its own worker (``sweep.run_in_workers``: crash containment and
timeouts), with the samples the sweep makes (same seeds, same dtypes), so a yaml
inferred from the sweep's observations is judged on the very calls it came from.
Workers check in collect mode and report each distinct violation with its count per
sample dtype. The output lists violations by overload in name order, then a one-line
total, then every OpInfo that could not run (or not all of it) with the reason.
Exit code 3 when any violation was found.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from migrate.check.checker import Declarations, Violation, checking
from migrate.runtime.samples import call_samples, find_opinfo, samples_by_dtype
from migrate.runtime.runs import BACKWARD_RAISED, CALL_RAISED, NO_CPU_DTYPES, SAMPLE_INPUTS_RAISED, CatalogueEntry, Failure, OpInfoId
from migrate.runtime.processes import DEFAULT_TIMEOUT, DONE, Job, JobOutcome, run_in_workers
from migrate.model.dtypes import DType

if TYPE_CHECKING:  # each worker imports this module, and reading yaml is no work of theirs
    from migrate.model.native import NativeFunctions

EXIT_OK, EXIT_VIOLATIONS = 0, 3
SOURCES_SHOWN = 5  # OpInfos named under each violation; the rest are counted


@dataclass(frozen=True)
class Found:
    """A violation as one OpInfo's samples of one dtype showed it, and how many calls showed it."""

    violation: Violation
    opinfo: OpInfoId
    sample_dtype: DType
    count: int


@dataclass(frozen=True)
class VerifyResult:
    """What a verify run saw: violations, failures, and how much ran."""

    found: tuple[Found, ...]
    failures: tuple[Failure, ...]
    opinfos: int  # selected, those with no CPU dtypes included
    samples: int

    @property
    def violations(self) -> tuple[Violation, ...]:
        """Each distinct violation once, sorted by overload, then deterministically within it."""
        return tuple(sorted({f.violation for f in self.found}, key=_violation_order))


def _violation_order(violation: Violation) -> tuple:
    return (
        violation.overload,
        violation.variable,
        violation.kind,
        violation.slot,
        violation.dtype.sort_key,
        tuple((slot, dtype.sort_key) for slot, dtype in violation.seen),
    )


def verify_declarations(
    native: NativeFunctions, selected: set[str] | None, catalogue: Iterable[CatalogueEntry], jobs: int | None = None
) -> VerifyResult | None:
    """The catalogue's OpInfos run under the checker built from the yaml's declarations (of the selected
    overloads); None when it declares nothing to check."""
    declarations = Declarations.from_native(native)
    if selected is not None:
        declarations = declarations.only(selected)
    if not any(overload.variables for overload in declarations.overloads):  # autocast policies alone: no set to check
        return None
    return verify(declarations, catalogue, jobs=jobs)


def verify(
    declarations: Declarations,
    catalogue: Iterable[CatalogueEntry],
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: bool | None = None,
) -> VerifyResult:
    """Run the catalogue's OpInfos under the checker against ``declarations``; those with no CPU dtypes are failures."""
    catalogue = tuple(catalogue)
    runnable = [entry for entry in catalogue if entry.cpu_dtypes]
    work = [Job(_verify_reports, (entry.opinfo, declarations), str(entry.opinfo)) for entry in runnable]
    outcomes = {outcome.job.argument[0]: outcome for outcome in run_in_workers(work, jobs, timeout, progress)}
    found: list[Found] = []
    failures: list[Failure] = []
    samples = 0
    for entry in catalogue:
        if not entry.cpu_dtypes:
            failures.append(Failure(entry.opinfo, NO_CPU_DTYPES, "the OpInfo declares no CPU dtypes"))
            continue
        outcome = outcomes[entry.opinfo]
        run_found, run_failures, run_samples = _from_outcome(entry.opinfo, outcome)
        found += run_found
        failures += run_failures
        samples += run_samples
    return VerifyResult(tuple(found), tuple(failures), len(catalogue), samples)


def _from_outcome(opinfo: OpInfoId, outcome: JobOutcome) -> tuple[list[Found], list[Failure], int]:
    """One OpInfo's violations and failures from its worker's per-dtype reports; a timeout or crash is a failure."""
    found, samples = [], 0
    errors: dict[tuple[str, str], tuple[list[DType], list[int]]] = {}
    for report in outcome.reports:
        sample_dtype = DType(report["dtype"])
        samples += report["samples"]
        found += [Found(violation, opinfo, sample_dtype, count) for violation, count in report["violations"]]
        for kind, reason, count in report["errors"]:
            dtypes, counts = errors.setdefault((kind, reason), ([], []))
            dtypes.append(sample_dtype)
            counts.append(count)
    failures = [Failure(opinfo, kind, reason, tuple(dtypes), sum(counts)) for (kind, reason), (dtypes, counts) in errors.items()]
    if outcome.status != DONE:
        failures.append(Failure(opinfo, outcome.status, outcome.reason))
    return found, failures, samples


def _verify_reports(argument: tuple[OpInfoId, Declarations]) -> Iterator[dict[str, Any]]:
    """The worker: one report per CPU dtype of the OpInfo, its samples made as the sweep makes them, run under the checker."""
    opinfo, declarations = argument
    op = find_opinfo(opinfo)
    for name, samples, errors in samples_by_dtype(op, opinfo):  # the same samples as the evidence
        with checking(declarations, collect=True) as checker:
            call_samples(op, samples, errors)
        yield {
            "dtype": name,
            "samples": len(samples),
            "violations": list(checker.counts.items()),
            "errors": [[kind, reason, count] for (kind, reason), count in sorted(errors.items())],
        }


def report(result: VerifyResult, path: Path) -> str:
    """The text verify prints: violations by overload, the total, then the failures."""
    by_violation: dict[Violation, list[Found]] = {}
    for found in result.found:
        by_violation.setdefault(found.violation, []).append(found)
    lines: list[str] = []
    overload = None
    for violation in result.violations:
        if violation.overload != overload:
            overload = violation.overload
            lines.append(f"{overload}:")
        sources = by_violation[violation]
        calls = sum(f.count for f in sources)
        lines.append(f"  {violation.describe()}")
        lines.append(f"    {calls} call{'s' if calls != 1 else ''}, from {_sources_text(sources)}")
    overloads = len({v.overload for v in result.violations})
    opinfos_ran = result.opinfos - sum(1 for f in result.failures if f.kind == NO_CPU_DTYPES)
    lines.append(
        f"verify: {len(result.violations)} violation{'s' if len(result.violations) != 1 else ''} "
        f"in {overloads} overload{'s' if overloads != 1 else ''} of {path}; "
        f"{opinfos_ran} OpInfos run ({result.samples} samples), {len({f.opinfo for f in result.failures})} with failures"
    )
    if result.failures:
        lines.append("failures (samples that did not run or raised; they do not change the exit code):")
        for failure in sorted(result.failures, key=lambda f: (f.opinfo, f.kind, f.reason)):
            dtypes = f" [{', '.join(map(str, failure.dtypes))}]" if failure.dtypes else ""
            count = f" ({failure.count} samples)" if failure.kind in (CALL_RAISED, BACKWARD_RAISED, SAMPLE_INPUTS_RAISED) else ""
            lines.append(f"  {failure.opinfo}: {failure.kind}: {failure.reason}{dtypes}{count}")
    return "\n".join(lines) + "\n"


def _sources_text(sources: list[Found]) -> str:
    """'add [torch.float32, torch.float64], mul [torch.int64], and 3 more OpInfos', in OpInfo order."""
    dtypes: dict[OpInfoId, set[DType]] = {}
    for found in sources:
        dtypes.setdefault(found.opinfo, set()).add(found.sample_dtype)
    named = sorted(dtypes)
    shown = [f"{opinfo} [{', '.join(str(d) for d in sorted(dtypes[opinfo], key=lambda d: d.sort_key))}]" for opinfo in named[:SOURCES_SHOWN]]
    rest = len(named) - SOURCES_SHOWN
    return ", ".join(shown) + (f", and {rest} more OpInfo{'s' if rest != 1 else ''}" if rest > 0 else "")

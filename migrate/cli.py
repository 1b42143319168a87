"""The command line: thin adapters from arguments to a ``Session`` (``migrate.pipeline``) and the output writer
(``migrate.write.outputs``): each command parses its arguments into ``Options`` (and a ``RunRequest``), asks the
session, and prints or writes what it answers.

Exit codes: 0 done, 1 changes pending under ``--check``, 2 bad input or usage, 3 ``verify`` found violations,
141 when the reader of the output left (as a shell reports SIGPIPE).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import gc
import importlib.metadata
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from migrate.errors import InputError
from migrate.pipeline import (
    AUTOCAST_KEYS,
    EVIDENCE,
    Options,
    RunRequest,
    Session,
    autocast_registrations,
    lowered,
    promotion_comparison,
    promotion_rules,
    reference,
)
from migrate.show import native_functions_to_show, show, torchlib_to_show
from migrate.write.outputs import commit, print_diff, replacing, unified_diff

EXIT_OK, EXIT_PENDING, EXIT_BAD_INPUT, EXIT_VIOLATIONS = 0, 1, 2, 3
EXIT_BROKEN_PIPE = 128 + 13  # as a shell reports a process ended by SIGPIPE

COMMANDS_HELP = """commands (dtype-migrate COMMAND --help for each):
  (none)          infer the constraints, write the yaml and rewrite torchlib (the options above)
  lower FILE      write the plain yaml back: every type variable to Tensor, no type_constraints
  show NAME       why an overload's declared sets refuse each dtype they leave out
  verify          run the OpInfo samples under the dtype checker built from the yaml
  export-check    export each declared dtype with torch.onnx.export(dynamo=True) and run it in onnxruntime
  autocast-gen    write the C++ autocast registration blocks from the yaml's autocast lines
  promotion-gen   write torch.onnx's type promotion rules from the yaml's type_promotion lines (--compare: against torch's)
  docs FILE       write the dtype reference (OperatorDtypes.md, autocast.md, index.html) from an annotated yaml
  accepts NAME    whether an annotated yaml declares a call's dtypes (exit 0 declared, 1 not)
  record          run the sweep's samples and probes on a device (--device cuda) into a recording for --recording

example:
  dtype-migrate --op scaled_dot_product_attention --dry-run"""


def _parser(prog: str, description: str, example: str, epilog: str = "") -> argparse.ArgumentParser:
    return argparse.ArgumentParser(
        prog=prog,
        description=description,
        epilog=epilog or f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _evidence_list(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in EVIDENCE]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown evidence source {unknown[0]!r} (choose from {', '.join(EVIDENCE)})")
    return names


INSTALLED_YAML = "the installed torch's packaged copy"
INSTALLED_TORCHLIB = "the installed one"


def _inputs(
    parser: argparse.ArgumentParser,
    torchlib: bool = True,
    ops: bool = True,
    jobs: bool = True,
    yaml_default: str = INSTALLED_YAML,
    torchlib_default: str = INSTALLED_TORCHLIB,
) -> None:
    """The options every command shares: the inputs, --op, workers and the cache (the defaults as the command reads them)."""
    parser.add_argument("--native-functions", type=Path, metavar="FILE", help=f"the yaml (default: {yaml_default})")
    if torchlib:
        parser.add_argument("--torchlib", type=Path, metavar="DIR", help=f"onnxscript's torch_lib folder (default: {torchlib_default})")
    if ops:
        parser.add_argument("--op", action="append", default=[], metavar="NAME", help="only these overloads: aten::name.overload, name.overload or name (repeatable)")
    if jobs:
        parser.add_argument("-j", "--jobs", type=int, metavar="N", help="worker processes (default: all cores)")
    parser.add_argument("--cache-dir", type=Path, metavar="DIR", help="where caches live (default: $DTYPE_MIGRATE_CACHE, else ~/.cache/dtype-migrate)")


def _run_parser() -> argparse.ArgumentParser:
    parser = _parser(
        "dtype-migrate",
        "Declare dtype constraints in native_functions.yaml (and type_constraints.yaml) and rewrite torchlib to them.",
        "",
        COMMANDS_HELP,
    )
    parser.add_argument("--version", action=_Version)
    _inputs(parser)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="write nothing; print one unified diff of every file that would change")
    mode.add_argument("--check", action="store_true", help="write nothing; exit 1 when the run would change anything")
    parser.add_argument("--out", type=Path, metavar="DIR", help="write the outputs under DIR instead of in place (required for installed inputs)")
    parser.add_argument("--evidence", type=_evidence_list, default=EVIDENCE, help=f"sources to infer from (default: {','.join(EVIDENCE)})")
    parser.add_argument("--plan", type=Path, metavar="FILE", help="apply this plan (JSON, as --report writes it) instead of inferring one")
    parser.add_argument("--report", type=Path, metavar="FILE", help="write the applied plan and its evidence as JSON")
    parser.add_argument("--overwrite", action="store_true", help="replace hand-written constraints and global sets")
    parser.add_argument("--yaml-only", action="store_true", help="write the yaml files only; leave torchlib as it is")
    parser.add_argument("-v", "--verbose", action="store_true", help="with --op: the whole file's statistics too (always in --report)")
    parser.add_argument("--refresh", action="store_true", help="run the OpInfo samples (and autocast observations) again instead of reading the cache")
    parser.add_argument("--autocast-source", type=Path, metavar="DIR", help="read autocast policies from this source tree's autocast_mode.cpp/.h")
    parser.add_argument("--export-check", action="store_true", help="check the torchlib's exports first (dtype-migrate export-check) for the rewrite")
    parser.add_argument(
        "--recording", action="append", default=[], type=Path, metavar="FILE", help="merge a recording (dtype-migrate record) as its backend's evidence (repeatable)"
    )
    return parser


def _options(args: argparse.Namespace) -> Options:
    return Options(
        native_functions=args.native_functions,
        torchlib=getattr(args, "torchlib", None),
        ops=tuple(getattr(args, "op", ())),
        evidence=getattr(args, "evidence", EVIDENCE),
        jobs=getattr(args, "jobs", None),
        cache_dir=args.cache_dir,
        refresh=getattr(args, "refresh", False),
        autocast_source=getattr(args, "autocast_source", None),
        recordings=tuple(getattr(args, "recording", ())),
    )


def run(args: argparse.Namespace) -> int:
    session = Session(_options(args))
    if not (args.dry_run or args.check or args.out is not None):
        session.refuse_installed(args.yaml_only)
    request = RunRequest(args.plan, args.overwrite, args.yaml_only, args.out, args.report, args.export_check)
    migration = session.migrate(request)
    text = migration.summary.text(whole=not args.op or args.verbose)  # an --op run says what it changed; -v the whole file
    report = [migration.report] if migration.report is not None else []
    if args.dry_run or args.check:
        commit(report)
    if args.dry_run:
        print_diff(unified_diff(list(migration.outputs)))
    elif args.check:
        pending = [o.target for o in migration.outputs if o.changed]
        sys.stderr.write(text + "".join(f"would change: {target}\n" for target in pending))
        return EXIT_PENDING if pending else EXIT_OK
    else:
        written = set(commit([*migration.outputs, *report], write_unchanged=args.out is not None))
        changed = {o.target for o in migration.outputs if o.changed}
        text += f"wrote {len(written - {r.target for r in report})} files ({len(changed)} changed)" + (f" under {args.out}\n" if args.out else "\n")
    sys.stderr.write(text)
    return EXIT_OK


def _emit(data: bytes, output: Path | None) -> None:
    """A generated file's bytes to ``output`` (atomically), or to standard output."""
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        commit([replacing(output, data)])


def _lower_parser() -> argparse.ArgumentParser:
    parser = _parser("dtype-migrate lower", "Write the plain yaml: every type variable back to Tensor.", "dtype-migrate lower out/native_functions.yaml -o plain.yaml")
    parser.add_argument("file", type=Path)
    parser.add_argument("-o", "--output", type=Path, help="write here (default: standard output)")
    return parser


def run_lower(args: argparse.Namespace) -> int:
    plain, declared = lowered(args.file)
    if not declared:
        sys.stderr.write(f"dtype-migrate lower: {args.file} declares no dtype (no type variable or annotation line): nothing to lower\n")
    _emit(plain, args.output)
    return EXIT_OK


def _show_parser() -> argparse.ArgumentParser:
    parser = _parser(
        "dtype-migrate show",
        "Print what the yaml declares for an overload and the call and ATen's message refusing each dtype it leaves out "
        "(-v: every source's evidence). Reads --native-functions, else out/native_functions.yaml when it exists, else the installed yaml; "
        "and --torchlib, else the torch_lib/ beside that yaml when it exists, else the installed one.",
        "dtype-migrate show add.Tensor",
    )
    parser.add_argument("name")
    beside = f"the torch_lib/ beside the yaml when it exists, else {INSTALLED_TORCHLIB}"
    _inputs(parser, ops=False, jobs=False, yaml_default=f"out/native_functions.yaml when it exists, else {INSTALLED_YAML}", torchlib_default=beside)
    parser.add_argument("-v", "--verbose", action="store_true", help="full dtype lists, whole lines, and ATen's rejection messages")
    return parser


def run_show(args: argparse.Namespace) -> int:
    args.native_functions = native_functions_to_show(args.native_functions)
    args.torchlib = torchlib_to_show(args.native_functions, args.torchlib)
    return show(Session(_options(args)), args.name, args.verbose)


def _verify_parser() -> argparse.ArgumentParser:
    parser = _parser(
        "dtype-migrate verify",
        "Run the OpInfo samples under the dtype checker; exit 3 on any violation.",
        "dtype-migrate verify --native-functions out/native_functions.yaml --op mm -j 2",
    )
    _inputs(parser, torchlib=False)
    parser.add_argument("--autocast", action="store_true", help="instead: list where autocast policies contradict the declared dtypes")
    return parser


def run_verify(args: argparse.Namespace) -> int:
    session = Session(_options(args))
    if args.autocast:  # contradictions are findings: exit 0
        sys.stdout.write(session.autocast_contradictions().text)
        return EXIT_OK
    found = session.verify()
    sys.stdout.write(found.text)
    return EXIT_VIOLATIONS if found.failed else EXIT_OK


REGENERATE = "dtype-migrate record --device cpu --refresh -o"  # the command that makes the shipped recording again


def _record_parser() -> argparse.ArgumentParser:
    parser = _parser(
        "dtype-migrate record",
        "Record every ATen call the tool makes on a device, with ATen's answers: on cuda the OpInfo samples and their probes, "
        "which --recording merges as that backend's evidence; on cpu the installed torch release's whole facts, which the "
        "project ships for its pinned torch. --check re-records a fixed sample of a CPU recording and compares it, verdict for verdict.",
        "dtype-migrate record --device cuda -o cuda.json.gz && dtype-migrate --recording cuda.json.gz --out out",
        f"examples:\n  dtype-migrate record --device cuda -o cuda.json.gz && dtype-migrate --recording cuda.json.gz --out out\n"
        f"  {REGENERATE} migrate/recordings/cpu-torch-2.13.0+cpu.json.gz   (the shipped recording, made again)\n"
        f"  dtype-migrate record --check migrate/recordings/cpu-torch-2.13.0+cpu.json.gz   (the freshness gate)",
    )
    _inputs(parser, torchlib=False)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("-o", "--output", type=Path, metavar="FILE", help="the recording to write (gzipped JSON)")
    target.add_argument("--check", type=Path, metavar="FILE", help="re-record a fixed sample of this CPU recording here; exit 1 at a differing verdict")
    parser.add_argument("--device", help="the torch device type: cuda, or cpu (the release's whole facts)")
    parser.add_argument("--refresh", action="store_true", help="make every ATen call again instead of reading the release's facts from the cache")
    return parser


def run_record(args: argparse.Namespace) -> int:
    started = time.monotonic()
    session = Session(_options(args))
    if args.check is not None:
        stale = session.stale_calls(args.check)
        if stale:
            sys.stderr.write(f"{args.check}: stale: {stale[0]}\n  ({len(stale)} differ; regenerate it: {REGENERATE} {args.check})\n")
            return EXIT_PENDING
        sys.stderr.write(f"{args.check}: fresh: its sample re-recorded here is the same, verdict for verdict ({time.monotonic() - started:.0f} s)\n")
        return EXIT_OK
    if args.device is None:
        raise InputError("record needs --device (cuda, or cpu)")
    recording = session.record(args.device)
    commit([replacing(args.output, recording.to_bytes())])
    sys.stderr.write(
        f"recorded {len(recording.runs)} OpInfos ({len(recording.schemas)} overloads) {recording.origin} "
        f"in {time.monotonic() - started:.0f} s; wrote {args.output}\n"
    )
    return EXIT_OK


def _export_check_parser() -> argparse.ArgumentParser:
    parser = _parser(
        "dtype-migrate export-check",
        "Export each declared dtype of each torchlib-registered overload with torch.onnx.export(dynamo=True), "
        "run it in onnxruntime and compare with eager PyTorch.",
        "dtype-migrate export-check --op addr --op bincount -j 2",
    )
    _inputs(parser)
    parser.add_argument("--report", type=Path, metavar="FILE", help="write every case and the summary as JSON")
    parser.add_argument("--refresh", action="store_true", help="export again instead of reading cached results")
    parser.add_argument("--missing", action="store_true", help="print the provisioning list instead of the table: declared dtypes no torchlib function exports")
    return parser


def run_export_check(args: argparse.Namespace) -> int:
    session = Session(replace(_options(args), refresh=False))
    sys.stdout.write(session.export_check(args.refresh, args.missing, args.report).text)
    return EXIT_OK


def _autocast_gen_parser() -> argparse.ArgumentParser:
    parser = _parser("dtype-migrate autocast-gen", "Write the C++ autocast registration blocks from the yaml.", "dtype-migrate autocast-gen out/native_functions.yaml --key CPU")
    parser.add_argument("file", type=Path)
    parser.add_argument("--key", action="append", choices=AUTOCAST_KEYS, help="only this autocast key (repeatable; default: every key the file annotates)")
    parser.add_argument("--header", type=Path, help="the autocast_mode.h whose shared lists to use (default: the installed torch's)")
    parser.add_argument("-o", "--output", type=Path, help="write here (default: standard output)")
    return parser


def run_autocast_gen(args: argparse.Namespace) -> int:
    text, skipped = autocast_registrations(args.file, args.header, args.key)
    for name in skipped:
        sys.stderr.write(f"dtype-migrate: warning: not generated: {name}\n")
    _emit(text.encode(), args.output)
    return EXIT_OK


def _promotion_gen_parser() -> argparse.ArgumentParser:
    parser = _parser(
        "dtype-migrate promotion-gen",
        "Write the yaml's type_promotion lines as torch.onnx's elementwise type promotion rule set (one rule per op name).",
        "dtype-migrate promotion-gen out/native_functions.yaml --compare",
    )
    parser.add_argument("file", type=Path)
    parser.add_argument("-o", "--output", type=Path, help="write the rules here (default: standard output)")
    parser.add_argument("--compare", action="store_true", help="print the comparison with the installed torch.onnx's table instead (equal, different, only on one side, with the calls that show ATen's side)")
    return parser


def run_promotion_gen(args: argparse.Namespace) -> int:
    if args.compare:
        sys.stdout.write(promotion_comparison(args.file))
        if args.output is None:
            return EXIT_OK
    text, disagreements = promotion_rules(args.file)
    for line in disagreements:
        sys.stderr.write(f"dtype-migrate: {line}\n")
    _emit(text.encode(), args.output)
    return EXIT_OK


def _docs_parser() -> argparse.ArgumentParser:
    parser = _parser(
        "dtype-migrate docs",
        "Write the dtype reference from an annotated yaml: OperatorDtypes.md, autocast.md and index.html (one self-contained page).",
        "dtype-migrate docs out/native_functions.yaml --report out/report.json -o out/reference",
    )
    parser.add_argument("file", type=Path, help="the annotated native_functions.yaml (its type_constraints.yaml beside it)")
    parser.add_argument("-o", "--output", type=Path, default=Path("."), metavar="DIR", help="where the three files go (default: .)")
    parser.add_argument("--report", type=Path, metavar="FILE", help="the run's --report: each dtype's verdict, its evidence and ATen's messages")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the files in DIR differ from what would be generated")
    return parser


def run_docs(args: argparse.Namespace) -> int:
    outputs = reference(args.file, args.report, args.output)
    stale = [o.display for o in outputs if o.changed]
    if args.check:
        for name in stale:
            sys.stderr.write(f"dtype-migrate docs: {args.output / name} is not what {args.file} generates\n")
        return EXIT_PENDING if stale else EXIT_OK
    commit(outputs)
    sys.stderr.write(f"wrote {len(stale)} of {len(outputs)} files under {args.output}\n")
    return EXIT_OK


def _accepts_parser() -> argparse.ArgumentParser:
    parser = _parser(
        "dtype-migrate accepts",
        "Whether an annotated yaml declares a call's dtypes, as the runtime checker judges it; exit 0 declared, 1 not declared.",
        "dtype-migrate accepts add.Tensor self=uint16 other=float64:0d --native-functions out/native_functions.yaml",
    )
    parser.add_argument("name", help="the overload: aten::name.overload or name.overload")
    parser.add_argument(
        "values",
        nargs="*",
        metavar="ARG=VALUE",
        help="a dtype (uint16), a 0-dim tensor (float64:0d), a scalar (2.5), None, or a list ([float32,int64]); return.0=DTYPE judges a return",
    )
    parser.add_argument("--native-functions", type=Path, metavar="FILE", required=True, help="the annotated yaml (its type_constraints.yaml beside it)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="the backend whose sets judge the call (default cpu; dispatch_dtypes:)")
    return parser


def run_accepts(args: argparse.Namespace) -> int:
    from migrate.api import load_declarations  # the public API, beside the pipeline; it imports torch

    values = {}
    for text in args.values:
        slot, equals, value = text.partition("=")
        if not equals or not slot:
            raise InputError(f"{text!r}: expected ARG=VALUE")
        values[slot] = value
    verdict = load_declarations(args.native_functions, args.device).accepts(args.name, **values)
    sys.stdout.write(str(verdict))
    return EXIT_OK if verdict else EXIT_PENDING


COMMANDS = {
    "lower": (run_lower, _lower_parser),
    "show": (run_show, _show_parser),
    "verify": (run_verify, _verify_parser),
    "export-check": (run_export_check, _export_check_parser),
    "autocast-gen": (run_autocast_gen, _autocast_gen_parser),
    "promotion-gen": (run_promotion_gen, _promotion_gen_parser),
    "docs": (run_docs, _docs_parser),
    "accepts": (run_accepts, _accepts_parser),
    "record": (run_record, _record_parser),
}


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """A run builds hundreds of thousands of long-lived objects (entries, plans) and frees its garbage by
    reference counting; the cyclic collector's default thresholds would rescan them a third of the run (as
    mypy, the collector is asked to wait for far more allocations)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(200_000, 50, 50)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def main(argv: list[str] | None = None) -> int:
    with _fewer_collections():
        return _main(sys.argv[1:] if argv is None else argv)


def _version() -> str:
    """This tool's version and those of the packages whose files it reads and whose kernels it calls."""
    versions = []
    for package in ("dtype-migrate", "torch", "onnxscript"):
        try:
            versions.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{package} (not installed)")
    return ", ".join(versions)


class _Version(argparse.Action):
    """``--version``: the versions are read only when asked."""

    def __init__(self, option_strings: list[str], dest: str, **_: object):
        super().__init__(option_strings, dest, nargs=0, help="print the versions of this tool, torch and onnxscript, and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        sys.stdout.write(_version() + "\n")
        parser.exit()


def _unknown_command(word: str) -> str:
    """A first word that is no command: the run takes options only, so it is a mistyped command."""
    close = difflib.get_close_matches(word, COMMANDS, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f" (commands: {', '.join(COMMANDS)})"
    return f"unknown command {word!r}{hint}"


def _main(argv: list[str]) -> int:
    if argv and argv[0] in COMMANDS:
        command, parser = COMMANDS[argv[0]]
        args = parser().parse_args(argv[1:])
    elif argv and not argv[0].startswith("-"):
        sys.stderr.write(f"dtype-migrate: error: {_unknown_command(argv[0])}\n")
        return EXIT_BAD_INPUT
    else:
        command, args = run, _run_parser().parse_args(argv)
    try:
        return command(args)
    except InputError as exc:
        sys.stderr.write(f"dtype-migrate: error: {exc}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("dtype-migrate: interrupted; nothing was written\n")
        return 130
    except BrokenPipeError:
        return _reader_closed_pipe()


def _reader_closed_pipe() -> int:
    """The reader left (``show X | head``): end quietly, as a shell tool does on SIGPIPE.

    Python would flush stdout again at exit and print a second BrokenPipeError, so stdout is
    pointed at /dev/null first.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())

"""Writing the outputs of a run: all files together, each atomically, or none; and the review diff.

Every output is known in full before anything is written. ``commit`` first checks
that no input changed on disk since it was read, then renames staged temporary
files into place; if a rename fails, the files already replaced are restored.
A new file gets the mode ``open()`` gives one (0o666 less the process umask) and a new
folder 0o777 less the umask; a replaced file keeps its mode.
"""

from __future__ import annotations

import difflib
import os
import secrets
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from migrate.errors import InputError


@dataclass(frozen=True)
class Output:
    """One file of a run: what was read (``before``, None if it did not exist) and what to write."""

    display: str  # the path shown in the diff, relative to the output root
    source: Path  # where ``before`` was read
    target: Path  # where ``after`` goes (== source when editing in place)
    before: bytes | None
    after: bytes

    @property
    def changed(self) -> bool:
        return self.before != self.after


def installed_roots() -> tuple[Path, ...]:
    """Folders of installed packages, which the tool never writes into."""
    paths = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
    return tuple(Path(p).resolve() for p in paths)


def is_installed_path(path: Path) -> bool:
    resolved = path.resolve()
    return any(resolved.is_relative_to(root) for root in installed_roots()) or any(
        part in ("site-packages", "dist-packages") for part in resolved.parts
    )


def checkout_root(path: Path) -> Path | None:
    """The root of the git checkout holding ``path`` (the nearest folder above it with a ``.git``), or None."""
    for folder in Path(path).resolve().parents:
        if (folder / ".git").exists():
            return folder
    return None


def read_or_none(path: Path) -> bytes | None:
    """A file's bytes; None where there is none (a folder in its place is not one: writing there fails later)."""
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None


def replacing(path: Path, data: bytes) -> Output:
    """An output that writes ``data`` to ``path``, whatever it holds now (``-o FILE``, ``--report FILE``)."""
    return Output(path.name, path, path, read_or_none(path), data)


def _staged_beside(target: Path) -> tuple[int, str]:
    """A new temporary file in ``target``'s folder, created as ``open()`` creates a file: mode 0o666 less the umask."""
    tmp = str(target.parent / f".{target.name}.{secrets.token_hex(8)}.tmp")
    return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp


def commit(outputs: list[Output], write_unchanged: bool = False) -> list[Path]:
    """Write every changed output (or every output with ``write_unchanged``); all or none."""
    todo = [o for o in outputs if o.changed or write_unchanged]
    for output in outputs:
        if read_or_none(output.source) != output.before:
            raise InputError("changed on disk since it was read; nothing was written", output.source)
    for output in todo:
        if is_installed_path(output.target):
            raise InputError("refusing to write into installed packages; pass --out DIR", output.target)
    staged: list[tuple[Output, str]] = []
    previous: dict[Path, bytes | None] = {}
    try:
        for output in todo:
            previous[output.target] = read_or_none(output.target)
            output.target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = _staged_beside(output.target)
            staged.append((output, tmp))
            with os.fdopen(fd, "wb") as f:
                f.write(output.after)
                f.flush()
                os.fsync(f.fileno())
            if output.target.exists():
                os.chmod(tmp, output.target.stat().st_mode & 0o7777)
    except OSError as exc:
        _discard(staged)
        raise InputError(f"cannot write: {exc.strerror}; nothing was written", exc.filename or output.target) from exc
    replaced: list[Path] = []
    try:
        for output, tmp in staged:
            os.replace(tmp, output.target)
            replaced.append(output.target)
    except OSError as exc:
        _discard(staged)
        for target in replaced:  # put back what was already replaced
            if previous[target] is None:
                target.unlink(missing_ok=True)
            else:
                target.write_bytes(previous[target])
        raise InputError(f"cannot write: {exc.strerror}; nothing was written", exc.filename) from exc
    return replaced


def _discard(staged: list[tuple[Output, str]]) -> None:
    for _, tmp in staged:
        Path(tmp).unlink(missing_ok=True)


def _diff_lines(lines):
    """difflib output with git's marker after a line that has no final newline."""
    for line in lines:
        if line[:1] in " +-" and not line.endswith("\n") and not line.startswith(("--- ", "+++ ")):
            yield line + "\n"
            yield "\\ No newline at end of file\n"
        else:
            yield line


def unified_diff(outputs: list[Output]) -> str:
    """One unified diff over every changed output, in git's format so that ``git apply`` takes it."""
    chunks = []
    for output in outputs:
        if not output.changed:
            continue
        before = output.before.decode("utf-8").splitlines(keepends=True) if output.before is not None else []
        after = output.after.decode("utf-8").splitlines(keepends=True)
        header = f"diff --git a/{output.display} b/{output.display}\n"
        if output.before is None:
            header += "new file mode 100644\n"
        old = "/dev/null" if output.before is None else f"a/{output.display}"
        body = difflib.unified_diff(before, after, old, f"b/{output.display}", n=3)
        text = "".join(_diff_lines(body))
        chunks.append(header + text)
    return "".join(chunks)


_COLOURS = {"+": "\033[32m", "-": "\033[31m", "@": "\033[36m", "d": "\033[1m"}


def colour(diff: str) -> str:
    """Terminal colours for a diff (only ever used when stdout is a terminal)."""
    out = []
    for line in diff.splitlines(keepends=True):
        code = _COLOURS.get(line[:1])
        if line.startswith(("+++", "---")):
            code = _COLOURS["d"]
        out.append(f"{code}{line.rstrip(chr(10))}\033[0m\n" if code else line)
    return "".join(out)


def print_diff(diff: str) -> None:
    sys.stdout.write(colour(diff) if sys.stdout.isatty() else diff)

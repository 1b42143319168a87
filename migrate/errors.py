"""The one error type for bad input: printed as a single line naming file, line and op."""

from __future__ import annotations

from pathlib import Path


class InputError(Exception):
    """Bad input or an impossible request; the command line prints it and exits 2."""

    def __init__(self, message: str, path: Path | str | None = None, line: int | None = None, op: str | None = None):
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line  # 1-based
        self.op = op

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        op = f"{self.op}: " if self.op else ""
        return f"{where}{op}{self.message}"

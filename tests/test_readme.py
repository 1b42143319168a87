"""Every example of README.md and docs/ is produced by running it: each ``$ dtype-migrate ...`` line of their code
blocks runs, README's first, in order, in one folder (so ``--out out`` makes the ``out/`` the later examples read), and
each output line a page shows is a line of what it printed; ``...`` in a shown line elides any text (at its end: the
line is a prefix)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import run_cli

README = Path(__file__).resolve().parent.parent / "README.md"
PAGES = (README, *sorted((README.parent / "docs").glob("*.md")))
PROMPT = "$ dtype-migrate "


@dataclass(frozen=True)
class Example:
    line: int  # the page's line of the command
    argv: tuple[str, ...]
    shown: tuple[str, ...]  # the output lines the README shows under it


def examples(text: str, page: str = "README.md") -> list[Example]:
    """The ``$ dtype-migrate`` commands of the text's code blocks, each with the lines shown under it."""
    found: list[Example] = []
    inside = False
    shown: list[str] | None = None  # the lines under the block's last command
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            inside, shown = not inside, None
        elif inside and line.startswith("$ "):
            if not line.startswith(PROMPT):
                raise ValueError(f"{page}:{number}: an example runs {line[2:].split()[0]!r}, not dtype-migrate")
            shown = []
            found.append(Example(number, tuple(shlex.split(line[len(PROMPT) :])), shown))
        elif shown is not None:
            shown.append(line)
    return [Example(e.line, e.argv, tuple(e.shown)) for e in found]


def matches(shown: str, printed: str) -> bool:
    """A shown line is the printed line, ``...`` standing for any text."""
    return re.fullmatch(".*".join(re.escape(part) for part in shown.split("...")), printed) is not None


def missing(example: Example, printed: str) -> list[str]:
    lines = printed.splitlines()
    return [shown for shown in example.shown if not any(matches(shown, line) for line in lines)]


def test_the_examples_are_found_with_their_output_lines():
    text = "```\n$ dtype-migrate show x\nread a\n  b ...\n$ dtype-migrate lower y\n```\n$ dtype-migrate not in a block\n"
    assert examples(text) == [Example(2, ("show", "x"), ("read a", "  b ...")), Example(5, ("lower", "y"), ())]
    with pytest.raises(ValueError, match="README.md:2: an example runs 'ls'"):
        examples("```\n$ ls\n```\n")


@pytest.mark.parametrize(
    ("shown", "printed", "expected"),
    [
        ("a b", "a b", True),
        ("a b", "a b c", False),
        ("a ...", "a b c", True),
        ("a ... c", "a b c", True),
        ("a ... c", "a b d", False),
        ("x(1, ...) -> T", "x(1, 2, 3) -> T", True),
    ],
)
def test_an_ellipsis_elides_any_text_and_nothing_else_does(shown, printed, expected):
    assert matches(shown, printed) is expected


def test_the_readme_has_a_show_example_that_answers_why_uint16_is_refused():
    (show,) = [e for e in examples(README.read_text()) if e.argv[:2] == ("show", "add.Tensor")]
    assert any("uint16" in line for line in show.shown) and any("not implemented for" in line for line in show.shown)


@pytest.mark.slow  # the examples include a full run
def test_every_example_of_the_readme_and_the_docs_prints_what_its_page_shows(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    found = [(page.relative_to(README.parent), example) for page in PAGES for example in examples(page.read_text(), page.name)]
    assert len(found) >= 7 and {str(page) for page, _ in found} >= {"README.md", "docs/api.md"}
    for page, example in found:
        code, out, err = run_cli(capfd, *example.argv)
        assert code in (0, 1), f"{page}:{example.line}: exit {code}: {err}"
        assert not missing(example, out + err), f"{page}:{example.line}: not printed: {missing(example, out + err)}"

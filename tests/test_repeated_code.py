"""No two places in the project's code (`app/` and `scheduler_core/`, not the tests) share a run
of six or more identical lines: a rule written twice drifts, so a repeat is moved to one home.

What counts as a line: each source line with its indentation and trailing spaces stripped.
Blank lines, comment-only lines and lines made only of punctuation (a closing ``)``, ``],``,
``}``, a docstring's closing quotes), import statements (modules that use the same names
import them alike) and the parameter lines of a ``def`` written over several lines (two
functions that take the same inputs, such as Volcano's two preemption modes or a wrapper and
what it wraps, name them alike; it is their bodies that would repeat a rule) are left out
before runs are compared, so formatting
boilerplate never makes a repeat and never hides one either: two six-line blocks that differ
only in where their closing brackets fall still match. Two places in one file count when
their runs do not overlap (a run of seven identical lines is not a repeat of itself).

The scan is pure Python, over line hashes in windows of six, so it stays well under a second.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest

REPO = Path(__file__).resolve().parent.parent
ROOTS = ("app", "scheduler_core")
RUN = 6
#: A line of nothing but brackets, separators and quotes: layout, not code.
PUNCTUATION = re.compile(r"""^[()\[\]{},:;.'"\\]*$""")
#: An import statement (its parenthesised names follow until the closing bracket).
IMPORT = re.compile(r"^(import |from \S+ import )")

#: The start of a function's header; when the line does not end it, its parameters follow.
DEF = re.compile(r"^(async )?def ")


class Place(NamedTuple):
    """Where a run starts: the file and the 1-based source line of its first counted line."""

    path: str
    line: int


@dataclass(frozen=True, slots=True)
class Repeat:
    """Two places that share a run of at least `RUN` counted lines."""

    first: Place
    second: Place

    @property
    def files(self) -> tuple[str, str]:
        return (self.first.path, self.second.path)

    def __str__(self) -> str:
        return f"{self.first.path}:{self.first.line} ~ {self.second.path}:{self.second.line}"


def counted_lines(text: str) -> list[tuple[int, str]]:
    """The lines a repeat is judged on, each with its 1-based source line number."""
    kept: list[tuple[int, str]] = []
    in_import = in_signature = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if in_import:
            in_import = ")" not in line
            continue
        if in_signature:
            in_signature = not line.endswith(":")
            continue
        if DEF.match(line):
            in_signature = not line.endswith(":")
        if IMPORT.match(line):
            in_import = line.endswith("(")
            continue
        if not line or line.startswith("#") or PUNCTUATION.match(line):
            continue
        kept.append((number, line))
    return kept


def find_repeats(sources: Mapping[str, str], run: int = RUN) -> list[Repeat]:
    """Every pair of places sharing `run` consecutive counted lines, one `Repeat` per pair of
    files (at the first window they share), in a stable order."""
    windows: dict[tuple[str, ...], list[tuple[str, int, int]]] = defaultdict(list)
    for path in sorted(sources):
        lines = counted_lines(sources[path])
        texts = [text for _, text in lines]
        for index in range(len(lines) - run + 1):
            windows[tuple(texts[index : index + run])].append((path, index, lines[index][0]))
    found: dict[tuple[str, str], Repeat] = {}
    for places in windows.values():
        if len(places) < 2:
            continue
        for i, (path_a, index_a, line_a) in enumerate(places):
            for path_b, index_b, line_b in places[i + 1 :]:
                if path_a == path_b and abs(index_a - index_b) < run:
                    continue
                key = (path_a, path_b)
                repeat = Repeat(Place(path_a, line_a), Place(path_b, line_b))
                held = found.get(key)
                if held is None or (line_a, line_b) < (held.first.line, held.second.line):
                    found[key] = repeat
    return sorted(found.values(), key=lambda r: (r.first.path, r.second.path, r.first.line))


def project_sources(roots: Iterable[str] = ROOTS) -> dict[str, str]:
    """The project's Python files under `roots`, keyed by their path in the repository."""
    return {
        path.relative_to(REPO).as_posix(): path.read_text(encoding="utf-8")
        for root in roots
        for path in sorted((REPO / root).rglob("*.py"))
    }


def test_no_two_places_in_the_code_share_six_identical_lines() -> None:
    repeats = find_repeats(project_sources())
    assert not repeats, "repeated code (move it to one home):\n" + "\n".join(map(str, repeats))


def block(prefix: str, count: int) -> str:
    """`count` distinct statements, so a test controls exactly how many lines two places share."""
    return "".join(f"    {prefix}{n} = {n}\n" for n in range(count))


@pytest.mark.parametrize(
    ("a", "b", "repeats"),
    [
        pytest.param(block("x", 6), block("x", 6), 1, id="six shared lines repeat"),
        pytest.param(block("x", 5), block("x", 5), 0, id="five shared lines do not"),
        pytest.param(
            "def f():\n" + block("x", 6),
            "class C:\n    def g(self):\n" + block("x", 6).replace("    ", "        "),
            1,
            id="indentation does not matter",
        ),
        pytest.param(
            block("x", 3) + "\n\n    # a note\n    ),\n    ]\n" + block("y", 2),
            block("x", 3) + block("y", 2),
            0,
            id="blank, comment and punctuation lines make no repeat",
        ),
        pytest.param(
            block("x", 3) + "\n    # a note\n    )\n" + block("y", 3),
            block("x", 3) + "    ],\n" + block("y", 3),
            1,
            id="nor hide one",
        ),
        pytest.param(
            "def f(\n" + block("x", 8).replace(" = ", ": int = ") + ") -> None:\n    return\n",
            "def g(\n" + block("x", 8).replace(" = ", ": int = ") + ") -> None:\n    pass\n",
            0,
            id="two functions taking the same parameters do not repeat",
        ),
        pytest.param(
            "def f(a: int) -> None:\n" + block("x", 6),
            "def g(\n    b: int,\n) -> None:\n" + block("x", 6),
            1,
            id="but their bodies do",
        ),
    ],
)
def test_the_scan_counts_only_runs_of_six_meaningful_lines(a: str, b: str, repeats: int) -> None:
    assert len(find_repeats({"a.py": a, "b.py": b})) == repeats


def test_a_run_repeated_within_one_file_is_found_once_and_overlap_is_not_a_repeat() -> None:
    twice = block("x", 6) + "    other = 0\n" + block("x", 6)
    assert [str(r) for r in find_repeats({"a.py": twice})] == ["a.py:1 ~ a.py:8"]
    assert find_repeats({"a.py": "    same = 0\n" * 11}) == []

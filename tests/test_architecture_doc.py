"""docs/architecture.md stays true: every room its tables name is a package or module of the
project, and every file a row says its room holds is in that room."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "architecture.md"
CODE = re.compile(r"`([^`]+)`")
#: A file or folder as the tables name them: ``keeper.py``, ``predicates/``, ``actions/util/``.
FILE = re.compile(r"^[\w/]+(\.py|/)$")


def rows() -> list[tuple[list[Path], list[str]]]:
    """Each table row's rooms (resolved in the repository) and the files its "holds" cell
    names."""
    found: list[tuple[list[Path], list[str]]] = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        rooms = []
        for name in CODE.findall(cells[0]):
            base = REPO if name.startswith("app/") else REPO / "scheduler_core"
            rooms.append(base / name)
        files = [token for token in CODE.findall(cells[1]) if FILE.match(token)]
        found.append((rooms, files))
    return found


ROWS = rows()


def test_the_tables_are_found() -> None:
    assert len(ROWS) >= 15  # the engine's rooms and app's


@pytest.mark.parametrize(("rooms", "files"), ROWS, ids=lambda x: str(x)[:60])
def test_every_room_exists_and_holds_the_files_its_row_names(
    rooms: list[Path], files: list[str]
) -> None:
    for room in rooms:
        assert room.exists(), f"{room.relative_to(REPO)} named in docs/architecture.md is gone"
    folders = [room for room in rooms if room.is_dir()]
    for name in files:
        target = name.rstrip("/")
        hits = [
            hit
            for folder in folders
            for hit in [folder / target, folder.parent / target, *folder.rglob(target)]
            if hit.exists()
        ]
        where = ", ".join(str(r.relative_to(REPO)) for r in rooms)
        assert hits, f"docs/architecture.md says {where} holds {name}, which is not there"

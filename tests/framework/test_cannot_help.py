"""The table of kinds of "no": each kind has one row, the order puts the job-level kind
first, and docs/reclaim.md's table names every kind."""

from __future__ import annotations

from pathlib import Path

from scheduler_core.framework.cannot_help import KINDS, CannotHelp, Kind

RECLAIM_DOC = Path(__file__).resolve().parents[2] / "docs" / "reclaim.md"


def test_every_kind_has_exactly_one_row() -> None:
    assert sorted(row.kind.value for row in KINDS) == sorted(k.value for k in Kind)


def test_the_job_level_kinds_are_tried_first_and_the_catch_all_last() -> None:
    assert KINDS[0].kind is Kind.CAPABILITY
    assert KINDS[1].kind is Kind.TOPOLOGY
    assert KINDS[-1].kind is Kind.NODES


def test_the_reclaim_doc_has_a_row_for_every_kind() -> None:
    text = RECLAIM_DOC.read_text()
    for kind in Kind:
        assert f"| `{kind.value}` |" in text, kind


def test_the_note_leads_with_the_same_words_for_every_kind() -> None:
    for kind in Kind:
        assert CannotHelp(kind, "x").note == "no eviction can help this pod: x"

"""keyed / read_keyed: a record's fields read from the argument keys they name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.keyed_args import keyed, read_keyed


@dataclass(frozen=True, slots=True)
class Example:
    weight: int = keyed(3, "example.weight")
    other: int = keyed(0, "example.other")
    switch: bool = keyed(True, "example.switch")
    unkeyed: int = 7


@pytest.mark.parametrize(
    ("raw", "ints"),
    [
        ({}, {"weight": 3, "other": 0}),
        ({"example.weight": 5}, {"weight": 5, "other": 0}),
        # the accessor's rule holds: not an integer, the default
        ({"example.weight": "5", "example.other": 2.0}, {"weight": 3, "other": 0}),
        # a field without a key is never read, whatever the map holds
        ({"unkeyed": 9}, {"weight": 3, "other": 0}),
    ],
)
def test_each_keyed_field_of_the_kind_is_read_from_its_key(
    raw: dict[str, Any], ints: dict[str, int]
) -> None:
    assert read_keyed(Example, int, Arguments(raw).get_int) == ints


def test_fields_of_another_kind_are_left_to_their_own_reading() -> None:
    assert read_keyed(Example, bool, Arguments({"example.switch": "false"}).get_bool) == {
        "switch": False
    }


def test_a_keyed_field_keeps_its_default() -> None:
    assert Example() == Example(weight=3, other=0, switch=True, unkeyed=7)

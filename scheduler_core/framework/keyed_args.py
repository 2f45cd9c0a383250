"""Argument records whose fields name their argument keys.

A plugin's argument record declares each plain argument as a field with Volcano's default
and the key it is read from (``keyed``), and reads them all one way (``read_keyed``) with the
accessor whose rule Volcano applies to that kind of value (``Arguments.get_int``,
``get_bool``...). The key stays beside the field it fills, so a new argument is one line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field, fields
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")

#: The metadata entry of a field naming its argument key.
_KEY = "argument_key"


def keyed(default: T, key: str) -> T:
    """A record field read from argument ``key``, ``default`` when the key is absent or its
    value is not of the field's kind."""
    value: T = field(default=default, metadata={_KEY: key})
    return value


def read_keyed(
    record: type[DataclassInstance], kind: type[T], read: Callable[[str, T], T]
) -> dict[str, T]:
    """Every keyed field of ``record`` whose default is of type ``kind`` exactly (a bool
    is not read as an int), by field name, read with ``read(key, default)``."""
    values: dict[str, T] = {}
    for f in fields(record):
        key = f.metadata.get(_KEY)
        default = f.default
        if key is not None and type(default) is kind:
            assert isinstance(default, kind)
            values[f.name] = read(key, default)
    return values

"""Typed access to a plugin's or action's ``arguments`` map, with Volcano's accessor rules,
and the plugin's typed record of that map (``PluginArgs``), read once when the
configuration is loaded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Self, TypeVar


class ArgumentError(ValueError):
    """A plugin refuses a value of its arguments; the message names the key and says what
    would be accepted. Raised by a ``PluginArgs.parse`` when the configuration is loaded, so
    a bad configuration is refused there (with where it is) rather than in every session."""


class PluginArgs(Protocol):
    """What a plugin reads of its ``arguments`` map, as one typed record: parsed once when
    the configuration is loaded, handed to the plugin in every session."""

    @classmethod
    def parse(cls, arguments: Arguments) -> Self:
        """The record for ``arguments``, with the plugin's own rules: Volcano's lenient
        accessors where it is lenient (a value of the wrong kind leaves the default), an
        ``ArgumentError`` (or another ``ValueError``) naming the key where it refuses."""
        ...


@dataclass(frozen=True, slots=True)
class NoArgs:
    """The record of a plugin that reads no arguments: whatever is written is ignored, as
    Volcano ignores keys a plugin does not know."""

    @classmethod
    def parse(cls, arguments: Arguments) -> NoArgs:
        del arguments
        return cls()


A = TypeVar("A", bound=PluginArgs)


class Arguments:
    """``GetInt`` takes only integers, ``GetFloat64`` ints or floats, ``GetBool`` bools or
    ``ParseBool`` strings; anything else leaves the default, as Volcano does.

    ``parsed``: the plugin's record of this map when the configuration has already been
    read into one (``typed`` then hands it out instead of reading the map again)."""

    def __init__(self, raw: dict[str, Any] | None = None, parsed: object = None) -> None:
        self._raw: dict[str, Any] = dict(raw or {})
        self._parsed = parsed

    def typed(self, args_type: type[A]) -> A:
        """The record of type ``args_type`` for this map: the one parsed when the
        configuration was loaded, else parsed now (a configuration built in code and never
        checked). Raises what ``args_type.parse`` raises on a value it refuses."""
        parsed = self._parsed
        if isinstance(parsed, args_type):
            return parsed
        return args_type.parse(self)

    def get_int(self, key: str, default: int) -> int:
        value = self._raw.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        return default

    def get_float(self, key: str, default: float) -> float:
        value = self._raw.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        return default

    def get_bool(self, key: str, default: bool) -> bool:
        value = self._raw.get(key)
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            parsed = _parse_bool(value)
            if parsed is not None:
                return parsed
        return default

    def get_str(self, key: str, default: str) -> str:
        value = self._raw.get(key)
        return value if isinstance(value, str) else default

    def raw(self) -> dict[str, Any]:
        return dict(self._raw)


def _parse_bool(text: str) -> bool | None:
    """Go's ``strconv.ParseBool``."""
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    return None

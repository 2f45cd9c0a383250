"""Typed access to a plugin's or action's ``arguments`` map, with Volcano's accessor rules."""

from __future__ import annotations

from typing import Any


class Arguments:
    """``GetInt`` takes only integers, ``GetFloat64`` ints or floats, ``GetBool`` bools or
    ``ParseBool`` strings; anything else leaves the default, as Volcano does."""

    def __init__(self, raw: dict[str, Any] | None = None) -> None:
        self._raw: dict[str, Any] = dict(raw or {})

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

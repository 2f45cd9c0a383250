"""proportion's arguments: none. Volcano's plugin reads no ``arguments`` either, and ignores
whatever is written there; so does this one."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler_core.framework.arguments import Arguments


@dataclass(frozen=True, slots=True)
class ProportionArgs:
    """The record of proportion's arguments: it has no field, so a key written for it (a
    typo, another plugin's key) changes nothing and is never an error."""

    @classmethod
    def parse(cls, arguments: Arguments) -> ProportionArgs:
        del arguments
        return cls()

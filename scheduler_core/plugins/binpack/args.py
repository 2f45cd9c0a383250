"""binpack's arguments, read once into a typed record.

Volcano's lenient accessor rules: a key that is absent, or holds a value of the wrong type
(a string where a number is wanted), leaves its default; a negative resource weight is taken
as 1. Nothing is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduler_core.framework.arguments import Arguments

BINPACK_WEIGHT = "binpack.weight"
BINPACK_CPU = "binpack.cpu"
BINPACK_MEMORY = "binpack.memory"
BINPACK_RESOURCES = "binpack.resources"
BINPACK_RESOURCES_PREFIX = BINPACK_RESOURCES + "."


def _default_resources() -> dict[str, int]:
    return {"cpu": 1, "memory": 1}


def _non_negative(value: int) -> int:
    return 1 if value < 0 else value


@dataclass(frozen=True, slots=True)
class BinpackArgs:
    """``binpack.weight`` scales the whole score; every resource with a weight is scored."""

    weight: int = 1
    cpu: int = 1
    memory: int = 1
    #: every scored resource by name, cpu and memory included: the extra resources named in
    #: ``binpack.resources`` first, in their order, each weighted by
    #: ``binpack.resources.<name>`` (1)
    resources: Mapping[str, int] = field(default_factory=_default_resources)

    @classmethod
    def parse(cls, arguments: Arguments) -> BinpackArgs:
        cpu = _non_negative(arguments.get_int(BINPACK_CPU, 1))
        memory = _non_negative(arguments.get_int(BINPACK_MEMORY, 1))
        resources: dict[str, int] = {}
        for raw in arguments.get_str(BINPACK_RESOURCES, "").split(","):
            name = raw.strip()
            if name:
                resources[name] = _non_negative(
                    arguments.get_int(BINPACK_RESOURCES_PREFIX + name, 1)
                )
        resources["cpu"] = cpu
        resources["memory"] = memory
        return cls(
            weight=arguments.get_int(BINPACK_WEIGHT, 1),
            cpu=cpu,
            memory=memory,
            resources=resources,
        )

    def __str__(self) -> str:
        """Volcano's log line of the weights."""
        extra = ", ".join(
            f"{name}[{w}]" for name, w in self.resources.items() if name not in ("cpu", "memory")
        )
        return (
            f"{BINPACK_WEIGHT}[{self.weight}], {BINPACK_CPU}[{self.cpu}], "
            f"{BINPACK_MEMORY}[{self.memory}], {extra or 'no extend resources.'}"
        )

"""BinpackArgs: Volcano's ``GetInt`` / ``GetString`` rules, a negative resource weight as 1."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework.arguments import Arguments
from scheduler_core.plugins.binpack.args import (
    BINPACK_CPU,
    BINPACK_MEMORY,
    BINPACK_RESOURCES,
    BINPACK_WEIGHT,
    BinpackArgs,
)

GPU = "nvidia.com/gpu"
FOO = "example.com/foo"


def parse(raw: dict[str, Any]) -> BinpackArgs:
    return BinpackArgs.parse(Arguments(raw))


def test_absent_arguments_give_volcanos_defaults() -> None:
    assert parse({}) == BinpackArgs()
    assert (parse({}).weight, parse({}).cpu, parse({}).memory) == (1, 1, 1)
    assert dict(parse({}).resources) == {"cpu": 1, "memory": 1}


@pytest.mark.parametrize(
    ("raw", "weight", "cpu", "memory"),
    [
        ({BINPACK_WEIGHT: 10, BINPACK_CPU: 3, BINPACK_MEMORY: 0}, 10, 3, 0),
        # a negative plugin weight stays; a negative resource weight counts as 1
        ({BINPACK_WEIGHT: -2, BINPACK_CPU: -5, BINPACK_MEMORY: -1}, -2, 1, 1),
        # anything but an integer leaves the default
        ({BINPACK_WEIGHT: "10", BINPACK_CPU: 2.5, BINPACK_MEMORY: True}, 1, 1, 1),
        ({BINPACK_WEIGHT: None, BINPACK_CPU: [3], BINPACK_MEMORY: "2"}, 1, 1, 1),
    ],
)
def test_the_plugin_and_cpu_memory_weights(
    raw: dict[str, Any], weight: int, cpu: int, memory: int
) -> None:
    parsed = parse(raw)
    assert (parsed.weight, parsed.cpu, parsed.memory) == (weight, cpu, memory)
    assert (parsed.resources["cpu"], parsed.resources["memory"]) == (cpu, memory)


@pytest.mark.parametrize(
    ("raw", "resources"),
    [
        # listed names, trimmed, empty entries skipped, each weighted 1 unless given
        ({BINPACK_RESOURCES: f" {GPU} ,, {FOO} "}, {GPU: 1, FOO: 1, "cpu": 1, "memory": 1}),
        (
            {BINPACK_RESOURCES: f"{GPU},{FOO}", f"{BINPACK_RESOURCES}.{GPU}": 4},
            {GPU: 4, FOO: 1, "cpu": 1, "memory": 1},
        ),
        # a negative or non-integer resource weight: 1
        (
            {
                BINPACK_RESOURCES: f"{GPU},{FOO}",
                f"{BINPACK_RESOURCES}.{GPU}": -4,
                f"{BINPACK_RESOURCES}.{FOO}": "4",
            },
            {GPU: 1, FOO: 1, "cpu": 1, "memory": 1},
        ),
        # a weight for a resource not listed scores nothing
        ({f"{BINPACK_RESOURCES}.{GPU}": 4}, {"cpu": 1, "memory": 1}),
        # a list that is not a string is ignored
        ({BINPACK_RESOURCES: [GPU]}, {"cpu": 1, "memory": 1}),
        # cpu listed as an extra resource keeps binpack.cpu's weight
        (
            {BINPACK_RESOURCES: "cpu", "binpack.resources.cpu": 9, BINPACK_CPU: 2},
            {"cpu": 2, "memory": 1},
        ),
    ],
)
def test_the_scored_resources(raw: dict[str, Any], resources: dict[str, int]) -> None:
    assert dict(parse(raw).resources) == resources


def test_the_log_line_names_every_weight() -> None:
    assert str(parse({})) == (
        "binpack.weight[1], binpack.cpu[1], binpack.memory[1], no extend resources."
    )
    raw = {BINPACK_WEIGHT: 3, BINPACK_RESOURCES: GPU, f"{BINPACK_RESOURCES}.{GPU}": 2}
    assert str(parse(raw)) == (f"binpack.weight[3], binpack.cpu[1], binpack.memory[1], {GPU}[2]")

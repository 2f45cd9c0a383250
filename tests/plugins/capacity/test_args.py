"""capacity's one argument, ``ancestorReclaimLevel``: read once with Volcano's lenient rules
(a value of the wrong kind leaves the default, a negative one falls back to 0, said), never
a reason to refuse the configuration."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from scheduler_core.conf import load_configuration
from scheduler_core.engine import check_configuration
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.framework import close_session, open_session
from scheduler_core.plugins.capacity import CapacityArgs, CapacityPlugin
from tests.builders import node, snapshot


def conf_text(level: str) -> str:
    return (
        'actions: ""\ntiers:\n- plugins:\n  - name: capacity\n    arguments:\n'
        f"      ancestorReclaimLevel: {level}\n"
    )


@pytest.mark.parametrize(
    ("arguments", "level"),
    [
        pytest.param({}, 0, id="unset"),
        pytest.param({"ancestorReclaimLevel": 0}, 0, id="zero"),
        pytest.param({"ancestorReclaimLevel": 2}, 2, id="two"),
        pytest.param({"ancestorReclaimLevel": -2}, 0, id="negative-falls-back"),
        pytest.param({"ancestorReclaimLevel": "2"}, 0, id="a-string-is-not-an-int"),
        pytest.param({"ancestorReclaimLevel": 1.5}, 0, id="a-float-is-not-an-int"),
        pytest.param({"ancestorReclaimLevel": True}, 0, id="a-bool-is-not-an-int"),
        pytest.param({"ancestorreclaimlevel": 3}, 0, id="keys-are-case-sensitive"),
        pytest.param({"other": 3, "ancestorReclaimLevel": 1}, 1, id="unknown-keys-ignored"),
    ],
)
def test_ancestor_reclaim_level_is_read_as_volcano_reads_it(
    arguments: dict[str, Any], level: int
) -> None:
    assert CapacityArgs.parse(Arguments(arguments)) == CapacityArgs(ancestor_reclaim_level=level)


def test_a_negative_level_is_said_once_when_the_configuration_is_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="scheduler_core.plugins.capacity"):
        conf = check_configuration(load_configuration(conf_text("-2")))
        for _ in range(3):
            close_session(open_session(snapshot([node("n1", cpu="4")]), conf))
    assert caplog.messages == [
        "ancestorReclaimLevel should be non-negative, got -2. Falling back to 0."
    ]


def test_negative_ancestor_reclaim_level_falls_back_to_zero() -> None:
    assert CapacityPlugin(Arguments({"ancestorReclaimLevel": -2})).args.ancestor_reclaim_level == 0
    assert CapacityPlugin(Arguments({"ancestorReclaimLevel": 2})).args.ancestor_reclaim_level == 2


@pytest.mark.parametrize("value", ["-1", "x", "1.5", "2"])
def test_no_value_refuses_the_configuration_and_the_record_is_kept(value: str) -> None:
    conf = check_configuration(load_configuration(conf_text(value)))
    option = conf.tiers[0].plugins[0]
    assert option.args == CapacityArgs.parse(Arguments(option.arguments))

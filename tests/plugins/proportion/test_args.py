"""proportion reads no arguments, as Volcano's does: whatever is written there is ignored,
never refused."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.conf import load_configuration
from scheduler_core.engine import check_configuration
from scheduler_core.framework.arguments import Arguments
from scheduler_core.plugins.proportion import ProportionArgs, ProportionPlugin


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({}, id="none"),
        pytest.param({"weight": 3}, id="a-key-it-does-not-read"),
        pytest.param({"proportion.x": "y", "n": None}, id="anything"),
    ],
)
def test_any_arguments_make_the_same_empty_record(arguments: dict[str, Any]) -> None:
    assert ProportionArgs.parse(Arguments(arguments)) == ProportionArgs()
    assert ProportionPlugin(Arguments(arguments)).args == ProportionArgs()


def test_arguments_never_refuse_the_configuration() -> None:
    conf = check_configuration(
        load_configuration(
            'actions: ""\ntiers:\n- plugins:\n  - name: proportion\n    arguments:\n      x: 1\n'
        )
    )
    assert conf.tiers[0].plugins[0].args == ProportionArgs()

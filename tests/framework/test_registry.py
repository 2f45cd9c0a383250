"""A plugin's typed arguments are read once, when the configuration is checked, and every
session's instance is handed that record; a value the plugin refuses refuses the
configuration with where it stands."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from scheduler_core.conf import ConfigError, load_configuration
from scheduler_core.engine import check_configuration
from scheduler_core.framework.arguments import ArgumentError, Arguments, NoArgs
from scheduler_core.framework.framework import close_session, open_session
from scheduler_core.framework.registry import Plugin
from scheduler_core.framework.session import Session
from tests.builders import node, snapshot
from tests.conftest import RegisterPlugin

OBJECTS = [node("n1", cpu="4")]

CONF = """\
actions: ""
tiers:
- plugins:
  - name: priority
  - name: test-limited
    arguments:
      limit: {limit}
"""


@dataclass(frozen=True, slots=True)
class LimitArgs:
    limit: int = 1
    parses: ClassVar[list[int]] = []

    @classmethod
    def parse(cls, arguments: Arguments) -> LimitArgs:
        limit = arguments.get_int("limit", 1)
        cls.parses.append(limit)
        if limit < 0:
            raise ArgumentError(f"limit is {limit}: it must be 0 or more")
        return cls(limit=limit)


class LimitedPlugin(Plugin[LimitArgs]):
    name = "test-limited"
    args_type: ClassVar[type[LimitArgs]] = LimitArgs

    def on_session_open(self, ssn: Session) -> None:
        pass


class PlainPlugin(Plugin[NoArgs]):
    """Written without a record: the raw map is still its to read."""

    name = "test-plain"

    def on_session_open(self, ssn: Session) -> None:
        pass


@pytest.fixture(autouse=True)
def _plugins(register_plugin: RegisterPlugin) -> None:
    register_plugin(LimitedPlugin)
    register_plugin(PlainPlugin)
    LimitArgs.parses.clear()


def test_a_checked_configuration_hands_every_session_the_record_read_at_load() -> None:
    conf = check_configuration(load_configuration(CONF.format(limit=3)))
    record = conf.tiers[0].plugins[1].args
    assert record == LimitArgs(limit=3)
    for _ in range(3):
        ssn = open_session(snapshot(OBJECTS), conf)
        plugin = ssn.plugins["test-limited"]
        assert isinstance(plugin, LimitedPlugin)
        assert plugin.args is record
        close_session(ssn)
    assert LimitArgs.parses == [3]


def test_a_refused_argument_refuses_the_configuration_saying_where() -> None:
    with pytest.raises(ConfigError) as refused:
        check_configuration(load_configuration(CONF.format(limit=-1)), "volcano.conf")
    assert str(refused.value) == (
        "volcano.conf: tiers[0].plugins[1] (test-limited): limit is -1: it must be 0 or more"
    )


def test_a_configuration_never_checked_is_read_when_the_plugin_is_built() -> None:
    conf = load_configuration(CONF.format(limit=2))
    assert conf.tiers[0].plugins[1].args is None
    ssn = open_session(snapshot(OBJECTS), conf)
    plugin = ssn.plugins["test-limited"]
    assert isinstance(plugin, LimitedPlugin)
    assert plugin.args == LimitArgs(limit=2)


def test_a_plugin_without_a_record_gets_no_args_and_keeps_its_raw_arguments() -> None:
    conf = check_configuration(
        load_configuration(
            'actions: ""\ntiers:\n- plugins:\n  - name: test-plain\n    arguments:\n      x: 1\n'
        )
    )
    assert conf.tiers[0].plugins[0].args == NoArgs()
    plugin = open_session(snapshot(OBJECTS), conf).plugins["test-plain"]
    assert plugin.args == NoArgs()
    assert plugin.arguments.raw() == {"x": 1}


def test_a_record_of_another_plugin_is_not_taken_for_its_own() -> None:
    plugin = LimitedPlugin(Arguments({"limit": 5}, parsed=NoArgs()))
    assert plugin.args == LimitArgs(limit=5)

"""usagehistory's arguments: the record, its defaults, and the configurations it refuses
(naming the key), read once when the configuration is checked."""

from __future__ import annotations

import pytest

from scheduler_core.conf import ConfigError, load_configuration
from scheduler_core.engine import check_configuration, open_session
from scheduler_core.framework.arguments import Arguments
from scheduler_core.plugins.usagehistory import (
    UsageHistoryArgs,
    UsageHistoryPlugin,
    UsageSettingsError,
    configured_settings,
)
from tests.builders import queue, snapshot
from tests.plugins.usagehistory.test_plugin import DAY, ON, conf_text

# --- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ({}, "usage.halfLife is missing"),
        ({"usage.halfLife": 0}, "usage.halfLife is 0"),
        ({"usage.halfLife": '"0s"'}, "usage.halfLife is 0"),
        ({"usage.halfLife": "soon"}, "usage.halfLife"),
        ({**ON, "usage.maxAdjustment": 0.5}, "must be at least 1"),
        ({**ON, "usage.floor": 2}, "between 0 and 1"),
        ({**ON, "usage.persistInterval": '"0s"'}, "usage.persistInterval"),
    ],
)
def test_configuration_that_would_make_the_plugin_a_no_op_or_wrong_is_refused(
    arguments: dict[str, object], reason: str
) -> None:
    conf = load_configuration(conf_text(arguments))
    with pytest.raises(ConfigError, match=reason) as refused:
        check_configuration(conf, "volcano.conf")
    assert "tiers[0].plugins[0] (usagehistory)" in str(refused.value)


def test_plugin_after_proportion_is_refused() -> None:
    text = 'actions: ""\ntiers:\n- plugins:\n  - name: proportion\n  - name: usagehistory\n'
    text += "    arguments:\n      usage.halfLife: 1h\n"
    with pytest.raises(ConfigError, match="must be listed before proportion"):
        check_configuration(load_configuration(text))


def test_the_record_reads_durations_and_defaults() -> None:
    got = UsageHistoryArgs.parse(
        Arguments({"usage.halfLife": "168h", "usage.persistInterval": "1m"})
    )
    assert got == UsageHistoryArgs(7 * DAY, 2.0, 0.5, 60.0)
    assert check_configuration(load_configuration(conf_text())).warnings == []
    with pytest.raises(UsageSettingsError, match=r"usage\.halfLife must be a duration"):
        UsageHistoryArgs.parse(Arguments({"usage.halfLife": True}))


def test_the_record_is_read_once_with_the_configuration_and_handed_to_every_reader() -> None:
    conf = load_configuration(conf_text({**ON, "usage.floor": 0.25}))
    check_configuration(conf)
    [option, _] = conf.tiers[0].plugins
    assert isinstance(option.args, UsageHistoryArgs) and option.args.floor == 0.25
    assert configured_settings(conf) is option.args
    ssn = open_session(snapshot([queue("q1")]), conf)
    plugin = ssn.plugins["usagehistory"]
    assert isinstance(plugin, UsageHistoryPlugin) and plugin.args is option.args

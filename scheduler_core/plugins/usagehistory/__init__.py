"""usagehistory: fair share over time (a queue that used more than its weight share lately
gets less of what is contended now). ``plugin.py`` is the plugin and its formula;
``args.py`` its arguments (their keys beside them), read once into ``UsageHistoryArgs``.
"""

from scheduler_core.plugins.usagehistory.args import UsageHistoryArgs, UsageSettingsError
from scheduler_core.plugins.usagehistory.plugin import (
    PLUGIN_NAME,
    UsageHistoryPlugin,
    adjust_weights,
    configured_settings,
    format_span,
)

__all__ = [
    "PLUGIN_NAME",
    "UsageHistoryArgs",
    "UsageHistoryPlugin",
    "UsageSettingsError",
    "adjust_weights",
    "configured_settings",
    "format_span",
]

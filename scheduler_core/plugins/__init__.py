"""Volcano's plugins, one module (or package) each. Importing this package registers every
plugin by its name, here and nowhere else (as Volcano's ``plugins/factory.go`` does): a
plugin class is a plain class, and the list below is the one place that says which plugins
a configuration may name."""

from __future__ import annotations

from scheduler_core.framework.registry import register_plugin
from scheduler_core.plugins.binpack.plugin import BinpackPlugin
from scheduler_core.plugins.capacity.plugin import CapacityPlugin
from scheduler_core.plugins.conformance import ConformancePlugin
from scheduler_core.plugins.drf import DrfPlugin
from scheduler_core.plugins.gang import GangPlugin
from scheduler_core.plugins.nodeorder.plugin import NodeOrderPlugin
from scheduler_core.plugins.predicates.plugin import PredicatesPlugin
from scheduler_core.plugins.priority import PriorityPlugin
from scheduler_core.plugins.proportion.plugin import ProportionPlugin
from scheduler_core.plugins.usagehistory.plugin import UsageHistoryPlugin

for _plugin in (
    BinpackPlugin,
    CapacityPlugin,
    ConformancePlugin,
    DrfPlugin,
    GangPlugin,
    NodeOrderPlugin,
    PredicatesPlugin,
    PriorityPlugin,
    ProportionPlugin,
    UsageHistoryPlugin,
):
    register_plugin(_plugin)

"""Keeping the accounting session current in place when only some jobs' usage changed.

The accounting session is read-only and opened over the live cache: its jobs, their tasks
and its nodes are the cache's own objects, so most of what the verbs ask is read live.
What the plugins derive once, as the session opens, is what a change of sums (a pod bound,
added, finished or deleted in an existing group; a PodGroup's phase) leaves stale, and
each plugin here says how it is brought up to date:

- priority, gang and conformance keep nothing a change of sums moves (they read jobs and
  tasks live); predicates' memo is of node labels, taints and pod specs, but its counts of
  pods per topology domain (inter-pod affinity, topology spread) move with any pod placed
  or gone, so it forgets them;
- proportion re-derives the affected queues from the cache's per-queue sums, and the
  deserved shares when a request moved;
- drf forgets the affected queues' job shares (re-derived on next use from the live jobs);
- nodeorder and binpack re-read the changed nodes' rows of their scoring table.

Any other plugin in the configuration, or any plugin here that cannot follow (proportion
tracing at V(4)), means a new session: following is only done where it gives exactly what
a new session would.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from scheduler_core.api.usage import JobUsage
from scheduler_core.framework.session import Session
from scheduler_core.plugins.binpack import BinpackPlugin
from scheduler_core.plugins.drf import DrfPlugin
from scheduler_core.plugins.nodeorder import NodeOrderPlugin
from scheduler_core.plugins.predicates import PredicatesPlugin
from scheduler_core.plugins.proportion import ProportionPlugin
from scheduler_core.plugins.util.node_table import NodeTable

#: Plugins whose session state no change of job usage or node amounts can make stale.
READ_LIVE = frozenset({"priority", "gang", "conformance", "predicates"})

_FOLLOWING = (ProportionPlugin, DrfPlugin, NodeOrderPlugin, BinpackPlugin)


def can_follow(ssn: Session) -> bool:
    """Whether every plugin of ``ssn`` can be brought up to date in place."""
    return ssn.read_only and all(
        name in READ_LIVE or isinstance(plugin, _FOLLOWING) for name, plugin in ssn.plugins.items()
    )


def follow(
    ssn: Session,
    usage: Mapping[str, JobUsage],
    queues: Collection[str],
    nodes: Collection[str],
) -> bool:
    """Re-derive what the plugins of ``ssn`` hold of ``queues`` (from the live ``usage``)
    and of ``nodes``, as a session opened now would have it, before anything is charged
    to them. False, having changed nothing, when a plugin cannot (only proportion may
    refuse, and it is asked first): the caller then opens a new session."""
    for plugin in ssn.plugins.values():
        if isinstance(plugin, ProportionPlugin) and not plugin.refresh_queues(usage, queues):
            return False
    tables = False
    for name, plugin in ssn.plugins.items():
        if isinstance(plugin, PredicatesPlugin):
            plugin.cluster_changed()
        if name in READ_LIVE or isinstance(plugin, ProportionPlugin):
            continue
        if isinstance(plugin, DrfPlugin):
            stale = [
                uid
                for uid in plugin.job_attrs
                if uid not in ssn.jobs or ssn.jobs[uid].queue in queues
            ]
            for uid in stale:
                del plugin.job_attrs[uid]
        elif isinstance(plugin, NodeOrderPlugin | BinpackPlugin):
            tables = True
        else:
            return False
    if tables and nodes:
        NodeTable.of(ssn).nodes_changed(nodes)
    return True

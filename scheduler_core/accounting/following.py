"""Keeping the accounting session current in place when only some jobs' usage changed.

The accounting session is read-only and opened over the live cache: its jobs, their tasks
and its nodes are the cache's own objects, so most of what the verbs ask is read live.
What the plugins derive once, as the session opens, is what a change of sums (a pod bound,
added, finished or deleted in an existing group; a PodGroup's phase) leaves stale. Each
plugin says itself whether and how it is brought up to date (``Plugin.can_follow`` and
``Plugin.follow``): this module only asks every plugin of the session, and applies the
steps once all of them have one. A plugin that says nothing (the default) means a new
session: following is only done where it gives exactly what a new session would.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from scheduler_core.api.usage import JobUsage
from scheduler_core.framework.registry import FollowStep, UsageChange, follows_nothing
from scheduler_core.framework.session import Session


def can_follow(ssn: Session) -> bool:
    """Whether every plugin of ``ssn`` can be brought up to date in place."""
    if not ssn.read_only:
        return False
    # Asked before most verb calls: a loop, not ``all`` over a generator (a call a plugin).
    for plugin in ssn.plugins.values():  # noqa: SIM110
        if not plugin.can_follow(ssn):
            return False
    return True


def follow(
    ssn: Session,
    usage: Mapping[str, JobUsage],
    queues: Collection[str],
    nodes: Collection[str],
    jobs: Collection[str],
    gone: Collection[str] = (),
) -> bool:
    """Re-derive what the plugins of ``ssn`` hold of ``queues`` (from the live ``usage``),
    of ``jobs`` and of ``nodes``, as a session opened now would have it before the open
    assumptions are charged back; ``gone``: the jobs just taken out of ``ssn``. False,
    having changed nothing, when a plugin cannot: the caller then opens a new session."""
    change = UsageChange(usage, queues, nodes, jobs, gone)
    # Every plugin is asked before any step runs (asking changes nothing), in one
    # comprehension: this runs before most verb calls.
    steps: list[FollowStep | None] = [plugin.follow(ssn, change) for plugin in ssn.plugins.values()]
    if None in steps:
        return False
    for step in steps:
        if step is not follows_nothing:
            step()  # type: ignore[misc]
    return True

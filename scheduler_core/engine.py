"""The engine's entry points: open a session with every plugin and action registered."""

from __future__ import annotations

import scheduler_core.actions
import scheduler_core.plugins  # noqa: F401 - registers plugins and actions
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.conf import ConfigError, SchedulerConfiguration, unavailable_plugins
from scheduler_core.framework.framework import close_session, open_session, run_actions
from scheduler_core.framework.registry import plugin_conf_problems, plugin_names
from scheduler_core.framework.session import Session

__all__ = ["check_configuration", "close_session", "open_session", "run_actions", "run_session"]


def check_configuration(
    conf: SchedulerConfiguration, source: str = "configuration"
) -> SchedulerConfiguration:
    """Records on ``conf`` every plugin a session would skip; returns ``conf``. Raises
    ``ConfigError`` with every reason when a plugin cannot run as the configuration names
    it (its arguments, its place in the tiers).

    Done here because only the engine knows which plugins it registered."""
    problems = plugin_conf_problems(conf, source)
    if problems:
        raise ConfigError("; ".join(problems))
    conf.warnings = unavailable_plugins(conf, plugin_names(), source)
    return conf


def run_session(
    snapshot: ClusterSnapshot, conf: SchedulerConfiguration, actions: list[str] | None = None
) -> Session:
    """One full scheduling cycle on a private copy of ``snapshot``; the closed session
    holds the decisions (evictions, bindings, pipelined tasks)."""
    ssn = open_session(snapshot, conf)
    run_actions(ssn, actions)
    close_session(ssn)
    return ssn

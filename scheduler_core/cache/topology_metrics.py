"""The network topology's metrics, read from the cluster state at scrape time: whether the
tree the inputs describe is refused (the last good one serving meanwhile), how many times one
was refused, and how many domains each tier of the serving tree has."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from .state import ClusterState

PREFIX = "queue_extender_topology"


def _families() -> tuple[GaugeMetricFamily, CounterMetricFamily, GaugeMetricFamily]:
    return (
        GaugeMetricFamily(
            f"{PREFIX}_refused",
            "1 while the network topology the HyperNodes (or label levels) describe is "
            "refused; the last good tree keeps serving.",
            labels=["source"],
        ),
        CounterMetricFamily(
            f"{PREFIX}_refusals",
            "Network topologies refused (a new refusal each; the same one read again is not).",
        ),
        GaugeMetricFamily(
            f"{PREFIX}_domains",
            "Domains of the serving network topology, by tier (1 is the narrowest).",
            labels=["tier"],
        ),
    )


class TopologyCollector(Collector):
    """Registered on the caller's registry, never on the process-global one."""

    def __init__(self, state: ClusterState) -> None:
        self._state = state

    def describe(self) -> Iterable[Metric]:
        return _families()

    def collect(self) -> Iterable[Metric]:
        refused, refusals, domains = _families()
        with self._state.locked():
            status = self._state.topology_status()
            refused.add_metric([status.source], 1.0 if status.refusal is not None else 0.0)
            refusals.add_metric([], status.refusals_total)
            tree = status.tree
            for tier in tree.tiers:
                domains.add_metric([str(tier)], len(tree.domains_at(tier)))
        return [refused, refusals, domains]

"""The real kube-scheduler v1.36 runs the renderer's configuration: it starts, reports the
rendered profiles and score weights on /configz, and places pods through the extender —
natively scored (filter and preempt only) by default, by the extender with
``scoring: extender``, and for several scheduler names at once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.schedconfig.render import LeaderElectionOptions, Scoring, render_scheduler_config
from scheduler_core.conf import default_configuration
from tests.e2e.controlplane import ControlPlane, Extender
from tests.e2e.kube import FakeKubelet, Kube
from tests.e2e.rendered import start_rendered_scheduler, verb_requests

NAMES = ("rendered-a", "rendered-b")


@pytest.fixture(scope="module")
def extender(control_plane: ControlPlane, fake_kubelet: FakeKubelet) -> Iterator[Extender]:
    ext = control_plane.start_extender(
        "rendered-extender", ["--scheduler-names", ",".join(NAMES)]
    ).wait_ready()
    try:
        yield ext
    finally:
        ext.process.stop()


def score_weights(profile: dict[str, Any]) -> dict[str, int]:
    return {p["name"]: p["weight"] for p in profile["plugins"]["score"].get("enabled") or []}


def place_packed(kube: Kube, scheduler: str, prefix: str) -> str:
    """Two empty nodes, one with a resident pod: where does a queue pod of ``scheduler`` go?
    Volcano's default conf (binpack weight 10) packs it beside the resident."""
    ns = kube.namespace()
    kube.node(f"{prefix}-busy", cpu="4")
    kube.node(f"{prefix}-idle", cpu="4")
    kube.pod(ns, "resident", cpu="2", node=f"{prefix}-busy", scheduler="default-scheduler")
    kube.wait_running(ns, ["resident"])
    queue = kube.queue(f"{prefix}-q")
    kube.pod(ns, "queued", cpu="1", queue=queue, scheduler=scheduler)
    return kube.wait_bound(ns, "queued")


@pytest.mark.parametrize("scoring", ["native", "extender"])
def test_kube_scheduler_runs_the_rendered_default_conf_and_places_through_the_extender(
    control_plane: ControlPlane, extender: Extender, kube: Kube, scoring: Scoring
) -> None:
    rendered = render_scheduler_config(
        default_configuration(),
        extender_url=extender.url + "/",
        scheduler_names=[NAMES[0]],
        scoring=scoring,
    )
    scheduler = start_rendered_scheduler(control_plane, f"rendered-{scoring}", rendered)
    try:
        profile = scheduler.profile(NAMES[0])
        ours = rendered.profile(NAMES[0])["plugins"]["score"]
        assert score_weights(profile) == {p["name"]: p["weight"] for p in ours.get("enabled", [])}
        running = scheduler.configz()["extenders"][0]
        assert bool(running.get("prioritizeVerb")) is (scoring == "extender")
        before = verb_requests(extender.metrics(), "prioritize")
        assert place_packed(kube, NAMES[0], f"rc-{scoring}") == f"rc-{scoring}-busy"
        asked = verb_requests(extender.metrics(), "prioritize") - before
        assert (asked > 0) is (scoring == "extender"), asked
        assert verb_requests(extender.metrics(), "filter") > 0
    finally:
        scheduler.stop()


def test_native_profile_as_kube_scheduler_decodes_it(
    control_plane: ControlPlane, extender: Extender, kube: Kube
) -> None:
    """The NodeResourcesFit strategy and the spread defaults survive kube-scheduler's
    decoding and defaulting (a misspelt field would be dropped or refused)."""
    rendered = render_scheduler_config(
        default_configuration(), extender_url=extender.url + "/", scheduler_names=[NAMES[0]]
    )
    scheduler = start_rendered_scheduler(control_plane, "rendered-decoded", rendered)
    try:
        args = {c["name"]: c["args"] for c in scheduler.profile(NAMES[0])["pluginConfig"]}
        strategy = args["NodeResourcesFit"]["scoringStrategy"]
        assert strategy["type"] == "MostAllocated"
        assert strategy["resources"] == [
            {"name": "cpu", "weight": 1},
            {"name": "memory", "weight": 1},
        ]
        assert args["PodTopologySpread"]["defaultingType"] == "List"
        assert not args["PodTopologySpread"].get("defaultConstraints")
        balanced = args["NodeResourcesBalancedAllocation"]["resources"]
        assert [r["name"] for r in balanced] == ["cpu", "memory", "nvidia.com/gpu"]
    finally:
        scheduler.stop()


def test_one_profile_per_scheduler_name_with_leader_election(
    control_plane: ControlPlane, extender: Extender, kube: Kube
) -> None:
    ns = kube.namespace()
    rendered = render_scheduler_config(
        default_configuration(),
        extender_url=extender.url + "/",
        scheduler_names=list(NAMES),
        leader_election=LeaderElectionOptions(
            resource_name="rendered-lease",
            resource_namespace=ns,
            lease_duration="15s",
            renew_deadline="10s",
            retry_period="2s",
        ),
    )
    scheduler = start_rendered_scheduler(control_plane, "rendered-multi", rendered)
    try:
        config = scheduler.configz()
        assert [p["schedulerName"] for p in config["profiles"]] == list(NAMES)
        assert config["leaderElection"]["resourceName"] == "rendered-lease"
        for name in NAMES:
            assert score_weights(scheduler.profile(name))["NodeResourcesFit"] == 9
        kube.node("multi-n1", cpu="4")
        queue = kube.queue("multi-q")
        for name in NAMES:
            kube.pod(ns, name, cpu="1", queue=queue, scheduler=name)
        for name in NAMES:
            assert kube.wait_bound(ns, name, timeout=60) == "multi-n1"
    finally:
        scheduler.stop()

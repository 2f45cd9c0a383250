"""The engine judges node fit as the real kube-scheduler does: a differential test.

Seeded random small clusters (``tests/e2e/fitgen.py``) are created on the suite's control
plane, one after another; for each pending pod, the nodes kube-scheduler v1.36 finds feasible
are read by a recording extender (``tests/e2e/recorder.py``, its scheduler profile alone
schedules these pods) and compared with the nodes the engine finds feasible on the same
objects (``tests/e2e/fitdiff.py``). Every pod must get the same set, or be one the engine
names *not evaluable* (then it is left out, and counted).

``FIT_DIFF_CASES`` sets how many pending pods are judged (default 240, 30 per cluster);
``FIT_DIFF_SEED`` the first cluster's seed (cluster i uses seed + i), so a failing case is
reproduced by its seed alone.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests import builders
from tests.e2e.controlplane import ControlPlane, wait_for
from tests.e2e.fitdiff import Difference, compare, engine_verdicts
from tests.e2e.fitgen import WAITING_CLASS, Cluster, api_body, generate
from tests.e2e.kube import FakeKubelet, Kube
from tests.e2e.recorder import Recorder

CASES = int(os.environ.get("FIT_DIFF_CASES", "240"))
SEED = int(os.environ.get("FIT_DIFF_SEED", "7301"))
PER_CLUSTER = 30
DRA = ("resource.k8s.io", "v1")
PROFILE = "fit-diff-recorder"
#: What a scheduler needs to have seen the cluster's objects before the pending pods come: its
#: informers are separate watches per kind, so a pod could otherwise be judged on a cluster the
#: scheduler has only half seen.
SETTLE = 1.0


@pytest.fixture(scope="module")
def recorder(control_plane: ControlPlane, fake_kubelet: FakeKubelet) -> Iterator[Recorder]:
    rec = Recorder().start()
    scheduler = control_plane.start_scheduler(
        "fit-diff-scheduler",
        [PROFILE],
        rec.url,
        extender={"prioritizeVerb": "", "preemptVerb": ""},
    )
    try:
        yield rec
    finally:
        scheduler.stop()
        rec.stop()


def features(pod: dict[str, Any]) -> list[str]:
    """The filters a pending pod exercises, for the summary of differences."""
    spec = pod["spec"]
    affinity = spec.get("affinity") or {}
    out = [k for k in ("podAffinity", "podAntiAffinity", "nodeAffinity") if k in affinity]
    hard = [
        c
        for c in spec.get("topologySpreadConstraints", [])
        if c["whenUnsatisfiable"] == "DoNotSchedule"
    ]
    if hard:
        out.append("spread")
    if any("ports" in c for c in spec["containers"]):
        out.append("hostPort")
    if spec.get("volumes"):
        out.append("claim")
    if spec.get("nodeSelector"):
        out.append("nodeSelector")
    if spec.get("tolerations"):
        out.append("tolerations")
    if spec.get("resourceClaims"):
        out.append("dra")
    return out or ["plain"]


def describe(pod: dict[str, Any]) -> str:
    spec = pod["spec"]
    shown = {
        "labels": pod["metadata"].get("labels"),
        "requests": spec["containers"][0]["resources"]["requests"],
        **{
            k: spec[k]
            for k in ("nodeSelector", "affinity", "topologySpreadConstraints", "volumes")
            if spec.get(k)
        },
    }
    if "ports" in spec["containers"][0]:
        shown["ports"] = spec["containers"][0]["ports"]
    return json.dumps(shown, separators=(",", ":"))


def scheduled_false(pod: Any) -> bool:
    """kube-scheduler tried the pod and found no node (the recorder refused them all)."""
    return any(
        c.type == "PodScheduled" and c.status == "False" for c in (pod.status.conditions or [])
    )


class ClusterRun:
    """Creates one generated cluster, records kube-scheduler's answers, then removes it."""

    def __init__(self, kube: Kube, cluster: Cluster, namespace: str) -> None:
        self.kube = kube
        self.cluster = cluster
        self.namespace = namespace
        self.uids: dict[str, str] = {}
        #: pod key -> kube-scheduler's own account of the nodes it turned down
        self.messages: dict[str, str] = {}

    def create(self) -> None:
        core = self.kube.core
        for node in self.cluster.nodes:
            core.create_node(api_body(node))
            self.kube.nodes.append(node["metadata"]["name"])
            # Admission adds the not-ready taint (no node controller here to take it off).
            core.patch_node(
                node["metadata"]["name"], {"spec": {"taints": node["spec"].get("taints")}}
            )
        for pv in self.cluster.volumes:
            core.create_persistent_volume(api_body(pv))
        for claim in self.cluster.claims:
            core.create_namespaced_persistent_volume_claim(
                claim["metadata"]["namespace"], api_body(claim)
            )
        custom = self.kube.custom
        if self.cluster.device_class is not None:
            custom.create_cluster_custom_object(*DRA, "deviceclasses", self.cluster.device_class)
        for piece in self.cluster.slices:
            custom.create_cluster_custom_object(*DRA, "resourceslices", piece)
        for claim, _, _, _ in self.cluster.held:
            custom.create_namespaced_custom_object(*DRA, self.namespace, "resourceclaims", claim)
        for pod in self.cluster.bound:
            core.create_namespaced_pod(pod["metadata"]["namespace"], api_body(pod))
        for claim, holder, node, devices in self.cluster.held:
            # What kube-scheduler would have written had it placed the holder.
            uid = core.read_namespaced_pod(holder, self.namespace).metadata.uid
            driver = f"{claim['spec']['devices']['requests'][0]['exactly']['deviceClassName']}.x"
            status = {
                "allocation": {
                    "devices": {
                        "results": [
                            {"request": "gpu", "driver": driver, "pool": node, "device": d}
                            for d in devices
                        ]
                    },
                    "nodeSelector": {
                        "nodeSelectorTerms": [
                            {
                                "matchFields": [
                                    {"key": "metadata.name", "operator": "In", "values": [node]}
                                ]
                            }
                        ]
                    },
                },
                "reservedFor": [{"resource": "pods", "name": holder, "uid": uid}],
            }
            custom.patch_namespaced_custom_object_status(
                *DRA,
                self.namespace,
                "resourceclaims",
                claim["metadata"]["name"],
                {"status": status},
            )
        for claim in self.cluster.resource_claims:
            custom.create_namespaced_custom_object(*DRA, self.namespace, "resourceclaims", claim)
        for pod in self.cluster.bound:
            self.kube.wait_running(pod["metadata"]["namespace"], [pod["metadata"]["name"]], 60)
        time.sleep(SETTLE)
        for pod in self.cluster.pending:
            made = core.create_namespaced_pod(self.namespace, api_body(pod, PROFILE))
            self.uids[f"{self.namespace}/{pod['metadata']['name']}"] = made.metadata.uid

    def wait_tried(self) -> None:
        names = {p["metadata"]["name"] for p in self.cluster.pending}

        def all_tried() -> bool:
            pods = self.kube.pods(self.namespace)
            bound = [n for n in names if n in pods and pods[n].spec.node_name]
            assert not bound, f"the recorder lets nothing bind, yet {bound} were bound"
            if not all(n in pods and scheduled_false(pods[n]) for n in names):
                return False
            for name in names:
                self.messages[f"{self.namespace}/{name}"] = next(
                    str(c.message) for c in pods[name].status.conditions if c.type == "PodScheduled"
                )
            return True

        wait_for(all_tried, 120, "kube-scheduler to try every pending pod", interval=0.3)

    def kube_feasible(self, recorder: Recorder) -> dict[str, frozenset[str]]:
        mine = set(self.cluster.node_names)
        return {
            key: (recorder.feasible(uid) or frozenset()) & mine for key, uid in self.uids.items()
        }

    def remove(self, namespaces: list[str]) -> None:
        core = self.kube.core
        for ns in namespaces:
            with contextlib.suppress(client.ApiException):
                core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
        for claim in self.cluster.claims:
            self._unprotect_and_delete(
                lambda n=claim["metadata"]["name"], ns=claim["metadata"]["namespace"], **kw: (
                    core.patch_namespaced_persistent_volume_claim(n, ns, **kw)
                ),
                lambda n=claim["metadata"]["name"], ns=claim["metadata"]["namespace"]: (
                    core.delete_namespaced_persistent_volume_claim(n, ns)
                ),
            )
        for pv in self.cluster.volumes:
            self._unprotect_and_delete(
                lambda n=pv["metadata"]["name"], **kw: core.patch_persistent_volume(n, **kw),
                lambda n=pv["metadata"]["name"]: core.delete_persistent_volume(n),
            )
        for name in self.cluster.node_names:
            with contextlib.suppress(client.ApiException):
                core.delete_node(name)
            self.kube.nodes.remove(name)
        for ns in namespaces:
            wait_for(lambda ns=ns: not core.list_namespaced_pod(ns).items, 60, f"{ns} emptied")
        custom = self.kube.custom
        for ns in namespaces:
            for claim in custom.list_namespaced_custom_object(*DRA, ns, "resourceclaims")["items"]:
                self._unprotect_and_delete(
                    lambda n=claim["metadata"]["name"], ns=ns, **kw: (
                        custom.patch_namespaced_custom_object(
                            *DRA, ns, "resourceclaims", n, kw["body"]
                        )
                    ),
                    lambda n=claim["metadata"]["name"], ns=ns: (
                        custom.delete_namespaced_custom_object(*DRA, ns, "resourceclaims", n)
                    ),
                )
        for piece in self.cluster.slices:
            with contextlib.suppress(client.ApiException):
                custom.delete_cluster_custom_object(
                    *DRA, "resourceslices", piece["metadata"]["name"]
                )
        if self.cluster.device_class is not None:
            with contextlib.suppress(client.ApiException):
                custom.delete_cluster_custom_object(
                    *DRA, "deviceclasses", self.cluster.device_class["metadata"]["name"]
                )

    @staticmethod
    def _unprotect_and_delete(patch: Any, delete: Any) -> None:
        """No controller runs here to lift the protection finalizers admission adds."""
        with contextlib.suppress(client.ApiException):
            patch(body={"metadata": {"finalizers": None}})
        with contextlib.suppress(client.ApiException):
            delete()


@pytest.fixture(scope="module")
def waiting_class(api: Any) -> Iterator[str]:
    storage = client.StorageV1Api(api)
    with contextlib.suppress(client.ApiException):
        storage.create_storage_class(api_body(builders.no_provisioner_class(WAITING_CLASS)))
    yield WAITING_CLASS
    with contextlib.suppress(client.ApiException):
        storage.delete_storage_class(WAITING_CLASS)


def test_the_engine_finds_feasible_exactly_the_nodes_kube_scheduler_finds(
    control_plane: ControlPlane, api: Any, recorder: Recorder, waiting_class: str
) -> None:
    kube = Kube(api)
    own, other = kube.namespace("fit"), kube.namespace("fit")
    differences: list[Difference] = []
    not_evaluable: list[str] = []
    judged = 0
    nonempty = 0
    by_feature: Counter[str] = Counter()
    pending_specs: dict[str, dict[str, Any]] = {}
    try:
        for i in range(math.ceil(CASES / PER_CLUSTER)):
            seed = SEED + i
            pending = min(PER_CLUSTER, CASES - judged)
            cluster = generate(seed, f"fd{seed}", (own, other), pending)
            run = ClusterRun(kube, cluster, own)
            try:
                run.create()
                run.wait_tried()
                found = run.kube_feasible(recorder)
                engine = engine_verdicts(control_plane, found, cluster.node_names)
            finally:
                run.remove([own, other])
            specs = {f"{own}/{p['metadata']['name']}": p for p in cluster.pending}
            pending_specs.update(specs)
            shown = {
                k: f"{describe(p)}\n    kube-scheduler: {run.messages[k]}" for k, p in specs.items()
            }
            diffs, unjudged = compare(seed, found, engine, shown)
            differences += diffs
            not_evaluable += unjudged
            judged += len(found)
            nonempty += sum(1 for nodes in found.values() if nodes)
            for d in diffs:
                by_feature.update(features(specs[d.pod]))
    finally:
        kube.cleanup()

    print(
        f"\nfit differential: {judged} pods judged, {nonempty} with a feasible node, "
        f"{len(differences)} differences, {len(not_evaluable)} not evaluable by the engine"
    )
    assert judged == CASES
    # The sample must exercise both answers, or agreeing would prove little.
    assert 0 < nonempty < judged
    # Of what the generator makes, only a claim can be beyond the engine's judgement.
    beyond = [k for k in not_evaluable if "claim" not in features(pending_specs[k])]
    assert not beyond, f"the engine could not judge pods it models: {beyond}"
    assert len(not_evaluable) <= judged // 2, f"too few pods judged: {not_evaluable}"
    summary = ", ".join(f"{f}: {n}" for f, n in by_feature.most_common())
    shown = "\n".join(str(d) for d in differences[:40])
    assert not differences, (
        f"{len(differences)} of {judged} pods differ (features of the differing pods: {summary})"
        f"\n{shown}"
    )

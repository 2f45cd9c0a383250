"""The KubeSchedulerConfiguration: the fields the design needs, and nothing kube-scheduler rejects.

No published JSON schema covers kubescheduler.config.k8s.io, so the v1 field names are
listed here (kube-scheduler decodes its config strictly: an unknown key stops it starting).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from .deploy_manifests import (
    SCHEDULER_NAME,
    Manifest,
    containers,
    find,
    option_value,
    pod_spec,
    scheduler_configuration,
)

#: kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration keys.
TOP_LEVEL_KEYS = {
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
}
LEADER_ELECTION_KEYS = {
    "leaderElect",
    "leaseDuration",
    "renewDeadline",
    "retryPeriod",
    "resourceLock",
    "resourceName",
    "resourceNamespace",
}
PROFILE_KEYS = {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"}
EXTENDER_KEYS = {
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
}
TLS_CONFIG_KEYS = {
    "insecure",
    "serverName",
    "certFile",
    "keyFile",
    "caFile",
    "certData",
    "keyData",
    "caData",
}

#: A Go time.Duration as metav1.Duration accepts it (the forms we would ever write).
GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")


def _extender(config: dict[str, Any]) -> dict[str, Any]:
    extenders = config["extenders"]
    assert len(extenders) == 1
    extender: dict[str, Any] = extenders[0]
    return extender


def test_only_v1_fields(documents: list[Manifest]) -> None:
    config = scheduler_configuration(documents)
    assert set(config) <= TOP_LEVEL_KEYS
    assert set(config["leaderElection"]) <= LEADER_ELECTION_KEYS
    for profile in config["profiles"]:
        assert set(profile) <= PROFILE_KEYS
    for extender in config["extenders"]:
        assert set(extender) <= EXTENDER_KEYS
        assert set(extender.get("tlsConfig", {})) <= TLS_CONFIG_KEYS


def test_header_profile_and_leader_election(documents: list[Manifest]) -> None:
    config = scheduler_configuration(documents)
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert [p["schedulerName"] for p in config["profiles"]] == [SCHEDULER_NAME]
    assert config["percentageOfNodesToScore"] == 100
    deployment = find(documents, "Deployment")
    assert config["leaderElection"] == {
        "leaderElect": True,
        "resourceNamespace": deployment["metadata"]["namespace"],
        "resourceName": SCHEDULER_NAME,
    }


def test_extender_entry(documents: list[Manifest]) -> None:
    """By default kube-scheduler scores natively: the extender filters and preempts only."""
    extender = _extender(scheduler_configuration(documents))
    assert extender["filterVerb"] == "filter"
    assert "prioritizeVerb" not in extender
    assert "weight" not in extender
    assert extender["preemptVerb"] == "preempt"
    assert extender["nodeCacheCapable"] is True
    assert extender["httpTimeout"] == "5s"
    assert extender["ignorable"] is False
    # The extender binds nothing and manages every pod of this profile.
    assert "bindVerb" not in extender
    assert "managedResources" not in extender


def test_kube_scheduler_validation_rules_hold(documents: list[Manifest]) -> None:
    """validateExtenders: a prioritizeVerb needs a positive weight; at most one binder."""
    config = scheduler_configuration(documents)
    for extender in config["extenders"]:
        assert extender["urlPrefix"]
        if extender.get("prioritizeVerb"):
            assert isinstance(extender["weight"], int)
            assert extender["weight"] > 0
        assert GO_DURATION.match(str(extender.get("httpTimeout", "0s")))
    assert sum(1 for e in config["extenders"] if e.get("bindVerb")) <= 1


def test_url_prefix_reaches_the_sidecar(documents: list[Manifest]) -> None:
    """kube-scheduler calls the extender's own loopback listener, on the port it serves."""
    extender = _extender(scheduler_configuration(documents))
    args = containers(documents)["queue-extender"]["args"]
    url = urlsplit(extender["urlPrefix"])
    assert url.hostname == "127.0.0.1"
    assert str(url.port) == option_value(args, "--port")
    assert url.path == "/"
    host = option_value(args, "--host")
    assert host in {"127.0.0.1", "0.0.0.0"}
    tls = option_value(args, "--tls-cert") is not None
    assert url.scheme == ("https" if tls else "http")
    assert extender.get("enableHTTPS", False) is tls
    # The extender's verbs are its defaults; a custom verb or prefix would need both sides.
    for flag in ("--url-prefix", "--filter-verb", "--prioritize-verb", "--preempt-verb"):
        assert option_value(args, flag) is None


def test_scheduler_names_agree(documents: list[Manifest]) -> None:
    config = scheduler_configuration(documents)
    args = containers(documents)["queue-extender"]["args"]
    profile_names = {p["schedulerName"] for p in config["profiles"]}
    assert option_value(args, "--scheduler-names") == ",".join(sorted(profile_names))


def test_tls_files_are_mounted_in_kube_scheduler(documents: list[Manifest]) -> None:
    """Every file tlsConfig names exists in kube-scheduler's container, from the TLS Secret."""
    extender = _extender(scheduler_configuration(documents))
    tls_config = extender.get("tlsConfig", {})
    container = containers(documents)["kube-scheduler"]
    volumes = {v["name"]: v for v in pod_spec(documents)["volumes"]}
    for key in ("caFile", "certFile", "keyFile"):
        if key not in tls_config:
            continue
        path = tls_config[key]
        mounts = [m for m in container["volumeMounts"] if path.startswith(m["mountPath"] + "/")]
        assert len(mounts) == 1, path
        assert "secret" in volumes[mounts[0]["name"]]
    if extender.get("enableHTTPS"):
        # Without a CA kube-scheduler's extender client silently turns verification off.
        assert "caFile" in tls_config
    args = containers(documents)["queue-extender"]["args"]
    client_auth = option_value(args, "--client-ca") is not None
    assert ("certFile" in tls_config) is client_auth
    assert ("keyFile" in tls_config) is client_auth

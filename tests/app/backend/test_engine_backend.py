"""Which pods the engine backend decides for, and how it is built from the serve flags."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from app.cli.main import build_parser
from app.cli.serve import backend_from_args
from app.serving.server import create_app
from app.verbs.ports import BadPodError
from scheduler_core.conf import DEFAULT_CONF, load_configuration
from scheduler_core.insight.whatif import WhatIfRequest, prepare, run_prepared
from tests.builders import device_class, pod

from ..live import serve


def pod_in(
    namespace: str, scheduler: str = "queue-scheduler", annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """A pod for the scheduler ``scheduler`` (the shared builder's pod, named p)."""
    return pod("p", namespace=namespace, scheduler=scheduler, annotations=annotations)


def built(*flags: str, source: tuple[str, ...] = ("--demo",)) -> Any:
    return backend_from_args(build_parser().parse_args(["serve", *source, *flags]))


def backend(*flags: str, source: tuple[str, ...] = ("--demo",)) -> Any:
    return backend_from_args(build_parser().parse_args(["serve", *source, *flags])).backend


def test_pods_of_the_configured_scheduler_names_are_managed() -> None:
    engine = backend("--scheduler-names", "queue-scheduler,batch")
    assert engine.is_managed(pod_in("a"))
    assert engine.is_managed(pod_in("a", scheduler="batch"))
    assert not engine.is_managed(pod_in("a", scheduler="default-scheduler"))


def test_manage_annotated_adds_pods_naming_a_queue_or_podgroup() -> None:
    annotated = pod_in("a", "default-scheduler", {"scheduling.volcano.sh/queue-name": "q"})
    assert not backend().is_managed(annotated)
    assert backend("--manage-annotated").is_managed(annotated)


def test_namespaces_restrict_pending_demand_to_those_namespaces() -> None:
    engine = backend("--namespaces", "team-a,team-b")
    assert engine.is_managed(pod_in("team-b"))
    assert not engine.is_managed(pod_in("team-c"))
    # pods elsewhere still count: the demo cluster's state holds every namespace
    assert engine.state.counts()["pods"] > 0


def test_demo_cluster_is_served_when_asked_for() -> None:
    engine = backend(source=("--demo",))
    assert engine.readiness() == (True, "serving from the bundled demo cluster")
    assert engine.state.counts()["nodes"] == 4


def test_no_cluster_source_is_refused_naming_the_four_options() -> None:
    with pytest.raises(ValueError, match="no cluster source") as refused:
        backend(source=())
    for option in ("--in-cluster", "--kubeconfig", "--cluster", "--demo"):
        assert option in str(refused.value)


def test_a_bad_cluster_file_is_a_one_line_value_error(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("apiVersion: v1\nkind: Node\nmetadata: {}\n")
    with pytest.raises(ValueError, match=r"c\.yaml: document 1: Node: metadata\.name"):
        backend(source=("--cluster", str(bad)))


UNREADABLE_REQUESTS = [
    ({"cpu": "lots"}, 'invalid quantity "lots"', "requests.cpu"),
    ({"nvidia.com/gpu": "-100"}, "must not be negative", "requests.nvidia.com/gpu"),
    ({"memory": "-1Gi"}, "must not be negative", "requests.memory"),
    ({"cpu": "NaN"}, 'invalid quantity "NaN"', "requests.cpu"),
    ({"cpu": "Inf"}, 'invalid quantity "Inf"', "requests.cpu"),
]


@pytest.mark.parametrize(("requests", "message", "field"), UNREADABLE_REQUESTS)
def test_a_pod_that_cannot_be_read_is_refused_by_every_verb_naming_the_field(
    requests: dict[str, str], message: str, field: str
) -> None:
    engine = backend()
    bad = pod_in("team")
    bad["spec"]["containers"] = [{"name": "c", "resources": {"requests": requests}}]
    for call in (
        lambda: engine.filter(bad, ["cpu-node-1"]),
        lambda: engine.prioritize(bad, ["cpu-node-1"]),
        lambda: engine.preempt(bad, {"cpu-node-1": ["u"]}),
        lambda: engine.explain(bad),
    ):
        with pytest.raises(BadPodError, match=message) as refused:
            call()
        assert field in str(refused.value)
    assert engine.accounting.assumed == {}
    body = {"Pod": bad, "NodeNames": ["cpu-node-1"]}
    victims = {"cpu-node-1": {"Pods": [{"UID": "u"}], "NumPDBViolations": 0}}
    with serve(create_app(engine)) as url, httpx.Client(base_url=url) as client:
        answers = [
            client.post("/filter", json=body),
            client.post("/prioritize", json=body),
            client.post("/preempt", json={"Pod": bad, "NodeNameToMetaVictims": victims}),
        ]
    for answer in answers:
        assert answer.status_code == 400, answer.text
        assert message in answer.json()["Error"] and field in answer.json()["Error"]


def test_explain_of_a_pod_that_cannot_be_read_is_a_bad_request_with_one_line() -> None:
    engine = backend()
    bad = pod_in("team")
    bad["spec"]["containers"] = [{"name": "c", "resources": {"requests": {"cpu": "abc"}}}]
    with pytest.raises(BadPodError, match='invalid quantity "abc"'):
        engine.explain(bad)
    with serve(create_app(engine)) as url, httpx.Client(base_url=url) as client:
        answer = client.post("/debug/explain", json=bad)
    assert answer.status_code == 400
    error = answer.json()["Error"]
    assert 'invalid quantity "abc"' in error and "requests.cpu" in error and "\n" not in error


MISSPELT_CONF = "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: proportionn\n"


def test_a_misspelt_plugin_is_kept_as_a_configuration_warning(tmp_path: Path) -> None:
    conf = tmp_path / "volcano.conf"
    conf.write_text(MISSPELT_CONF)
    (warning,) = built("--conf", str(conf)).warnings()
    assert str(conf) in warning and "'proportionn'" in warning
    assert built().warnings() == []


def test_strict_conf_refuses_a_configuration_warning(tmp_path: Path) -> None:
    conf = tmp_path / "volcano.conf"
    conf.write_text(MISSPELT_CONF)
    with pytest.raises(ValueError, match=r"--strict-conf: 1 configuration warning.*'proportionn'"):
        backend("--conf", str(conf), "--strict-conf")
    assert built("--strict-conf").warnings() == []


def test_debug_state_lists_several_assumed_pods_in_pod_order() -> None:
    engine = backend()
    for name in ("second", "first"):
        asked = pod_in("default", annotations={"scheduling.volcano.sh/queue-name": "production"})
        asked["metadata"].update(name=name, uid=f"uid-{name}")
        asked["spec"]["containers"] = [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]
        assert engine.filter(asked, ["cpu-node-1"]).passed == ["cpu-node-1"]
    assert engine.debug_state()["assumed"] == [
        {"pod": "default/first", "queue": "production"},
        {"pod": "default/second", "queue": "production"},
    ]


def test_a_what_if_runs_in_a_forked_child_and_answers_as_in_process() -> None:
    """The engine hands the dry run to a child process; its answer is the one the same
    prepared what-if gives in this process, and the live state is untouched."""
    engine = backend()
    submitted = pod("whatif-0", namespace="production", cpu="1")
    submitted["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": "production"}
    request = WhatIfRequest(add=[submitted])
    version = engine.state.version
    forked = engine.whatif(request)()
    with engine.state.locked():
        local = run_prepared(prepare(engine.accounting, engine.conf, request))
    assert forked == local and forked.placed
    assert engine.state.version == version


def test_device_class_mappings_follow_the_configuration_in_use(tmp_path: Path) -> None:
    conf = tmp_path / "volcano.conf"
    conf.write_text(DEFAULT_CONF + "deviceClassMappings:\n  gpu.example.com: nvidia.com/gpu\n")
    served = backend("--conf", str(conf))
    assert dict(served.state.device_names.mappings) == {"gpu.example.com": "nvidia.com/gpu"}
    served.use_configuration(load_configuration(DEFAULT_CONF))
    assert dict(served.state.device_names.mappings) == {}


def test_dra_devices_not_counted_are_named_by_readiness_detail(tmp_path: Path) -> None:
    built = backend_from_args(build_parser().parse_args(["serve", "--demo"]))
    built.backend.state.upsert("DeviceClass", device_class("odd.example.com", "device.driver =="))
    (warning,) = built.warnings()
    assert warning.startswith("DRA devices not counted: DeviceClass odd.example.com: selector #0")

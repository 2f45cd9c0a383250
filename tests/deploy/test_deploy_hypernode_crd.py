"""Volcano's HyperNode CRD: shipped in deploy/crds, installed by the chart only on request,
the chart's copy the same file."""

from __future__ import annotations

import yaml

from .deploy_manifests import CHART_DIR, DEPLOY_DIR, find_all, rendered_documents

CRD = DEPLOY_DIR / "crds" / "topology.volcano.sh_hypernodes.yaml"
CHART_COPY = CHART_DIR / "files" / "topology.volcano.sh_hypernodes.yaml"


def crd() -> dict[str, object]:
    (document,) = [d for d in yaml.safe_load_all(CRD.read_text()) if d]
    return dict(document)


def test_the_charts_copy_is_the_deploy_crd() -> None:
    assert CHART_COPY.read_text() == CRD.read_text()


def test_the_chart_installs_the_crd_only_when_asked() -> None:
    assert find_all(rendered_documents({}), "CustomResourceDefinition") == []
    installed = find_all(
        rendered_documents({"hyperNodeCRD": {"install": True}}), "CustomResourceDefinition"
    )
    assert installed == [crd()]


def test_the_crd_serves_hypernodes_with_volcanos_fields() -> None:
    spec = crd()["spec"]
    assert isinstance(spec, dict)
    assert (spec["group"], spec["scope"], spec["names"]["plural"]) == (
        "topology.volcano.sh",
        "Cluster",
        "hypernodes",
    )
    (version,) = spec["versions"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    fields = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert set(fields) == {"tier", "tierName", "members"}
    member = fields["members"]["items"]["properties"]
    assert member["type"]["enum"] == ["Node", "HyperNode"]
    assert set(member["selector"]["properties"]) == {"exactMatch", "regexMatch", "labelMatch"}

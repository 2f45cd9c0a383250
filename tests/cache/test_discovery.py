"""Discovery of the optional kinds (HyperNodes, native PodGroups): one mechanism for both,
asked at start and again periodically, over the stand-in API server."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from scheduler_core.cache.informers import InformerSet
from scheduler_core.cache.kinds import HYPERNODES, NODE, OptionalKind
from scheduler_core.cache.native import NATIVE_GROUP, NATIVE_PODGROUPS
from tests.cache.conftest import MakeInformers
from tests.fakeapi import FakeApiServer, wait_until

Change = Callable[[FakeApiServer], None]

TOPOLOGY_GROUP = "topology.volcano.sh"
NATIVE_LIST = f"/apis/{NATIVE_GROUP}/v1beta1/podgroups"


def serve(group: str, plural: str, version: str | None = None) -> Change:
    return lambda api: api.set_crd_installed(group, plural, True, version=version)


def unserve(group: str, plural: str) -> Change:
    return lambda api: api.set_crd_installed(group, plural, False)


def refuse(path: str, status: int) -> Change:
    """Every request to ``path`` answered ``status`` until ``grant``."""
    return lambda api: api.fail_next(10**6, status, path=path)


def fail_twice(path: str, status: int) -> Change:
    return lambda api: api.fail_next(2, status, path=path)


def grant(api: FakeApiServer) -> None:
    api.fail_next(0)


@dataclass(frozen=True)
class Case:
    optional: OptionalKind
    #: The cluster before the informers start.
    at_start: tuple[Change, ...]
    #: The version watched once ``start`` returns (None: not watched).
    watched_at_start: str | None
    #: The cluster changed after a few rounds, and the version watched in the end.
    later: tuple[Change, ...] = ()
    watched_later: str | None = None
    #: The warnings discovery logs over several rounds.
    warnings: int = 0
    #: Whether the informers sync with the kind watched (a forbidden HyperNode list holds
    #: readiness: deciding without the topology would break hard gangs).
    syncs: bool = True

    @property
    def eventually(self) -> str | None:
        if self.later or self.watched_later:
            return self.watched_later
        return self.watched_at_start


CASES = {
    "hypernodes-served": Case(HYPERNODES, (), "v1alpha1"),
    "hypernodes-not-served": Case(HYPERNODES, (unserve(TOPOLOGY_GROUP, "hypernodes"),), None),
    "hypernodes-served-later": Case(
        HYPERNODES,
        (unserve(TOPOLOGY_GROUP, "hypernodes"),),
        None,
        later=(serve(TOPOLOGY_GROUP, "hypernodes"),),
        watched_later="v1alpha1",
    ),
    "hypernodes-forbidden-watched-and-holding-readiness": Case(
        HYPERNODES,
        (refuse(f"/apis/{TOPOLOGY_GROUP}/v1alpha1/hypernodes", 403),),
        "v1alpha1",
        syncs=False,
    ),
    "native-not-served": Case(NATIVE_PODGROUPS, (), None),
    "native-both-versions-prefers-v1beta1": Case(
        NATIVE_PODGROUPS, (serve(NATIVE_GROUP, "podgroups"),), "v1beta1"
    ),
    "native-only-v1alpha2": Case(
        NATIVE_PODGROUPS, (serve(NATIVE_GROUP, "podgroups", "v1alpha2"),), "v1alpha2"
    ),
    "native-forbidden-left-out-with-one-warning": Case(
        NATIVE_PODGROUPS,
        (serve(NATIVE_GROUP, "podgroups"), refuse(NATIVE_LIST, 403)),
        None,
        warnings=1,
    ),
    "native-forbidden-then-granted": Case(
        NATIVE_PODGROUPS,
        (serve(NATIVE_GROUP, "podgroups"), refuse(NATIVE_LIST, 403)),
        None,
        later=(grant,),
        watched_later="v1beta1",
        warnings=1,
    ),
    "native-served-later": Case(
        NATIVE_PODGROUPS,
        (),
        None,
        later=(serve(NATIVE_GROUP, "podgroups", "v1alpha2"),),
        watched_later="v1alpha2",
    ),
    "native-preferred-version-unknown-waits-for-it": Case(
        NATIVE_PODGROUPS,
        (serve(NATIVE_GROUP, "podgroups"), fail_twice(f"/apis/{NATIVE_GROUP}/v1beta1", 500)),
        None,
        watched_later="v1beta1",
        warnings=2,  # one per round it could not be asked
    ),
}


def watched(informers: InformerSet, optional: OptionalKind) -> str | None:
    versions = {r.spec.version for r in informers.reflectors.get(optional.kind, ())}
    assert len(versions) <= 1
    return next(iter(versions), None)


def rounds(api: FakeApiServer, optional: OptionalKind) -> int:
    """How many times discovery has asked about ``optional``'s preferred version."""
    return len(api.requests(optional.versions[0].api_prefix))


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_an_optional_kind_is_watched_once_served_and_listable_where_it_asks(
    case: Case,
    fake_api: FakeApiServer,
    make_informers: MakeInformers,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for change in case.at_start:
        change(fake_api)
    with caplog.at_level(logging.INFO, logger="scheduler_core.cache"):
        informers, _ = make_informers(
            kinds=[NODE], optional_kinds=[case.optional], discovery_interval=0.02
        )
        assert watched(informers, case.optional) == case.watched_at_start
        if case.watched_at_start is None and (case.later or case.eventually is None):
            wait_until(lambda: rounds(fake_api, case.optional) >= 3, message="three rounds")
            assert watched(informers, case.optional) is None
        for change in case.later:
            change(fake_api)
        expected = case.eventually
        wait_until(lambda: watched(informers, case.optional) == expected, message="watched")
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == case.warnings, [r.getMessage() for r in warned]
    assert all(case.optional.resource in r.getMessage() for r in warned)
    if case.syncs:
        assert informers.wait_for_sync(5)
        kinds = 1 + (expected is not None)
        assert informers.readiness() == (True, f"all {kinds} informers synced")
    else:
        assert not informers.wait_for_sync(0.2)
        assert "hypernodes" in informers.readiness()[1]


def test_a_kind_not_served_is_said_once_however_often_asked(
    fake_api: FakeApiServer, make_informers: MakeInformers, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="scheduler_core.cache.informers"):
        make_informers(kinds=[NODE], optional_kinds=[NATIVE_PODGROUPS], discovery_interval=0.02)
        wait_until(lambda: rounds(fake_api, NATIVE_PODGROUPS) >= 3, message="three rounds")
    said = [r.getMessage() for r in caplog.records if "not served" in r.getMessage()]
    assert said == [
        "podgroups.scheduling.k8s.io is not served (the Workload API is not enabled; only "
        "Volcano PodGroups are read): not watched; asked again every 0s"
    ]


def test_what_waits_for_a_kind_is_told_its_version_once_watched_however_late(
    fake_api: FakeApiServer, make_informers: MakeInformers
) -> None:
    informers, _ = make_informers(
        kinds=[NODE], optional_kinds=[NATIVE_PODGROUPS, HYPERNODES], discovery_interval=0.02
    )
    told: list[str] = []
    informers.when_watched(HYPERNODES.kind, lambda spec: told.append(spec.api_version))
    informers.when_watched(NATIVE_PODGROUPS.kind, lambda spec: told.append(spec.api_version))
    assert told == ["topology.volcano.sh/v1alpha1"]  # served at start: told at once
    fake_api.set_crd_installed(NATIVE_GROUP, "podgroups", True)
    wait_until(lambda: len(told) == 2, message="told of native PodGroups")
    assert told[1] == "scheduling.k8s.io/v1beta1"

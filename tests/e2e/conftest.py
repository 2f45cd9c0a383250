"""Session fixtures for the end-to-end suite: one real control plane for the whole run.

The binaries come from ``KUBE_BIN_DIR`` or the project's shared archive. Without them the
suite is skipped with one line saying how to get them, unless ``REQUIRE_E2E=1`` (CI), where
that is a failure. Each test gets a ``kube`` handle that deletes what the test created, so
the next test's queues share only its own nodes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controlplane import BinariesMissing, ControlPlane, Extender, find_binaries
from tests.e2e.kube import FakeKubelet, Kube
from tests.e2e.rbac import RbacStack, register_identities

SCHEDULER_PROFILES = ("default-scheduler", "queue-scheduler")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="session")
def kube_bin() -> Path:
    try:
        return find_binaries()
    except BinariesMissing as exc:
        if os.environ.get("REQUIRE_E2E") == "1":
            pytest.fail(f"REQUIRE_E2E=1 but {exc}", pytrace=False)
        pytest.skip(f"end-to-end tests skipped: {exc}")


@pytest.fixture(scope="session")
def control_plane(
    kube_bin: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    cp = ControlPlane(kube_bin, tmp_path_factory.mktemp("control-plane"))
    try:
        cp.start()
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def api(control_plane: ControlPlane) -> Any:
    return control_plane.api_client()


@pytest.fixture(scope="session")
def fake_kubelet(api: Any) -> Iterator[FakeKubelet]:
    kubelet = FakeKubelet(api).start()
    yield kubelet
    kubelet.stop()


class Stack:
    """The extender and the kube-scheduler that calls it; tests may restart the extender."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self.extender: Extender = cp.start_extender().wait_ready()
        self.port = int(self.extender.url.rsplit(":", 1)[1])
        self.scheduler = cp.start_scheduler(
            "kube-scheduler", SCHEDULER_PROFILES, self.extender.url + "/"
        )

    def restart_extender(self, *, wait: bool = True) -> Extender:
        self.extender.process.stop()
        self.extender = self.cp.start_extender(port=self.port)
        if wait:
            self.extender.wait_ready()
        return self.extender


@pytest.fixture(scope="session")
def stack(control_plane: ControlPlane, fake_kubelet: FakeKubelet) -> Stack:
    return Stack(control_plane)


@pytest.fixture
def kube(
    request: pytest.FixtureRequest, api: Any, stack: Stack, control_plane: ControlPlane
) -> Iterator[Kube]:
    handle = Kube(api)
    yield handle
    call = getattr(request.node, "rep_call", None)
    if call is not None and call.failed:
        print("\n" + control_plane.log_tails(80))
    handle.cleanup()


# --- the same suite under RBAC: the extender as the chart's ServiceAccount (tests/e2e/rbac.py) --


@pytest.fixture(scope="session")
def rbac_control_plane(
    kube_bin: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    cp = ControlPlane(kube_bin, tmp_path_factory.mktemp("rbac-control-plane"), authorization="RBAC")
    register_identities(cp)
    try:
        cp.start()
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def rbac_api(rbac_control_plane: ControlPlane) -> Any:
    return rbac_control_plane.api_client()


@pytest.fixture(scope="session")
def rbac_stack(rbac_control_plane: ControlPlane, rbac_api: Any) -> Iterator[RbacStack]:
    kubelet = FakeKubelet(rbac_api).start()
    try:
        yield RbacStack(rbac_control_plane, rbac_api)
    finally:
        kubelet.stop()


@pytest.fixture
def rbac_kube(
    request: pytest.FixtureRequest,
    rbac_api: Any,
    rbac_stack: RbacStack,
    rbac_control_plane: ControlPlane,
) -> Iterator[Kube]:
    handle = Kube(rbac_api)
    yield handle
    call = getattr(request.node, "rep_call", None)
    if call is not None and call.failed:
        print("\n" + rbac_control_plane.log_tails(80))
    handle.cleanup()

"""A queue's view counts the DRA devices its placed pods' allocated claims hold, per device
class, each claim once; pending pods and unallocated claims count nothing."""

from __future__ import annotations

from app.api.models import Queue, document
from app.api.status_page import render_queue
from scheduler_core.insight.pending import pending_jobs
from scheduler_core.insight.queues import queue_view
from tests.builders import accounting, node, pod, queue, resource_claim, with_resource_claims

GPU = "deviceclass.resource.kubernetes.io/gpu.example.com"
NIC = "deviceclass.resource.kubernetes.io/nic.example.com"


def test_devices_of_allocated_claims_are_counted_per_class_and_claim() -> None:
    objs = [
        node("n1", cpu="8"),
        queue("a"),
        queue("b"),
        resource_claim("gpus", device_class="gpu.example.com", count=2, allocated_on="n1"),
        resource_claim("nic", device_class="nic.example.com", allocated_on="n1"),
        resource_claim("later", device_class="gpu.example.com", count=4),
        with_resource_claims(pod("r1", queue="a", node_name="n1"), "gpus", "nic"),
        with_resource_claims(pod("r2", queue="a", node_name="n1"), "gpus"),  # shared: once
        with_resource_claims(pod("w", queue="a"), "later"),  # pending: nothing held
        with_resource_claims(pod("o", queue="b", node_name="n1"), "later"),  # not allocated
    ]
    acct, _ = accounting(objs)
    view = queue_view(acct, "a")
    assert view is not None and view.devices == {GPU: 2, NIC: 1}
    other = queue_view(acct, "b")
    assert other is not None and other.devices == {}
    assert document(Queue, view)["devices"] == {GPU: 2, NIC: 1}
    html = render_queue(view, pending_jobs(acct, "a"))
    assert f"{GPU}: 2" in html

"""Proportion's worked example (100 CPU over A/B/C, weights 2/3/5) and every exit of its
deserved loop, each run through a real session built from Kubernetes objects."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from scheduler_core.framework.session import Session
from scheduler_core.logutil import v
from scheduler_core.plugins.proportion import ProportionPlugin
from tests.builders import Obj, node, pod, podgroup, queue, session, tiers

CONF = tiers("proportion")
GPU = "nvidia.com/gpu"


def cluster(
    queues: list[Obj],
    requests: Mapping[str, list[Mapping[str, str]]],
    *,
    cpu: str = "100",
    node_extra: Mapping[str, str] | None = None,
) -> list[Obj]:
    """One node of ``cpu`` cores and 400Gi; each request is one pending pod in its own
    pending PodGroup of that queue (pods ask for no memory)."""
    objects: list[Obj] = [node("n1", cpu=cpu, memory="400Gi", extra=node_extra), *queues]
    for queue_name, pods in requests.items():
        for i, req in enumerate(pods):
            group = f"pg-{queue_name.lower()}-{i}"
            objects.append(podgroup(group, queue=queue_name, phase="Pending"))
            extra = {k: q for k, q in req.items() if k != "cpu"}
            objects.append(
                pod(f"{group}-p", cpu=req.get("cpu"), memory=None, extra=extra, group=group)
            )
    return objects


def proportion(ssn: Session) -> ProportionPlugin:
    plugin = ssn.plugins["proportion"]
    assert isinstance(plugin, ProportionPlugin)
    return plugin


def deserved_cores(ssn: Session) -> dict[str, float]:
    return {
        name: attr.deserved.milli_cpu / 1000 for name, attr in proportion(ssn).queue_opts.items()
    }


def open_logged(objects: list[Obj], caplog: pytest.LogCaptureFixture) -> Session:
    with caplog.at_level(v(4), logger="scheduler_core.plugins.proportion"):
        return session(objects, CONF)


WORKED_EXAMPLE = cluster(
    [
        queue("A", 2, capability={"cpu": "50"}, guarantee={"cpu": "10"}),
        queue("B", 3),
        queue("C", 5, guarantee={"cpu": "20"}),
    ],
    {"A": [{"cpu": "80"}], "B": [{"cpu": "60"}], "C": [{"cpu": "30"}]},
)


def test_worked_example_gives_28_42_30_cores(caplog: pytest.LogCaptureFixture) -> None:
    ssn = open_logged(WORKED_EXAMPLE, caplog)

    assert deserved_cores(ssn) == {
        "A": pytest.approx(28),
        "B": pytest.approx(42),
        "C": pytest.approx(30),
    }
    # Pass 1 gives A 20 and meets C at its request; pass 2 shares the last 20 cores 2:3.
    formats = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Format")]
    assert formats[:3] == [
        "Format queue <A> deserved resource to <cpu 20000.00, memory 0.00, pods 1.00>",
        "Format queue <B> deserved resource to <cpu 30000.00, memory 0.00, pods 1.00>",
        "Format queue <C> deserved resource to <cpu 30000.00, memory 0.00, pods 1.00>",
    ]
    assert formats[3:5] == [
        "Format queue <A> deserved resource to <cpu 28000.00, memory 0.00, pods 1.00>",
        "Format queue <B> deserved resource to <cpu 42000.00, memory 0.00, pods 1.00>",
    ]
    assert "queue <C> is meet" in caplog.messages


def test_worked_example_real_capability_discounts_the_other_guarantees() -> None:
    opts = proportion(session(WORKED_EXAMPLE, CONF)).queue_opts

    # 100 - (10 + 20) guaranteed elsewhere + own guarantee, capped by capability.
    assert {n: a.real_capability.milli_cpu / 1000 for n, a in opts.items()} == {
        "A": 50,
        "B": 70,
        "C": 90,
    }


def test_worked_example_stops_when_a_pass_changes_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    open_logged(WORKED_EXAMPLE, caplog)

    # Memory nobody requests stays in `remaining`, so the loop ends by the DeepEqual exit
    # (one pass after the cores ran out, in which A and B meet "cause of the capability").
    remaining = [m for m in caplog.messages if m.startswith("Remaining resource is")]
    assert (
        remaining[-2:]
        == ["Remaining resource is <cpu 0.00, memory 429496729600.00, pods 107.00>"] * 2
    )
    assert "queue <A> is meet cause of the capability" in caplog.messages
    assert caplog.messages[-1].startswith("Exiting when remaining is empty or no queue")


@pytest.mark.parametrize(
    ("queues", "requests", "expected", "log_line"),
    [
        pytest.param(
            [queue("Z1", 0, guarantee={"cpu": "10"}), queue("Z2", 0)],
            {"Z1": [{"cpu": "30"}], "Z2": [{"cpu": "30"}]},
            {"Z1": 0, "Z2": 0},
            "Exiting when total weight is 0",
            id="all-weights-zero-exit-before-any-pass-even-guarantee-unapplied",
        ),
        pytest.param(
            [queue("A", 1, capability={"cpu": "20"}), queue("B", 1)],
            {"A": [{"cpu": "80"}], "B": [{"cpu": "100"}]},
            {"A": 20, "B": 80},
            "queue <A> is meet cause of the capability",
            id="capped-queue-meets-when-deserved-stops-moving",
        ),
        pytest.param(
            [queue("A", 1), queue("B", 1)],
            {"A": [{"cpu": "10"}], "B": [{"cpu": "200"}]},
            {"A": 10, "B": 90},
            "queue <A> is meet",
            id="request-below-fair-share-meets-and-frees-the-rest",
        ),
        pytest.param(
            [queue("A", 1, guarantee={"cpu": "60"}), queue("B", 1)],
            {"A": [{"cpu": "80"}], "B": [{"cpu": "100"}]},
            {"A": 60, "B": 40},
            "Exiting when remaining is empty or no queue has more resource request: "
            "<cpu 0.00, memory 429496729600.00, pods 108.00>",
            id="guarantee-raises-deserved-above-fair-share",
        ),
        pytest.param(
            [queue("A", 1), queue("B", 1)],
            {"A": [{"cpu": "30"}, {"cpu": "30"}], "B": []},
            {"A": 60},
            "queue <A> is meet",
            id="queue-without-jobs-gets-no-attributes",
        ),
    ],
)
def test_deserved_loop_exits(
    queues: list[Obj],
    requests: Mapping[str, list[Mapping[str, str]]],
    expected: dict[str, float],
    log_line: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ssn = open_logged(cluster(queues, requests), caplog)

    assert deserved_cores(ssn) == {k: pytest.approx(q) for k, q in expected.items()}
    assert log_line in caplog.messages


def test_scalar_requested_by_one_queue_goes_to_it_and_is_zero_elsewhere() -> None:
    objects = cluster(
        [queue("A", 1), queue("B", 1)],
        {"A": [{"cpu": "10", GPU: "6"}], "B": [{"cpu": "50"}]},
        node_extra={GPU: "8"},
    )

    opts = proportion(session(objects, CONF)).queue_opts

    # Pass 1 halves the 8 GPUs; B does not request any, so pass 2 gives A the rest it asks.
    assert opts["A"].deserved.get(GPU) == 6000
    assert opts["A"].deserved.milli_cpu == 10000
    # B's deserved carries the GPU dimension at 0 (capped by a request without it).
    assert opts["B"].deserved.scalars is not None
    assert opts["B"].deserved.scalars[GPU] == 0
    assert opts["B"].deserved.milli_cpu == 50000


def test_share_is_allocated_over_deserved_on_the_worst_dimension() -> None:
    objects = cluster([queue("A", 1)], {"A": [{"cpu": "40"}]})
    objects += [
        podgroup("run", queue="A"),
        pod("run-p", cpu="10", memory=None, group="run", node_name="n1"),
    ]

    attr = proportion(session(objects, CONF)).queue_opts["A"]

    # deserved = request: 50 cores and 2 pods. Holding 10 cores is .2, but every task also
    # asks for `pods: 1`, so holding 1 pod of 2 makes the share .5 (as in Volcano).
    assert attr.deserved.milli_cpu == 50000
    assert attr.deserved.get("pods") == 2
    assert attr.share == pytest.approx(0.5)

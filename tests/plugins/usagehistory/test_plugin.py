"""usagehistory: the formula and its effect on proportion's deserved shares."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.resource import ZERO, Resource
from scheduler_core.api.usage_history import UsageHistory
from scheduler_core.conf import load_configuration
from scheduler_core.engine import open_session
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.framework.session import Session
from scheduler_core.plugins.proportion import ProportionPlugin
from scheduler_core.plugins.usagehistory import UsageHistoryArgs, adjust_weights, format_span
from tests.builders import Obj, node, pod, podgroup, queue, snapshot

DAY = 86400.0
ON = {"usage.halfLife": "168h"}


def conf_text(arguments: Mapping[str, object] | None = ON, *, with_history: bool = True) -> str:
    lines = ['actions: ""', "tiers:", "- plugins:"]
    if with_history:
        lines.append("  - name: usagehistory")
        if arguments:
            lines.append("    arguments:")
            lines.extend(f"      {key}: {value}" for key, value in arguments.items())
    lines.append("  - name: proportion")
    return "\n".join(lines) + "\n"


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def history_with(
    usage: Mapping[str, Mapping[str, float]], half_life: float = 7 * DAY
) -> UsageHistory:
    """A history in which each queue held ``usage`` (per dimension) for one half-life."""
    clock = FakeMonotonic()
    history = UsageHistory(half_life, monotonic=clock, server_now=lambda: 1e9)
    for name, amounts in usage.items():
        held = Resource(amounts.get("cpu", 0.0), amounts.get("memory", 0.0))
        for dim, amount in amounts.items():
            if dim not in ("cpu", "memory"):
                held.set_scalar(dim, amount)
        history.held(name, held)
    clock.now = half_life
    for name in usage:
        history.held(name, Resource.empty())
    return history


def cluster(requests: Mapping[str, int], weights: Mapping[str, int] | None = None) -> list[Obj]:
    """An 8-cpu node; per queue one pending group of ``requests[q]`` one-cpu pods."""
    objs: list[Obj] = [node("n1", cpu="8", memory="64Gi")]
    for name, count in requests.items():
        objs.append(queue(name, (weights or {}).get(name, 1)))
        objs.append(podgroup(f"{name}-pg", queue=name, phase="Inqueue"))
        objs.extend(
            pod(f"{name}-{i}", cpu="1", memory="1Gi", group=f"{name}-pg") for i in range(count)
        )
    return objs


def open_with(
    objs: list[Obj], conf: str, history: UsageHistory | None
) -> tuple[Session, ProportionPlugin]:
    snap = snapshot(objs)
    snap.usage_history = history
    ssn = open_session(snap, load_configuration(conf))
    plugin = ssn.plugins["proportion"]
    assert isinstance(plugin, ProportionPlugin)
    return ssn, plugin


def deserved_cpu(plugin: ProportionPlugin) -> dict[str, float]:
    return {name: attr.deserved.milli_cpu for name, attr in plugin.queue_opts.items()}


# --- the formula ---------------------------------------------------------------------------

SETTINGS = UsageHistoryArgs(half_life=7 * DAY, max_adjustment=2.0, floor=0.5)


@pytest.mark.parametrize(
    ("weights", "usage", "factors"),
    [
        # equal weights, one queue used everything: it halves, the other doubles (bound 2)
        ({"a": 1, "b": 1}, {"a": {"cpu": 10.0}}, {"a": 0.5, "b": 2.0}),
        # usage exactly at the weight shares: nothing moves
        ({"a": 1, "b": 1}, {"a": {"cpu": 5.0}, "b": {"cpu": 5.0}}, {"a": 1.0, "b": 1.0}),
        # a quarter used against a half's weight: 1 - (0.25 - 0.5)/0.5 = 1.5
        ({"a": 1, "b": 1}, {"a": {"cpu": 1.0}, "b": {"cpu": 3.0}}, {"a": 1.5, "b": 0.5}),
        # weight 3 of 4, used 60 %: 1 - (0.6 - 0.75)/0.75 = 1.2; b: 1 - (0.4-0.25)/0.25 = 0.4
        # bounded to 0.5
        ({"a": 3, "b": 1}, {"a": {"cpu": 6.0}, "b": {"cpu": 4.0}}, {"a": 1.2, "b": 0.5}),
        # the dominant dimension decides: a used all the gpu though little cpu
        (
            {"a": 1, "b": 1},
            {"a": {"cpu": 1.0, "nvidia.com/gpu": 4.0}, "b": {"cpu": 9.0}},
            {"a": 0.5, "b": 0.5},
        ),
    ],
)
def test_formula_moves_weight_by_how_far_usage_share_is_from_weight_share(
    weights: dict[str, int], usage: dict[str, dict[str, float]], factors: dict[str, float]
) -> None:
    got = adjust_weights(weights, usage, SETTINGS)
    assert {name: round(a.factor, 6) for name, a in got.items()} == factors
    assert all(a.floor == 0.5 for a in got.values())


@pytest.mark.parametrize(
    ("weights", "usage", "max_adjustment"),
    [
        ({"a": 1, "b": 1}, {}, 2.0),  # no usage measured
        ({"a": 1, "b": 1}, {"a": {}, "b": {"cpu": 0.0}}, 2.0),  # none worth weighing
        ({"a": 1, "b": 1}, {"a": {"cpu": 10.0}}, 1.0),  # a bound of 1 allows no move
        ({"a": 0}, {"a": {"cpu": 10.0}}, 2.0),  # no positive weight
    ],
)
def test_formula_adjusts_nothing_without_usage_or_room(
    weights: dict[str, int], usage: dict[str, dict[str, float]], max_adjustment: float
) -> None:
    tight = UsageHistoryArgs(half_life=DAY, max_adjustment=max_adjustment)
    assert adjust_weights(weights, usage, tight) == {}


def test_formula_reason_names_the_half_life() -> None:
    got = adjust_weights({"a": 1, "b": 1}, {"a": {"cpu": 1.0}}, SETTINGS)
    assert got["a"].reason == "its usage over the last 7d (half-life)"
    assert format_span(90.0) == "90s"
    assert format_span(36 * 3600.0) == "36h"


# --- the effect on deserved shares ----------------------------------------------------------


def test_queue_with_history_deserves_less_when_both_ask_for_more_than_the_cluster() -> None:
    objs = cluster({"q1": 8, "q2": 8})
    _, plain = open_with(objs, conf_text(with_history=False), None)
    assert deserved_cpu(plain) == {"q1": 4000.0, "q2": 4000.0}
    _, adjusted = open_with(objs, conf_text(), history_with({"q1": {"cpu": 8000.0}}))
    got = deserved_cpu(adjusted)
    assert got["q1"] < 4000.0 < got["q2"]
    assert got["q1"] >= 0.5 * 4000.0  # the floor
    assert adjusted.weighted["q1"].milli_cpu == 4000.0
    assert adjusted.adjustments["q1"].factor == 0.5


def test_floor_keeps_a_share_of_the_weighted_deserved() -> None:
    objs = cluster({"q1": 8, "q2": 8})
    args = {**ON, "usage.maxAdjustment": 100, "usage.floor": 0.75}
    _, adjusted = open_with(objs, conf_text(args), history_with({"q1": {"cpu": 8000.0}}))
    assert deserved_cpu(adjusted)["q1"] == pytest.approx(3000.0)


def test_no_contention_means_no_adjustment() -> None:
    objs = cluster({"q1": 3, "q2": 3})
    _, adjusted = open_with(objs, conf_text(), history_with({"q1": {"cpu": 8000.0}}))
    assert adjusted.adjustments == {}
    assert deserved_cpu(adjusted) == {"q1": 3000.0, "q2": 3000.0}


def test_without_a_measured_history_the_plugin_changes_nothing() -> None:
    objs = cluster({"q1": 8, "q2": 8})
    _, adjusted = open_with(objs, conf_text(), None)
    assert adjusted.adjustments == {}
    assert deserved_cpu(adjusted) == {"q1": 4000.0, "q2": 4000.0}


# --- properties ----------------------------------------------------------------------------

QUEUES = ("q1", "q2", "q3")


@st.composite
def clusters(draw: st.DrawFn, *, guarantees: bool = True) -> tuple[list[Obj], dict[str, int]]:
    """Up to three queues of random weight, guarantee (unless ``guarantees`` is false) and
    backlog on one or two nodes."""
    objs: list[Obj] = [node("n1", cpu=str(draw(st.integers(2, 12))), memory="32Gi")]
    if draw(st.booleans()):
        objs.append(node("n2", cpu=str(draw(st.integers(1, 8))), memory="16Gi"))
    requests: dict[str, int] = {}
    for name in QUEUES[: draw(st.integers(2, 3))]:
        guarantee = draw(st.sampled_from([None, "1", "2"])) if guarantees else None
        objs.append(
            queue(
                name,
                draw(st.integers(1, 4)),
                guarantee={"cpu": guarantee} if guarantee else None,
            )
        )
        count = draw(st.integers(0, 10))
        requests[name] = count
        objs.append(podgroup(f"{name}-pg", queue=name, phase="Inqueue"))
        memory = draw(st.sampled_from(["1Gi", "3Gi"]))
        objs.extend(
            pod(f"{name}-{i}", cpu="1", memory=memory, group=f"{name}-pg") for i in range(count)
        )
    return objs, requests


usages = st.dictionaries(
    st.sampled_from(QUEUES),
    st.fixed_dictionaries(
        {"cpu": st.floats(0, 1e4), "memory": st.floats(0, 1e10)},
    ),
    max_size=3,
)


def same(left: ProportionPlugin, right: ProportionPlugin) -> bool:
    return left.queue_opts.keys() == right.queue_opts.keys() and all(
        repr(attr.deserved) == repr(right.queue_opts[name].deserved)
        and attr.share == right.queue_opts[name].share
        for name, attr in left.queue_opts.items()
    )


@settings(max_examples=60, deadline=None)
@given(case=clusters(), usage=usages)
def test_off_or_without_usage_means_exactly_proportion_alone(
    case: tuple[list[Obj], dict[str, int]], usage: dict[str, dict[str, float]]
) -> None:
    objs, _ = case
    _, alone = open_with(objs, conf_text(with_history=False), history_with(usage))
    _, unmeasured = open_with(objs, conf_text(), None)
    _, nothing_used = open_with(objs, conf_text(), history_with({}))
    assert same(alone, unmeasured)
    assert same(alone, nothing_used)


@settings(max_examples=80, deadline=None)
@given(
    case=clusters(guarantees=False),
    usage=usages,
    who=st.sampled_from(QUEUES),
    more=st.floats(1.0, 1e4),
)
def test_more_past_usage_never_raises_deserved_without_guarantees(
    case: tuple[list[Obj], dict[str, int]],
    usage: dict[str, dict[str, float]],
    who: str,
    more: float,
) -> None:
    """Without guarantees the deserved loop hands out the cluster by weight alone, so a
    queue whose weight falls against every other's never deserves more. (With guarantees it
    can, by a residue: see the example below.)"""
    objs, _ = case
    _, before = open_with(objs, conf_text(), history_with(usage))
    _, after = open_with(objs, conf_text(), history_with(more_cpu(usage, who, more)))
    if who in after.queue_opts:
        assert after.queue_opts[who].deserved.less_equal(before.queue_opts[who].deserved, ZERO)


@settings(max_examples=200, deadline=None)
@given(
    weights=st.dictionaries(st.sampled_from(QUEUES), st.integers(0, 4), min_size=1),
    usage=usages,
    who=st.sampled_from(QUEUES),
    more=st.floats(1.0, 1e4),
)
def test_more_past_usage_never_raises_its_factor_nor_lowers_another_s(
    weights: dict[str, int], usage: dict[str, dict[str, float]], who: str, more: float
) -> None:
    """The adjustment itself is monotone, guarantees or not: what more usage changes in the
    shares comes only from how the deserved loop splits the cluster on the new weights."""
    before = adjust_weights(weights, usage, SETTINGS)
    after = adjust_weights(weights, more_cpu(usage, who, more), SETTINGS)
    for name in after:
        was = before[name].factor if name in before else 1.0
        if name == who:
            assert after[name].factor <= was
        else:
            assert after[name].factor >= was


def test_a_guarantee_lets_more_past_usage_raise_deserved_by_a_residue_of_the_loop() -> None:
    """Volcano's loop, which proportion runs unchanged on the adjusted weights, is not
    monotone in the weights once a queue is raised to its guarantee: the lift is not taken
    from the queue's weighted offer, so which queue meets its request in which pass decides
    who shares what is left.

    3 CPUs; q1 asks for nothing (weight 3), q2 for one CPU, q3 for three with a guarantee of
    two. With little past usage for q3 (factor 2), q2 is offered more than its CPU in the
    first pass and q3 is lifted to its 2: nothing is left. With more (factor 0.5, while q1's
    rises to 1.17), q2's first offer falls just short of its CPU, so a second pass splits the
    1.66m left between q2 and q3 (still short of its request) by weight: q3 ends 0.33m above
    its guarantee, q2 0.33m below its CPU."""
    objs: list[Obj] = [node("n1", cpu="3", memory="48Gi")]
    for name, weight, guarantee, pods in (
        ("q1", 3, None, 0),
        ("q2", 1, None, 1),
        ("q3", 1, "2", 3),
    ):
        objs.append(queue(name, weight, guarantee={"cpu": guarantee} if guarantee else None))
        objs.append(podgroup(f"{name}-pg", queue=name, phase="Inqueue"))
        objs.extend(
            pod(f"{name}-{i}", cpu="1", memory="1Gi", group=f"{name}-pg") for i in range(pods)
        )
    little = {"q1": {"cpu": 1.0}}
    _, before = open_with(objs, conf_text(), history_with(little))
    _, after = open_with(objs, conf_text(), history_with(more_cpu(little, "q3", 1.0)))

    assert (before.adjustments["q3"].factor, after.adjustments["q3"].factor) == (2.0, 0.5)
    assert deserved_cpu(before) == {"q1": 0.0, "q2": 1000.0, "q3": 2000.0}
    assert len(before.derivation) == 2 and len(after.derivation) == 3
    got = deserved_cpu(after)
    assert got["q3"] == pytest.approx(2000.0 + 1.66389 * 500 / 2500, abs=1e-3)
    assert got["q2"] + got["q3"] == pytest.approx(3000.0)


def more_cpu(
    usage: Mapping[str, Mapping[str, float]], who: str, more: float
) -> dict[str, dict[str, float]]:
    """``usage`` with ``more`` cpu-seconds of past usage for ``who``."""
    grown = {name: dict(amounts) for name, amounts in usage.items()}
    mine = grown.setdefault(who, {})
    mine["cpu"] = mine.get("cpu", 0.0) + more
    return grown


@settings(max_examples=80, deadline=None)
@given(case=clusters(), usage=usages, floor=st.sampled_from([0.0, 0.3, 0.5, 1.0]))
def test_guarantee_and_floor_always_hold(
    case: tuple[list[Obj], dict[str, int]],
    usage: dict[str, dict[str, float]],
    floor: float,
) -> None:
    objs, _ = case
    args = {**ON, "usage.maxAdjustment": 4, "usage.floor": floor}
    _, plain = open_with(objs, conf_text(with_history=False), None)
    _, adjusted = open_with(objs, conf_text(args), history_with(usage))
    for name, attr in adjusted.queue_opts.items():
        assert attr.guarantee.less_equal(attr.deserved, ZERO)
        weighted = plain.queue_opts[name].deserved.clone().multi(floor)
        assert weighted.less_equal(attr.deserved, ZERO)


@settings(max_examples=60, deadline=None)
@given(first=clusters(), second=clusters(), usage=usages)
def test_remembered_results_equal_a_fresh_session(
    first: tuple[list[Obj], dict[str, int]],
    second: tuple[list[Obj], dict[str, int]],
    usage: dict[str, dict[str, float]],
) -> None:
    """Sessions of one owner reuse the last loops and adjustments: never a stale answer."""
    history = history_with(usage)
    memos = SessionMemos()
    conf = load_configuration(conf_text())
    for objs in (first[0], second[0], second[0], first[0]):
        snap = snapshot(objs)
        snap.usage_history = history
        remembered = open_session(snap, conf, memos=memos).plugins["proportion"]
        _, fresh = open_with(objs, conf_text(), history)
        assert isinstance(remembered, ProportionPlugin)
        assert same(remembered, fresh)
        assert remembered.adjustments == fresh.adjustments

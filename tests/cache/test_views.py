"""The cache's reads: a verb call's pod matched to the cache's own task."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.task import TaskInfo
from scheduler_core.cache.convert import ConversionError
from scheduler_core.cache.state import ClusterState
from tests import builders as b

ABSENT = object()


def _state() -> ClusterState:
    state = ClusterState()
    for name, namespace in (("p", "ns"), ("q", "default")):
        obj = b.pod(name, namespace=namespace, cpu="1")
        obj["metadata"]["resourceVersion"] = "7"
        obj["metadata"]["uid"] = f"uid-{name}"
        state.upsert("Pod", obj)
    return state


STATE = _state()


def _field(*values: object) -> st.SearchStrategy[object]:
    return st.sampled_from([ABSENT, None, "", *values])


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    meta = {
        key: value
        for key, value in (
            ("resourceVersion", draw(_field("7", "8", 7))),
            ("name", draw(_field("p", "q", 3))),
            ("namespace", draw(_field("ns", "default", 5))),
            ("uid", draw(_field("uid-p", "uid-q", "other"))),
        )
        if value is not ABSENT
    }
    shape = draw(st.sampled_from(["dict", "mapping", "none", "list", "absent"]))
    if shape == "absent":
        return {}
    wrapped = {"dict": meta, "mapping": MappingProxyType(meta), "none": None, "list": [meta]}
    return {"metadata": wrapped[shape]}


def _outcome(read: Any, pod: dict[str, Any]) -> TaskInfo | str | None:
    try:
        return read(pod)  # type: ignore[no-any-return]
    except ConversionError as exc:
        return f"error: {exc}"


@settings(max_examples=400, deadline=None, database=None)
@given(pods())
def test_a_verb_calls_pod_matches_the_cached_task_as_the_converters_accessors_do(
    pod: dict[str, Any],
) -> None:
    with STATE.locked():
        fast = _outcome(STATE.cached_task, pod)
        full = _outcome(STATE._cached_task_by_accessors, pod)
    assert fast is full or fast == full


def test_the_pod_as_the_cache_stored_it_gets_the_cache_s_task() -> None:
    with STATE.locked():
        task = STATE.cached_task(
            {"metadata": {"name": "p", "namespace": "ns", "resourceVersion": "7", "uid": "uid-p"}}
        )
    assert task is not None and task.key == "ns/p"

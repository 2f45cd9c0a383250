"""The people's API publishes the engine's views as they are: a view's field is on the wire
and in the schema, typed, defaulted and described, with nothing written twice."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from app.api import models
from app.api.models import Queue, QueueList, QueueListView, document, published
from scheduler_core.insight.described import described
from scheduler_core.insight.queues import QueueView


@dataclass(slots=True)
class _Inner:
    held_pods: int


@dataclass(slots=True)
class _Outer:
    inner: _Inner | None
    labels: tuple[str, ...] = ()
    shown_at: str = field(default="now", metadata=described("when it was shown"))


def test_a_view_field_is_published_camel_cased_with_its_default_and_description() -> None:
    published(_Inner, "TestInner")
    model = published(_Outer, "TestOuter")
    schema = model.model_json_schema(by_alias=True)
    assert list(schema["properties"]) == ["inner", "labels", "shownAt"]
    assert schema["required"] == ["inner"]
    assert schema["properties"]["shownAt"] == {
        "default": "now",
        "description": "when it was shown",
        "title": "Shownat",
        "type": "string",
    }
    assert document(model, _Outer(_Inner(3), ("a",))) == {
        "inner": {"heldPods": 3},
        "labels": ["a"],
        "shownAt": "now",
    }


@dataclass(slots=True)
class Unpublished:
    n: int


@dataclass(slots=True)
class _Holder:
    part: list[Unpublished]


def test_a_view_nested_before_it_is_published_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="Unpublished is nested in a view before it is published"):
        published(_Holder, "TestHolder")


def test_every_published_view_carries_every_field_of_its_view() -> None:
    for view, model in models._MODELS.items():
        assert list(model.model_fields) == [f.name for f in dataclasses.fields(view)], view


def test_the_queue_list_answers_each_queue_as_the_queue_route_does() -> None:
    view = QueueView(
        name="q",
        parent=None,
        children=[],
        state="Open",
        weight=1,
        reclaimable=True,
        guarantee=None,
        capability=None,
        real_capability=None,
        request={"cpu": 1.0},
        allocated={"cpu": 0.5},
        assumed=None,
        assumed_pods=0,
        deserved={"cpu": None},
        share=0.5,
        overused=False,
        jobs=1,
        pending_jobs=1,
    )
    one = document(Queue, view)
    assert document(QueueList, QueueListView([view])) == {"queues": [one]}
    assert one["realCapability"] is None and one["pendingJobs"] == 1
    assert one["deserved"] == {"cpu": None} and one["history"] is None

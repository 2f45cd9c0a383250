"""Generated request bodies for every verb, sent over loopback to the real app (uvicorn,
the engine backend on the demo cluster): random keys and types, unicode, huge numbers, deep
nesting, and pod-shaped bodies with random field types. Every answer is a 4xx or the verb's
well-formed answer, never a 5xx, and no request hangs a worker (each has a timeout, and a
health check follows every example)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.cli.main import build_parser
from app.cli.serve import backend_from_args
from app.serving.guard import ListenerLimits
from app.serving.server import create_app

from ..live import serve

VERBS = ("filter", "prioritize", "preempt", "debug/explain")
HUGE = 2**80

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-HUGE, max_value=HUGE)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=30,
)
quantities = st.one_of(
    st.text(max_size=12),
    st.integers(min_value=-HUGE, max_value=HUGE),
    st.sampled_from(["1", "100m", "1e400", "-1", "1Ki", "0.0000001", "9" * 40, "1Zi", "ï"]),
    json_values,
)


@st.composite
def pods(draw: st.DrawFn) -> Any:
    """Pod-shaped, with any field possibly of the wrong type."""
    requests = draw(
        st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), quantities)
    )
    container = {"name": "c", "resources": {"requests": requests}}
    return {
        "metadata": {
            "name": draw(st.text(max_size=20) | json_values),
            "namespace": draw(st.sampled_from(["default", ""]) | json_values),
            "uid": draw(st.text(max_size=20)),
            "annotations": draw(
                st.dictionaries(
                    st.sampled_from(
                        ["scheduling.volcano.sh/queue-name", "scheduling.k8s.io/group-name"]
                    ),
                    st.sampled_from(["production", "analytics"]) | json_values,
                )
                | json_values
            ),
        },
        "spec": draw(
            st.fixed_dictionaries(
                {"schedulerName": st.just("queue-scheduler"), "containers": st.just([container])},
                optional={"priority": json_values, "nodeSelector": json_values},
            )
            | json_values
        ),
    }


def bodies(verb: str) -> st.SearchStrategy[bytes]:
    pod = pods() | json_values
    names = st.lists(st.sampled_from(["cpu-node-1", "gpu-node-1"]) | st.text(max_size=8))
    if verb in ("filter", "prioritize"):
        shaped = st.fixed_dictionaries({"Pod": pod, "NodeNames": names | json_values})
    elif verb == "preempt":
        victims = st.dictionaries(
            st.sampled_from(["cpu-node-1", "x"]),
            st.fixed_dictionaries({"Pods": st.lists(st.fixed_dictionaries({"UID": scalars}))})
            | json_values,
        )
        shaped = st.fixed_dictionaries({"Pod": pod, "NodeNameToMetaVictims": victims | json_values})
    else:
        shaped = pod
    documents = st.one_of(shaped, json_values, st.dictionaries(st.text(), json_values))
    raw = st.one_of(
        st.binary(max_size=200),
        st.integers(min_value=1, max_value=3000).map(lambda d: b"[" * d + b"]" * d),
        st.integers(min_value=1, max_value=3000).map(lambda d: b'{"Pod":' * d + b"1" + b"}" * d),
    )
    return documents.map(lambda doc: json.dumps(doc).encode()) | raw


@pytest.fixture(scope="module", params=["protocol", "router"])
def url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The service as ``serve`` runs it (the guarded protocol answers plain verb calls
    itself), and under uvicorn's own protocol (every call through the verbs' router)."""
    backend = backend_from_args(build_parser().parse_args(["serve", "--demo"])).backend
    limits = ListenerLimits() if request.param == "protocol" else None
    with serve(create_app(backend), limits=limits) as base:
        yield base


def well_formed(verb: str, answer: Any) -> bool:
    if verb == "prioritize":
        return isinstance(answer, list) and all(
            isinstance(h, dict) and set(h) == {"Host", "Score"} for h in answer
        )
    return isinstance(answer, dict)


@pytest.mark.parametrize("verb", VERBS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_body_gets_a_client_error_or_a_valid_answer(
    url: str, verb: str, data: st.DataObject
) -> None:
    body = data.draw(bodies(verb))
    with httpx.Client(base_url=url, timeout=10.0) as client:
        answer = client.post(f"/{verb}", content=body, headers={"Content-Type": "application/json"})
        assert answer.status_code < 500, (answer.status_code, answer.text[:300])
        if answer.status_code == 200:
            assert well_formed(verb, answer.json()), answer.text[:300]
        else:
            assert 400 <= answer.status_code < 500
        assert client.get("/healthz").status_code == 200

"""A what-if never holds up the verbs: its session runs off the event loop, and a second
what-if asked meanwhile is turned away instead of queued."""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx

from app.cli.main import build_parser
from app.cli.serve import backend_from_args
from app.serving.server import create_app
from scheduler_core.insight.whatif import WhatIfRequest, WhatIfResult
from tests.insight.conftest import fingerprint

from ..live import serve
from .test_insight_api import NEW_POD

WAIT = 30.0


def test_a_filter_call_completes_while_a_whatif_session_is_running() -> None:
    engine = backend_from_args(build_parser().parse_args(["serve", "--demo"])).backend
    started, release = threading.Event(), threading.Event()
    prepare = engine.whatif

    def paused_whatif(request: WhatIfRequest) -> Callable[[], WhatIfResult]:
        dry_run = prepare(request)  # the copy: on the event loop, under the lock

        def run() -> WhatIfResult:  # the session: held here until the test lets it go
            started.set()
            release.wait(WAIT)
            return dry_run()

        return run

    engine.whatif = paused_whatif  # type: ignore[method-assign]
    before = fingerprint(engine.accounting)
    answers: list[httpx.Response] = []
    with serve(create_app(engine)) as url, httpx.Client(base_url=url, timeout=WAIT) as client:
        asking = threading.Thread(
            target=lambda: answers.append(client.post("/api/v1/whatif", json={"add": [NEW_POD]}))
        )
        asking.start()
        try:
            assert started.wait(WAIT), "the what-if session never started"

            filtered = client.post(
                "/filter", json={"Pod": NEW_POD, "NodeNames": ["cpu-node-1", "cpu-node-3"]}
            )
            assert filtered.status_code == 200
            assert "NodeNames" in filtered.json()
            busy = client.post("/api/v1/whatif", json={"add": [NEW_POD]})
            assert busy.status_code == 429
            assert "one runs at a time" in busy.json()["Error"]
            assert busy.headers["Retry-After"] == "1"
            # both answered while the first what-if was still held in its session
            assert asking.is_alive() and not answers
        finally:
            release.set()
            asking.join(WAIT)
        assert [a.status_code for a in answers] == [200]
        assert "production/extra" in {p["pod"] for p in answers[0].json()["placed"]}
        again = client.post("/api/v1/whatif", json={"add": [NEW_POD]})
        assert again.status_code == 200  # the slot is free again
    # the cluster state as it was (the filter call assumed its pod in the accounting only:
    # queue figures and assumed pods are left out of the comparison)
    assert fingerprint(engine.accounting)[:5] == before[:5]

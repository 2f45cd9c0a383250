"""The informers over a stand-in API server, shared by the cache's informer tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler_core.cache.informers import InformerSet
from scheduler_core.cache.reflector import ReflectorOptions
from tests.fakeapi import FakeApiServer, RecordingSink, write_kubeconfig

TOKEN = "informer-token"
FAST = ReflectorOptions(
    page_size=5,
    backoff_initial=0.02,
    backoff_cap=0.2,
    backoff_jitter=0.5,
    min_watch_timeout=60,
    watch_read_timeout=180,
    list_read_timeout=5,
    connect_timeout=2,
)

MakeInformers = Callable[..., tuple[InformerSet, RecordingSink]]


@pytest.fixture
def kubeconfig(fake_api: FakeApiServer, tmp_path: Path) -> str:
    fake_api.token = TOKEN
    return str(write_kubeconfig(tmp_path / "kubeconfig", fake_api.url, token=TOKEN))


@pytest.fixture
def make_informers(kubeconfig: str) -> Iterator[MakeInformers]:
    made: list[InformerSet] = []

    def make(start: bool = True, **kwargs: Any) -> tuple[InformerSet, RecordingSink]:
        sink = RecordingSink()
        kwargs.setdefault("kubeconfig", kubeconfig)
        kwargs.setdefault("options", FAST)
        informers = InformerSet(sink, **kwargs)
        made.append(informers)
        if start:
            informers.start()
        return informers, sink

    yield make
    for informers in made:
        informers.stop()

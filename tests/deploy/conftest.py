"""Fixtures: each deployment check runs once per layout (deploy/ and chart values)."""

from __future__ import annotations

import pytest

from .deploy_manifests import Manifest
from .layouts import LAYOUTS, layout_documents


@pytest.fixture(params=LAYOUTS)
def layout(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def documents(layout: str) -> list[Manifest]:
    return layout_documents(layout)

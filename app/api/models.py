"""The people's API's JSON: the engine's views (``scheduler_core.insight``) published as
they are, camelCase on the wire, in the OpenAPI schema.

The views are the one definition of each answer: ``published`` builds the pydantic model
the API validates and serialises with from a view's dataclass fields (their types, defaults
and described metadata), so a field added to a view is on the wire and in the schema with
nothing to add here. What is written here is only what the engine has no view of: the
schema's names, the list wrapper, the what-if's request (its size limits belong to the
API), and the error body.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import types
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.alias_generators import to_camel

from scheduler_core.insight import whatif as engine_whatif
from scheduler_core.insight.derivation import Derivation as DerivationView
from scheduler_core.insight.derivation import DerivationRound as DerivationRoundView
from scheduler_core.insight.described import DESCRIPTION
from scheduler_core.insight.domains import DomainView as GangDomainView
from scheduler_core.insight.domains import TierTried as TierTriedView
from scheduler_core.insight.explain import Explanation as ExplanationView
from scheduler_core.insight.explain import NodeVictimsView
from scheduler_core.insight.explain import Step as StepView
from scheduler_core.insight.pending import PendingJob as PendingJobView
from scheduler_core.insight.pending import PendingPage as PendingPageView
from scheduler_core.insight.queues import QueueView, UsageView
from scheduler_core.insight.topology import DomainView as TopologyDomainView
from scheduler_core.insight.topology import RefusalView, TierView, TopologyView
from scheduler_core.insight.whatif import (
    EvictionView,
    QueueChangeView,
    WhatIfResult,
)
from scheduler_core.insight.whatif import Placement as PlacementView
from scheduler_core.insight.whatif import (
    QueueFigures as QueueFiguresView,
)


class _Out(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, from_attributes=True, frozen=True
    )


#: Each published view's model, so that a view nested in another is published as its model.
_MODELS: dict[type, type[BaseModel]] = {}


def published(view: type, name: str, description: str | None = None) -> type[BaseModel]:
    """The model of ``view`` (a dataclass), named ``name`` in the schema: a field per view
    field, in the view's order, with its type (the views it nests replaced by their models,
    which must be published first), its default and the description its metadata carries."""
    hints = get_type_hints(view)
    fields: dict[str, Any] = {}
    for spec in dataclasses.fields(view):
        info: dict[str, Any] = {}
        if DESCRIPTION in spec.metadata:
            info["description"] = spec.metadata[DESCRIPTION]
        if spec.default is not dataclasses.MISSING:
            info["default"] = spec.default
        elif spec.default_factory is not dataclasses.MISSING:
            info["default_factory"] = spec.default_factory
        fields[spec.name] = (_model_type(hints[spec.name]), Field(**info))
    model: type[BaseModel] = create_model(
        name, __base__=_Out, __module__=__name__, __doc__=description, **fields
    )
    _MODELS[view] = model
    return model


def _model_type(hint: Any) -> Any:
    """``hint`` with every view in it replaced by its published model."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if hint not in _MODELS:
            raise TypeError(f"{hint.__qualname__} is nested in a view before it is published")
        return _MODELS[hint]
    origin = get_origin(hint)
    if origin is None or origin is Literal:
        return hint
    args = tuple(_model_type(arg) for arg in get_args(hint))
    if origin in (Union, types.UnionType):
        return functools.reduce(operator.or_, args)
    return origin[args]


DerivationRound = published(DerivationRoundView, "DerivationRound")
Derivation = published(DerivationView, "Derivation")
UsageHistory = published(UsageView, "UsageHistory")
Queue = published(QueueView, "Queue")
TierTried = published(TierTriedView, "TierTried")
DomainView = published(
    GangDomainView,
    "DomainView",
    "A topology gang's network domain: ``state`` placed (a domain chosen), refused (hard,\n"
    "none holds the gang), anywhere (soft, none holds it) or ignored (requests turned off, or\n"
    "no topology described).",
)
PendingJob = published(PendingJobView, "PendingJob")
PendingPage = published(PendingPageView, "PendingPage")
Step = published(StepView, "Step")
NodeVictims = published(NodeVictimsView, "NodeVictims")
Explanation = published(ExplanationView, "Explanation")
Placement = published(PlacementView, "Placement")
Eviction = published(EvictionView, "Eviction")
QueueFigures = published(QueueFiguresView, "QueueFigures")
QueueChange = published(QueueChangeView, "QueueChange")
WhatIfOut = published(WhatIfResult, "WhatIfOut")
TopologyDomain = published(TopologyDomainView, "TopologyDomain")
TopologyTier = published(TierView, "TopologyTier")
TopologyRefusal = published(RefusalView, "TopologyRefusal")
Topology = published(TopologyView, "Topology")


@dataclass(frozen=True, slots=True)
class QueueListView:
    """``GET /api/v1/queues``' answer: the queues in an object, so it can grow a field."""

    queues: list[QueueView]


QueueList = published(QueueListView, "QueueList")


class QueueChangeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=253)
    weight: int | None = Field(None, ge=1, le=1_000_000)
    capability: dict[str, str | int | float] | None = Field(None, max_length=32)


class WhatIfIn(BaseModel):
    """Objects to add (Pods, PodGroups, Queues as Kubernetes JSON), pods to remove
    (``namespace/name``) and queue changes to try together."""

    model_config = ConfigDict(extra="forbid")

    add: list[dict[str, Any]] = Field(default_factory=list, max_length=500)
    remove: list[str] = Field(default_factory=list, max_length=500)
    queues: list[QueueChangeIn] = Field(default_factory=list, max_length=100)
    scope: Literal["submitted", "all"] = Field(
        "submitted",
        description="submitted: schedule only the added jobs, every other pending job stays "
        "as it is; all: the whole scheduling session, every pending job included",
    )

    def request(self) -> engine_whatif.WhatIfRequest:
        return engine_whatif.WhatIfRequest(
            add=self.add,
            remove=self.remove,
            queues=[engine_whatif.QueueChange(q.name, q.weight, q.capability) for q in self.queues],
            scope=self.scope,
        )


class ApiError(BaseModel):
    """One sentence saying what is wrong."""

    Error: str


def answer(model: type[BaseModel], view: object) -> bytes:
    """``view`` as ``model`` puts it on the wire (camelCase JSON)."""
    return model.model_validate(view).model_dump_json(by_alias=True).encode()


def document(model: type[BaseModel], view: object) -> dict[str, Any]:
    """``view`` as ``model`` puts it on the wire, as a JSON document (for answers that embed
    it, and for the command line's in-process queries)."""
    doc: dict[str, Any] = model.model_validate(view).model_dump(mode="json", by_alias=True)
    return doc

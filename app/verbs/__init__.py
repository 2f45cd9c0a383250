"""kube-scheduler's extender verbs: ``filter``, ``prioritize`` and ``preempt``.

Each verb is a thin route (``filter.py``, ``prioritize.py``, ``preempt.py``) that decodes the
wire format (``protocol.py``, kube-scheduler's ``extender/v1`` types; ``schema.py`` describes
them for the OpenAPI schema only), asks the engine through the
``ExtenderBackend`` port (``ports.py``) and encodes the answer; ``common.py`` is what every
verb handler shares (``VerbHandler``: one handler, called by the verbs' router in
``app.serving.verb_router`` or as a FastAPI route).
No decision is made here: the decisions live in ``scheduler_core.extender``.
"""

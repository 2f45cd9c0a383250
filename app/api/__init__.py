"""The people's API: why a pod waits, what a queue holds, what a change would do.

Read-only routes under ``/api/v1`` (``explain.py``, ``queues.py``, ``whatif.py``), the HTML
status page (``status_page.py`` renders, ``status_routes.py`` serves), their pydantic models
(``models.py``, built from the engine's views) and the ``InsightBackend`` port
(``port.py``). The answers come from ``scheduler_core.insight``. A sibling of ``app.verbs``:
neither imports the other (what both need of HTTP is in ``app.http``).
"""

"""The serving machinery: how the verbs and the people's API are put on the network.

``server.py`` builds the FastAPI applications (the verbs' and the status listener's) from the
routes of ``app.verbs`` and ``app.api``; ``listeners.py`` and ``status_listener.py`` run them
on uvicorn; ``security.py``, ``delegated_auth.py`` and ``tls_reload.py`` authenticate and
encrypt; ``ops.py`` answers health, readiness and /metrics, ``debug.py`` the ``/debug``
routes.
"""

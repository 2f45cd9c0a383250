"""The HTTP service around the engine, one package for each thing it serves.

- ``verbs``: kube-scheduler's extender verbs (filter, prioritize, preempt): their routes,
  wire format, fast path and the port the engine adapter implements.
- ``api``: the people's read API (explain, queues, what-if), its wire models and the status
  page.
- ``serving``: the serving machinery: the HTTP applications, listeners, TLS and its reload,
  authentication, and the operational routes (health, readiness, /metrics).
- ``telemetry``: the metrics and logs every other room records into.
- ``cli``: every command and flag; turns flags into the option dataclasses the rest takes.
- ``backend``: the engine adapter behind both ports, and ``build.py``, the one composition
  root that assembles informers, controller and loops from options (never from argparse).
"""

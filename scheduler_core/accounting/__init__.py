"""The session keeper: one long-lived read-only session over the live cache, kept current.

``keeper.py`` (``QueueAccounting``) owns the accounting session the verbs, the people's API and
the requeuer read: the pods filter let through and the cluster has not shown bound yet
(assumptions, charged to their queues until they land, end or expire), the session followed in
place through the cluster's events (``following.py``, which asks each plugin to bring its own
per-session state up to date), the nodes granted to a preemptor (``grants.py``) and the pods
parked for a queue rule (``parked.py``). The verbs in ``scheduler_core.extender`` decide on it;
nothing here decides a verb.
"""

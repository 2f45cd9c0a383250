"""The extender verbs' decisions, on top of the cluster state and the session hooks.

No HTTP here: ``app/`` turns these results into kube-scheduler's wire format.
"""

"""The in-process controller: what the extender writes back to the API server.

Every replica serves the verbs; only the replica holding the leader lease writes (PodGroup and
Queue status, events, and whatever later loops build on the same election). Writes happen on
background threads so the verbs and the informers never wait on the API server. Sending a
parked pod back to kube-scheduler (an annotation on the pod) is the one write every replica
may make: it is idempotent and only ever makes kube-scheduler ask again.
"""

"""The in-process controller: what the extender writes back to the API server.

Every replica serves the verbs; only the replica holding the leader lease writes (PodGroup and
Queue status, events, and whatever later loops build on the same election). Writes happen on
background threads so the verbs and the informers never wait on the API server.
"""

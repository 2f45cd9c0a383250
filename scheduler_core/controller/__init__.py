"""What the extender does on its own initiative, towards the API server: sending parked pods
back to kube-scheduler (and, as the controller grows, what only the leader may write)."""

"""Plain data of the engine: resources, tasks, jobs, queues, nodes, snapshots (stdlib only)."""

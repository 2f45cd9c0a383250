"""Read-only answers for people: why a pod is pending, how a queue's share was reached, what
a submission would change. Built on the same session hooks and records as the verbs, never
on a second implementation of their rules."""

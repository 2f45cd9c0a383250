"""Metrics and logs: what every room of the service records into.

A room of its own below the verbs, the people's API and the serving machinery, because all
three record into it: kept inside ``serving`` it would make serving and the verbs import each
other (serving composes the verbs' routes; the verbs count their calls).
"""

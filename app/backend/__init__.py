"""The engine behind the ports: ``engine.py`` adapts ``scheduler_core`` to the verbs' and the
people's ports (taking the state's lock, delegating to ``scheduler_core.extender`` and
``scheduler_core.insight``); ``build.py`` is the composition root that assembles the cluster
source, informers, controller, status writer, requeuer, reclaim loop and configuration watcher
from option dataclasses and returns them in one record (``Built``) that ``serve`` runs and
closes. Only the entry points import ``build``.
"""

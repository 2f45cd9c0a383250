"""nodeorder: kube-scheduler's node scores, weighted and summed as Volcano's plugin does.

``plugin.py`` is the plugin (the batch hook, the per-node path, the pod-level scores);
``scores.py`` the formulas on arrays; ``short_list.py`` the same on Python numbers for a
short list of nodes; ``args.py`` the weights (their argument keys beside them), read once
into ``NodeOrderArgs``.
"""

from scheduler_core.plugins.nodeorder.args import NodeOrderArgs
from scheduler_core.plugins.nodeorder.plugin import NodeOrderPlugin

__all__ = ["NodeOrderArgs", "NodeOrderPlugin"]

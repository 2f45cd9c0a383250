"""How many nodes a scoring call must offer before the array formulas pay for themselves.

nodeorder's and binpack's formulas are written on numpy arrays: one pass over 5,000 nodes
costs little more than over ten, but each of the few dozen array operations of a call has
a fixed cost of a microsecond or more. kube-scheduler offers the extender a part of the
cluster (about a hundred nodes of two hundred), where that fixed cost is most of a call;
below ``SHORT_LIST_NODES`` nodes the plugins score in plain Python, node by node, to the
same floats (each plugin's ``short_node_scores``).

Measured on the reference machine (``bench.short_scores``-style timing: the batch hooks of
the default configuration, alternating both paths in one process): the plain Python path
costs about 3 µs a node, the array path about 150 µs a call plus well under 1 µs a node.
"""

from __future__ import annotations

#: Up to this many nodes a call is scored in plain Python.
SHORT_LIST_NODES = 48

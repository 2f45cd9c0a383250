"""How many nodes a scoring call must offer before the array formulas pay for themselves.

nodeorder's and binpack's formulas are written on numpy arrays: one pass over 5,000 nodes
costs little more than over ten, but each of the few dozen array operations of a call has
a fixed cost. Below ``SHORT_LIST_NODES`` nodes the plugins score in plain Python, node by
node, to the same floats (each plugin's ``short_node_scores``).

Measured on the 2-core reference machine, under load, both paths alternated in one process
(the session's ``node_score_array`` with the default nodeorder and binpack, a plain pod):
the array path costs about 200 µs a call plus under 1 µs a node, the plain Python path
about 7 µs a node, so they cross at about 30 nodes (8 nodes: 90 µs against 280; 32: 250
against 220; 64: 460 against 260). The limit sits below the crossover: past it a wrong
guess costs more than short of it.
"""

from __future__ import annotations

#: Up to this many nodes a call is scored in plain Python.
SHORT_LIST_NODES = 24

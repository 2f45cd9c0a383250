"""What several actions share: victim selection on one node and the predicate search."""

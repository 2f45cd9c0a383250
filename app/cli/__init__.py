"""Every command and flag: ``serve``, ``simulate``, the query commands and ``kubectl queue``.

``main.py`` is the ``queue-extender`` entry point; ``serve.py`` turns ``serve``'s flags into
option dataclasses (``controller_flags.py`` and ``reclaim_flags.py`` for the controller's and
the reclaim loop's) and hands them to ``app.backend.build``; nothing below this package sees
argparse.
"""

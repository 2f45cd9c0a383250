"""Every command and flag: ``serve``, ``simulate``, the query commands and ``kubectl queue``.

``main.py`` is the ``queue-extender`` entry point; ``serve_flags.py`` holds ``serve``'s flags
and turns them into option dataclasses (``controller_flags.py`` and ``reclaim_flags.py`` for
the controller's and the reclaim loop's); ``serve.py`` hands them to ``app.backend.build``,
puts the record it returns on the listeners, runs them and closes it. Nothing below this
package sees argparse.
"""

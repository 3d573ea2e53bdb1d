"""rackbook: the vLLM rack-scale reproducibility book's code.

Packages (README's module map): ``core`` (traces, importers, metrics), ``inputs`` (claims
registry, catalogs), ``physics`` (roofline, EPLB), ``results`` (one module per result),
``book`` (runner, pages, figures), ``cluster`` (recipes) and ``live`` (the harness on real vLLM).
Everything but ``live`` needs no vLLM, torch or GPU and never imports ``rackbook.live``.
"""

import os as _os
import signal as _signal
import sys as _sys

#: The signals that stop a ``rackbook`` command: each ends in one ``error:`` line.
STOP_SIGNALS = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT)


def _before_main(signum: int, _frame: object) -> None:
    """A stop signal before the command line's own handler is in place (while the package and
    its dependencies are imported): nothing has been written yet, so say so and exit now."""
    name = _signal.Signals(signum).name
    try:
        _os.write(2, f"error: -: -: stopped by {name} before any work; nothing written\n".encode())
    finally:
        _os._exit(128 + signum)


# From the first instruction of the ``rackbook`` command (its console script imports this
# package first): a signal during the imports is one line, not a KeyboardInterrupt traceback.
# A kernel or any other program importing the package keeps its own handlers.
if _sys.argv and _os.path.basename(_sys.argv[0]) == "rackbook":
    for _sig in STOP_SIGNALS:
        _signal.signal(_sig, _before_main)

__version__ = "0.1.0"

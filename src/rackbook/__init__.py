"""rackbook: the vLLM rack-scale reproducibility book's code (README's module map). Everything
but ``live`` needs no vLLM, torch or GPU and never imports ``rackbook.live``."""

import os as _os
import signal as _signal
import sys as _sys

#: The signals that stop a ``rackbook`` command: each ends in one ``error:`` line.
STOP_SIGNALS = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT)


def _before_main(signum: int, _frame: object) -> None:
    """A stop signal before the CLI's own handler is in place: nothing written; exit now."""
    name = _signal.Signals(signum).name
    try:
        _os.write(2, f"error: -: -: stopped by {name} before any work; nothing written\n".encode())
    finally:
        _os._exit(128 + signum)


# The ``rackbook`` command only: a signal during its imports is one line, not a traceback.
if _sys.argv and _os.path.basename(_sys.argv[0]) == "rackbook":
    for _sig in STOP_SIGNALS:
        _signal.signal(_sig, _before_main)

__version__ = "0.1.0"

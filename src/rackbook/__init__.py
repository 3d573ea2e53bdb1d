"""rackbook: trace-mode core and live harness of the vLLM rack-scale reproducibility book.

The trace-mode core (``schema``, ``traces``, ``metrics``, ``claims``, ``catalogs``, ``roofline``,
``eplb``, ``results`` and the per-result analysis modules) needs no vLLM, torch or GPU and never
imports ``rackbook.live``.
"""

__version__ = "0.1.0"

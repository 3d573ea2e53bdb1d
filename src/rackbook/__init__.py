"""rackbook: the vLLM rack-scale reproducibility book's code.

Packages (README's module map): ``core`` (traces, importers, metrics), ``inputs`` (claims
registry, catalogs), ``physics`` (roofline, EPLB), ``results`` (one module per result),
``book`` (runner, pages, figures), ``cluster`` (recipes) and ``live`` (the harness on real vLLM).
Everything but ``live`` needs no vLLM, torch or GPU and never imports ``rackbook.live``.
"""

__version__ = "0.1.0"

"""The trace core: the trace format (``schema``), reading, validating and writing traces
(``traces``), provenance (``provenance``), importers of other tools' results and of published
measurements (``importers``, one module per format), vLLM's serving metrics (``metrics``) and
atomic writes (``fsio``). Imports nothing else of rackbook but ``errors`` and ``paths``."""

"""Declarative inputs validated on load: the claims registry (``claims``) and the hardware and
model catalogs (``catalogs``), read through one YAML loader (``loader``)."""

"""Modelled numbers: roofline arithmetic on the catalogs (``roofline``), expert-parallel load
balancing (``eplb``) and unit formatting (``units``). No measurement."""

"""Declarative inputs validated on load: claims, catalogs, figures, scenarios (one loader)."""

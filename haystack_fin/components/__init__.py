"""Haystack components of haystack-fin, one per module. YAML must name the defining module, e.g.
``haystack_fin.components.filing_splitter.FilingSplitter``."""

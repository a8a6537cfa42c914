"""haystack-fin: structure-aware, domain-aware and explainable retrieval over SEC filings for Haystack."""

__version__ = "0.1.0"

"""Text analysis shared by every keyword store: Unicode tokens, CJK bigrams, stemmers and stopwords (``languages``)
and the :class:`~rrf_retriever.analysis.analyzer.Analyzer` (``analyzer``). No store syntax lives here."""

"""What a retriever tells about its corpus: the language its keyword leg analyzes, how it weights its legs.

:class:`Introspection` is a plain mixin of :class:`~rrf_retriever.frameworks.core.RetrieverCore`; it reads
``self.engine`` only.

Example:
    >>> from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding  # doctest: +SKIP
    >>> print(EnsembleRRFRetriever.from_texts(texts, HashingEmbedding()).explain_weights())  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rrf_retriever.frameworks.building import corpus_language

if TYPE_CHECKING:
    from rrf_retriever.engine import HybridEngine
    from rrf_retriever.engine.leg_probe import WeightsExplanation

__all__ = ["Introspection"]


class Introspection:
    """The corpus' language and the legs' weights, as the engine sees them."""

    if TYPE_CHECKING:
        engine: HybridEngine

    @property
    def corpus_language(self) -> str | None:
        """The language of the keyword store's analyzer (``"english"`` for the default), detected at index time
        unless given; None without a keyword store of ours.

        Example:
            >>> EnsembleRRFRetriever.from_texts(["Der Hund ist nicht im Haus."], emb).corpus_language  # doctest: +SKIP
            'german'
        """
        return corpus_language(self.engine)

    def explain_weights(self) -> WeightsExplanation:
        """How each leg is weighted on this corpus, and why: its weight in the settings, what the weak-leg rule
        makes of it (what the embedder declares, and each leg's strength measured on the corpus when the index was
        built or doubled: :mod:`~rrf_retriever.engine.leg_probe`), and what the rule may still do query by query.
        ``str()`` reads it out; each query's trace says what was done for it (the leg's ``note`` and ``weight``).

        Example:
            >>> print(retriever.explain_weights())  # doctest: +SKIP
            weak-leg rule: on; legs measured at 5183 documents (5183 in the sample, 1.90 s), 200 pseudo-queries
            dense (dense): weight 1 -> 1, pseudo MRR@10 0.738 (ratio 0.95)
            keyword (keyword): weight 1.25 -> 1.25, pseudo MRR@10 0.777 (ratio 1.00)
        """
        settings = self.engine.settings
        return self.engine.leg_probe.explain(settings.weights, settings.weak_legs)

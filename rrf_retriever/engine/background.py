"""The engine's cosine background: the random-pair cosine scale of its dense store, measured on the stored vectors.

:func:`rrf_retriever.relevance.query_level` reads a query's top cosine against it. It is measured lazily, at the
first query that needs it, on a fixed-seed sample of at most :data:`BACKGROUND_SAMPLE` stored vectors (among the
first :data:`BACKGROUND_LISTED` stored ids: in id order, or in the store's own order where it can give them without
listing every id, :class:`~rrf_retriever.stores.base.SomeIds`), and measured again once the writes since then reach
:data:`BACKGROUND_REFRESH` of the corpus then (or on any write while the corpus is smaller than the sample). It is
not stored: an index opened again measures it at its first query (NPL's 11,429 documents in qdrant-edge: median
121 ms, 101-311 ms over 7 measures on the shared, loaded 2-core machine; then a cached value).
A dense store that cannot list its ids or give its vectors back has no background (the level is then 1.0).

Example:
    >>> BackgroundCache({}, lambda: 0).get() is None
    True
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Mapping

from rrf_retriever.engine.legs import Leg, StoreLeg
from rrf_retriever.engine.paths import main_dense_leg
from rrf_retriever.errors import InvalidArgumentError, RRFRetrieverError
from rrf_retriever.relevance import CosineBackground, cosine_background
from rrf_retriever.stores.base import IdsMatching, SomeIds, VectorSource

__all__ = ["BACKGROUND_LISTED", "BACKGROUND_REFRESH", "BACKGROUND_SAMPLE", "BackgroundCache"]

#: Stored vectors the background is measured on (about 32,000 pairs).
BACKGROUND_SAMPLE = 256
#: Stored ids listed (the first ones, in id order) to draw the sample from: listing all 11,429 ids of NPL in a
#: qdrant-edge store took 90-290 ms on the shared 2-core machine; a corpus whose first ids are one document's chunks
#: measures a higher mean cosine (a lower level: the cautious side).
BACKGROUND_LISTED = 4096
#: Writes (documents added or deleted) since the last measure, as a share of the corpus then, that measure it again.
BACKGROUND_REFRESH = 0.1


class BackgroundCache:
    """The cosine background of the main dense leg (:func:`~rrf_retriever.engine.paths.main_dense_leg`).

    Args:
        legs: The engine's legs.
        changes: The number of documents written so far (added or deleted), to know when to measure again.
    """

    def __init__(self, legs: Mapping[str, Leg], changes: Callable[[], int]) -> None:
        self._legs = legs
        self._changes = changes
        self._lock = threading.Lock()
        self._measured: tuple[int, int, CosineBackground | None] | None = None  # (changes, corpus, background)

    def dense_leg(self) -> str | None:
        """The name of the leg whose top cosine the level reads (None: no dense store)."""
        try:
            return main_dense_leg(self._legs)
        except InvalidArgumentError:
            return None

    def get(self) -> CosineBackground | None:
        """The background, measured now if it was never measured or the corpus changed enough since."""
        with self._lock:  # the count read under the lock: a query holding an older one cannot write it back
            changes = self._changes()
            if self._measured is not None:
                at, corpus, background = self._measured
                if changes - at <= BACKGROUND_REFRESH * corpus and (changes == at or corpus >= BACKGROUND_SAMPLE):
                    return background
            corpus, background = self._measure()
            self._measured = (changes, corpus, background)
            return background

    def _measure(self) -> tuple[int, CosineBackground | None]:
        name = self.dense_leg()
        leg = self._legs.get(name) if name is not None else None
        if not (isinstance(leg, StoreLeg) and isinstance(leg.store, VectorSource)
                and isinstance(leg.store, IdsMatching)):
            return 0, None
        try:
            store = leg.store
            # A store that can hand some ids over without listing them all does (Qdrant: one scroll page).
            ids = (store.some_ids(BACKGROUND_LISTED) if isinstance(store, SomeIds)
                   else store.ids_matching(None, limit=BACKGROUND_LISTED))
            sample = ids if len(ids) <= BACKGROUND_SAMPLE else random.Random(0).sample(ids, BACKGROUND_SAMPLE)
            vectors = leg.store.get_vectors(sample)
            corpus = leg.count() if len(ids) >= BACKGROUND_LISTED else len(ids)
        except RRFRetrieverError:
            return 0, None  # a store that fails here fails the query's leg too, with its own error
        return corpus, cosine_background([vectors[i] for i in sample if i in vectors])

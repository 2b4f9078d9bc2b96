"""MiniLMEmbedding's windows with the real model: the first window is the document's own vector, and a fact stated
only at the end of a long document is found by a dense store of windows and not by one vector a document."""

from __future__ import annotations

import numpy as np
import pytest
from tokenizers import Tokenizer

from rrf_retriever.embeddings import MiniLMEmbedding
from rrf_retriever.embeddings.windows import window_spans
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore

# ~700 word pieces on medieval building; the one sentence about Zorbania comes last.
PREAMBLE = " ".join(
    f"Chapter {i}: the masons of the cathedral cut limestone blocks, raised flying buttresses and vaulted the nave "
    "with ribbed arches while the guild recorded wages, tools and the price of timber for the scaffolding."
    for i in range(1, 21)
)
FACT = "The capital of Zorbania is the harbour city of Quellmoor."
LONG = f"{PREAMBLE} {FACT}"
OTHERS = [
    "The national football team lost the regional cup final on penalties.",
    "Harbour cities grew rich on the spice trade in the early modern period.",
    "The capital of France is Paris, on the river Seine.",
    "A recipe for sourdough bread needs flour, water, salt and a starter.",
]
QUERY = "What is the capital of Zorbania?"


def test_the_first_window_is_the_documents_own_vector(minilm: MiniLMEmbedding) -> None:
    texts = [LONG, "short text", ""]
    windows = minilm.embed_windows(texts, max_windows=8, overlap=32)
    whole = minilm.embed_array(texts)
    assert len(minilm.tokenizer.encode(LONG).ids) == 256  # the model's own tokenizer truncates
    whole_text = Tokenizer.from_file(str(minilm.model_dir / "tokenizer.json"))
    whole_text.no_truncation()
    n_long = len(window_spans(len(whole_text.encode(LONG).ids) - 2, 254, 32, 8))  # without [CLS] and [SEP]
    assert [w.shape for w in windows] == [(n_long, 384), (1, 384), (1, 384)] and n_long >= 3
    for w, v in zip(windows, whole):
        assert np.allclose(w[0], v, atol=1e-6)
    tails = minilm.embed_windows(texts, max_windows=8, overlap=32, skip_first=True)
    assert [t.shape[0] for t in tails] == [n_long - 1, 0, 0]
    assert np.allclose(tails[0], windows[0][1:], atol=1e-6)
    assert minilm.embed_windows(texts, max_windows=2, overlap=32)[0].shape == (2, 384)
    with pytest.raises(InvalidArgumentError):
        minilm.embed_windows(texts, max_windows=2, overlap=254)


def test_a_fact_at_the_end_of_a_long_document_is_found_with_windows_only(minilm: MiniLMEmbedding) -> None:
    ids = ["long", *[f"o{i}" for i in range(len(OTHERS))]]
    texts = [LONG, *OTHERS]
    query = minilm.embed_query(QUERY)
    top = {}
    for label, windows in (("single", None), ("windows", 8)):
        with QdrantEdgeDenseStore(minilm, max_windows=windows) as store:
            store.add(ids, texts)
            top[label] = [h.id for h in store.search(query, len(ids))]
    assert top["windows"][0] == "long"
    assert top["single"][-1] == "long"  # one vector reads only the masons

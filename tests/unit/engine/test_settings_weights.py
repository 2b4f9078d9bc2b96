"""The engine's one check of weight names (``check_known_sources``): at construction, per call, per update."""

from __future__ import annotations

import pytest

from rrf_retriever.engine.settings import RetrievalSettings, check_known_sources
from rrf_retriever.errors import InvalidArgumentError


def test_unknown_weight_names_are_one_message_whatever_their_type() -> None:
    check_known_sources(["dense", "keyword"], {"keyword": 0.5})  # known: nothing raised
    with pytest.raises(InvalidArgumentError, match=r"unknown source\(s\) \[2, None, 'z'\]; the sources are \['a'\]"):
        check_known_sources(["a"], {"z": 1.0, None: 1.0, 2: 1.0, "a": 1.0})


def test_settings_merge_refuses_an_unknown_name_and_keeps_the_known_ones() -> None:
    settings = RetrievalSettings(weights={"dense": 1.0, "keyword": 0.5})
    assert settings.merged_weights({"keyword": 2.0}) == {"dense": 1.0, "keyword": 2.0}
    with pytest.raises(InvalidArgumentError, match=r"unknown source\(s\) \[\(1,\)\]"):
        settings.merged_weights({(1,): 1.0})  # type: ignore[dict-item]
    with pytest.raises(InvalidArgumentError, match=r"unknown source\(s\) \['extra'\]"):
        settings.with_weights({"extra": 1.0})

"""Dates in metadata and filters (:mod:`rrf_retriever.scope.dates`): stored as ISO 8601 strings (naive stays naive,
an offset is kept), read back by range as instants in microseconds (naive: UTC), whose order is the datetimes' own
for every datetime Python holds; the filter language's date bounds, ``$contains`` / ``$icontains`` and their
errors; typed equality kept (a date string never equals a number)."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rrf_retriever.errors import InvalidArgumentError, InvalidFilterError
from rrf_retriever.scope.dates import date_micros, iso_metadata
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import Contains, DateRange, Match, matches
from rrf_retriever.validate import validate_batch

_ZONES = st.none() | st.builds(lambda s: timezone(timedelta(seconds=s)), st.integers(-86_399, 86_399))
_DATETIMES = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=_ZONES)


def _utc(moment: datetime) -> datetime:
    return moment if moment.utcoffset() is not None else moment.replace(tzinfo=timezone.utc)


@given(a=_DATETIMES, b=_DATETIMES, sep=st.sampled_from(["T", " "]))
def test_the_instants_of_stored_strings_order_as_the_datetimes_do(a: datetime, b: datetime, sep: str) -> None:
    ma, mb = date_micros(a.isoformat(sep=sep)), date_micros(b.isoformat())
    assert ma is not None and mb is not None
    assert (ma < mb) == (_utc(a) < _utc(b)) and (ma == mb) == (_utc(a) == _utc(b))
    assert ma == date_micros(a)  # the object and its string are one instant
    assert _utc(a) == datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=ma)


@given(d=st.dates(min_value=date(1, 1, 1)))
def test_a_date_is_midnight_utc(d: date) -> None:
    assert date_micros(d.isoformat()) == date_micros(d) == date_micros(datetime(d.year, d.month, d.day))


@pytest.mark.parametrize("text", ["2024-02-30", "2024-13-01", "2024-1-5", " 2024-01-01", "2024-01-01T24:00",
                                  "2024-01-01T10", "2024-01-01Z", "\u0662\u0660\u0662\u0664-01-01", "20240101",
                                  "2024-01-01T10:00:00.1234567", "2024-01-01T10:00+1:00", "2024-01-01T00:00+24:00"])
def test_strings_that_only_look_like_dates_are_not_dates(text: str) -> None:
    assert date_micros(text) is None
    assert not matches({"at": text}, DateRange("at", gte="0001-01-01"))
    with pytest.raises(InvalidFilterError, match="ISO 8601"):
        normalize_filter({"at": {"$gte": text}})


def test_the_forms_read_are_one_instant() -> None:
    forms = ["2024-01-01T10:00", "2024-01-01 10:00:00", "2024-01-01T10:00:00.0", "2024-01-01T10:00:00.000000Z",
             "2024-01-01T12:00:00+02:00", "2024-01-01T07:30-02:30"]
    assert {date_micros(f) for f in forms} == {date_micros(datetime(2024, 1, 1, 10))}


def test_metadata_dates_are_stored_as_iso_strings_at_the_door() -> None:
    aware = datetime(2024, 5, 1, 9, 30, tzinfo=timezone(timedelta(hours=2)))
    meta = {"at": datetime(2024, 5, 1, 9, 30), "on": date(2024, 5, 1), "aware": aware,
            "log": [{"t": aware}, (date(2024, 1, 1), 3)], "n": 1}
    _, _, (stored,) = validate_batch(["a"], ["text"], [meta])
    assert stored == {"at": "2024-05-01T09:30:00", "on": "2024-05-01", "aware": "2024-05-01T09:30:00+02:00",
                      "log": [{"t": "2024-05-01T09:30:00+02:00"}, ("2024-01-01", 3)], "n": 1}
    assert isinstance(meta["at"], datetime)  # the caller's mapping is not changed
    plain = {"n": 1, "tags": ["a"]}
    assert iso_metadata(plain) is plain  # nothing to convert: nothing copied
    with pytest.raises(InvalidArgumentError, match="JSON"):
        validate_batch(["a"], ["text"], [{"t": datetime(2024, 1, 1).time()}])  # a time of day is no date


def test_date_bounds_parse_into_a_date_range() -> None:
    assert normalize_filter({"at": {"$gte": date(2024, 1, 1), "$lt": datetime(2025, 1, 1, 8)}}) == DateRange(
        "at", gte="2024-01-01", lt="2025-01-01T08:00:00")
    assert normalize_filter({"at": {"$gt": "2024-01-01T00:00:00Z"}}) == DateRange("at", gt="2024-01-01T00:00:00Z")
    assert normalize_filter(DateRange("at", lte="2024-01-01")) == DateRange("at", lte="2024-01-01")
    with pytest.raises(InvalidFilterError, match="like its other bounds"):
        normalize_filter({"at": {"$gte": "2024-01-01", "$lt": 5}})  # dates and numbers are not mixed
    with pytest.raises(InvalidFilterError, match="ISO 8601"):
        normalize_filter(DateRange("at", gte="soon"))
    with pytest.raises(InvalidFilterError, match=r"no bound|ISO 8601"):
        normalize_filter(DateRange("at"))


def test_date_equality_is_string_equality_and_never_a_number() -> None:
    assert normalize_filter({"at": datetime(2024, 1, 1)}) == Match("at", ("2024-01-01T00:00:00",))
    flt = normalize_filter({"at": {"$in": [date(2024, 1, 1), 1704067200]}})
    assert matches({"at": "2024-01-01"}, flt) and matches({"at": 1704067200}, flt)
    assert not matches({"at": "1704067200"}, flt) and not matches({"at": "2024-01-01T00:00:00"}, flt)
    assert matches({"at": date(2024, 1, 1)}, normalize_filter({"at": "2024-01-01"}))  # the object as stored
    assert not matches({"at": 1704067200}, normalize_filter({"at": {"$gte": "1970-01-01"}}))


def test_substring_operators_parse_and_refuse_what_is_not_one_string() -> None:
    assert normalize_filter({"s": {"$contains": "50%_"}}) == Contains("s", "50%_")
    assert normalize_filter({"s": {"$icontains": "Ab"}}) == Contains("s", "Ab", ignore_case=True)
    assert normalize_filter({"s": {"$not": {"$contains": "x"}}}) == normalize_filter({"$not": {"s": {"$contains": "x"}}})
    for bad in (1, ["a"], None, True, {"$eq": "a"}, "a\x00"):
        with pytest.raises(InvalidFilterError):
            normalize_filter({"s": {"$contains": bad}})
    with pytest.raises(InvalidFilterError, match="ignore_case"):
        normalize_filter(Contains("s", "a", ignore_case=1))  # type: ignore[arg-type]  # the attack itself


@given(value=st.text(), needle=st.text())
def test_contains_is_pythons_substring_test(value: str, needle: str) -> None:
    assert matches({"s": value}, Contains("s", needle)) == (needle in value)
    assert matches({"s": [1, value]}, Contains("s", needle, ignore_case=True)) == (needle.lower() in value.lower())
    assert not matches({"s": 12}, Contains("s", "")) and not matches({}, Contains("s", ""))


def test_long_strings_that_cannot_be_dates_are_not_kept() -> None:
    """Every stored string is asked whether it is a date (FTS5 at write, Qdrant per query): 300 distinct 100 KB
    strings must not stay in memory after the question (a cache of them held 30 MB)."""
    import gc
    import tracemalloc

    longest = "2024-01-01T00:00:00.123456+05:30:00.123456"
    assert date_micros(longest) is not None and date_micros(longest + "0") is None
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(300):
            assert date_micros(f"{i:04d}" + "x" * 100_000) is None
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 2_000_000, kept


def test_a_date_range_built_past_the_parser_with_a_non_date_bound_fails_not_widens() -> None:
    from rrf_retriever.errors import InvalidTypeError
    from rrf_retriever.scope.tree import date_bounds

    assert date_bounds(DateRange("d", gte="2024-01-01", lt=None)) == {"gte": date_micros("2024-01-01")}
    with pytest.raises(InvalidTypeError, match="not a date"):
        date_bounds(DateRange("d", gte="2024-01-01", lt="soon"))  # before: the bound dropped, a wider range

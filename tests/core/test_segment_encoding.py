"""The hand-patched row encoder must produce exactly pyarrow's bytes, for any row."""

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder.store.events import arrow_schema
from recorder.store.segment import END_OF_STREAM, row_encoder, schema_message

SCHEMA = arrow_schema()
INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


def _value(field: pa.Field) -> st.SearchStrategy[object]:
    base = st.text(max_size=40) if field.type == pa.string() else INT64
    return st.one_of(st.none(), base) if field.nullable else base


ROWS = st.tuples(*(_value(f) for f in SCHEMA))


@settings(max_examples=300, deadline=None)
@given(ROWS)
def test_encoding_equals_pyarrow(row: tuple[object, ...]) -> None:
    ours = row_encoder().encode(row)
    reference = pa.RecordBatch.from_pylist([dict(zip(SCHEMA.names, row, strict=False))], schema=SCHEMA).serialize()
    assert ours == reference.to_pybytes()


@settings(max_examples=50, deadline=None)
@given(st.lists(ROWS, min_size=1, max_size=5))
def test_any_arrow_reader_opens_a_segment(rows: list[tuple[object, ...]]) -> None:
    stream = schema_message(SCHEMA) + b"".join(row_encoder().encode(r) for r in rows) + END_OF_STREAM
    table = pa.ipc.open_stream(stream).read_all()
    assert [tuple(r.values()) for r in table.to_pylist()] == rows

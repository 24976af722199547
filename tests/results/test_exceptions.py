"""A cell's workload exceptions read back from summary.json (``results/_exceptions.py``)."""

from __future__ import annotations

import pytest

from keyramp.results._doc import DocError
from keyramp.results._exceptions import ExceptionExample, cell_exceptions


def test_warmup_failure_first_then_the_measured_ones_and_old_summaries_have_none() -> None:
    example = ExceptionExample(error_class="CLIENT_KeyError", op="place", message="KeyError: 'price'",
                               traceback=("/app/o.py:3 in place: x", "raised in json/decoder.py:9 in f"))
    assert example.where == "/app/o.py:3"
    assert ExceptionExample.from_json("CLIENT_KeyError", example.to_json()) == example
    cell = {"warmup_failure": {"ops": 40, "error_class": "CLIENT_RuntimeError", "op": "place",
                               "message": "RuntimeError: no", "traceback": ["/app/o.py:9 in place: raise"]},
            "total": {"count": 12, "errors_by_class": {"ABORTED": {"count": 2},
                                                       "CLIENT_KeyError": {"count": 7, **example.to_json()},
                                                       "UNAVAILABLE": 3}}}
    found = cell_exceptions(cell)
    assert [(e.error_class, n) for e, n in found] == [("CLIENT_RuntimeError", 40), ("CLIENT_KeyError", 7)]
    assert found[1][0] == example
    assert cell_exceptions({"total": {"count": 3, "errors_by_class": {"UNAVAILABLE": 3}}}) == []  # before issue 28
    assert cell_exceptions({"warmup_failure": None}) == []
    with pytest.raises(DocError, match=r"cell\.total: expected an object, got a string"):
        cell_exceptions({"total": "garbled"})  # a hand-edited summary that lost its shape is named, not guessed at

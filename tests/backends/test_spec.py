"""``StoreSpec`` and its parts: key rules, workload limits, cloud budget text, drivers, validation."""

from __future__ import annotations

import dataclasses
import re

import pytest
from _memory import MemoryStore, memory_spec

from keyramp.backends import FEATURES, BatchLimits, CloudSpec, KeyRules, spec_for
from keyramp.core._errors import UsageError

_RULES = KeyRules(max_key_bytes=8, int_ids=(1, 99), int_ids_text="between 1 and 99", forbidden_chars=("/", "#"),
                  forbidden_names=frozenset({"."}), reserved=re.compile(r"__.*__"))


@pytest.mark.parametrize(("key", "problem"), [
    (0, "numeric id 0 must be between 1 and 99"),
    (100, "numeric id 100 must be between 1 and 99"),
    ("x" * 9, "key is 9 bytes, s allows 8"),
    ("é" * 5, "key is 10 bytes, s allows 8"),  # bytes, not characters
    ("", "empty key"),
    ("a#b", "'#' in key name 'a#b'"),
    (".", "'.' is not a valid document id"),
    ("__x__", "'__x__' matches the reserved pattern __.*__"),
    (("ok", "a/b"), "'/' in key name 'a/b'"),  # each part of an ancestor path
    ("\ud800", "key is not valid UTF-8"),
])
def test_key_rules_name_the_problem(key: object, problem: str) -> None:
    assert _RULES.problem(key, "s") == problem  # type: ignore[arg-type]


def test_key_rules_accept_valid_keys_and_default_to_non_negative_ids() -> None:
    assert _RULES.problem(99, "s") is None and _RULES.problem("ab", "s") is None and _RULES.problem(None, "s") is None
    plain = KeyRules(max_key_bytes=4)
    assert plain.problem(0, "s") is None and plain.problem(-1, "s") == "negative id -1"


def test_workload_problem_names_the_op_or_the_batch_limit() -> None:
    spec = memory_spec(MemoryStore())
    assert spec.workload_problem({"read": 1.0, "batch_write": 1.0}, 50) is None
    assert spec.workload_problem({"transaction": 1.0}, 1) == (
        "workload.ops.transaction: memory does not support transaction (it supports: insert, read, update, "
        "delete, scan, query, batch_write, batch_read, increment)")
    assert "workload.batch_size: 51 is above memory's 50 per batch_read" in (
        spec.workload_problem({"batch_read": 1.0}, 51) or "")
    assert spec.workload_problem({"read": 1.0}, 10_000) is None  # no batch op: the size does not apply
    unlimited = dataclasses.replace(spec, batch=BatchLimits(write=None, read=None, source="-"))
    assert unlimited.workload_problem({"batch_write": 1.0}, 10**6) is None


def test_builtin_batch_limits_refuse_what_the_services_refuse() -> None:
    assert spec_for("datastore").workload_problem({"batch_read": 1.0}, 1000) is None
    assert spec_for("datastore").workload_problem({"batch_read": 1.0}, 1001) is not None
    assert spec_for("firestore").workload_problem({"batch_write": 1.0}, 501) is not None
    assert spec_for("bigtable").workload_problem({"batch_read": 1.0}, 5000) is None


def test_cloud_location_in_the_stores_words() -> None:
    kind = CloudSpec(writes_under="Datastore kind")
    table = CloudSpec(writes_under="Bigtable table", scope="instance", needs_instance=True)
    assert kind.location("ns", project="p", instance="i", database="(default)") == "Datastore kind ns"
    assert kind.location("ns", project="p", instance="i", database="db2") == "Datastore kind ns (database db2)"
    assert table.location("ns", project="p", instance="i", database="x") == (
        "Bigtable table projects/p/instances/i/tables/ns")


def test_features_and_reasons() -> None:
    bigtable = spec_for("bigtable")
    assert not bigtable.has("secondary_indexes") and bigtable.why_not("secondary_indexes") == (
        "Bigtable has no secondary indexes")
    assert spec_for("datastore").has("entity_groups") and not spec_for("firestore-datastore").has("entity_groups")
    with pytest.raises(KeyError):
        bigtable.has("time_travel")


def test_unknown_driver_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"bigtable: unknown driver 'http' \(one of: client, grpc\)"):
        spec_for("bigtable").driver("http")


def test_a_spec_with_a_typo_fails_when_declared() -> None:
    spec = memory_spec(MemoryStore())
    with pytest.raises(ValueError, match="unknown feature 'indexes'"):
        dataclasses.replace(spec, lacks={"indexes": "no"})
    with pytest.raises(ValueError, match="default driver 'grpc'"):
        dataclasses.replace(spec, default_driver="grpc")
    with pytest.raises(ValueError, match="operation 'upsert'"):
        dataclasses.replace(spec, operations=frozenset({"upsert"}))
    with pytest.raises(ValueError, match="not both"):
        dataclasses.replace(spec, emulator=spec_for("bigtable").emulator)
    assert set(FEATURES) >= set(spec.lacks)

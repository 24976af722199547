"""Backend registry: profile name -> class. One module per store."""

from __future__ import annotations

from keyramp.backends._base import Backend, QuerySpec, Record, Target
from keyramp.backends.bigtable._client import BigtableBackend
from keyramp.backends.datastore._client import DatastoreBackend, FirestoreDatastoreBackend
from keyramp.backends.firestore._client import FirestoreBackend

__all__ = ["Backend", "QuerySpec", "Record", "Target", "BACKENDS", "EMULATOR_FOR"]

BACKENDS: dict[str, type[Backend]] = {
    "datastore": DatastoreBackend,
    "firestore": FirestoreBackend,
    "firestore-datastore": FirestoreDatastoreBackend,
    "bigtable": BigtableBackend,
}

#: Which official emulator serves each backend (keys of keyramp.targets._emulators.EMULATORS).
EMULATOR_FOR: dict[str, str] = {
    "datastore": "datastore",
    "firestore": "firestore",
    "firestore-datastore": "firestore-datastore",
    "bigtable": "bigtable",
}

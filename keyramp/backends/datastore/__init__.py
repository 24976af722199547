"""Cloud Datastore and Firestore in Datastore mode: the official client driver (``_client``)."""

from __future__ import annotations

from keyramp.backends.datastore._client import (
    NO_RETRY,
    DatastoreBackend,
    FirestoreDatastoreBackend,
    make_datastore_client,
)

__all__ = ["NO_RETRY", "DatastoreBackend", "FirestoreDatastoreBackend", "make_datastore_client"]

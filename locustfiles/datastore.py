"""Plain Locust against the datastore emulator (or use `keyramp run` for paced, recorded runs).

    keyramp emulators up datastore firestore-datastore
    locust -f locustfiles/datastore.py            # web UI on http://127.0.0.1:8089
    locust -f locustfiles/datastore.py --headless -u 20 -r 20 -t 30s

Set KEYRAMP_PROFILE=profiles/....toml to use a profile's workload and key strategy (one
strategy: plain Locust runs one cell; `keyramp run` runs a profile's whole matrix).
"""

# Firestore in Datastore mode uses the same client against its own emulator:
# KEYRAMP_BACKEND=firestore-datastore locust -f locustfiles/datastore.py

from __future__ import annotations

import os

from keyramp.run._locustfile import make_user

DatastoreUser = make_user(os.environ.get("KEYRAMP_BACKEND", "datastore"))

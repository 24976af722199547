"""Plain Locust against the bigtable emulator (or use `keyramp run` for paced, recorded runs).

    keyramp emulators up bigtable
    locust -f locustfiles/bigtable.py            # web UI on http://127.0.0.1:8089
    locust -f locustfiles/bigtable.py --headless -u 20 -r 20 -t 30s

Set KEYRAMP_PROFILE=profiles/....toml to use a profile's workload and key strategy (one
strategy: plain Locust runs one cell; `keyramp run` runs a profile's whole matrix).
"""

from __future__ import annotations

import os

from keyramp.run._locustfile import make_user

BigtableUser = make_user(os.environ.get("KEYRAMP_BACKEND", "bigtable"))

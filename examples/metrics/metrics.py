"""Metrics ingest on Bigtable: devices write samples, a dashboard reads a device's last hour.

One row per sample in family ``cf`` (columns from ``metrics.toml``'s document shape).
``last_hour`` is the dashboard query; it depends on the row key design, so it follows it:

* ``timestamp#device`` (time first): the hour is a row range over *all* devices; a regex
  filter keeps one device's rows. The server reads every row of the hour.
* ``device#reverse_ts`` (field promotion + reverse timestamp, BP-KEY-5/6): a prefix scan of
  one device's rows, newest first; the server reads only what it returns.

    keyramp run examples/metrics/metrics.toml
"""

from __future__ import annotations

import re
import struct

from google.cloud.bigtable.data import ReadRowsQuery, RowRange, SetCell
from google.cloud.bigtable.data import row_filters as rf

import keyramp

HOUR_MS = 3_600_000
LONG_MAX = 9_223_372_036_854_775_807


def _cell(name: str, value: object) -> SetCell:
    if isinstance(value, float):
        value = struct.pack(">d", value)
    return SetCell("cf", name, value if isinstance(value, (bytes, str, int)) else str(value))


class Metrics(keyramp.BigtableUser):
    @keyramp.op(weight=50)
    def ingest(self):
        """One device reports one sample: a new row."""
        key = self.keys.new()
        sample = self.document()
        self.table.mutate_row(key, [_cell(name, value) for name, value in sample.items()])
        return key

    @keyramp.op(weight=1)
    def last_hour(self):
        """A dashboard opens one device's last hour (at most 360 samples: one per 10 s)."""
        key = self.keys.key(self.keys.existing_index())  # a Bigtable row key: bytes
        first, second = key.decode().split("#")
        if first.startswith("device"):  # device#reverse_ts: newest first, one prefix scan
            end_rev = int(second) + HOUR_MS
            query = ReadRowsQuery(row_ranges=RowRange(start_key=key, end_key=f"{first}#{end_rev:019d}"),
                                  row_filter=rf.CellsColumnLimitFilter(1))
        else:  # timestamp#device: the hour of every device, filtered to this one
            ts = int(first)
            query = ReadRowsQuery(
                row_ranges=RowRange(start_key=f"{ts - HOUR_MS:013d}", end_key=f"{ts + 1:013d}"),
                row_filter=rf.RowFilterChain([rf.RowKeyRegexFilter(f".*#{re.escape(second)}$".encode()),
                                              rf.CellsColumnLimitFilter(1)]))
        self.table.read_rows(query)
        return key

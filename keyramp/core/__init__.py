"""keyramp's core: small helpers every layer may use (the lowest layer of the import contract).

Errors and their exit codes (``_errors``), durations (``_durations``), number formats (``fmt``:
``_format``), the heat scale of the charts (``_heatscale``), generated files (``_generated``),
shared leaf types (``_types``), the flags of the subprocess entry points (``_flags``), package
interfaces declared once (``_lazy``) and the version (``_version``). Only the facade
(``keyramp/__init__.py``) and the entry point (``keyramp/__main__.py``) stay at the root.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import keyramp.core._format as fmt
    from keyramp.core._durations import format_duration, parse_duration
    from keyramp.core._errors import (
        EXIT_FAILED,
        EXIT_INCONCLUSIVE,
        EXIT_INTERRUPTED,
        EXIT_OK,
        EmulatorError,
        KeyrampError,
        RunFailed,
        UnsupportedOperation,
        UsageError,
        exit_code,
    )
    from keyramp.core._flags import endpoint, parse_flags
    from keyramp.core._generated import regenerate
    from keyramp.core._heatscale import mpl_colormap, scale_doc
    from keyramp.core._lazy import More, lazy_exports
    from keyramp.core._suggest import known_names
    from keyramp.core._types import (
        ALL_OPS,
        INDEX_FIELD_SEP,
        KIND_OF_OP,
        OP_NAMES,
        WRITE_KINDS,
        Key,
        KeySample,
        key_sort_text,
        key_text,
    )
    from keyramp.core._version import __version__

if not TYPE_CHECKING:
    from keyramp.core._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals())

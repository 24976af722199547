from __future__ import annotations

from keyramp.cli._main import main

raise SystemExit(main())

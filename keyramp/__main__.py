from __future__ import annotations

from keyramp.cli import main

raise SystemExit(main())

"""`python -m louise.nvim`: the process the Lua side starts (see louise/nvim/app.py)."""

from louise.nvim import collector

collector.paused_for_imports()  # before the engine's modules load (collector.py says why)

import sys  # noqa: E402

from louise.nvim.app import main  # noqa: E402

sys.exit(main())

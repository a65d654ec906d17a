"""`python -m louise.nvim`: the process the Lua side starts (see louise/nvim/app.py)."""

import gc

# No cyclic garbage collection while the engine's modules load: importing makes hundreds
# of thousands of objects and little garbage (the passes were ~15 % of the import time);
# `app.main` turns the collector back on once the engine runs.
gc.disable()

import sys  # noqa: E402

from louise.nvim.app import main  # noqa: E402

sys.exit(main())

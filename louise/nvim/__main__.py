"""`python -m louise.nvim`: the process the Lua side starts (see louise/nvim/app.py)."""

import sys

from louise.nvim.process_start import load_engine

sys.exit(load_engine().main())

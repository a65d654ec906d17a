"""`python -m louise.nvim`: the process the Lua side starts (see louise/nvim/app.py)."""

import sys

from louise.nvim.app import main

sys.exit(main())

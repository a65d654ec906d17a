"""`python -m louise.nvim`: the process the Lua side starts (see louise/nvim/app.py)."""

from louise.nvim import collector

collector.paused_for_imports()  # before the engine's modules load (collector.py says why)

from louise.storage import code_cache  # noqa: E402

code_cache.install("engine")  # before the ~200 dataclasses of the engine's modules are made

from louise.storage import first_use  # noqa: E402

first_use.import_asyncio_without_ssl()  # before pynvim imports asyncio: no TLS here, ever

import sys  # noqa: E402

# pydantic imports `secrets` (with hmac, hashlib and OpenSSL's libcrypto) for one comparison
app = first_use.import_without("louise.nvim.app", "secrets")
sys.exit(app.main())

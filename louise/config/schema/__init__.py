"""The configuration's one validator: pydantic models of `config.toml` and `setup{}`
(`model.Config`, the whole; `agents`, `sections`, `host`, `checkpoints`, `limits`, each
built from `fields`), every problem said with its field path and a hint (`errors`),
LouiseLM's settings taken as they are (`louiselm`). Imported only to validate
(`validate.py`): what louise holds and reads are the dataclasses of `louise/config/`,
which `validate` returns, and a start whose configuration is unchanged gets them from the
validated-configuration cache (`louise/config/cached.py`) without importing pydantic."""

from louise.storage import first_use

# pydantic without what validating a configuration never uses (`secrets` with OpenSSL's
# libcrypto; the plugin loader with importlib.metadata), imported here, on the first
# validation, instead of at every start.
first_use.import_pydantic_without_extras()

"""louise's configuration: `config.toml` and Neovim's `setup{}` read (`loading`) into one
set of pydantic models: the whole (`model.Config`), each Agent (`agents`), the tables
every Agent shares (`sections`: fs, terminal, permissions, MCP servers), the sections of
their own (`checkpoints`, `limits`), all built from `fields`; every problem said with its
field path and a hint (`problems`), LouiseLM's settings taken as they are (`louiselm`)."""

"""louise's configuration as louise holds it once valid: frozen dataclasses without
pydantic, the whole (`model.Config`), each Agent (`agents`), the tables every Agent shares
(`sections`: fs, terminal, permissions, MCP servers), the sections of their own
(`checkpoints`, `limits`, `host`); problems with field paths and hints (`problems`),
LouiseLM's settings taken as they are (`louiselm`). `loading` reads `config.toml` or a
`setup{}` mapping through the one validator (`schema/`, pydantic, imported only to
validate) into them (`data` converts, field for field); `cached` gives a start whose
inputs are unchanged the result of the last validation, without pydantic."""

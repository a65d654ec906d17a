"""louise's configuration: `config.toml` and Neovim's `setup{}` read into one set of
pydantic models (`model`), every problem said with its field path and a hint
(`problems`), LouiseLM's settings taken as they are (`louiselm`), and the sections of
their own (`checkpoints`, `limits`)."""

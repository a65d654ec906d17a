"""louise: a Neovim client of the Agent Client Protocol that shows each account's quota."""

__version__ = "0.1.0"

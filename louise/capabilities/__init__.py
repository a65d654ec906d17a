"""The client capabilities an agent calls, served without an editor: `fs/*` (`fs`,
confined by a race-free path walk in `fs_paths`) and `terminal/*` (`terminal`); and what
an agent's proposed edit does to a whole file, for the person reviewing it
(`file_changes`)."""

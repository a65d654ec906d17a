"""Checkpoints: the workspace's files recorded before and after every turn, so whatever a
turn changed (through louise, with the agent's own tools, or from a shell command) can be
reviewed hunk by hunk and taken back.

- `git.py`: git run for the store only, in a fixed environment.
- `snapshots.py`: snapshots (git, or named files only) and what changed between two.
- `workspace_files.py`: reading and restoring workspace files without following links;
  content-addressed blobs.
- `diffs.py` (pure): hunks, taking a hunk or a change back, three-way merge.
- `review.py` (pure): a turn's review, its summary line, review comments as a prompt.
- `undo.py` (pure): what an undo does to each file.
- `records.py`: what the store remembers (`store.json`).
- `store.py`: one workspace's store (blocking, locked): state, snapshots, turns, contents.
- `workspace.py`: `WorkspaceStore`, the store with review, revert and undo.
- `service.py`: the registry's turn hooks, off the turn's critical path.
"""

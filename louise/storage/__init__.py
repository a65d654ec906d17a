"""What louise keeps on disk: where (`paths`), how files are written and locked
(`durable`), the cross-process limits cache (`limits_cache` with its bounds, the holders'
liveness and what processes share beside the states), and the session transcripts
(replayed and exported by `transcript`, named and found by `transcript_files`)."""

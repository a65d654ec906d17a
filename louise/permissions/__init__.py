"""Permissions: the broker every `session/request_permission` goes through, one question
at a time (`broker`), and the decisions that answer without asking: configured rules and
remembered choices (`rules`)."""

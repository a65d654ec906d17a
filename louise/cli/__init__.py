"""The `louise` command line: the parser and its one-line failures (`main`), one verb per
module (`commands/`), the terminal front end of a chat (`console`, `console_questions`)
and the one sanitizer for what it prints (`terminal_text`)."""

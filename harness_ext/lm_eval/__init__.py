"""lm-eval adapter: a `ConfigurableTask` subclass per family (the task YAML files name it as their
`class`) that builds the family's requests; documents, options, metrics and records come from the
family's contract (`biasmonkey.tasks.<family>.family`)."""

"""The test suite as a regular package: pgx's wheel installs a top-level `tests` package of its own,
which would shadow this directory were it a namespace package (a regular package wins at import)."""

"""Lifecycle matchers: acquire and release on every exit path, teardown, tasks and threads,
state kept past its step."""

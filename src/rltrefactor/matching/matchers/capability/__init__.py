"""Capability-selection matchers: branches on probed facts, silent import fallbacks."""

"""Responsibilities-and-state matchers: who owns which attribute and container."""

"""Matchers: the file context, the pattern compiler and the Python matcher registry."""

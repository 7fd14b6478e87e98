"""Interface matchers, and what a module declares about the strings a value can hold."""

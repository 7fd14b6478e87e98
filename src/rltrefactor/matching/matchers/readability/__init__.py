"""Configuration-and-readability matchers: cryptic new names, unexplained numbers, environment reads."""

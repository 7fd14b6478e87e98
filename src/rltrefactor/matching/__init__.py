"""Matching: the engine, prefilter, regions, the matchers by area, the pattern compiler and the rule index."""

"""Which parts of a file are worth a LibCST parse.

LibCST costs ~13x a tree-sitter parse, so the engine parses only *regions*: runs of
whole top-level statements that contain a prefilter token of some rule (and, when a
diff limits the review, a changed line). Inside a region, what no selected rule reads
is left empty: methods of a class that hold no token, and, when only statement-local
rules hit a function, the statements of its body that hold none. Emptied lines are
left out of the region's text (LibCST's time grows with lines, blank ones too) and the
region keeps the file line of each line it holds; a region always starts at column 0
and its columns are the file's columns.

One module per job, each name importable from its module only:

- ``reach``: how much of a file a matcher reads around its tokens (``MatcherReach``),
  and where its tokens are searched in a review limited to changed lines.
- ``code``: a file's text with comments and docstrings blanked (``code_text``).
- ``lines``: line numbers and offsets of a text (``LineIndex``, ``LineSet``, ``file_line``).
- ``statements``: the shape of tree-sitter statements: line ranges, headers, methods.
- ``tokens``: the lines where tokens and words occur.
- ``windows``: the stretches of a file a change touches (``ChangeWindows``).
- ``companion_lines``: lines a rule reads besides its tokens (its companions).
- ``unread``: the lines of a selected statement that no rule reads, emptied.
- ``plan``: regions to parse, merged from the selected statements (``plan_regions``).
"""

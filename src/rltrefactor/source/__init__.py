"""The model of one file version: the one tree-sitter parse, definitions, LibCST parsing, directives."""

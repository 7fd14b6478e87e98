"""rltrefactor: refactor review for PyTorch inference-engine code."""

__version__ = "0.1.0"

"""Placeholder for scipy.sparse: any attribute raises ImportError."""


def __getattr__(name):
    raise ImportError(f'scipy is not installed (harness placeholder; '
                      f'scipy.sparse.{name} unavailable)')

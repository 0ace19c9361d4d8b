"""Neural-network operators (placeholder module; filled in by nn work)."""
__all__ = []

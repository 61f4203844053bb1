"""Data files shipped with mneme."""

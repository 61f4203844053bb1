"""Adapters that put the systems users would pick instead of mneme under the same protocol."""

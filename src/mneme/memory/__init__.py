"""Long-term memory, independent of the graph: records, extraction, search, writes."""

from mneme.memory.api import Memory
from mneme.memory.queue import PendingJob
from mneme.memory.record import HistoryEntry, MemoryChange, MemoryHit, MemoryRecord, ProfileField

__all__ = [
    "HistoryEntry",
    "Memory",
    "MemoryChange",
    "MemoryHit",
    "MemoryRecord",
    "PendingJob",
    "ProfileField",
]

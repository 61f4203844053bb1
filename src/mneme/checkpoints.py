"""mneme's SQLite checkpointer: LangGraph's `SqliteSaver` with short channel versions."""

from __future__ import annotations

from langgraph.checkpoint.sqlite import SqliteSaver


class CompactSqliteSaver(SqliteSaver):
    """`SqliteSaver` whose channel versions are 12 digits instead of 32 and a random fraction.

    Every checkpoint lists the version of each channel and the versions each node has seen
    (about 25 of them in mneme's graph, ~7 checkpoints a turn): LangGraph's
    `"00000000000000000000000000000017.0.5798670351945979"` costs 52 bytes each, about
    7 KB of a turn's checkpoints. Versions only need to increase (see
    `BaseCheckpointSaver.get_next_version`); a shorter zero-padded one still sorts after
    every longer one an existing thread holds, so old threads go on unchanged.
    """

    def get_next_version(self, current: str | None, channel: None) -> str:
        """The version after `current` (any format a `SqliteSaver` wrote), as 12 digits."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:012d}"

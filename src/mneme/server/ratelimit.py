"""Request rate limits of the HTTP app: a token bucket per API key and one per user reached."""

from __future__ import annotations

import math
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mneme.errors import ConfigError, RateLimited

DEFAULT = "30/s,burst=120"
"""The default limit: 30 requests a second on average, bursts of up to 120, per key and per user."""
MAX_BUCKETS = 10_000
"""Buckets kept before the full (idle) ones are forgotten."""
_UNITS = {
    "s": 1.0,
    "sec": 1.0,
    "second": 1.0,
    "m": 60.0,
    "min": 60.0,
    "minute": 60.0,
    "h": 3600.0,
    "hour": 3600.0,
}
_SPEC = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*([a-z]+)\s*(?:,\s*burst\s*=\s*(\d+)\s*)?$")


@dataclass
class _Bucket:
    tokens: float
    at: float


class RateLimiter:
    """Token buckets: each key may spend `burst` requests at once, refilled at `rate` a second.

    `MNEME_RATE_LIMIT` configures it: `off`, or `N/UNIT[,burst=M]` with UNIT `s`, `min` or
    `h` (e.g. `30/s,burst=120`, `600/min`; without `burst`, N requests at once). A caller over
    its limit gets 429 with `Retry-After` (seconds until its next request is allowed).
    """

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        """Allow `rate` requests a second on average and `burst` at once (rate 0: no limit)."""
        self.rate = rate
        self.burst = max(1, burst)
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    @classmethod
    def parse(cls, spec: str) -> RateLimiter:
        """A limiter from a `MNEME_RATE_LIMIT` value.

        Raises:
            ConfigError: if the value is not `off` or `N/UNIT[,burst=M]`.
        """
        if spec.strip().lower() in ("off", "none", "0", "unlimited"):
            return cls(0.0, 1)
        match = _SPEC.match(spec.lower())
        if match is None or match.group(2) not in _UNITS or float(match.group(1)) <= 0:
            raise ConfigError(
                f"mneme: MNEME_RATE_LIMIT={spec!r} is not 'off' or N/UNIT[,burst=M] (e.g. '30/s,burst=120')"
            )
        count = float(match.group(1))
        burst = int(match.group(3)) if match.group(3) else max(1, math.ceil(count))
        return cls(count / _UNITS[match.group(2)], burst)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RateLimiter:
        """The limiter `MNEME_RATE_LIMIT` asks for (default `DEFAULT`)."""
        env = os.environ if environ is None else environ
        return cls.parse(env.get("MNEME_RATE_LIMIT", "").strip() or DEFAULT)

    @property
    def enabled(self) -> bool:
        """Whether any request can be refused."""
        return self.rate > 0

    def hit(self, key: str) -> None:
        """Spend one request of `key`'s bucket.

        Raises:
            RateLimited: if the bucket is empty (with the seconds until it holds one again).
        """
        if not self.enabled:
            return
        now = self._clock()
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                if len(self._buckets) >= MAX_BUCKETS:
                    self._forget_full(now)
                bucket = self._buckets[key] = _Bucket(float(self.burst), now)
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.at) * self.rate)
            bucket.at = now
            if bucket.tokens < 1.0:
                wait = (1.0 - bucket.tokens) / self.rate
                raise RateLimited(f"mneme: too many requests for {key}; retry in {wait:.1f} s", wait)
            bucket.tokens -= 1.0

    def _forget_full(self, now: float) -> None:
        full = [k for k, b in self._buckets.items() if b.tokens + (now - b.at) * self.rate >= self.burst]
        for k in full:
            del self._buckets[k]


__all__ = ["DEFAULT", "RateLimiter"]

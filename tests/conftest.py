"""Shared fixtures: stores on fake embeddings for unit tests, real homes for integration tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore

from mneme.memory.api import Memory
from mneme.store.chroma import ChromaStore
from tests.fakes import HashEmbeddings

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.pop("OPENAI_API_KEY", None)  # tests run offline, whatever the developer's shell has
for _name in list(os.environ):
    if _name.startswith("MNEME_"):
        os.environ.pop(_name)


@pytest.fixture
def embeddings() -> HashEmbeddings:
    return HashEmbeddings()


@pytest.fixture
def chroma_store(tmp_path: Path, embeddings: HashEmbeddings) -> ChromaStore:
    return ChromaStore.open(
        str(tmp_path / "chroma"), index={"embed": embeddings, "dims": embeddings.dims, "fields": ["text"]}
    )


@pytest.fixture
def mem_store(embeddings: HashEmbeddings) -> InMemoryStore:
    return InMemoryStore(index={"embed": embeddings, "dims": embeddings.dims, "fields": ["text"]})


@pytest.fixture(scope="session")
def local_embeddings() -> object:
    """The bundled multilingual-e5-small: what the user model's relevance is measured with."""
    from mneme.embeddings import resolve_embeddings

    return resolve_embeddings("local")


@pytest.fixture
def e5_store(local_embeddings: object) -> InMemoryStore:
    """An in-memory store on the real local embeddings (the read path's user model needs them)."""
    dims = len(local_embeddings.embed_query("dims"))  # type: ignore[attr-defined]
    return InMemoryStore(index={"embed": local_embeddings, "dims": dims, "fields": ["text"]})  # type: ignore[typeddict-item]


@pytest.fixture
def memory(chroma_store: ChromaStore) -> Memory:
    return Memory(chroma_store)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A fresh home folder for the real embedded defaults."""
    path = tmp_path / "home"
    yield path
    from mneme import home as home_mod

    opened = home_mod._homes.get(path.resolve())
    if opened is not None:
        opened._refs = 1
        opened.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A real PostgreSQL with pgvector (the `pgserver` wheel), started once per test session.

    Returns the URL of its `postgres` database; tests take a database of their own from
    `postgres_url`. Its data folder is not under pytest's temporary folders: another pytest
    run on the machine prunes old ones, which would pull the files from under the server.
    """
    import logging
    import shutil
    import tempfile

    import pgserver

    logging.getLogger("pgserver").setLevel(logging.ERROR)
    folder = Path(tempfile.mkdtemp(prefix="mneme-test-pg-"))
    server = pgserver.get_server(folder / "data", cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh, empty database on the session's Postgres, dropped after the test."""
    import uuid

    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = postgres_server.replace("/postgres?", f"/{name}?", 1)
    yield url
    from mneme import home as home_mod

    opened = home_mod._homes.get(url)
    if opened is not None:
        opened._refs = 1
        opened.close()
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

"""Writes that stop half-way, as a full disk or a killed process would stop them (lesson 06).

`write_bytes_half_way` stands in for `Path.write_bytes`, the way `agent.edit_file` writes: it
opens the file (which empties it), writes half of the bytes and fails. `half_way()` makes the
temporary file of lesson 06's `write_atomic` do the same: half of the bytes arrive, it says
so, and the write fails. `temporary_files(folder)` lists what such a write may leave behind."""

import contextlib
import os
from pathlib import Path
from unittest import mock


def write_bytes_half_way(self: Path, data: bytes) -> int:
    """Path.write_bytes, stopped half-way: the file is emptied, half of data arrives."""
    with open(self, "wb") as file:  # opening for writing empties the file...
        file.write(data[: len(data) // 2])  # ...and only half of the new text arrives
    raise OSError("simulated crash half-way through the write")


def temporary_files(folder=".") -> list[str]:
    """The names of the temporary files (name ending .tmp) in folder, hidden ones too."""
    return sorted(p.name for p in Path(folder).iterdir() if p.name.endswith(".tmp"))


class HalfWriter:
    """Stands in for write_atomic's temporary file: half of the bytes arrive, then it fails."""

    def __init__(self, file, quiet=False):
        self.file, self.quiet = file, quiet

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()

    def write(self, data):
        self.file.write(data[: len(data) // 2])
        self.file.flush()
        if not self.quiet:
            size = os.fstat(self.file.fileno()).st_size
            print(f"  (mid-write: {len(temporary_files())} temporary file here, {size} of "
                  f"{len(data)} bytes written; then the disk is full)")
        raise OSError("simulated: the disk is full, half-way through the write")

    def flush(self):
        self.file.flush()

    def fileno(self):
        return self.file.fileno()


@contextlib.contextmanager
def half_way(quiet=False):
    """For the length of a with block, write_atomic's temporary file is a HalfWriter."""
    real_fdopen = os.fdopen
    with mock.patch("os.fdopen", lambda fd, mode: HalfWriter(real_fdopen(fd, mode), quiet)):
        yield

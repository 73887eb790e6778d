"""Reading back what wandb wrote in offline mode: the offline-run directories of a run directory
and what their .wandb files hold."""

import json
import struct
import zlib
from pathlib import Path


def offline_runs(run_dir: Path) -> list[Path]:
    """The offline-run directories wandb wrote under the run directory, oldest first."""
    return sorted((run_dir / "wandb").glob("offline-run-*"))


BLOCK, FULL, FIRST, LAST = 32768, 1, 2, 4  # LevelDB log format: block size, chunk types


def wandb_records(path: Path):
    """The protobuf Records (wandb's own `wandb_internal_pb2.Record`) of a .wandb file. Its framing
    is LevelDB's log format (wandb's Python reader of it, `wandb.sdk.internal.datastore`, is gone
    from wandb 0.31, which writes the file from its Go core): a 7-byte header (":W&B", magic
    0xBEE1, version 0), then 32 KiB blocks of chunks (crc32 seeded by the chunk's type, length,
    type FULL/FIRST/MIDDLE/LAST), a block's tail shorter than a chunk header zero-padded."""
    from wandb.proto import wandb_internal_pb2

    raw = path.read_bytes()
    assert struct.unpack("<4sHB", raw[:7]) == (b":W&B", 0xBEE1, 0), "not a .wandb file of the known format"
    pos, pending = 7, b""
    while pos + 7 <= len(raw):
        if BLOCK - pos % BLOCK < 7:
            pos += BLOCK - pos % BLOCK
            continue
        checksum, length, kind = struct.unpack("<IHB", raw[pos:pos + 7])
        data = raw[pos + 7:pos + 7 + length]
        assert len(data) == length and zlib.crc32(data, zlib.crc32(bytes([kind]))) == checksum, f"bad chunk at {pos}"
        pos += 7 + length
        pending = data if kind in (FULL, FIRST) else pending + data
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record


def read_offline_run(directory: Path) -> dict:
    """What one offline-run directory's .wandb file holds: {"run": the run record, "config",
    "history": [rows], "summary", "metrics": {name: its step metric}}, W&B's own keys (_step,
    _runtime, ...) left out."""
    (path,) = directory.glob("*.wandb")
    out = {"run": None, "config": {}, "history": [], "summary": {}, "metrics": {}}
    for record in wandb_records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            out["run"] = record.run
            out["config"].update(items(record.run.config.update))
        elif kind == "config":
            out["config"].update(items(record.config.update))
        elif kind == "history":
            out["history"].append(items(record.history.item))
        elif kind == "summary":
            out["summary"].update(items(record.summary.update))
        elif kind == "metric" and record.metric.name:
            out["metrics"][record.metric.name] = record.metric.step_metric
    return out


def items(updates):
    """Key-value items (a key, or a nested key: an image's fields) as a dict, nested as keyed."""
    out = {}
    for item in updates:
        path = list(item.nested_key) or [item.key]
        if path[0].startswith("_"):
            continue
        node = out
        for name in path[:-1]:
            node = node.setdefault(name, {})
        node[path[-1]] = json.loads(item.value_json)
    return out

"""Which checkouts' team tiers a person lets into their prompts.

A cloned repository's team folder is a stranger's text until the person
says otherwise, once per checkout: ``mdmem team trust`` records the
checkout's real path and its ``origin`` URL in the person's own config
(``<config dir>/team-trust.json``, never in the repository or the vault).
A record whose remote no longer matches (the checkout now points elsewhere)
no longer counts.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mdmem.config import config_home
from mdmem.team.repo import Checkout

__all__ = ["TRUST_FILE", "is_trusted", "trust_checkout", "trusted_checkouts"]

TRUST_FILE = "team-trust.json"


def _store() -> Path:
    return config_home() / TRUST_FILE


def trusted_checkouts() -> dict[str, dict[str, Any]]:
    """The records: checkout real path -> {"remote": url, "trusted_at": iso time}."""
    try:
        data = json.loads(_store().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}


def is_trusted(checkout: Checkout) -> bool:
    record = trusted_checkouts().get(str(checkout.root))
    return record is not None and record.get("remote", "") == checkout.remote()


def trust_checkout(checkout: Checkout, *, revoke: bool = False) -> dict[str, Any]:
    """Trust (or stop trusting) ``checkout``; returns the record ({} when revoked)."""
    records = trusted_checkouts()
    key = str(checkout.root)
    if revoke:
        records.pop(key, None)
        record: dict[str, Any] = {}
    else:
        record = {
            "remote": checkout.remote(),
            "trusted_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        records[key] = record
    store = _store()
    store.parent.mkdir(parents=True, exist_ok=True)
    tmp = store.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(records, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, store)
    return record

"""Which checkouts' team tiers a person lets into their prompts.

A cloned repository's team folder is a stranger's text until the person
says otherwise, once per checkout: ``mdmem team trust`` records the
checkout's real path and its ``origin`` URL in the person's own config
(``<config dir>/team-trust.json``, never in the repository or the vault),
saved like every confirmation (:class:`mdmem.config.Confirmations`: atomic,
private).
A record whose remote no longer matches (the checkout now points elsewhere)
no longer counts.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mdmem.config import Confirmations
from mdmem.team.repo import Checkout

__all__ = ["TRUST_FILE", "is_trusted", "trust_checkout", "trusted_checkouts"]

TRUST_FILE = "team-trust.json"


def trusted_checkouts() -> dict[str, dict[str, Any]]:
    """The records: checkout real path -> {"remote": url, "trusted_at": iso time}."""
    data = Confirmations(TRUST_FILE).read()
    return {k: v for k, v in data.items() if isinstance(v, dict)}


def is_trusted(checkout: Checkout) -> bool:
    record = trusted_checkouts().get(str(checkout.root))
    return record is not None and record.get("remote", "") == checkout.remote()


def trust_checkout(checkout: Checkout, *, revoke: bool = False) -> dict[str, Any]:
    """Trust (or stop trusting) ``checkout``; returns the record ({} when revoked)."""
    key = str(checkout.root)
    record: dict[str, Any] = {}
    with Confirmations(TRUST_FILE).change() as records:
        if revoke:
            records.pop(key, None)
        else:
            record = {
                "remote": checkout.remote(),
                "trusted_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            records[key] = record
    return record

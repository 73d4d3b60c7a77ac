#!/usr/bin/env bash
# The mdmem tour on a fresh vault with the embedded defaults (no network, no
# API key): init, remember, log, recall, consolidate, and the git audit trail.
set -euo pipefail
VAULT="${1:-demo-vault}"
rm -rf "$VAULT"
m() { mdmem --vault "$VAULT" --agent demo-agent "$@"; }

echo "== init"
mdmem --agent demo-agent init "$VAULT"

echo "== remember"
m remember "The user prefers metric units." --kind preference -t units
m remember "Production deploys happen on Tuesdays after the standup." --kind decision -t deploy
m remember "The staging database is reset every night at 02:00 UTC." --kind gotcha -t staging
m remember "Launch of the spring campaign is planned for May 12." --scope project:marketing -t launch
m log "Compared three vector databases; FAISS wins for a local sidecar." -c Research
m journal "I should confirm units before converting measurements."
m learn "Docker" "Multi-stage builds keep images small."

echo "== idempotent: the same fact again"
m remember "the user prefers metric units" --kind preference

echo "== supersede: deploy day changed"
OLD=$(m remember "Production deploys happen on Tuesdays after the standup." --kind decision --json \
      | python -c 'import json,sys; print(json.load(sys.stdin)["id"])')
m supersede "$OLD" "Production deploys happen on Thursdays after the standup."

if mdmem recall --help >/dev/null 2>&1; then
  echo "== recall"
  m recall "when do we deploy to production?" -k 3
  m recall "which units does the user like" -k 2
  echo "== context block for a prompt"
  m context "deploy schedule" --max-chars 600
fi

echo "== a short chat session (short-term memory)"
python - "$VAULT" <<'PY'
import sys
from mdmem import Vault
vault = Vault.open(sys.argv[1], agent="demo-agent")
chat = vault.session("demo-chat", source="cli", contact="user:demo")
chat.record("user", "I prefer answers in bullet points, and my team is in Lisbon.")
chat.record("assistant", "Noted: bullet points, Lisbon team.")
chat.record("user", "Remember that the quarterly report is due on the 5th.")
chat.record("assistant", "I'll keep the 5th in mind for the quarterly report.")
vault.close()
PY

if mdmem consolidate --help >/dev/null 2>&1; then
  echo "== consolidate (offline: extractive summary)"
  m consolidate
fi

echo "== status"
m status

echo "== git log: the audit trail"
git -C "$VAULT" log --format='%h %<(12,trunc)%an %s' | head -20

echo "== USER.md as a person sees it"
cat "$VAULT/USER.md"

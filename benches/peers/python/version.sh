#!/usr/bin/env bash
# Print the SDK this peer runs on and its version (as installed in .venv).
cd "$(dirname "$0")" && exec .venv/bin/python - <<'PY'
import importlib.metadata as m
print(f"mcp {m.version('mcp')} (Python SDK; mcp-types {m.version('mcp-types')}, uvicorn {m.version('uvicorn')})")
PY

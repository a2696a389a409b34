#!/usr/bin/env bash
# The mcp-proxy (PyPI) version installed in .venv, and the MCP SDK it runs on.
cd "$(dirname "$0")" && exec .venv/bin/python - <<'PY'
import importlib.metadata as m
print(f"mcp-proxy {m.version('mcp-proxy')} (PyPI; mcp {m.version('mcp')}, uvicorn {m.version('uvicorn')})")
PY

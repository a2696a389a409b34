#!/usr/bin/env bash
# Print the SDK this peer runs on and its version (from Cargo.lock).
cd "$(dirname "$0")" && awk '/^name = "rmcp"$/ {getline; gsub(/version = |"/, ""); print "rmcp " $0 " (Rust SDK)"; exit}' Cargo.lock

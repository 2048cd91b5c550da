#!/usr/bin/env bash
# Installs what the build needs when it is missing (libsodium-dev, libsqlite3-dev, pkg-config), or stops with a
# message that says exactly what to do. Sourced by demo.sh and test.sh.
set -euo pipefail

need=()
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
pkg-config --exists libsodium 2>/dev/null || need+=(libsodium-dev)
pkg-config --exists sqlite3 2>/dev/null || need+=(libsqlite3-dev)

if [ ${#need[@]} -gt 0 ]; then
  echo "bootstrap: installing ${need[*]} (apt-get)" >&2
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: error: ${need[*]} missing and apt-get is not available." >&2
    echo "  Debian/Ubuntu: sudo apt-get install ${need[*]}" >&2
    echo "  Fedora/RHEL:   sudo dnf install libsodium-devel sqlite-devel pkgconf" >&2
    echo "  macOS:         brew install libsodium sqlite pkg-config" >&2
    exit 69
  fi
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      SUDO="sudo"
    else
      echo "bootstrap: error: not root and no sudo: run as root: apt-get update && apt-get install -y ${need[*]}" >&2
      exit 77
    fi
  fi
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
  echo "bootstrap: error: the Swift toolchain (6.2 or newer) is not on PATH." >&2
  echo "  Install it from https://www.swift.org/install/ and put its usr/bin on PATH, then run this again." >&2
  exit 69
fi

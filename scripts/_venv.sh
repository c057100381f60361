# Shared by scripts/test and scripts/demo (sourced, not run): make sure the project's
# virtualenv exists and holds an editable install of the package.
#
# Expects ROOT (the repository root) to be set and `set -euo pipefail` in the caller.

die() {
    echo "${0##*/}: error: $*" >&2
    exit 1
}

VENV="$ROOT/.venv"
VPY="$VENV/bin/python"

# ensure_venv: create .venv with python3 (>= 3.11) unless a working one is there.
ensure_venv() {
    local py="${PYTHON:-python3}"
    command -v "$py" >/dev/null 2>&1 || die "$py not found on PATH (Python >= 3.11 is required)"
    "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        || die "$py is $("$py" -V 2>&1); Python >= 3.11 is required"
    if [ -x "$VPY" ] && "$VPY" -c '' >/dev/null 2>&1; then
        return
    fi
    if [ -e "$VENV" ]; then
        # A .venv whose interpreter no longer runs (e.g. python3 was upgraded) is useless.
        echo "${0##*/}: .venv is broken; recreating it" >&2
        rm -rf "$VENV"
    fi
    "$py" -m venv "$VENV" || die "could not create $VENV with $py -m venv"
}

# pip_install SPEC: `pip install -e SPEC` into .venv, silently. pip's output (including
# warnings about this machine's extra package indexes) goes to a log that is shown only
# when the install fails. A stamp per SPEC holding the hash of pyproject.toml skips the
# install (about 3 s even when nothing changes) until pyproject.toml changes.
pip_install() {
    local spec="$1"
    local name="${spec//[^a-z]/}"
    local stamp="$VENV/.mcp_sync-install-stamp-${name:-base}"
    local want
    want="$spec $(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        return
    fi
    local log="$VENV/pip-install.log"
    if ! "$VPY" -m pip install --disable-pip-version-check -q -e "$spec" >"$log" 2>&1; then
        cat "$log" >&2
        die "pip install -e '$spec' failed (log above, also in $log)"
    fi
    printf '%s\n' "$want" >"$stamp"
}

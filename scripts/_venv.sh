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

# phase NAME: print "==> NAME" and remember when it started; phase_done prints how long
# it took. One line per phase, so a long first install is never silent.
_phase_name=""
_phase_start=0
_script_start=$SECONDS
phase() {
    _phase_name="$1"
    _phase_start=$SECONDS
    echo "==> $_phase_name" >&2
}
phase_done() {
    local note="${1:-}"
    echo "    $_phase_name: ${note:+$note, }$((SECONDS - _phase_start)) s (total $((SECONDS - _script_start)) s)" >&2
}

# ensure_venv: create .venv with python3 (>= 3.11) unless a working one is there.
ensure_venv() {
    local py="${PYTHON:-python3}"
    command -v "$py" >/dev/null 2>&1 || die "$py not found on PATH (Python >= 3.11 is required)"
    "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        || die "$py is $("$py" -V 2>&1); Python >= 3.11 is required"
    phase "virtualenv (.venv)"
    if [ -x "$VPY" ] && "$VPY" -c '' >/dev/null 2>&1; then
        phase_done "already there"
        return
    fi
    if [ -e "$VENV" ]; then
        # A .venv whose interpreter no longer runs (e.g. python3 was upgraded) is useless.
        echo "${0##*/}: .venv is broken; recreating it" >&2
        rm -rf "$VENV"
    fi
    "$py" -m venv "$VENV" || die "could not create $VENV with $py -m venv"
    phase_done "created with $("$py" -V 2>&1)"
}

# ensure_uv: put the pinned uv into .venv, or say why not. uv resolves and installs
# the same packages from the same index as pip, several times faster (a fresh .venv
# for the dev group: about 30 s against about 2 minutes for pip on a 2-core machine).
# Installs byte-compile everything, as pip does: with PYTHONDONTWRITEBYTECODE set, a
# module without a .pyc is compiled again by every process that imports it, and the
# suite starts hundreds. pip stays the fallback: if uv cannot be installed (no wheel
# for this platform, say), the installs below use pip.
UV_PIN="uv==0.13.9"
UV="$VENV/bin/uv"
ensure_uv() {
    if [ -x "$UV" ] && [ "$("$UV" --version 2>/dev/null | cut -d' ' -f2)" = "${UV_PIN#uv==}" ]; then
        return 0
    fi
    "$VPY" -m pip install --disable-pip-version-check -q "$UV_PIN" >"$VENV/uv-install.log" 2>&1 && [ -x "$UV" ] && return 0
    echo "    (could not install $UV_PIN, see $VENV/uv-install.log: installing with pip instead)" >&2
    return 1
}

# install_into PY ARGS...: `pip install ARGS` into the environment of interpreter PY,
# with uv when ensure_uv can have it (asked once; INSTALLER says which, uv or pip).
INSTALLER=""
choose_installer() {
    [ -n "$INSTALLER" ] && return 0
    if ensure_uv; then INSTALLER=uv; else INSTALLER=pip; fi
}
# A dependency group (`--group NAME`, PEP 735) needs pip 25.1 or newer, which the
# fallback installs into that environment first.
install_into() {
    local py="$1"
    shift
    choose_installer
    if [ "$INSTALLER" = uv ]; then
        "$UV" pip install --compile-bytecode --python "$py" "$@"
    else
        case " $* " in
            *" --group "*) "$py" -m pip install --disable-pip-version-check -q 'pip>=25.1' ;;
        esac
        "$py" -m pip install --disable-pip-version-check "$@"
    fi
}

# pip_install SPEC [ARGS...]: `pip install -e SPEC ARGS...` into .venv (through uv when
# it can be had); scripts/test passes `. --group dev`, the test suite's dependency group.
# The installer's own output (including pip's warnings about this machine's extra package
# indexes) goes to a log that is shown only when the install fails; a line every 30 s
# says it is still going. A stamp per SPEC holding the hash of pyproject.toml skips the
# install until pyproject.toml changes. The download caches (~/.cache/uv, ~/.cache/pip)
# are kept between runs, so a reinstall downloads nothing it has seen.
pip_install() {
    local spec="$1"
    shift
    local what="'$spec'${*:+ $*}"
    local name="${what//[^a-z]/}"
    local stamp="$VENV/.mcp_sync-install-stamp-${name:-base}"
    local want
    want="$what $(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
    phase "pip install -e $what"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        phase_done "up to date with pyproject.toml"
        return
    fi
    local log="$VENV/pip-install.log"
    choose_installer  # here, not in the background job: INSTALLER is read below
    local tool="$INSTALLER"
    echo "    (a first install downloads and unpacks every package with $tool; log: $log)" >&2
    install_into "$VPY" -e "$spec" "$@" >"$log" 2>&1 &
    local pip_pid=$! rc=0
    while kill -0 "$pip_pid" 2>/dev/null; do
        local waited=0
        while [ "$waited" -lt 30 ] && kill -0 "$pip_pid" 2>/dev/null; do
            sleep 1
            waited=$((waited + 1))
        done
        if kill -0 "$pip_pid" 2>/dev/null; then
            local last
            last="$(grep -E '^ *(Collecting|Downloading|Installing|Building|Preparing|Resolved|Prepared)' "$log" | tail -n1 | cut -c1-100)"
            echo "    ... $((SECONDS - _phase_start)) s${last:+: $last}" >&2
        fi
    done
    wait "$pip_pid" || rc=$?
    if [ "$rc" -ne 0 ]; then
        cat "$log" >&2
        die "$tool install -e $what failed (log above, also in $log)"
    fi
    printf '%s\n' "$want" >"$stamp"
    local installed
    if [ "$tool" = uv ]; then
        # uv: "Installed 179 packages in 1.2s"
        installed="$(sed -n 's/^Installed \([0-9]*\) package.*/\1/p' "$log" | tail -n1)"
    else
        installed="$(grep '^Successfully installed' "$log" | wc -w)"
        installed="$((installed > 2 ? installed - 2 : 0))"
    fi
    phase_done "${installed:-0} packages installed with $tool"
}

# shellcheck shell=bash
# Shared set-up for scripts/lab and scripts/test. Sourced, never run on its own.
#
# What it guarantees after `fl_ensure_venv EXTRA`:
#   - $FLOWLAB_VENV (default: <repo>/.venv) is a working virtualenv of Python >= 3.11
#     with flowlab installed in editable mode plus the optional dependency group EXTRA
#     ("" for none, "test" for the test tools);
#   - $PATH, $VIRTUAL_ENV and $JUPYTER_PATH point at that virtualenv, so nothing needs
#     to be activated by hand and Jupyter kernels run in it.
# Re-running is cheap: pip runs only when pyproject.toml (or the requested extra, the
# repository path, or this file's STAMP_VERSION) changed since the last successful
# install, which is recorded in a stamp file inside the virtualenv. System packages
# are installed with apt-get only when their binaries are missing.
#
# Environment knobs: PYTHON (the interpreter that creates the venv), FLOWLAB_VENV
# (where the venv lives), FLOWLAB_REINSTALL=1 (run pip even when the stamp says the
# venv is up to date), FLOWLAB_SKIP_APT=1 (never call apt-get).

set -euo pipefail

FLOWLAB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
FLOWLAB_VENV="${FLOWLAB_VENV:-$FLOWLAB_ROOT/.venv}"
FLOWLAB_PY="$FLOWLAB_VENV/bin/python"
# Bump when the install recipe below changes, so that existing venvs are refreshed.
FLOWLAB_STAMP_VERSION=1

fl_log() { printf '==> %s\n' "$*" >&2; }
fl_warn() { printf 'warning: %s\n' "$*" >&2; }
fl_die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

# Run a command as root: directly when we are root, else through sudo.
fl_as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        return 1
    fi
}

fl_can_be_root() {
    [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1
}

FL_APT_UPDATED=0
# fl_apt_install PKG... -- apt-get install, refreshing the package lists once per run.
fl_apt_install() {
    if [ "$FL_APT_UPDATED" -eq 0 ]; then
        fl_log "apt-get update"
        fl_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
        FL_APT_UPDATED=1
    fi
    fl_log "apt-get install $*"
    fl_as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "$@"
}

# fl_ensure_system_packages MODE BINARY:PACKAGE...
# Installs PACKAGE with apt-get when BINARY is not on PATH. MODE "strict" fails when
# that is impossible (no apt-get, not root and no sudo); MODE "warn" only warns.
fl_ensure_system_packages() {
    local mode="$1" spec bin pkg
    shift
    local missing=()
    for spec in "$@"; do
        bin="${spec%%:*}"
        pkg="${spec#*:}"
        command -v "$bin" >/dev/null 2>&1 || missing+=("$pkg")
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    local why=""
    if [ "${FLOWLAB_SKIP_APT:-0}" = 1 ]; then
        why="FLOWLAB_SKIP_APT=1"
    elif ! command -v apt-get >/dev/null 2>&1; then
        why="no apt-get on this system"
    elif ! fl_can_be_root; then
        why="not root and no sudo"
    elif fl_apt_install "${missing[@]}"; then
        return 0
    else
        why="apt-get failed"
    fi
    if [ "$mode" = strict ]; then
        fl_die "missing system packages: ${missing[*]} ($why). Install them and re-run."
    fi
    fl_warn "missing system packages: ${missing[*]} ($why); some features will not work."
}

# Print the first interpreter that is Python >= 3.11.
fl_find_python() {
    local candidates=() c
    if [ -n "${PYTHON:-}" ]; then
        candidates=("$PYTHON")
    else
        candidates=(python3.11 python3 python3.12 python3.13 python)
    fi
    for c in "${candidates[@]}"; do
        if command -v "$c" >/dev/null 2>&1 &&
            "$c" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1; then
            command -v "$c"
            return 0
        fi
    done
    fl_die "flowlab needs Python >= 3.11 (tried: ${candidates[*]}). Set PYTHON=/path/to/python3.11."
}

# A venv is usable when its interpreter runs, is new enough, and has pip (Debian can
# leave a venv without pip behind when python3-venv is missing).
fl_venv_ok() {
    [ -x "$FLOWLAB_PY" ] &&
        "$FLOWLAB_PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 &&
        "$FLOWLAB_PY" -m pip --version >/dev/null 2>&1
}

fl_create_venv() {
    local py log
    py="$(fl_find_python)"
    # `venv --clear` empties the folder: never do that to something that is not a venv.
    if [ -d "$FLOWLAB_VENV" ] && [ -n "$(ls -A "$FLOWLAB_VENV")" ] &&
        [ ! -f "$FLOWLAB_VENV/pyvenv.cfg" ]; then
        fl_die "$FLOWLAB_VENV exists and is not a virtualenv; move it away or set FLOWLAB_VENV"
    fi
    log="$(mktemp)"
    fl_log "creating virtualenv $FLOWLAB_VENV with $py ($("$py" --version 2>&1))"
    if "$py" -m venv --clear "$FLOWLAB_VENV" >"$log" 2>&1; then
        rm -f "$log"
        return 0
    fi
    # Debian/Ubuntu ship venv's pip bootstrap (ensurepip) in a separate package.
    if grep -qi ensurepip "$log" && command -v apt-get >/dev/null 2>&1 && fl_can_be_root; then
        local ver
        ver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
        fl_apt_install "python$ver-venv" || fl_apt_install python3-venv
        if "$py" -m venv --clear "$FLOWLAB_VENV" >"$log" 2>&1; then
            rm -f "$log"
            return 0
        fi
    fi
    cat "$log" >&2
    rm -f "$log"
    fl_die "could not create the virtualenv $FLOWLAB_VENV"
}

# The stamp key: what, when changed, requires a new `pip install`.
fl_stamp_key() {
    local extra="$1"
    "$FLOWLAB_PY" - "$FLOWLAB_ROOT" "$extra" "$FLOWLAB_STAMP_VERSION" <<'PY'
import hashlib, pathlib, sys
root, extra, version = sys.argv[1:4]
h = hashlib.sha256()
for part in (version, extra, root, sys.version):
    h.update(part.encode() + b"\0")
h.update(pathlib.Path(root, "pyproject.toml").read_bytes())
print(h.hexdigest())
PY
}

# fl_ensure_venv EXTRA -- see the header.
fl_ensure_venv() {
    local extra="$1" name key target stamp
    fl_venv_ok || fl_create_venv
    name="${extra:-base}"
    key="$(fl_stamp_key "$extra")"
    stamp="$FLOWLAB_VENV/.flowlab-stamp-$name"
    local up_to_date=0
    if [ "${FLOWLAB_REINSTALL:-0}" = 1 ]; then
        up_to_date=0
    elif [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ]; then
        up_to_date=1
    elif [ -z "$extra" ]; then
        # Any extra is a superset of the base install: its fresh stamp will do.
        local other
        for other in "$FLOWLAB_VENV"/.flowlab-stamp-*; do
            [ -f "$other" ] && [ "$other" != "$stamp" ] || continue
            if [ "$(cat "$other")" = "$(fl_stamp_key "${other##*.flowlab-stamp-}")" ]; then
                up_to_date=1
            fi
        done
    fi
    if [ "$up_to_date" -eq 0 ]; then
        target="$FLOWLAB_ROOT"
        [ -n "$extra" ] && target="${FLOWLAB_ROOT}[$extra]"
        local pip_flags=()
        [ -t 1 ] || pip_flags+=(--progress-bar off)
        fl_log "pip install -e '$target' (first run downloads a few hundred MB)"
        rm -f "$stamp"
        "$FLOWLAB_PY" -m pip install ${pip_flags[@]+"${pip_flags[@]}"} -e "$target"
        printf '%s\n' "$key" >"$stamp"
    else
        fl_log "virtualenv $FLOWLAB_VENV is up to date (${extra:-base})"
    fi
    export VIRTUAL_ENV="$FLOWLAB_VENV"
    export PATH="$FLOWLAB_VENV/bin:$PATH"
    # Kernels installed in the venv take precedence over per-user ones of the same name,
    # so a notebook's "python3" kernel is this venv's Python.
    export JUPYTER_PATH="$FLOWLAB_VENV/share/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}"
    unset PYTHONHOME
}

# --- JupyterLab extension build (npm) --------------------------------------------
# fl_build_extension [MODE] -- build the front end in extension/ (TypeScript, JupyterLab
# 4, the `flowlab-widgets` ipywidgets module) into flowlab/labextension with jlpm (the
# yarn that ships with jupyterlab): `jlpm install --immutable` (the committed
# yarn.lock) then `jlpm build:prod`.  Skipped when the sources, lockfile and config are
# unchanged since the last build (a stamp in extension/node_modules).  Then links the
# build into the venv's share/jupyter/labextensions/flowlab-widgets, as `jupyter
# labextension develop` does for an editable install (a wheel carries it as shared
# data), and checks that `jupyter labextension list` shows it enabled.  MODE "strict"
# (scripts/test) fails without node; "warn" (scripts/lab) only warns: the notebooks
# then show static SVG.  FLOWLAB_REBUILD_EXTENSION=1 rebuilds even when up to date.
fl_extension_key() {
    "$FLOWLAB_PY" - "$FLOWLAB_ROOT/extension" "$FLOWLAB_STAMP_VERSION" <<'PY'
import hashlib, pathlib, sys
root = pathlib.Path(sys.argv[1])
h = hashlib.sha256(sys.argv[2].encode())
files = [root / n for n in ("package.json", "yarn.lock", ".yarnrc.yml", "tsconfig.json", "install.json")]
files += sorted(root.glob("src/**/*")) + sorted(root.glob("style/**/*"))
for f in files:
    if f.is_file():
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
print(h.hexdigest())
PY
}

fl_build_extension() {
    local mode="${1:-warn}" ext="$FLOWLAB_ROOT/extension" out="$FLOWLAB_ROOT/flowlab/labextension"
    local name=flowlab-widgets key stamp="$FLOWLAB_ROOT/extension/node_modules/.flowlab-build-stamp"
    if ! command -v node >/dev/null 2>&1; then
        if [ "$mode" = strict ]; then
            fl_die "node is not installed: it builds the JupyterLab extension (apt: nodejs)"
        fi
        fl_warn "node is not installed: the live graph views are off (static SVG instead)"
        return 0
    fi
    key="$(fl_extension_key)"
    if [ "${FLOWLAB_REBUILD_EXTENSION:-0}" != 1 ] && [ -f "$stamp" ] &&
        [ "$(cat "$stamp")" = "$key" ] && [ -f "$out/static/style.js" ]; then
        fl_log "JupyterLab extension is up to date ($out)"
    else
        fl_log "building the JupyterLab extension (jlpm install --immutable && jlpm build:prod)"
        (cd "$ext" && "$FLOWLAB_VENV/bin/jlpm" install --immutable && "$FLOWLAB_VENV/bin/jlpm" build:prod) ||
            fl_die "the JupyterLab extension did not build; see above"
        printf '%s\n' "$key" >"$stamp"
    fi
    local share="$FLOWLAB_VENV/share/jupyter/labextensions"
    mkdir -p "$share"
    # An editable wheel may have copied a build there (shared data): the link replaces it.
    if [ -e "$share/$name" ] && [ ! -L "$share/$name" ]; then
        rm -rf "${share:?}/$name"
    fi
    ln -sfn "$out" "$share/$name"
    if ! "$FLOWLAB_VENV/bin/jupyter" labextension list 2>&1 | grep -E "$name .*enabled.*OK" >/dev/null; then
        "$FLOWLAB_VENV/bin/jupyter" labextension list >&2 || true
        fl_die "jupyter labextension list does not show $name enabled"
    fi
    fl_log "JupyterLab extension $name: enabled OK"
}

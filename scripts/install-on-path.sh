#!/bin/sh
# Put a link to mdmem's command on the user's PATH (`make install-user`).
#
# usage: install-on-path.sh /absolute/path/to/venv/bin/mdmem
#
# The link goes into $BINDIR when set; else into the first of these that is on
# PATH: ~/.local/bin (created if missing), another writable folder in $HOME;
# else ~/.local/bin, with the line that adds it to PATH. It stays in the
# user's home even as root: a system folder (BINDIR=/usr/local/bin) is
# something to ask for, not a fallback. Linking into the checkout's venv is
# what `pipx install --editable .` does, without needing pipx (a fresh
# machine has only Python).
set -eu
target="$1"
if [ ! -x "$target" ]; then
    echo "install-on-path: $target is not an executable (run make install first)" >&2
    exit 1
fi
on_path() {
    case ":$PATH:" in *":$1:"*) return 0 ;; *) return 1 ;; esac
}
bindir="${BINDIR:-}"
if [ -z "$bindir" ] && on_path "$HOME/.local/bin"; then
    bindir="$HOME/.local/bin"
fi
if [ -z "$bindir" ]; then
    old_ifs=$IFS
    IFS=:
    for dir in $PATH; do
        case "$dir" in
        "$HOME"/*) if [ -d "$dir" ] && [ -w "$dir" ]; then bindir=$dir; break; fi ;;
        esac
    done
    IFS=$old_ifs
fi
bindir="${bindir:-$HOME/.local/bin}"
mkdir -p "$bindir"
if [ -e "$bindir/mdmem" ] && [ ! -L "$bindir/mdmem" ]; then
    # Someone else's mdmem (a pip install --user...): theirs to remove, not ours.
    echo "install-on-path: $bindir/mdmem exists and is not a link; remove it or set BINDIR" >&2
    exit 1
fi
ln -sf "$target" "$bindir/mdmem"
echo "mdmem -> $bindir/mdmem"
if ! on_path "$bindir"; then
    echo "$bindir is not on PATH; add it with:"
    echo "    echo 'export PATH=\"$bindir:\$PATH\"' >> ~/.profile && . ~/.profile"
fi

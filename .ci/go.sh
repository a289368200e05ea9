# Sourced: puts a Go toolchain on PATH that builds hearth's Go modules (they say go 1.26).
# The machine image ships one under /usr/local/go. Elsewhere Debian bookworm's own golang-go is
# 1.19, too old even to switch toolchains; bookworm-backports has golang-1.23, whose toolchain
# switch (GOTOOLCHAIN=auto, Go's default) then fetches the go1.26 release the modules name from the
# Go module proxy, the first time a module needs it.
export PATH="$PATH:/usr/local/go/bin"
go_minor() { go env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p'; }
if ! command -v go >/dev/null || [ "$(go_minor)" -lt 21 ] 2>/dev/null || [ -z "$(go_minor)" ]; then
  if [ ! -x /usr/lib/go-1.23/bin/go ]; then
    # The backports suite of this machine's own Debian mirror (named by its existing sources).
    mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
    [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    echo "installing golang-1.23-go from $codename-backports ($mirror)"
    echo "deb $mirror $codename-backports main" > /etc/apt/sources.list.d/hearth-go-backports.list
    apt-get update -qq
    apt-get install -y -qq -t "$codename-backports" golang-1.23-go >/dev/null
  fi
  export PATH="/usr/lib/go-1.23/bin:$PATH"
fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

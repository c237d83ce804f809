#!/usr/bin/env bash
# Generates the code of protocol/pb from its .proto files — the Go code (*.pb.go) and the Ruby
# bindings for Cloud Controller (*_pb.rb, protoc's own Ruby output; docs/CLOUD_CONTROLLER.md);
# `make proto` and `make proto-check` run it from the repository root.
#
#   gen.sh write   regenerate protocol/pb/*.pb.go and *_pb.rb in place
#   gen.sh check   regenerate into a temporary directory and fail, naming each stale, missing or
#                  orphaned generated file, if the committed code differs
#
# The output depends on the exact protoc and protoc-gen-go versions (both are written into every
# Go file's header; protoc's Ruby generator changes its output between releases), so both are
# pinned: protoc to Debian bookworm's protobuf-compiler (installed with
# apt-get when it is missing and we are root, as on CI), protoc-gen-go to the
# google.golang.org/protobuf version of go.mod, built into bin/.
set -euo pipefail

mode=${1:-}
case "$mode" in
write | check) ;;
*)
	echo "usage: $0 write|check" >&2
	exit 2
	;;
esac

GO=${GO:-go}
PROTOC_VERSION=${PROTOC_VERSION:?PROTOC_VERSION is set by the Makefile}
PROTOC_GEN_GO_VERSION=${PROTOC_GEN_GO_VERSION:?PROTOC_GEN_GO_VERSION is set by the Makefile}
root=$(pwd)
src=protocol/pb

die() {
	echo "proto: $*" >&2
	exit 1
}

# The runtime our code links against must be the one the generator comes from.
mod_version=$("$GO" list -m -f '{{.Version}}' google.golang.org/protobuf)
[ "$mod_version" = "$PROTOC_GEN_GO_VERSION" ] ||
	die "go.mod has google.golang.org/protobuf $mod_version but the Makefile pins protoc-gen-go $PROTOC_GEN_GO_VERSION: change both together"

if ! command -v protoc >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "proto: protoc is missing; installing Debian's protobuf-compiler" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >&2
		apt-get install -y -qq protobuf-compiler >&2
	else
		die "protoc is missing: install protoc $PROTOC_VERSION (Debian: apt-get install protobuf-compiler)"
	fi
fi
have=$(protoc --version)
[ "$have" = "libprotoc $PROTOC_VERSION" ] ||
	die "protoc says '$have', want 'libprotoc $PROTOC_VERSION' (the version is written into every generated file)"

# One directory per version, so that bumping the pin rebuilds the plugin.
plugin_dir=$root/bin/protoc-gen-go-$PROTOC_GEN_GO_VERSION
if [ ! -x "$plugin_dir/protoc-gen-go" ]; then
	echo "proto: building protoc-gen-go $PROTOC_GEN_GO_VERSION into ${plugin_dir#"$root"/}" >&2
	GOBIN=$plugin_dir "$GO" install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
fi

# generate OUT: writes OUT/protocol/pb/*.pb.go and *_pb.rb. Files are named relative to the
# repository root (-I .), so the registry holds them as protocol/pb/<name>.proto, which no other
# module uses, and a Ruby file requires another as 'protocol/pb/<name>_pb' (the repository root,
# or the directory a copy of protocol/ sits in, goes on Ruby's load path).
generate() {
	protoc -I . \
		--plugin=protoc-gen-go="$plugin_dir/protoc-gen-go" \
		--go_out="$1" --go_opt=paths=source_relative \
		--ruby_out="$1" \
		"$src"/*.proto
}

# The generated files of a directory.
generated() { ls "$1"/*.pb.go "$1"/*_pb.rb 2>/dev/null || true; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
generate "$tmp"

if [ "$mode" = write ]; then
	# Replace only once protoc has succeeded; a generated file whose .proto is gone goes too.
	rm -f "$src"/*.pb.go "$src"/*_pb.rb
	cp "$tmp/$src"/*.pb.go "$tmp/$src"/*_pb.rb "$src"/
	exit 0
fi

stale=()
for f in $(generated "$tmp/$src"); do
	name=$src/$(basename "$f")
	if [ ! -f "$name" ]; then
		stale+=("$name (missing)")
	elif ! cmp -s "$f" "$name"; then
		stale+=("$name (differs)")
	fi
done
for f in $(generated "$src"); do
	[ -f "$tmp/$f" ] || stale+=("$f (no .proto generates it)")
done

if [ ${#stale[@]} -gt 0 ]; then
	echo "proto: the committed generated code is stale; run 'make proto' and commit:" >&2
	printf '  %s\n' "${stale[@]}" >&2
	exit 1
fi
echo "proto: generated code is up to date"

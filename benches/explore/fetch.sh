#!/usr/bin/env bash
# Fetch the code-exploration benchmark corpus: six third-party codebases,
# pinned by version and by the sha256 of the downloaded archive.
#
#   bash benches/explore/fetch.sh            # into <repo>/target/explore-corpus
#   EXPLORE_CORPUS=/tmp/corpus bash benches/explore/fetch.sh
#
# Each codebase is unpacked directly into $EXPLORE_CORPUS/<name>/ (the
# archive's single top-level directory is stripped). A codebase that is
# already there (marker $EXPLORE_CORPUS/.<name>.ok written after a
# successful unpack) is skipped, so the script is idempotent.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$script_dir/../.." && pwd)"
dest="${EXPLORE_CORPUS:-$repo_root/target/explore-corpus}"
mkdir -p "$dest"

# name | language | url | sha256 of the archive
#
# Registry notes:
# - express: the npm tarball of express 4.x ships no tests, so the Debian
#   source package's upstream tarball (express 4.18.2 as released, with
#   test/ and examples/) is used instead.
# - testify: the Go module proxy is not reachable from the project's
#   machines; Debian's upstream tarball of testify 1.8.1 (the GitHub
#   release tarball, with all *_test.go files) is used instead.
# - zlib: the libz-sys crate's vendored copy has no test/ folder, so
#   Debian's upstream tarball of zlib 1.2.13 (test/, examples/ and
#   contrib/minizip included; "dfsg" = a few non-free contrib dirs removed)
#   is used instead.
corpus=(
  "semver|rust|https://static.crates.io/crates/semver/semver-1.0.23.crate|61697e0a1c7e512e84a621326239844a24d8207b4669b41bc18b32ea5cbf988b"
  "requests|python|https://files.pythonhosted.org/packages/63/70/2bf7780ad2d390a8d301ad0b550f1581eadbd9a20f896afe06353c2a2913/requests-2.32.3.tar.gz|55365417734eb18255590a9ff9eb97e9e1da868d4ccd6402399eaf68af20a760"
  "express|javascript|http://deb.debian.org/debian/pool/main/n/node-express/node-express_4.18.2+~4.17.14.orig.tar.gz|a9ace1a92a2b0a7e3fcd7a7612553d6208a464561c15ad38f349fc3ab0d7cda0"
  "testify|go|http://deb.debian.org/debian/pool/main/g/golang-testify/golang-testify_1.8.1.orig.tar.gz|6749fede6c26ae66b7e7500136dbe56913b4e0679099b6c1154d2210a9a1ec00"
  "zlib|c|http://deb.debian.org/debian/pool/main/z/zlib/zlib_1.2.13.dfsg.orig.tar.bz2|71feb7947e3c00ef125f83b79a4e529bde31171e5babe48b391f06758d1ab0a1"
  # No questions: the large codebase the index's build and one-file update
  # are timed on (505 .rs files, 124k lines).
  "tokio|rust|https://static.crates.io/crates/tokio/tokio-1.40.0.crate|e2b070231665d27ad9ec9b8df639893f46727666c6767db40317fbe920a5d998"
)

work=""
cleanup() { if [[ -n "$work" ]]; then rm -rf "$work"; fi; }
trap cleanup EXIT

fetch_one() {
  local name="$1" url="$2" sha="$3"
  local target="$dest/$name" marker="$dest/.$name.ok"

  if [[ -f "$marker" && -d "$target" ]] && [[ "$(cat "$marker")" == "$sha" ]]; then
    echo "explore-corpus: $name already present, skipping"
    return 0
  fi

  work="$(mktemp -d "$dest/.tmp-$name.XXXXXX")"

  local archive="$work/archive"
  echo "explore-corpus: downloading $name from $url"
  curl --fail --silent --show-error --location --retry 3 --max-time 300 \
    -o "$archive" "$url"

  local got
  got="$(sha256sum "$archive" | cut -d' ' -f1)"
  if [[ "$got" != "$sha" ]]; then
    echo "explore-corpus: sha256 mismatch for $name: expected $sha, got $got" >&2
    return 1
  fi

  mkdir -p "$work/src"
  case "$url" in
    *.tar.bz2) tar -xjf "$archive" -C "$work/src" --strip-components=1 --no-same-owner ;;
    *) tar -xzf "$archive" -C "$work/src" --strip-components=1 --no-same-owner ;;
  esac

  rm -rf "$target" "$marker"
  mv "$work/src" "$target"
  printf '%s\n' "$sha" > "$marker"
  rm -rf "$work"
  work=""
  echo "explore-corpus: $name ready in $target"
}

for entry in "${corpus[@]}"; do
  IFS='|' read -r name _lang url sha <<<"$entry"
  fetch_one "$name" "$url" "$sha"
done

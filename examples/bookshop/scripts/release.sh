#!/usr/bin/env bash
# Tag a release, build the image and push it.
set -euo pipefail

version=${1:?usage: release.sh VERSION}
git tag -a "v$version" -m "bookshop $version"
docker build -t "registry.example.com/bookshop:$version" .
docker push "registry.example.com/bookshop:$version"

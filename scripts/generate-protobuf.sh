#!/usr/bin/env bash
# Regenerates Sources/StatusAdapter/Protobuf/*.pb.swift from the .proto files (run after editing
# them, then commit the output). Needs Debian's protobuf-compiler and builds swift-protobuf's
# protoc-gen-swift plugin (the version in Package.swift) in a scratch folder.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v protoc >/dev/null || { apt-get update -qq && apt-get install -y -qq protobuf-compiler; }
scratch=${PROTOC_GEN_SCRATCH:-/tmp/herald-protoc-gen}
if [ ! -x "$scratch/bin/protoc-gen-swift" ]; then
  rm -rf "$scratch/src" && mkdir -p "$scratch/bin"
  git clone -q https://github.com/apple/swift-protobuf.git "$scratch/src"
  git -C "$scratch/src" checkout -q 1.39.0
  swift build -c release --product protoc-gen-swift --package-path "$scratch/src"
  cp "$(swift build -c release --package-path "$scratch/src" --show-bin-path)/protoc-gen-swift" "$scratch/bin/"
fi
dir=Sources/StatusAdapter/Protobuf
protoc --plugin=protoc-gen-swift="$scratch/bin/protoc-gen-swift" --swift_opt=Visibility=Package \
  --proto_path="$dir/proto" --swift_out="$dir" "$dir"/proto/*.proto
echo "generated: $(ls "$dir"/*.pb.swift)"

# Shared by the README commands: installs what Trident needs from Debian and builds it.
# Source it; it defines trident_setup_deps and trident_build.

TRIDENT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Debian packages the build, the tests and the CUDA-free runtime use.
TRIDENT_PACKAGES=(
  cmake ninja-build g++ make pkg-config clang-format git python3
  libyaml-cpp-dev libeigen3-dev libopenmpi-dev openmpi-bin
  libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libgtest-dev libgmock-dev libbenchmark-dev
)

trident_log() { echo "[trident] $*" >&2; }

# Installs the packages that are missing; as non-root prints the apt-get line and exits 1.
trident_setup_deps() {
  local missing=()
  for pkg in "${TRIDENT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "Trident needs these Debian packages; install them and run this again:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  trident_log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

# trident_build DIR [cmake options...]: configures (once) and builds into DIR.
trident_build() {
  local dir="$1"
  shift
  mkdir -p "$dir"
  cmake -S "$TRIDENT_ROOT" -B "$dir" -G Ninja "$@" >"$dir/configure.log" 2>&1 || {
    cat "$dir/configure.log" >&2
    return 1
  }
  cmake --build "$dir" -j "$(nproc)"
}

# trident_test_count DIR [ctest label options...]: how many tests ctest lists there.
trident_test_count() {
  local dir="$1"
  shift
  ctest --test-dir "$dir" -N "$@" | sed -n 's/^Total Tests: //p'
}

# trident_build_release: installs what is missing and builds build/release without tests
# (scripts/demo, scripts/fidelity); the trident binary is then build/release/cli/trident.
trident_build_release() {
  trident_setup_deps
  mkdir -p "$TRIDENT_ROOT/build"
  trident_log "building (build/release)"
  trident_build "$TRIDENT_ROOT/build/release" -DCMAKE_BUILD_TYPE=Release \
    -DTRIDENT_BUILD_TESTS=OFF >/dev/null
}

#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image from the zip that
# `python3 judge/judge.py autograder gradescope` writes (unpacked in /autograder/source).
#
# 1. Installs the kit's toolchain from the base image's own archive. The names are Ubuntu's
#    (22.04 jammy or 24.04 noble); the kit's own list, .ci/packages.txt, is Debian 12's.
#    - Python: the judge needs 3.11 (tomllib). Noble's python3 is 3.12; jammy's is 3.10, so
#      jammy takes its python3.11 package.
#    - CMake: CMakeLists.txt asks for 3.25, the version the kit is proven with on Debian 12.
#      Noble's cmake is 3.28; jammy's is 3.22, so on jammy CMake 3.x comes from PyPI (Kitware's
#      own build, the `cmake` package, pinned below 4) through jammy's pip. What CMakeLists.txt
#      uses would run on 3.18, but lowering its minimum would change the build every learner
#      runs for a version no run of the kit has proven; the image build has the network anyway.
#    - clang's sanitizer runtimes: in libclang-rt-N-dev where the archive has that package
#      (noble), else in libclang-common-N-dev, which clang already depends on (jammy).
# 2. Creates the unprivileged user the learner's code runs as (ALLOCLAB_RUN_AS in run_autograder).
# 3. Grades the reference solutions as a submission, once in each build slot a submission may
#    take (one per core): the build trees each submission reuses (GoogleTest's precompiled
#    header, the reference listings, the benchmarks' reference builds) are built here, so a
#    submission pays only for its own code. Every reference must score full marks, or the image
#    is refused.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kit="$here/alloclab"
user=alloclab-learner
export DEBIAN_FRONTEND=noninteractive

. /etc/os-release
case "${VERSION_ID:-}" in
  22.04) packages=(python3.11 python3-pip) ;;
  24.04) packages=(python3 cmake) ;;
  *) echo "setup.sh: this autograder is made for Ubuntu 22.04 and 24.04, not ${PRETTY_NAME:-this system}" >&2
     exit 1 ;;
esac
packages+=(clang lld g++ ninja-build libgtest-dev libbenchmark-dev librapidcheck-dev ca-certificates)

apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}"
clang_major="$(clang++ -dumpversion | cut -d. -f1)"
if apt-cache show "libclang-rt-$clang_major-dev" >/dev/null 2>&1; then
  apt-get install -y -qq --no-install-recommends "libclang-rt-$clang_major-dev"
fi
if [[ "$VERSION_ID" == 22.04 ]]; then
  python3 -m pip install --no-cache-dir --quiet 'cmake>=3.25,<4'
  hash -r
fi

python=""
for candidate in python3 python3.13 python3.12 python3.11; do
  if command -v "$candidate" >/dev/null 2>&1 &&
     "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    python="$candidate"
    break
  fi
done
[[ -n "$python" ]] || { echo "setup.sh: no Python 3.11 or newer was installed" >&2; exit 1; }
echo "Toolchain: $("$python" --version), $(cmake --version | head -n1), $(clang++ --version | head -n1), ninja $(ninja --version)"

# The learner's code runs as this user: it can read the kit and write only the build trees.
id -u "$user" >/dev/null 2>&1 || useradd --system --user-group --no-create-home --home-dir /nonexistent \
  --shell /usr/sbin/nologin "$user"
chmod -R a+rX "$here"
chmod 755 /autograder

# The references, graded as a submission of every exercise the zip names, in a root of their own.
warm="$(mktemp -d)"
trap 'rm -rf "$warm"' EXIT
chmod 755 "$warm"
(cd -P "$kit" && ALLOCLAB_RUN_AS="$user" NO_COLOR=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$kit/judge" \
  "$python" -c 'import sys; from lab.instructor import gradescope; sys.exit(gradescope.main(sys.argv[1:]))' \
  --references "$warm" "$here/autograder.json")

#!/usr/bin/env bash
# Prints the Debian/Ubuntu packages, as PACKAGE=VERSION one a line, that hold the shared libraries
# the given executables load (ldd, then dpkg -S); a static executable loads none. The Dockerfile's build stage runs it so the
# runtime stage installs exactly the libraries the binaries were linked against, whatever the
# distribution and release of the base image (their package names differ: libhdf5-103-1 on
# Debian 12, libhdf5-103-1t64 on Ubuntu 24.04).
#
#   scripts/container/runtime_packages.sh EXECUTABLE...
#
# Exit status: 0 listed; 1 a library is not found (ldd) or no package holds it (it could not be
# installed in another image); 2 bad arguments.
set -euo pipefail

(($#)) || { echo "usage: scripts/container/runtime_packages.sh EXECUTABLE..." >&2; exit 2; }

libraries=()
for exe in "$@"; do
  [[ -f $exe ]] || { echo "runtime_packages.sh: $exe: no such file" >&2; exit 2; }
  if ! out=$(ldd "$exe" 2>&1); then
    # An ELF file that ldd calls not dynamic is a static executable (mlbert): it loads nothing.
    [[ $out == *"not a dynamic executable"* ]] && readelf -h "$exe" > /dev/null 2>&1 && continue
    echo "runtime_packages.sh: $exe: ldd failed: $out" >&2
    exit 1
  fi
  if grep -q 'not found' <<< "$out"; then
    echo "runtime_packages.sh: $exe: libraries not found:" >&2
    grep 'not found' <<< "$out" >&2
    exit 1
  fi
  # "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)" and the loader's "/lib64/ld-linux... (0x...)"
  mapfile -t -O "${#libraries[@]}" libraries < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<< "$out")
done

# With a merged /usr, ldd's /lib/x/libz.so may be recorded by dpkg as /usr/lib/x/libz.so or the
# other way round, and the file may be a symlink to another name: each library is looked up under
# all those names, in one dpkg-query call (each call reads the whole file database).
((${#libraries[@]})) || exit 0
mapfile -t libraries < <(printf '%s\n' "${libraries[@]}" | sort -u)
declare -A names_of
candidates=()
for lib in "${libraries[@]}"; do
  real=$(readlink -f "$lib")
  names_of[$lib]="$lib $real /usr$lib /usr$real ${lib#/usr} ${real#/usr}"
  read -ra names <<< "${names_of[$lib]}"
  candidates+=("${names[@]}")
done
declare -A package_of
# "libhdf5-103-1:amd64: /usr/lib/x86_64-linux-gnu/libhdf5_serial.so.103"; "a, b: path" when two
# packages hold it (the first is taken).
while IFS= read -r line; do
  [[ $line == *": /"* ]] || continue
  package=${line%%: /*}
  package=${package%%,*}
  package_of[/${line#*: /}]=${package%%:*}
done < <(dpkg-query -S "${candidates[@]}" 2> /dev/null || true)

packages=()
for lib in "${libraries[@]}"; do
  package=""
  for name in ${names_of[$lib]}; do
    package=${package_of[$name]:-}
    [[ -n $package ]] && break
  done
  if [[ -z $package ]]; then
    echo "runtime_packages.sh: no package holds $lib" >&2
    exit 1
  fi
  packages+=("$package")
done
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
dpkg-query -W -f='${Package}=${Version}\n' "${packages[@]}"

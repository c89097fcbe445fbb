#!/usr/bin/env bash
# Installs what building, running and testing ndforge needs on Debian 12, and
# only what is missing.  The CUDA toolkit is optional: without it ndforge runs
# its CPU backend; NVRTC (from the toolkit) is found at run time when present.
set -euo pipefail
pkgs=(cmake ninja-build gcc pkg-config zlib1g-dev lua5.4 luajit libcmocka-dev libniftiio-dev libnifti2-dev libznz-dev
      python3 python3-numpy python3-scipy python3-venv python3-pip python3-pytest libpng-dev python3-nibabel
      g++ libgdcm-dev libdeflate-dev)
# The demo needs Debian's MRI templates; the tests scikit-image (a third-party
# reference for the Euler characteristic curves and for grey reconstruction;
# tests/test_ecc.c and tests/test_reconstruction.c skip those cases, saying so,
# where it is missing).
# The tests also build the fuzz targets (fuzz/) with clang and libFuzzer.
# `ndforge preprocess` writes PNG montages with libpng; its tests read the outputs with nibabel
# and take ch2 from mricron-data when it is there; its .nii.gz go through libdeflate (libdeflate-dev)
# where the build finds it.  DICOM (libgdcm-dev, through GDCM's C++ API):
# tests/test_cli_dicom.sh writes series of the MRI template with pydicom (and compresses one with
# GDCM's gdcmconv) and reads NIfTI back with nibabel.
if [ "${1:-}" = "--demo" ]; then pkgs+=(mricron-data); else pkgs+=(python3-skimage clang-14 libclang-rt-14-dev
  python3-pydicom mricron-data libgdcm-tools); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

#!/usr/bin/env bash
# ensure-ocr.sh makes sure Tesseract is installed with the English language model and the
# orientation and script detection model, which image recognition by OCR uses (package
# recognize runs the tesseract program). When something is missing it installs Debian's
# tesseract-ocr, tesseract-ocr-eng and tesseract-ocr-osd. Idempotent and quiet when
# everything is in place. Called by `make deps`.
set -euo pipefail

die() {
	echo "ensure-ocr: $*" >&2
	exit 1
}

howto="install Tesseract yourself: apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd (Debian, Ubuntu), dnf install tesseract tesseract-osd (Fedora), brew install tesseract (macOS)"

as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		sudo -n "$@"
	else
		die "Tesseract (with the eng and osd models) not found, and installing it needs root (or passwordless sudo); $howto"
	fi
}

has_tesseract() {
	command -v tesseract >/dev/null || return 1
	local langs
	langs=$(tesseract --list-langs 2>/dev/null) || return 1
	grep -qx eng <<<"$langs" && grep -qx osd <<<"$langs"
}

if has_tesseract; then
	exit 0
fi
command -v apt-get >/dev/null || die "Tesseract not found and there is no apt-get; $howto"
echo "ensure-ocr: installing tesseract-ocr, tesseract-ocr-eng and tesseract-ocr-osd" >&2
export DEBIAN_FRONTEND=noninteractive
# The package lists may be missing or stale on a fresh machine: update once, then install.
as_root apt-get update -qq >/dev/null || die "apt-get update failed; $howto"
as_root apt-get install -y -qq --no-install-recommends tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd >/dev/null ||
	die "apt-get install failed; $howto"
has_tesseract || die "Tesseract still not usable after installing; $howto"

#!/usr/bin/env bash
# Print every chapter and page of a built book to PDF with headless Chromium, offline.
#
#   bash env/book/print-pdf.sh [HTML_DIR] [OUT_DIR]     # defaults: _build/html _build/pdf
#
# The theme's print stylesheet drops the navigation and sidebars; figures, tables, margin notes
# and admonitions print as they render. One PDF per page (results first, in book order).
set -euo pipefail
HTML="${1:-_build/html}"
OUT="${2:-_build/pdf}"
CHROME="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [[ -z "$CHROME" ]]; then
  echo "error: chromium: not found (apt-get install chromium)" >&2
  exit 2
fi
if [[ ! -f "$HTML/index.html" ]]; then
  echo "error: $HTML/index.html: no built book (run make book first)" >&2
  exit 2
fi
mkdir -p "$OUT"
PROFILE="$(mktemp -d)"
trap 'rm -rf "$PROFILE"' EXIT
n=0
for page in "$HTML"/notebooks/*.html "$HTML"/book/*.html "$HTML"/book/generated/*.html; do
  [[ -f "$page" ]] || continue
  name="$(basename "$page" .html)"
  "$CHROME" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$PROFILE" \
    --no-pdf-header-footer --print-to-pdf="$OUT/$name.pdf.part" "file://$(realpath "$page")" \
    >/dev/null 2>&1 || { rm -f "$OUT/$name.pdf.part"; echo "error: $page: chromium could not print it" >&2; exit 1; }
  mv "$OUT/$name.pdf.part" "$OUT/$name.pdf"  # a failed print leaves no half-written PDF
  n=$((n + 1))
done
echo "$n PDF files in $OUT"

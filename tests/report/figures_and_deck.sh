#!/usr/bin/env bash
# tach report --png --pptx on a profiled bench run and on a training run: the PNG files are valid
# at their stated sizes (check_figures.py, standard library), the deck's package is whole, python-pptx
# (the development virtualenv) counts its slides and pictures, and LibreOffice (Debian's, headless)
# renders every slide to a page of report-libreoffice.pdf, kept in OUT to look at.
# Usage: figures_and_deck.sh TACH FIXTURES OUT
set -u
tach=$1 fixtures=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
rm -rf "$out" && mkdir -p "$out"

"$tach" run -m preset:bert-tiny -b 1,2,4 -s 8 --runs 5 --no-progress --runs-dir "$out" --run-id bench > /dev/null || exit 1
"$tach" report "$out/bench" --png --pptx > "$out/bench.txt" || { cat "$out/bench.txt"; exit 1; }
"$py" "$here/check_figures.py" "$out/bench.txt" --expect batch_size_comparison --expect metrics_heatmap \
  --expect throughput_vs_batch_size --expect time_breakdown --expect memory_usage --expect roofline || exit 1

"$tach" train -m "$fixtures/encoders/bert-cls2-f32" -k "$fixtures/tokenizers/tiny-wordpiece" \
  -d "$fixtures/train/tiny.csv" --eval-dataset "$fixtures/train/tiny.csv" --epochs 2 -b 4 --no-progress \
  --runs-dir "$out" --run-id train > /dev/null 2>&1 || { echo "FAIL: tach train"; exit 1; }
"$tach" report "$out/train" --pptx --png-scale 1 > "$out/train.txt" || { cat "$out/train.txt"; exit 1; }
"$py" "$here/check_figures.py" "$out/train.txt" --expect training_loss --expect evaluation \
  --expect time_breakdown --expect memory_usage || exit 1
# A chart 460 SVG units wide: 460 px at --png-scale 1, 920 px at the default 2.
grep -q "training_loss.png (460x" "$out/train.txt" || { echo "FAIL: --png-scale 1 should draw 460 px wide"; exit 1; }
grep -q "throughput_vs_batch_size.png (920x" "$out/bench.txt" || { echo "FAIL: the default scale should draw 920 px wide"; exit 1; }

# A bad scale is refused before anything is written.
if "$tach" report "$out/train" --png --png-scale 0 > /dev/null 2>&1; then echo "FAIL: --png-scale 0 accepted"; exit 1; fi

deck="$out/bench/report.pptx"
slides=$(sed -n 's/^wrote .*report.pptx (\([0-9]*\) slides.*/\1/p' "$out/bench.txt")
pngs=$(sed -n 's/^wrote \(.*\.png\) .*/\1/p' "$out/bench.txt")
ref=${REF_PYTHON:-$HOME/tach-ref/bin/python}
if "$ref" -c "import pptx" 2> /dev/null; then
  # shellcheck disable=SC2086
  "$ref" "$here/check_deck_pptx.py" "$deck" "$slides" $pngs || exit 1
else
  echo "python-pptx check left out: no Python with python-pptx at $ref (set REF_PYTHON; scripts/peers/README.md)"
fi

soffice=$(command -v soffice || command -v libreoffice || true)
if [ -n "$soffice" ]; then
  # Its own profile directory: a user's running LibreOffice would otherwise take the job.
  HOME="$out/lo-home" timeout 180 "$soffice" -env:UserInstallation="file://$out/lo-profile" --headless \
    --convert-to pdf --outdir "$out/libreoffice" "$deck" > "$out/libreoffice.log" 2>&1
  pdf="$out/libreoffice/report.pdf"
  [ -s "$pdf" ] || { echo "FAIL: LibreOffice did not render the deck:"; cat "$out/libreoffice.log"; exit 1; }
  pages=$(LC_ALL=C grep -ao "/Type */Page[^s]" "$pdf" | wc -l)
  images=$(LC_ALL=C grep -ao "/Subtype */Image" "$pdf" | wc -l)
  [ "$pages" = "$slides" ] || { echo "FAIL: LibreOffice rendered $pages pages of $slides slides"; exit 1; }
  [ "$images" -ge "$(echo "$pngs" | wc -l)" ] || { echo "FAIL: LibreOffice's PDF holds $images images"; exit 1; }
  cp "$pdf" "$out/report-libreoffice.pdf"
  echo "LibreOffice rendered $pages pages with $images images: $out/report-libreoffice.pdf"
else
  echo "LibreOffice check left out: soffice is not installed (scripts/setup.sh installs libreoffice-impress)"
fi
echo "PASS"

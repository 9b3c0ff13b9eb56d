#!/usr/bin/env bash
# tiny_gpt attn's index.html in a real browser: Debian's chromium, headless,
# at 1400 and 800 px wide. For each width it saves a screenshot and loads
# the page in an iframe of that width inside a small wrapper page (with
# --dump-dom; the wrapper's script reads the page's layout and writes a
# verdict into its own DOM), and fails when the page is wider than the
# window (document scrollWidth, or any element's right edge, past the
# viewport), when a map is not drawn, when the page loaded anything, or
# when hovering a cell does not show its weight to 4 decimals.
#   tests/browser_layout.sh path/to/tiny_gpt [DIR]   train a small model, run attn on a
#                                                    64-character text, check the page
#   tests/browser_layout.sh --page PAGE.html [DIR]   check an existing page
# DIR (default: a new temporary directory) keeps the model, the page, the
# screenshots (shot_<width>.png) and chromium's log for a look.
# Exits 77 (skipped) when /usr/bin/chromium (or $TG_CHROMIUM) is not
# installed, or 1 when the environment has CI=true (scripts/deps.sh --test,
# which scripts/test.sh runs, installs it).
set -u
chromium=${TG_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  if [ "${CI:-}" = true ]; then
    echo "browser_layout: $chromium is not installed (Debian's chromium; scripts/deps.sh --test installs it):" \
         "FAILED, not skipped, since CI=true"
    exit 1
  fi
  echo "skipped: $chromium is not installed (Debian's chromium; scripts/deps.sh --test installs it)"
  exit 77
fi
mode=bin
if [ "${1:-}" = "--page" ]; then mode=page; shift; fi
[ $# -ge 1 ] || { echo "usage: $0 path/to/tiny_gpt [DIR] | --page PAGE.html [DIR]" >&2; exit 2; }
src=$1
dir=${2:-$(mktemp -d)}
rm -rf "$dir" && mkdir -p "$dir" || exit 2
dir=$(cd "$dir" && pwd)
export OPENBLAS_NUM_THREADS=1
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

if [ $mode = bin ]; then
  text="the cat sees the dog. the dogs see a cat. a cat runs. dogs run.."   # 64 characters
  "$src" train --n-layer 4 --n-head 4 --n-embd 32 --block-size 64 --batch-size 4 --steps 5 --eval-interval 5 \
    --eval-iters 1 --threads 1 --out "$dir/model" >"$dir/train.log" 2>&1 || { bad "training: $(tail -3 "$dir/train.log")"; exit 1; }
  "$src" attn --ckpt "$dir/model/best.safetensors" --text "$text" --out "$dir/maps" >"$dir/attn.log" 2>&1 ||
    { bad "attn: $(cat "$dir/attn.log")"; exit 1; }
  maps=16
else
  mkdir -p "$dir/maps" && cp "$(dirname "$src")"/* "$dir/maps/" 2>/dev/null
  cp "$src" "$dir/maps/index.html" || exit 2
  maps=$(grep -o '<figure' "$dir/maps/index.html" | wc -l)
fi
page="$dir/maps/index.html"
echo "page: $page, $(wc -c <"$page") bytes, $maps maps"

run_chromium() {   # WIDTH ARGS... : one headless run with a fresh profile
  local width=$1 profile
  shift
  profile=$(mktemp -d "$dir/profile.XXXXXX")
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$profile" \
    --window-size="$width",1000 "$@" 2>>"$dir/chromium.log"
  local rc=$?
  rm -rf "$profile"
  return $rc
}
png_width() { od -An -tu1 -j16 -N4 "$1" | awk '{ print $1*16777216 + $2*65536 + $3*256 + $4 }'; }

for width in 1400 800; do
  shot="$dir/shot_$width.png"
  run_chromium "$width" --screenshot="$shot" "file://$page" >/dev/null
  if [ -s "$shot" ] && [ "$(png_width "$shot")" = "$width" ]; then ok "$width px: screenshot $shot"
  else bad "$width px: no screenshot"; fi

  # the wrapper: the page in an iframe exactly `width` px wide; its verdict lands in <pre id="verdict">
  wrap="$dir/wrap_$width.html"
  cat >"$wrap" <<HTML
<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>html,body{margin:0;overflow:hidden}iframe{border:0;display:block}</style>
<script>
function check(f) {
  var out = [], w = f.contentWindow, d = f.contentDocument;
  try {
    var de = d.documentElement, right = 0;
    d.querySelectorAll('body *').forEach(function (e) {
      var r = e.getBoundingClientRect();
      if (r.width > 0 && r.height > 0) right = Math.max(right, r.right);
    });
    out.push('viewport ' + de.clientWidth, 'scroll_width ' + de.scrollWidth, 'right ' + Math.ceil(right));
    var cv = d.querySelectorAll('canvas'), drawn = 0;
    cv.forEach(function (c) {   /* a pixel near the bottom left: a visible cell, not the paper */
      var p = c.width ? c.getContext('2d').getImageData(Math.floor(c.width * 0.1), Math.floor(c.height * 0.95), 1, 1).data : [255, 255, 255];
      if (!(p[0] == 255 && p[1] == 255 && p[2] == 255)) drawn++;
    });
    out.push('canvases ' + cv.length, 'drawn ' + drawn);
    out.push('resources ' + w.performance.getEntriesByType('resource').length);
    if (cv.length) {
      var c = cv[0], b = c.getBoundingClientRect();
      var hover = function (fx, fy) {
        c.dispatchEvent(new w.MouseEvent('mousemove', {clientX: b.left + fx * b.width, clientY: b.top + fy * b.height, bubbles: true}));
        return c.nextElementSibling.textContent + ' | tip ' + d.getElementById('tip').textContent;
      };
      out.push('hover_open ' + hover(0.1, 0.95), 'hover_blocked ' + hover(0.95, 0.1));
    }
  } catch (e) { out.push('error ' + e); }
  document.getElementById('verdict').textContent = out.join('\n');
}
</script></head><body>
<pre id="verdict">not loaded</pre>
<iframe src="maps/index.html" style="width:${width}px;height:900px" onload="check(this)"></iframe>
</body></html>
HTML
  dom=$(run_chromium $((width + 100)) --allow-file-access-from-files --virtual-time-budget=5000 --dump-dom "file://$wrap")
  verdict=$(sed -n '/<pre id="verdict">/,/<\/pre>/p' <<<"$dom" | sed 's/<[^>]*>//g')
  printf '%s\n' "$verdict" >"$dir/verdict_$width.txt"
  get() { sed -n "s/^$1 //p" <<<"$verdict" | head -1; }
  vw=$(get viewport) sw=$(get scroll_width) right=$(get right)
  if [ -z "$vw" ]; then bad "$width px: no verdict from the page ($(head -c 300 <<<"$verdict"))"; continue; fi
  [ -n "$(get error)" ] && bad "$width px: the check script failed: $(get error)"
  if [ "$sw" -le "$vw" ] && [ "$right" -le "$vw" ]; then ok "$width px: fits (viewport $vw, scroll width $sw, rightmost edge $right)"
  else bad "$width px: overflows horizontally (viewport $vw, scroll width $sw, rightmost edge $right)"; fi
  [ "$(get canvases)" = "$maps" ] && [ "$(get drawn)" = "$maps" ] && ok "$width px: all $maps maps drawn" ||
    bad "$width px: $(get canvases) canvases, $(get drawn) drawn, want $maps"
  [ "$(get resources)" = 0 ] && ok "$width px: the page loaded nothing" || bad "$width px: the page loaded $(get resources) resources"
  open=$(get hover_open) blocked=$(get hover_blocked)
  if grep -qE '^q[0-9]+ .+ → k[0-9]+ .+: [01]\.[0-9]{4} \| tip q[0-9]+ .+ → k[0-9]+ .+: [01]\.[0-9]{4}$' <<<"$open"; then
    ok "$width px: hover on an open cell: $open"
  else bad "$width px: hover on an open cell shows '$open'"; fi
  if grep -qE '^q[0-9]+ .+ → k[0-9]+ .+: blocked \| tip .*: blocked$' <<<"$blocked"; then ok "$width px: hover on a future cell: $blocked"
  else bad "$width px: hover on a future cell shows '$blocked'"; fi
done
echo "screenshots and verdicts in $dir"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]

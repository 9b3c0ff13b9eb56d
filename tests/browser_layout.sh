#!/usr/bin/env bash
# tiny_gpt attn's index.html in a real browser: Debian's chromium, headless,
# at 1400 and 800 px wide. For each width it saves a screenshot and loads
# the page in an iframe of that width inside a small wrapper page (with
# --dump-dom; the wrapper's script reads the page's layout and writes a
# verdict into its own DOM), and fails when the page is wider than the
# window (document scrollWidth, or any element's visible right edge past
# the viewport: a map wider than the window scrolls in its own box), when
# a map is not drawn, when the page loaded anything, when hovering a cell
# does not show its weight to 4 decimals, or when a map's axis labels are
# not every label in full: the wrapper records what the page's script
# draws (fillText, on a redraw) and wants each position's label once on
# each axis, whole, in order, inside the canvas, apart from its
# neighbours and from the other axis, in a font of 9 px or more.
#   tests/browser_layout.sh path/to/tiny_gpt [DIR]   train a small GPT and run attn on a
#                                                    64-character text, and a BPE Llama on
#                                                    a text of long pieces (BOS first); check
#                                                    both pages
#   tests/browser_layout.sh --page PAGE.html [DIR]   check an existing page
# DIR (default: a new temporary directory) keeps the models, the pages, the
# screenshots (shot_<page>_<width>.png) and chromium's log for a look.
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

pages=()   # NAME:DIR:MAPS
if [ $mode = bin ]; then
  text="the cat sees the dog. the dogs see a cat. a cat runs. dogs run.."   # 64 characters
  "$src" train --n-layer 4 --n-head 4 --n-embd 32 --block-size 64 --batch-size 4 --steps 5 --eval-interval 5 \
    --eval-iters 1 --threads 1 --out "$dir/model" >"$dir/train.log" 2>&1 || { bad "training: $(tail -3 "$dir/train.log")"; exit 1; }
  "$src" attn --ckpt "$dir/model/best.safetensors" --text "$text" --out "$dir/maps" >"$dir/attn.log" 2>&1 ||
    { bad "attn: $(cat "$dir/attn.log")"; exit 1; }
  pages+=("gpt:$dir/maps:16")
  # a BPE Llama: pieces of several characters on the axes, BOS first
  "$src" tokenizer train --vocab-size 400 --out "$dir/tok.safetensors" >"$dir/tok.log" 2>&1 &&
    "$src" train --arch llama --tokenizer "$dir/tok.safetensors" --n-layer 2 --n-head 2 --n-embd 32 --block-size 64 \
      --batch-size 4 --steps 5 --eval-interval 5 --eval-iters 1 --threads 1 --out "$dir/llama" >"$dir/llama.log" 2>&1 &&
    "$src" attn --ckpt "$dir/llama/best.safetensors" --out "$dir/lmaps" \
      --text "to be or not to be, that is the question: whether the citizens of the city" >"$dir/lattn.log" 2>&1 ||
    { bad "the BPE Llama's page: $(tail -3 "$dir/tok.log" "$dir/llama.log" "$dir/lattn.log")"; exit 1; }
  pages+=("llama:$dir/lmaps:4")
else
  mkdir -p "$dir/maps" && cp "$(dirname "$src")"/* "$dir/maps/" 2>/dev/null
  cp "$src" "$dir/maps/index.html" || exit 2
  pages+=("page:$dir/maps:$(grep -o '<figure' "$dir/maps/index.html" | wc -l)")
fi

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

check_page() {   # NAME DIR MAPS: the page DIR/index.html at both widths
  local name=$1 pdir=$2 maps=$3 width shot wrap dom verdict vw sw right open blocked page=$2/index.html
  echo "page $name: $page, $(wc -c <"$page") bytes, $maps maps"
  for width in 1400 800; do
  shot="$dir/shot_${name}_$width.png"
  run_chromium "$width" --screenshot="$shot" "file://$page" >/dev/null
  if [ -s "$shot" ] && [ "$(png_width "$shot")" = "$width" ]; then ok "$name, $width px: screenshot $shot"
  else bad "$name, $width px: no screenshot"; fi

  # the wrapper: the page in an iframe exactly `width` px wide; its verdict lands in <pre id="verdict">
  wrap="$dir/wrap_${name}_$width.html"
  cat >"$wrap" <<HTML
<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>html,body{margin:0;overflow:hidden}iframe{border:0;display:block}</style>
<script>
/* what the page's script drew on canvas c: each fillText's box in the canvas's pixels */
function labels(w, c) {
  var P = w.CanvasRenderingContext2D.prototype, fill = P.fillText, rec = [];
  P.fillText = function (t, x, y) {
    if (this.canvas === c) {
      var m = this.getTransform(), wd = this.measureText(t).width, fs = parseFloat(this.font);
      var x0 = this.textAlign == 'right' ? x - wd : this.textAlign == 'center' ? x - wd / 2 : x;
      var X = [], Y = [];
      [[x0, y - fs / 2], [x0 + wd, y - fs / 2], [x0, y + fs / 2], [x0 + wd, y + fs / 2]].forEach(function (p) {
        X.push(m.a * p[0] + m.c * p[1] + m.e); Y.push(m.b * p[0] + m.d * p[1] + m.f);
      });
      rec.push({t: t, fs: fs, l: Math.min.apply(0, X), r: Math.max.apply(0, X),
                u: Math.min.apply(0, Y), d: Math.max.apply(0, Y)});
    }
    return fill.apply(this, arguments);
  };
  w.dispatchEvent(new w.Event('resize'));   /* the page redraws every map */
  P.fillText = fill;
  return rec;
}
function check(f) {
  var out = [], w = f.contentWindow, d = f.contentDocument;
  try {
    var de = d.documentElement, right = 0;
    d.querySelectorAll('body *').forEach(function (e) {
      var r = e.getBoundingClientRect(), rr = r.right;
      for (var p = e.parentElement; p; p = p.parentElement)   /* what a scrolling box clips is not past the window */
        if (/auto|scroll|hidden/.test(w.getComputedStyle(p).overflowX)) rr = Math.min(rr, p.getBoundingClientRect().right);
      if (r.width > 0 && r.height > 0) right = Math.max(right, rr);
    });
    out.push('viewport ' + de.clientWidth, 'scroll_width ' + de.scrollWidth, 'right ' + Math.ceil(right));
    var cv = d.querySelectorAll('canvas'), drawn = 0;
    cv.forEach(function (c) {   /* the bottom right pixel: the last query's own key, a visible cell */
      var p = c.width ? c.getContext('2d').getImageData(c.width - 2, c.height - 2, 1, 1).data : [255, 255, 255];
      if (!(p[0] == 255 && p[1] == 255 && p[2] == 255) && !(p[0] == 128 && p[1] == 128 && p[2] == 128)) drawn++;
    });
    out.push('canvases ' + cv.length, 'drawn ' + drawn);
    out.push('resources ' + w.performance.getEntriesByType('resource').length);
    if (cv.length) {
      var c = cv[0], b = c.getBoundingClientRect(), read = c.closest('figure').querySelector('.read');
      var hover = function (x, y) {
        c.dispatchEvent(new w.MouseEvent('mousemove', {clientX: x, clientY: y, bubbles: true}));
        return read.textContent + ' | tip ' + d.getElementById('tip').textContent;
      };
      out.push('hover_open ' + hover(b.right - 2, b.bottom - 2));
      var top = '';   /* down the last column: its first cell is the first query's view of the last key */
      for (var y = b.top; y < b.bottom && !/^q/.test(top); y += 1) top = hover(b.right - 2, y);
      out.push('hover_blocked ' + top);
      var want = [].map.call(d.querySelectorAll('#text span'), function (s) { return s.textContent; });
      /* the keys' labels sit above the map and the queries' beside it, lower: the T highest bottoms are keys' */
      var rec = labels(w, c).sort(function (a, b) { return a.d - b.d; }), keys = rec.slice(0, want.length),
          rows = rec.slice(want.length);
      keys.sort(function (a, b) { return a.l - b.l; });
      rows.sort(function (a, b) { return a.u - b.u; });
      var text = function (a) { return a.map(function (q) { return q.t; }).join('\u0001'); }, inside = 0, apart = 0, font = 99;
      rec.forEach(function (q) {
        if (q.l >= -0.5 && q.u >= -0.5 && q.r <= c.width + 0.5 && q.d <= c.height + 0.5) inside++;
        font = Math.min(font, q.fs / (w.devicePixelRatio || 1));
      });
      for (var i = 1; i < keys.length; i++) apart += keys[i - 1].r <= keys[i].l + 0.5;
      for (i = 1; i < rows.length; i++) apart += rows[i - 1].d <= rows[i].u + 0.5;
      var kd = Math.max.apply(0, keys.map(function (q) { return q.d; })), ru = Math.min.apply(0, rows.map(function (q) { return q.u; }));
      var rr = Math.max.apply(0, rows.map(function (q) { return q.r; })), kl = Math.min.apply(0, keys.map(function (q) { return q.l; }));
      out.push('labels ' + want.length + ' ' + keys.length + ' ' + rows.length,
               'labels_whole ' + (text(keys) == want.join('\u0001') && text(rows) == want.join('\u0001') && !/\u2026/.test(text(rec))),
               'labels_inside ' + (inside == rec.length), 'labels_apart ' + (apart == keys.length + rows.length - 2),
               'labels_bands ' + (kd <= ru + 0.5 && rr <= kl + 0.5), 'label_font ' + font);
    }
  } catch (e) { out.push('error ' + e); }
  document.getElementById('verdict').textContent = out.join('\n');
}
</script></head><body>
<pre id="verdict">not loaded</pre>
<iframe src="file://$page" style="width:${width}px;height:900px" onload="check(this)"></iframe>
</body></html>
HTML
  dom=$(run_chromium $((width + 100)) --allow-file-access-from-files --virtual-time-budget=5000 --dump-dom "file://$wrap")
  verdict=$(sed -n '/<pre id="verdict">/,/<\/pre>/p' <<<"$dom" | sed 's/<[^>]*>//g')
  printf '%s\n' "$verdict" >"$dir/verdict_${name}_$width.txt"
  get() { sed -n "s/^$1 //p" <<<"$verdict" | head -1; }
  vw=$(get viewport) sw=$(get scroll_width) right=$(get right)
  if [ -z "$vw" ]; then bad "$name, $width px: no verdict from the page ($(head -c 300 <<<"$verdict"))"; continue; fi
  [ -n "$(get error)" ] && bad "$name, $width px: the check script failed: $(get error)"
  if [ "$sw" -le "$vw" ] && [ "$right" -le "$vw" ]; then ok "$name, $width px: fits (viewport $vw, scroll width $sw, rightmost visible edge $right)"
  else bad "$name, $width px: overflows horizontally (viewport $vw, scroll width $sw, rightmost visible edge $right)"; fi
  [ "$(get canvases)" = "$maps" ] && [ "$(get drawn)" = "$maps" ] && ok "$name, $width px: all $maps maps drawn" ||
    bad "$name, $width px: $(get canvases) canvases, $(get drawn) drawn, want $maps"
  [ "$(get resources)" = 0 ] && ok "$name, $width px: the page loaded nothing" || bad "$name, $width px: the page loaded $(get resources) resources"
  open=$(get hover_open) blocked=$(get hover_blocked)
  if grep -qE '^q[0-9]+ .+ → k[0-9]+ .+: [01]\.[0-9]{4} \| tip q[0-9]+ .+ → k[0-9]+ .+: [01]\.[0-9]{4}$' <<<"$open"; then
    ok "$name, $width px: hover on an open cell: $open"
  else bad "$name, $width px: hover on an open cell shows '$open'"; fi
  if grep -qE '^q0 .+ → k[0-9]+ .+: blocked \| tip .*: blocked$' <<<"$blocked"; then ok "$name, $width px: hover on a future cell: $blocked"
  else bad "$name, $width px: hover on a future cell shows '$blocked'"; fi
  read -r n nk nq <<<"$(get labels)"
  if [ "${n:-0}" -gt 0 ] && [ "$nk" = "$n" ] && [ "$nq" = "$n" ] && [ "$(get labels_whole)" = true ] &&
     [ "$(get labels_inside)" = true ] && [ "$(get labels_apart)" = true ] && [ "$(get labels_bands)" = true ] &&
     awk -v f="$(get label_font)" 'BEGIN { exit !(f >= 9) }'; then
    ok "$name, $width px: all $n labels in full on both axes of the first map, apart, in a $(get label_font) px font"
  else
    bad "$name, $width px: the labels: $n positions, $nk keys and $nq queries drawn; whole $(get labels_whole), inside" \
        "$(get labels_inside), apart $(get labels_apart), in their bands $(get labels_bands), font $(get label_font) px"
  fi
  done
}
for pg in "${pages[@]}"; do
  IFS=: read -r name pdir maps <<<"$pg"
  check_page "$name" "$pdir" "$maps"
done
echo "screenshots and verdicts in $dir"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]

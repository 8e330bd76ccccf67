#!/bin/sh
# memsnap report's page in a real browser (headless Chromium, Debian package chromium):
# it loads with no console message (an uncaught script error is one) and its script runs to
# the end (it marks <html data-ready="1">); a screenshot at 1280x900 is not blank (the PNG
# decoded with python3's zlib: many distinct colours). The checker proves itself first on a
# page with a deliberate script error, which it must catch.
# Usage: test_report_browser.sh MEMSNAP
set -eu
memsnap=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
chromium=${MEMSNAP_CHROMIUM:-chromium}
command -v "$chromium" >/dev/null || { echo "test_report_browser: no $chromium (scripts/install-deps.sh installs it)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

browser() {
  sandbox=
  [ "$(id -u)" -eq 0 ] && sandbox=--no-sandbox
  HOME=$work timeout 120 "$chromium" --headless $sandbox --disable-gpu --no-first-run \
    --user-data-dir="$work/profile" --enable-logging=stderr --v=1 "$@"
}

# check PAGE: 0 if it loads without a console message and its script marked it ready.
check() {
  browser --dump-dom "file://$work/$1" >dom.html 2>console.log || { echo "$1: chromium failed"; tail -5 console.log; return 1; }
  if grep ':CONSOLE' console.log; then
    echo "$1: console messages (above)"
    return 1
  fi
  grep -q '<html[^>]*data-ready="1"' dom.html || { echo "$1: its script did not run to the end"; return 1; }
}

# the checker catches a script error
sed 's/^document.documentElement.setAttribute/undefinedFunction();&/' >broken.html <<'EOF'
<!DOCTYPE html><html><head><title>broken</title></head><body><p>broken</p><script>
document.documentElement.setAttribute('data-ready','1');
</script></body></html>
EOF
sed 's/undefinedFunction();//' broken.html >fine.html
check fine.html || { echo "the checker refuses a page without error"; exit 1; }
if check broken.html >/dev/null; then echo "the checker missed a script error"; exit 1; fi

awk -f "$here/outputs/workload.awk" >w.lackey
"$memsnap" convert w.lackey w.mtr
"$memsnap" profile -q -o w.psnap w.mtr
"$memsnap" signature --widths -o w.sig w.mtr
"$memsnap" report w.mtr w.psnap w.sig -o report.html
check report.html

browser --screenshot="$work/shot.png" --window-size=1280,900 "file://$work/report.html" 2>/dev/null
python3 - shot.png <<'EOF'
# The distinct colours of an 8-bit RGB or RGBA PNG (non-interlaced), decoded by hand.
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat = 8, b''
while pos < len(data):
    length, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b'IHDR':
        width, height, depth, colour, _, _, interlace = struct.unpack('>IIBBBBB', body)
    elif kind == b'IDAT':
        idat += body
    pos += 12 + length
assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
bpp = 3 if colour == 2 else 4
raw, stride = zlib.decompress(idat), width * bpp
previous, colours, at = bytearray(stride), set(), 0
for y in range(height):
    kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
    at += 1 + stride
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = previous[i]
        c = previous[i - bpp] if i >= bpp else 0
        if kind == 1: line[i] = (line[i] + a) & 255
        elif kind == 2: line[i] = (line[i] + b) & 255
        elif kind == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif kind == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    colours.update(bytes(line[i:i + 3]) for i in range(0, stride, bpp))
    previous = line
print(f'screenshot {width}x{height}: {len(colours)} distinct colours')
assert (width, height) == (1280, 900), 'unexpected size'
assert len(colours) >= 50, 'a blank or nearly blank screenshot'
EOF

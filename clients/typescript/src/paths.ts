// Workspace paths on the wire. Linux names are bytes, not text: the API
// writes each byte that is not part of valid UTF-8 as a lone surrogate
// \udc80–\udcff (Python's "surrogateescape"), which JSON.parse keeps as a
// lone UTF-16 code unit. A harness that only shows paths can ignore this;
// pathBytes gives the bytes (node:fs takes a Buffer path), pathString
// turns bytes into the API's string, and queries carry the bytes
// percent-encoded.

/** The bytes of an API path string. */
export function pathBytes(p: string): Buffer {
  const out: number[] = [];
  for (let i = 0; i < p.length; i++) {
    const c = p.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < p.length) {
      const d = p.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out.push(...Buffer.from(p.slice(i, i + 2), "utf8"));
        i++;
        continue;
      }
    }
    if (c >= 0xdc80 && c <= 0xdcff) {
      out.push(c - 0xdc00); // an escaped byte
    } else {
      out.push(...Buffer.from(p[i]!, "utf8")); // a lone surrogate other than these becomes U+FFFD
    }
  }
  return Buffer.from(out);
}

/** The API's string for a path's bytes: valid UTF-8 as text, every other byte escaped. */
export function pathString(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; ) {
    const n = validSequence(b, i);
    if (n === 0) {
      s += String.fromCharCode(0xdc00 + b[i]!);
      i++;
    } else {
      s += Buffer.from(b.subarray(i, i + n)).toString("utf8");
      i += n;
    }
  }
  return s;
}

/** A path for a query string: its bytes, percent-encoded. */
export function pathQuery(p: string): string {
  let q = "";
  for (const byte of pathBytes(p)) {
    const ch = String.fromCharCode(byte);
    q += /[A-Za-z0-9\-._~/]/.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return q;
}

/** The length of the valid UTF-8 sequence at b[i] (as Go decodes it), or 0. */
function validSequence(b: Uint8Array, i: number): number {
  const c0 = b[i]!;
  if (c0 < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf) => i + k < b.length && b[i + k]! >= lo && b[i + k]! <= hi;
  if (c0 >= 0xc2 && c0 <= 0xdf) return cont(1) ? 2 : 0;
  if (c0 === 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0; // no overlong forms
  if (c0 === 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0; // no surrogates
  if (c0 >= 0xe1 && c0 <= 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c0 === 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c0 >= 0xf1 && c0 <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c0 === 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0; // at most U+10FFFF
  return 0;
}

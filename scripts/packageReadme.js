#!/usr/bin/env node
// Writes dist/README.md, the README the .vsix carries (`vsce package --readme-path dist/README.md`), from README.md:
// - Images are inlined as data: URLs. The Extensions view shows a README under a content security policy that
//   loads images only from https: and data: URLs, so a relative `media/screenshots/x.png` shows as a broken image
//   there even when the file ships; without a public repository to point https URLs at, inlining is what makes a
//   screenshot show. Only the images of PACKAGED_IMAGES go in, each cropped to what it is about (every KB of
//   screenshot is a KB of .vsix); any other image of the README is an error, so none goes in unmeasured.
// - Links to files of the repository become their text: the package carries none of the docs, and a relative
//   link has nothing to open in the Extensions view or on the Marketplace. Links to headings of the README stay.
// Run by `vscode:prepublish`.
'use strict';

const fs = require('fs');
const path = require('path');
const zlib = require('zlib');

const ROOT = path.resolve(__dirname, '..');

/**
 * The screenshots the packaged README carries, and the part of each it shows (pixels of the 1280x800 screenshot).
 * The README on GitHub shows them whole. Regions follow the layout scripts/host/screenshots.js and agentClis.js
 * take them in.
 */
const PACKAGED_IMAGES = {
  // The view's title and the demo agent's tree.
  'media/screenshots/agent-trees-view.png': { left: 48, top: 36, width: 560, height: 192 },
  // The view with Codex's tree, and Codex's sign-in screen in its agent terminal.
  'media/screenshots/codex-agent-terminal.png': { left: 48, top: 36, width: 800, height: 660 },
};

function main() {
  const source = path.join(ROOT, 'README.md');
  const out = path.join(ROOT, 'dist', 'README.md');
  const inlined = [];
  const text = fs.readFileSync(source, 'utf8').replace(/(!?)\[([^\]]*)\]\(([^)\s]+)\)/g, (all, bang, label, link) => {
    if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('#')) return all; // a URL, or a heading of this README
    if (!bang) return label;
    const region = PACKAGED_IMAGES[link];
    if (!region) throw new Error(`README.md: image ${link} is not one of the packaged images (scripts/packageReadme.js)`);
    const file = path.resolve(ROOT, link);
    if (!fs.existsSync(file)) throw new Error(`README.md: image ${link} not found`);
    const png = cropPng(fs.readFileSync(file), region, link);
    inlined.push(`${link} ${region.width}x${region.height} ${Math.round(png.length / 1024)} KB`);
    return `![${label}](data:image/png;base64,${png.toString('base64')})`;
  });
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, text);
  process.stdout.write(
    `wrote ${path.relative(ROOT, out)} (${Math.round(text.length / 1024)} KB; images: ${inlined.join(', ') || 'none'})\n`,
  );
}

// ---------------------------------------------------------------- PNG
// A crop of a palette PNG (colour type 3, what pngquant writes), enough for the screenshots: no image library
// is a dependency of the package build.

/** The chunks of a PNG: `{ type, data }`. */
function pngChunks(buf, name) {
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (buf.length < 8 || !buf.subarray(0, 8).equals(signature)) throw new Error(`${name}: not a PNG`);
  const chunks = [];
  for (let at = 8; at + 12 <= buf.length;) {
    const length = buf.readUInt32BE(at);
    chunks.push({ type: buf.toString('latin1', at + 4, at + 8), data: buf.subarray(at + 8, at + 8 + length) });
    at += 12 + length;
  }
  return chunks;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(buf) {
  let crc = 0xffffffff;
  for (const byte of buf) crc = CRC_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function pngChunk(type, data) {
  const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typed));
  return Buffer.concat([length, typed, crc]);
}

/** The scanlines of a non-interlaced PNG, unfiltered (PNG spec, section 9). */
function unfilter(raw, height, stride, bytesPerPixel) {
  const rows = [];
  let previous = Buffer.alloc(stride);
  for (let r = 0; r < height; r++) {
    const start = r * (stride + 1);
    const filter = raw[start];
    const row = Buffer.from(raw.subarray(start + 1, start + 1 + stride));
    for (let i = 0; i < stride; i++) {
      const a = i >= bytesPerPixel ? row[i - bytesPerPixel] : 0;
      const b = previous[i];
      const c = i >= bytesPerPixel ? previous[i - bytesPerPixel] : 0;
      if (filter === 1) row[i] += a;
      else if (filter === 2) row[i] += b;
      else if (filter === 3) row[i] += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const [pa, pb, pc] = [Math.abs(p - a), Math.abs(p - b), Math.abs(p - c)];
        row[i] += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      } else if (filter !== 0) throw new Error(`unknown PNG filter ${filter}`);
    }
    rows.push(row);
    previous = row;
  }
  return rows;
}

/** `region` of a palette PNG, as a palette PNG of the same bit depth and palette. */
function cropPng(buf, region, name) {
  const chunks = pngChunks(buf, name);
  const header = chunks.find((c) => c.type === 'IHDR')?.data;
  if (!header) throw new Error(`${name}: no IHDR`);
  const [width, height, depth, colourType, interlace] = [header.readUInt32BE(0), header.readUInt32BE(4), header[8], header[9], header[12]];
  if (colourType !== 3 || interlace !== 0) throw new Error(`${name}: not a non-interlaced palette PNG (quantise it with pngquant)`);
  const { left, top, width: w, height: h } = region;
  if (left < 0 || top < 0 || w < 1 || h < 1 || left + w > width || top + h > height) {
    throw new Error(`${name}: crop ${w}x${h}+${left}+${top} is outside its ${width}x${height}`);
  }
  const stride = Math.ceil((width * depth) / 8);
  const rows = unfilter(zlib.inflateSync(Buffer.concat(chunks.filter((c) => c.type === 'IDAT').map((c) => c.data))), height, stride, 1);
  const perByte = 8 / depth;
  const mask = (1 << depth) - 1;
  const index = (row, x) => (row[Math.floor(x / perByte)] >> (8 - depth * ((x % perByte) + 1))) & mask;
  const croppedStride = Math.ceil((w * depth) / 8);
  const cropped = Buffer.alloc(h * (croppedStride + 1)); // filter byte 0 (none) on every row: best for palette images
  for (let y = 0; y < h; y++) {
    const start = y * (croppedStride + 1) + 1;
    for (let x = 0; x < w; x++) {
      cropped[start + Math.floor(x / perByte)] |= index(rows[top + y], left + x) << (8 - depth * ((x % perByte) + 1));
    }
  }
  const newHeader = Buffer.from(header);
  newHeader.writeUInt32BE(w, 0);
  newHeader.writeUInt32BE(h, 4);
  return Buffer.concat([
    buf.subarray(0, 8),
    pngChunk('IHDR', newHeader),
    ...chunks.filter((c) => c.type === 'PLTE' || c.type === 'tRNS').map((c) => pngChunk(c.type, c.data)),
    pngChunk('IDAT', zlib.deflateSync(cropped, { level: 9 })),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

try {
  main();
} catch (e) {
  process.stderr.write(`packageReadme: ${e.message}\n`);
  process.exit(1);
}

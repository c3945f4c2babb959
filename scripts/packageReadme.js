#!/usr/bin/env node
// Writes dist/README.md, the README the .vsix carries (`vsce package --readme-path dist/README.md`): README.md
// with its local images inlined as data: URLs. The Extensions view shows a README under a content security
// policy that loads images only from https: and data: URLs, so a relative `media/screenshots/x.png` shows as a
// broken image there even when the file ships; without a public repository to point https URLs at, inlining is
// what makes the screenshots show. Run by `vscode:prepublish`.
'use strict';

const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..');
const TYPES = { '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif' };

function main() {
  const source = path.join(ROOT, 'README.md');
  const out = path.join(ROOT, 'dist', 'README.md');
  let inlined = 0;
  const text = fs.readFileSync(source, 'utf8').replace(/!\[([^\]]*)\]\(([^)\s]+)\)/g, (all, alt, link) => {
    const type = TYPES[path.extname(link).toLowerCase()];
    if (/^[a-z][a-z0-9+.-]*:/i.test(link) || !type) return all; // a URL, or not an image we inline
    const file = path.resolve(ROOT, link);
    if (!file.startsWith(ROOT + path.sep) || !fs.existsSync(file)) throw new Error(`README.md: image ${link} not found`);
    inlined++;
    return `![${alt}](data:${type};base64,${fs.readFileSync(file).toString('base64')})`;
  });
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, text);
  process.stdout.write(`wrote ${path.relative(ROOT, out)} (${inlined} images inlined, ${Math.round(text.length / 1024)} KB)\n`);
}

try {
  main();
} catch (e) {
  process.stderr.write(`packageReadme: ${e.message}\n`);
  process.exit(1);
}

#!/usr/bin/env node
// Writes dist/README.md, the README the .vsix carries (`vsce package --readme-path dist/README.md`), from README.md:
// - Its screenshots stay out. The Extensions view shows a README under a content security policy that loads
//   images only from https: and data: URLs, and there is no public repository to point https: URLs at, so a
//   screenshot would have to be inlined as a data: URL: even two, cropped, put the .vsix at 166 KB, over its
//   150 KB budget (the bundles and node-pty take 127 KB of it). The README on GitHub shows them.
// - Links to files of the repository become text that names the file: the package carries none of the docs, and
//   a relative link has nothing to open in the Extensions view or on the Marketplace. Links to URLs and to
//   headings of the README stay.
// Run by `vscode:prepublish`.
'use strict';

const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..');

function main() {
  const out = path.join(ROOT, 'dist', 'README.md');
  let images = 0;
  const text = fs
    .readFileSync(path.join(ROOT, 'README.md'), 'utf8')
    // A line that is only a local image goes, with the blank line after it.
    .replace(/^!\[[^\]]*\]\((?![a-z][a-z0-9+.-]*:)[^)\s]+\)\n\n?/gim, () => {
      images++;
      return '';
    })
    .replace(/(!?)\[([^\]]*)\]\(([^)\s]+)\)/g, (all, bang, label, link) => {
      if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('#')) return all; // a URL, or a heading of this README
      if (bang) throw new Error(`README.md: image ${link} inside a paragraph: put it on a line of its own`);
      const file = link.replace(/#.*/, '');
      return label === file ? `\`${file}\`` : `${label} (\`${file}\`)`;
    });
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, text);
  process.stdout.write(`wrote ${path.relative(ROOT, out)} (${Math.round(text.length / 1024)} KB, ${images} screenshots left out)\n`);
}

try {
  main();
} catch (e) {
  process.stderr.write(`packageReadme: ${e.message}\n`);
  process.exit(1);
}

#!/usr/bin/env node
// Checks every relative link and image of the repository's Markdown files (README, CONTRIBUTING, CHANGELOG, docs/,
// and the READMEs of bench/ and scripts/host/): the file it names exists, and a `#heading` it names is a heading
// of that file, as GitHub makes anchors of headings. Links to URLs are not fetched. Run by `npm run lint`.
//   node scripts/checkLinks.js [FILE.md...]
'use strict';

const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..');
/** Folders that hold no Markdown of ours: installed, built or generated. */
const SKIPPED = new Set(['.git', 'node_modules', '.tools', 'dist', 'out', '.vscode-test']);

function markdownFiles(dir = ROOT) {
  const found = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (SKIPPED.has(entry.name)) continue;
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...markdownFiles(file));
    else if (entry.name.endsWith('.md')) found.push(file);
  }
  return found;
}

/** The text outside fenced code blocks, line by line (line numbers kept), with inline code blanked out. */
function prose(text) {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line.replace(/`[^`]*`/g, (code) => ' '.repeat(code.length));
  });
}

/** The anchors GitHub gives a file's headings: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(file) {
  const seen = new Map();
  const result = new Set();
  let fenced = false;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const text = heading[1].replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/<[^>]+>/g, '');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    result.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return result;
}

/** What is wrong with `link` in `file`, or undefined when it resolves. */
function problem(file, link, anchorsOf) {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link)) return undefined; // a URL
  const hash = link.indexOf('#');
  const target = decodeURIComponent(hash >= 0 ? link.slice(0, hash) : link);
  const anchor = hash >= 0 ? link.slice(hash + 1) : '';
  const resolved = target ? path.resolve(path.dirname(file), target) : file;
  if (!fs.existsSync(resolved)) return `${target} does not exist`;
  if (!anchor) return undefined;
  if (!resolved.endsWith('.md')) return `#${anchor}: only Markdown files have headings to link to`;
  if (!anchorsOf(resolved).has(anchor)) return `${path.relative(ROOT, resolved)} has no heading #${anchor}`;
  return undefined;
}

function main() {
  const files = process.argv.length > 2 ? process.argv.slice(2).map((f) => path.resolve(f)) : markdownFiles();
  const cache = new Map();
  const anchorsOf = (file) => {
    if (!cache.has(file)) cache.set(file, anchors(file));
    return cache.get(file);
  };
  let links = 0;
  const problems = [];
  for (const file of files) {
    prose(fs.readFileSync(file, 'utf8')).forEach((line, i) => {
      for (const [, link] of line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        links++;
        const wrong = problem(file, link, anchorsOf);
        if (wrong) problems.push(`${path.relative(ROOT, file)}:${i + 1}: ${link}: ${wrong}`);
      }
    });
  }
  for (const p of problems) process.stderr.write(`${p}\n`);
  process.stdout.write(`checkLinks: ${links} links in ${files.length} Markdown files, ${problems.length} broken\n`);
  if (problems.length > 0) process.exit(1);
}

main();

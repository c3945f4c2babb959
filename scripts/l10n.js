// Regenerates l10n/bundle.l10n.json from every vscode.l10n.t('...') string in src/ (the English bundle
// translators start from). Run after changing user-facing strings: npm run l10n
const fs = require('fs');
const path = require('path');

const root = path.join(__dirname, '..');
const strings = new Set();
const walk = (dir) => {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p);
    else if (p.endsWith('.ts')) {
      const text = fs.readFileSync(p, 'utf8');
      for (const m of text.matchAll(/l10n\.t\(\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")/g)) strings.add(eval(m[1]));
    }
  }
};
walk(path.join(root, 'src'));
const bundle = Object.fromEntries([...strings].sort().map((s) => [s, s]));
fs.mkdirSync(path.join(root, 'l10n'), { recursive: true });
fs.writeFileSync(path.join(root, 'l10n', 'bundle.l10n.json'), JSON.stringify(bundle, null, 2) + '\n');
console.log(`l10n/bundle.l10n.json: ${strings.size} strings`);
